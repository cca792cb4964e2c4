"""nightly/issue.py: what changed since last night, and the one issue that says so.

The issue text is checked against tests/bot/nightly/golden/nightly_issue.md; regenerate it with
``QNN_REGEN_GOLDEN=1 .venv/bin/pytest -n 0 tests/bot/nightly/test_issue.py``.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from qnn_migrate_tests.bot.support import tonight_results

from qnn_migrate.bot.model import Status
from qnn_migrate.bot.nightly import baseline
from qnn_migrate.bot.nightly import issue as nightly
from qnn_migrate.bot.nightly.baseline import RunInfo, SocBaseline
from qnn_migrate.bot.nightly.issue import ExistingIssue

GOLDEN = Path(__file__).parent / "golden"
P, F, E, INF, M, S = (
    Status.PASS,
    Status.FAIL,
    Status.ERROR,
    Status.INFRA,
    Status.MISSING,
    Status.SKIP,
)
FP = "TestQNNFloatingPointOperator"


def night(n: int) -> RunInfo:
    """Night ``n`` of a run of nights starting on 2026-11-01."""
    date = f"2026-{11 + (n - 1) // 30:02d}-{1 + (n - 1) % 30:02d}T02:00:00Z"
    sha = hashlib.sha1(str(n).encode()).hexdigest()
    return RunInfo(sha, date, f"https://github.com/o/r/actions/runs/{n}")


def history(soc: str, nights: list[dict[str, Status]]) -> SocBaseline | None:
    b: SocBaseline | None = None
    for n, statuses in enumerate(nights, start=1):
        b = baseline.record(b, soc, tonight_results(soc, statuses), night(n))
    return b


def run_night(
    before: SocBaseline | None, soc: str, statuses: dict[str, Status], n: int, **kw: dict[str, str]
) -> nightly.NightlyDiff:
    res = tonight_results(soc, statuses, kw.get("messages"))
    after = baseline.record(before, soc, res, night(n))
    return nightly.diff({soc: before}, [after], res, night(n))


def test_new_failures_fixes_and_flaky_are_told_apart() -> None:
    before = history(
        "SM8650",
        [
            {"abs": P, "add": F, "cos": P, "sin": P, "tan": P, "relu": P},
            {"abs": P, "add": F, "cos": F, "sin": P, "tan": P, "relu": INF},
            {"abs": P, "add": F, "cos": P, "sin": P, "tan": P, "relu": P},
        ],
    )
    d = run_night(
        before,
        "SM8650",
        {"abs": F, "add": P, "cos": F, "sin": INF, "tan": S, "relu": P, "new1": E, "new2": P},
        4,
    )
    assert [c.test_id.rsplit("_", 1)[1] for c in d.new_failures] == ["abs", "new1"]
    assert d.new_failures[1].before is None
    assert [c.test_id.rsplit("_", 1)[1] for c in d.fixes] == ["add"]
    assert [c.test_id.rsplit("_", 1)[1] for c in d.flaky] == ["cos"]
    assert d.flaky[0].recent == (P, F, P, F)
    assert d.infra == {"SM8650": 1}
    assert d.ran == {"SM8650": (7, 8)}
    assert not d.quiet


def test_infra_and_skip_are_never_news_and_missing_is_a_failure() -> None:
    before = history("SM8650", [{"abs": P, "add": P, "cos": P}])
    d = run_night(before, "SM8650", {"abs": INF, "add": S, "cos": M}, 2)
    assert [c.test_id for c in d.new_failures] == [f"{FP}.test_qnn_backend_cos"]
    # After an INFRA night, the comparison reaches back to the last real outcome.
    before2 = baseline.record(before, "SM8650", tonight_results("SM8650", {"abs": INF}), night(2))
    d2 = run_night(before2, "SM8650", {"abs": P}, 3)
    assert d2.quiet


def test_a_quiet_night_edits_nothing_even_with_an_open_issue() -> None:
    before = history("SM8650", [{"abs": P, "add": F}])
    d = run_night(before, "SM8650", {"abs": P, "add": F}, 2)
    assert d.quiet
    ours = ExistingIssue(9, "app/github-actions", nightly.MARKER + "\nold")
    assert nightly.plan_issue(d, [ours], "github-actions[bot]") == nightly.IssueAction("none")


def _golden_diff() -> nightly.NightlyDiff:
    before = history(
        "SM8650",
        [
            {"abs": P, "add": F, "cos": P},
            {"abs": P, "add": F, "cos": F},
            {"abs": P, "add": F, "cos": P},
        ],
    )
    return run_night(
        before,
        "SM8650",
        {"abs": F, "add": P, "cos": F, "sin": INF},
        4,
        messages={
            "abs": "AssertionError: max abs diff 0.25 > atol 0.01 | see <img src=x> @someone"
        },
    )


def test_issue_body_matches_the_golden_file() -> None:
    action = nightly.plan_issue(_golden_diff(), [], "github-actions[bot]")
    assert action.kind == "create" and action.number is None
    golden = GOLDEN / "nightly_issue.md"
    if os.environ.get("QNN_REGEN_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(action.body)
    assert action.body == golden.read_text()
    assert "<img" not in action.body and "@\u200dsomeone" in action.body


def test_the_issue_is_updated_newest_night_first_and_found_by_marker_and_author() -> None:
    first = nightly.plan_issue(_golden_diff(), [], "github-actions[bot]")
    impostor = ExistingIssue(3, "mallory", first.body)
    ours = ExistingIssue(7, "app/github-actions", first.body)
    before = history("SM8650", [{"abs": P}])
    later = run_night(before, "SM8650", {"abs": F}, 5)
    action = nightly.plan_issue(later, [impostor, ours], "github-actions[bot]")
    assert action.kind == "update" and action.number == 7
    assert action.body.index("2026-11-05") < action.body.index("2026-11-04")
    assert action.body.count(nightly.MARKER) == 1
    # Only someone else's issue carries the marker: ours is opened.
    assert nightly.plan_issue(later, [impostor], "github-actions[bot]").kind == "create"


def test_the_issue_stays_under_the_size_cap_and_a_rerun_night_is_not_listed_twice() -> None:
    body = ""
    for n in range(1, 40):
        d = run_night(None, "SM8650", {"abs": F}, n)
        body = nightly.render_issue(nightly.render_night(d), body)
        assert len(body) <= nightly.MAX_BODY_CHARS
    assert body.count("<!-- night ") == nightly.MAX_NIGHTS
    again = nightly.render_issue(
        nightly.render_night(run_night(None, "SM8650", {"abs": F}, 39)), body
    )
    assert again.count(f"<!-- night {night(39).run_url} -->") == 1


def test_a_rerun_of_an_old_night_is_compared_on_its_own_column() -> None:
    """Night 2's job re-run after night 3: its changes are night 2's, never night 3's.

    Night 3 broke ``add``; night 2 (re-run, the same results) broke nothing. The re-run's
    section names night 2's commit, so it must not list ``add``: that would blame night 2's
    commit for night 3's failure.
    """
    stored = history("SM8650", [{"abs": P, "add": P}, {"abs": P, "add": P}, {"abs": P, "add": F}])
    assert stored is not None
    rerun = RunInfo(night(2).sha, "2026-11-09T10:00:00Z", night(2).run_url)
    res = tonight_results("SM8650", {"abs": P, "add": P})
    after = baseline.record(stored, "SM8650", res, rerun)
    d = nightly.diff({"SM8650": stored.before(rerun)}, [after], res, rerun)
    assert d.quiet, [c.test_id for c in d.new_failures]
    # And a re-run that does change something is told on its own night: abs failed on
    # night 2 (re-run), and its recent history stops at night 2.
    res2 = tonight_results("SM8650", {"abs": F, "add": P})
    after2 = baseline.record(stored, "SM8650", res2, rerun)
    d2 = nightly.diff({"SM8650": stored.before(rerun)}, [after2], res2, rerun)
    assert [c.test_id.rsplit("_", 1)[1] for c in d2.new_failures] == ["abs"]
    assert d2.new_failures[0].recent == (P, F)
    assert d2.ran == {"SM8650": (2, 2)}
    # Control: the same results as the newest night are compared on the newest column.
    d3 = run_night(stored, "SM8650", {"abs": P, "add": F}, 4)
    assert d3.quiet
