"""campaign/decide.py: one action per run, a person's commits never overwritten."""

from __future__ import annotations

import pytest

from qnn_migrate.bot.campaign.decide import (
    Action,
    Situation,
    State,
    campaign_pulls,
    decide,
)
from qnn_migrate.bot.campaign.marker import REBASE_TAG, STOPPED, Marker
from qnn_migrate.bot.github.gateway import CampaignPull

BASE, NEW_BASE = "b" * 40, "c" * 40
HEAD, PUSHED = "d" * 40, "e" * 40
CHANGES, OTHER = "1" * 16, "2" * 16
BOT = "github-actions[bot]"
MARKER = Marker(BASE, HEAD, CHANGES)


def pull(
    number: int = 7,
    *,
    state: str = "open",
    merged: bool = False,
    marker: Marker | None = MARKER,
    extra: str = "",
    author: str = BOT,
) -> CampaignPull:
    body = (marker.line() + "\n" if marker else "") + "## Migrate\n" + extra
    return CampaignPull(number, state, merged, author, HEAD, "main", "t", body)


def situation(
    *pulls: CampaignPull, tip: str | None = HEAD, base: str = BASE, changes: str | None = CHANGES
) -> Situation:
    return Situation(base, changes, tip, tuple(pulls))


def test_first_run_opens() -> None:
    d = decide(situation(tip=None))
    assert (d.action, d.state) == (Action.OPEN, State.OPENED)


def test_nothing_to_rewrite_and_no_pr_is_nothing_to_do() -> None:
    d = decide(situation(tip=None, changes=None))
    assert (d.action, d.state) == (Action.NOTHING, State.NOTHING_TO_DO)


def test_an_untouched_pr_on_the_same_base_is_refreshed_only() -> None:
    d = decide(situation(pull()))
    assert (d.action, d.state) == (Action.REFRESH, State.UNCHANGED)


def test_the_base_moved_recreates() -> None:
    d = decide(situation(pull(), base=NEW_BASE))
    assert (d.action, d.state) == (Action.RECREATE, State.UPDATED)
    assert "default branch moved" in d.reason


def test_a_changed_rewrite_recreates() -> None:
    d = decide(situation(pull(), changes=OTHER))
    assert (d.action, d.state) == (Action.RECREATE, State.UPDATED)
    assert "rewrite changed" in d.reason


@pytest.mark.parametrize(
    ("base", "changes"), [(BASE, CHANGES), (NEW_BASE, CHANGES), (BASE, OTHER), (BASE, None)]
)
def test_a_persons_push_stops_whatever_else_happened(base: str, changes: str | None) -> None:
    d = decide(situation(pull(), tip=PUSHED, base=base, changes=changes))
    assert (d.action, d.state) == (Action.STOP, State.UNCHANGED)
    assert d.say_stop and "someone pushed" in d.reason
    # Said once: a body that carries the notice is not written again.
    again = decide(situation(pull(extra=STOPPED), tip=PUSHED, base=base, changes=changes))
    assert again.action is Action.STOP and not again.say_stop


def test_a_deleted_branch_with_an_open_pr_is_not_the_campaigns_to_recreate() -> None:
    d = decide(situation(pull(), tip=None))
    assert d.action is Action.STOP


def test_a_body_without_the_marker_stops() -> None:
    d = decide(situation(pull(marker=None)))
    assert d.action is Action.STOP and "marker" in d.reason


def test_the_ticked_box_recreates_over_a_persons_push() -> None:
    ticked = f"- [x] {REBASE_TAG} recreate\n"
    d = decide(situation(pull(extra=ticked), tip=PUSHED))
    assert (d.action, d.state) == (Action.RECREATE, State.UPDATED)
    assert "asked" in d.reason
    # Control: the same box unticked stops.
    assert decide(situation(pull(extra=f"- [ ] {REBASE_TAG}\n"), tip=PUSHED)).action is Action.STOP


def test_nothing_left_closes_an_untouched_pr() -> None:
    d = decide(situation(pull(), changes=None))
    assert (d.action, d.state) == (Action.CLOSE, State.NOTHING_TO_DO)


def test_a_merged_pr_and_nothing_left_reads_merged() -> None:
    d = decide(situation(pull(state="closed", merged=True), changes=None))
    assert (d.action, d.state) == (Action.NOTHING, State.MERGED)


def test_after_a_merge_a_new_call_opens_a_new_pr() -> None:
    d = decide(situation(pull(state="closed", merged=True), changes=OTHER))
    assert d.action is Action.OPEN


def test_a_pr_a_person_closed_is_not_reopened_for_the_same_rewrite() -> None:
    closed = pull(state="closed")
    d = decide(situation(closed))
    assert (d.action, d.state) == (Action.NOTHING, State.UNCHANGED)
    assert "closed without merging" in d.reason
    # Another rewrite, or one the campaign itself closed, opens again.
    assert decide(situation(closed, changes=OTHER)).action is Action.OPEN
    by_campaign = pull(state="closed", marker=Marker(BASE, HEAD, CHANGES, closed=True))
    assert decide(situation(by_campaign)).action is Action.OPEN


def test_a_branch_holding_someone_elses_commit_is_left_alone() -> None:
    d = decide(situation(pull(state="closed", merged=True), tip=PUSHED, changes=OTHER))
    assert d.action is Action.NOTHING and "did not write" in d.reason
    # Control: the branch at the campaign's own last commit is reused.
    assert decide(situation(pull(state="closed", merged=True), changes=OTHER)).action is Action.OPEN


def test_only_the_bots_own_prs_count() -> None:
    mine, theirs = pull(1), pull(2, author="mallory")
    assert campaign_pulls([theirs, mine], BOT) == (mine,)


def test_the_tip_a_run_left_before_moving_the_branch_is_the_campaigns_own() -> None:
    """A run writes the marker (head, prev) and then moves the branch: if it stopped in
    between, the tip is prev, and the next run finishes the job."""
    stalled = pull(marker=Marker(BASE, HEAD, CHANGES, prev=PUSHED))
    d = decide(situation(stalled, tip=PUSHED))
    assert (d.action, d.state) == (Action.RECREATE, State.UPDATED)
    assert "stopped before it moved the branch" in d.reason
    # Control: any other tip is a person's.
    assert decide(situation(stalled, tip="f" * 40)).action is Action.STOP
