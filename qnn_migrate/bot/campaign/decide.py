"""What the campaign does on one run: one action, from what GitHub shows and the rewrite (pure).

The inputs are the rewrite's digest of its changes (None when nothing is left to rewrite),
the default branch's commit the rewrite read, the campaign branch's tip, and the
campaign's PRs with their markers. The order of the rules is the argument:

1. **A person's work is never overwritten.** With an open PR, the branch's tip must be the
   commit the campaign last wrote (its marker's ``head``, or the ``prev`` it replaced when
   the last run stopped before moving the branch); anything else means someone pushed, and the campaign stops: it says so on the PR once and never moves the branch
   again, until a person ticks the box that asks for the branch to be recreated (or moves
   the branch back). A PR whose marker is gone (its body was edited away) is treated the
   same: the campaign can no longer tell its own commit from someone else's.
2. **Nothing left**: the open PR is closed with a note, and its branch deleted.
3. **The base moved, or the rewrite changed** (new files, a new qnn-migrate): the branch is
   recreated on the default branch's commit, one commit on top of it, and the PR's body
   updated. **Neither**: the body is refreshed if its text changed, nothing else.
4. With no open PR and something to rewrite, a PR is opened, unless a person closed the
   last one without merging and the rewrite is the same one they turned down, or the
   branch holds a commit the campaign did not write (a person's, with no PR).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from qnn_migrate.bot.campaign.marker import Marker, read_marker, rebase_requested, stop_said
from qnn_migrate.bot.github.gateway import CampaignPull


class Action(StrEnum):
    """What the run does to the branch and the PR."""

    OPEN = "open"  # a commit on the base, the branch set to it, a new PR
    RECREATE = "recreate"  # a new commit on the (new) base, the branch forced there
    REFRESH = "refresh"  # the code is current: only the body, if its text changed
    STOP = "stop"  # someone pushed: say so once, touch nothing else
    CLOSE = "close"  # nothing left to rewrite: close the PR with a note, delete the branch
    NOTHING = "nothing"


class State(StrEnum):
    """A repository's campaign PR after the run: the states of the organization's table."""

    OPENED = "opened"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    MERGED = "merged"
    NOTHING_TO_DO = "nothing to do"
    FAILED = "failed"


@dataclass(frozen=True)
class Situation:
    """What the run knows before it acts."""

    base: str  # the default branch's commit the rewrite read
    changes: str | None  # the rewrite's digest; None: nothing to rewrite
    tip: str | None  # the campaign branch's commit; None: no branch
    pulls: tuple[CampaignPull, ...]  # the campaign's PRs from its branch, newest first


@dataclass(frozen=True)
class Decision:
    """The action, the state it leaves the PR in, and why (for the log and the table)."""

    action: Action
    state: State
    reason: str
    pull: CampaignPull | None = None  # the PR acted on
    marker: Marker | None = None  # its marker, when it has one
    say_stop: bool = False  # STOP: the notice is not on the PR yet


def campaign_pulls(pulls: Sequence[CampaignPull], bot_login: str) -> tuple[CampaignPull, ...]:
    """The PRs the campaign opened: by its login, from its branch, newest first."""
    return tuple(p for p in pulls if p.author == bot_login)


def decide(now: Situation) -> Decision:
    """The one action for this run; see the module docstring for the rules' order."""
    open_pulls = [p for p in now.pulls if p.state == "open"]
    if open_pulls:
        return _with_open(now, open_pulls[0])
    return _without_open(now)


def _with_open(now: Situation, pull: CampaignPull) -> Decision:
    marker = read_marker(pull.body)
    asked = rebase_requested(pull.body)
    if marker is None and not asked:
        return Decision(
            Action.STOP,
            State.UNCHANGED,
            f"PR #{pull.number}'s body no longer holds the campaign's marker, so its own "
            "commit cannot be told from anyone else's; the campaign leaves the PR alone",
            pull,
            None,
            say_stop=not stop_said(pull.body),
        )
    pushed = marker is None or now.tip not in marker.ours
    if pushed and not asked:
        return Decision(
            Action.STOP,
            State.UNCHANGED,
            f"someone pushed to the branch of PR #{pull.number} (its tip is "
            f"{(now.tip or 'gone')[:12]}, the campaign last wrote "
            f"{marker.head[:12] if marker else '?'}); the campaign stopped updating it",
            pull,
            marker,
            say_stop=not stop_said(pull.body),
        )
    if now.changes is None:
        return Decision(
            Action.CLOSE,
            State.NOTHING_TO_DO,
            f"nothing left to rewrite at {now.base[:12]}: closed PR #{pull.number}",
            pull,
            marker,
        )
    if asked:
        why = "a person asked for the branch to be recreated"
    elif marker is not None and now.tip != marker.head:
        why = "the last run stopped before it moved the branch"
    elif marker is not None and marker.base != now.base:
        why = f"the default branch moved ({marker.base[:12]} -> {now.base[:12]})"
    elif marker is not None and marker.changes != now.changes:
        why = "the rewrite changed"
    else:
        return Decision(Action.REFRESH, State.UNCHANGED, "up to date", pull, marker)
    return Decision(Action.RECREATE, State.UPDATED, f"{why}: recreated the branch", pull, marker)


def _without_open(now: Situation) -> Decision:
    last = now.pulls[0] if now.pulls else None
    last_marker = read_marker(last.body) if last is not None else None
    if now.changes is None:
        if last is not None and last.merged:
            return Decision(
                Action.NOTHING,
                State.MERGED,
                f"PR #{last.number} was merged; nothing left to rewrite",
                last,
                last_marker,
            )
        return Decision(Action.NOTHING, State.NOTHING_TO_DO, "nothing to rewrite")
    if (
        last is not None
        and not last.merged
        and last_marker is not None
        and not last_marker.closed
        and last_marker.changes == now.changes
    ):
        return Decision(
            Action.NOTHING,
            State.UNCHANGED,
            f"PR #{last.number} was closed without merging and the rewrite is the same; "
            "reopen it to let the campaign keep it, or a new PR opens when the rewrite changes",
            last,
            last_marker,
        )
    known = {h for m in (read_marker(p.body) for p in now.pulls) if m is not None for h in m.ours}
    if now.tip is not None and now.tip not in known:
        return Decision(
            Action.NOTHING,
            State.UNCHANGED,
            f"the campaign's branch holds {now.tip[:12]}, a commit the campaign did not "
            "write, and no open PR; delete the branch (or open a PR from it) to go on",
        )
    return Decision(Action.OPEN, State.OPENED, "opened a PR with the rewrite")
