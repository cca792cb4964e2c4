"""What changed since the last nightly run, and the text of the one nightly issue (pure).

Per SoC and test, tonight's status is compared with the last status the test had that
was neither INFRA nor SKIP:

* a **new failure** went from PASS (or from nothing: a new test) to FAIL/ERROR/MISSING;
* a **fix** went from FAIL/ERROR/MISSING to PASS;
* a change is **flaky** instead when the test had already flipped between passing and
  failing earlier in the window (the last ``window`` nightly runs): it is listed once,
  as flaky, and not as a new failure or a fix.

INFRA results are counted but never a change: a dead phone is not a regression. A night
with no change at all edits nothing. The issue is found by its hidden marker and author,
holds one section per night that changed something (newest first), and stays under
GitHub's 65,536-character limit by dropping the oldest sections.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from qnn_migrate.bot import text as text_mod
from qnn_migrate.bot.model import ShardResult, Status
from qnn_migrate.bot.nightly.baseline import BRANCH, DIRECTORY, RunInfo, SocBaseline

MARKER = "<!-- qnn-nightly-issue -->"
TITLE = "QNN nightly device tests: new failures, fixes and flaky tests"
LABEL = "qnn-nightly"
MAX_BODY_CHARS = 60_000
MAX_ROWS = 60
MAX_NIGHTS = 30
_NIGHT_RE = re.compile(r"<!-- night (\S+) -->\n.*?<!-- /night -->\n", re.S)


@dataclass(frozen=True)
class Change:
    """One test on one SoC whose outcome changed tonight."""

    soc: str
    test_id: str
    now: Status
    before: Status | None
    message: str = ""
    recent: tuple[Status, ...] = ()  # the window's statuses, oldest first, for flaky rows


@dataclass(frozen=True)
class NightlyDiff:
    """Tonight against the stored history, over every SoC that ran."""

    run: RunInfo
    new_failures: tuple[Change, ...] = ()
    fixes: tuple[Change, ...] = ()
    flaky: tuple[Change, ...] = ()
    infra: Mapping[str, int] = field(default_factory=dict)  # SoC -> INFRA results tonight
    ran: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # SoC -> (ran, expected)

    @property
    def quiet(self) -> bool:
        return not (self.new_failures or self.fixes or self.flaky)


def _passing(status: Status) -> bool | None:
    """True/False for pass/fail; None for statuses that say nothing about the code."""
    if status in (Status.INFRA, Status.SKIP):
        return None
    return status is Status.PASS


def _flips(statuses: Sequence[Status]) -> int:
    outcomes = [p for p in map(_passing, statuses) if p is not None]
    return sum(a != b for a, b in itertools.pairwise(outcomes))


def _column(after: SocBaseline, run: RunInfo) -> int | None:
    """Where ``run`` sits in ``after``: not always last (a re-run of an old night)."""
    return next((i for i, r in enumerate(after.runs) if r.same_night(run)), None)


def compare(
    before: SocBaseline | None,
    after: SocBaseline,
    results: Sequence[ShardResult],
    run: RunInfo,
) -> tuple[list[Change], list[Change], list[Change], int, tuple[int, int]]:
    """The changes on one SoC between the history ``before`` and ``run``'s column of ``after``.

    The column is ``run``'s own, wherever the history put it: a re-run of an old night
    sits before the later nights, and the newest column is then another night's outcome
    (comparing it would blame the old night's commit for a later night's failure). The
    recent statuses stop at ``run`` too. A night already out of the window changes nothing.
    """
    messages = {
        r.test_id: r.message for s in results if s.shard.soc == after.soc for r in s.results
    }
    at = _column(after, run)
    if at is None:
        return [], [], [], 0, (0, 0)
    upto = SocBaseline(
        after.soc,
        after.window,
        after.runs[: at + 1],
        {t: seen[: at + 1] for t, seen in after.tests.items()},
    )
    tonight: dict[str, Status] = {}
    for test_id, seen in after.tests.items():
        status = seen[at]
        if status is not None:
            tonight[test_id] = status
    new, fixed, flaky = [], [], []
    infra = sum(1 for s in tonight.values() if s is Status.INFRA)
    for test_id, now in sorted(tonight.items()):
        now_pass = _passing(now)
        if now_pass is None:
            continue
        earlier = before.history(test_id) if before else []
        last = next((s for s in reversed(earlier) if _passing(s) is not None), None)
        if last is not None and _passing(last) == now_pass:
            continue
        if last is None and now_pass:
            continue  # a new test that passes is not news
        recent = tuple(upto.history(test_id)[-after.window :])
        change = Change(after.soc, test_id, now, last, messages.get(test_id, ""), recent)
        if _flips(recent) >= 2:
            flaky.append(change)
        elif now_pass:
            fixed.append(change)
        else:
            new.append(change)
    ran = sum(1 for s in tonight.values() if s not in (Status.INFRA, Status.MISSING))
    return new, fixed, flaky, infra, (ran, len(tonight))


def diff(
    befores: Mapping[str, SocBaseline | None],
    afters: Sequence[SocBaseline],
    results: Sequence[ShardResult],
    run: RunInfo,
) -> NightlyDiff:
    new: list[Change] = []
    fixes: list[Change] = []
    flaky: list[Change] = []
    infra: dict[str, int] = {}
    ran: dict[str, tuple[int, int]] = {}
    for after in afters:
        n, f, fl, inf, counts = compare(befores.get(after.soc), after, results, run)
        new += n
        fixes += f
        flaky += fl
        infra[after.soc] = inf
        ran[after.soc] = counts
    return NightlyDiff(run, tuple(new), tuple(fixes), tuple(flaky), infra, ran)


# ------------------------------------------------------------------------------ the issue

_ICON = {
    Status.PASS: "✅",
    Status.FAIL: "❌",
    Status.ERROR: "💥",
    Status.MISSING: "❔",
    Status.INFRA: "🔌",
    Status.SKIP: "⏭️",
}


def cell(text: str, limit: int = 160) -> str:
    """Untrusted text made safe for one markdown table cell (``bot.text.escape``)."""
    return text_mod.escape(text, limit)


def _table(header: str, rows: Sequence[str], total: int) -> list[str]:
    out = [header, "|" + "---|" * header.count("|", 1), *rows[:MAX_ROWS]]
    if total > MAX_ROWS:
        out.append(f"\n…and {total - MAX_ROWS} more; see the run's artifacts.")
    return out


def render_night(d: NightlyDiff) -> str:
    """One night's section of the issue (only called when the night is not quiet)."""
    run = d.run
    link = f" · [run]({run.run_url})" if run.run_url.startswith("https://") else ""
    # Keyed by the workflow run, so a re-run report job replaces its night's section.
    key = run.run_url or f"{run.date}/{run.sha}"
    lines = [
        f"<!-- night {key} -->",
        f"## {run.date[:10]} · `{run.sha[:12]}`{link}",
        "",
    ]
    if d.new_failures:
        lines += [f"**New failures ({len(d.new_failures)})**", ""]
        rows = [
            f"| {c.soc} | `{c.test_id}` | {c.now.value} | "
            f"{c.before.value if c.before else 'new test'} | {cell(c.message)} |"
            for c in d.new_failures
        ]
        lines += [*_table("| SoC | test | now | before | message |", rows, len(rows)), ""]
    if d.fixes:
        lines += [f"**Fixed ({len(d.fixes)})**", ""]
        rows = [
            f"| {c.soc} | `{c.test_id}` | {c.before.value if c.before else ''} |" for c in d.fixes
        ]
        lines += [*_table("| SoC | test | was |", rows, len(rows)), ""]
    if d.flaky:
        lines += [
            f"**Flaky ({len(d.flaky)})**: flipped between passing and failing more than once "
            "in the window, so tonight's change is not news",
            "",
        ]
        rows = [
            f"| {c.soc} | `{c.test_id}` | {c.now.value} | {''.join(_ICON[s] for s in c.recent)} |"
            for c in d.flaky
        ]
        lines += _table("| SoC | test | tonight | recent runs, oldest first |", rows, len(rows))
        lines += [""]
    counts = ", ".join(
        f"{soc} ran {ran} of {expected}" + (f" ({d.infra[soc]} INFRA)" if d.infra.get(soc) else "")
        for soc, (ran, expected) in sorted(d.ran.items())
    )
    lines += [f"Coverage: {counts}." if counts else "", "<!-- /night -->", ""]
    return "\n".join(lines)


def render_issue(night: str, previous_body: str | None) -> str:
    """The whole issue body: header, tonight's section, then earlier nights (capped)."""
    header = "\n".join(
        [
            MARKER,
            "# QNN nightly device tests",
            "",
            "Written by the nightly run of `qnn-device-tests.yml`: one section per night whose "
            "results changed, newest first. INFRA results (phones, adb, timeouts) are never "
            f"counted as failures. Per-test history: branch `{BRANCH}`, `{DIRECTORY}/<SOC>.json`.",
            "",
            "",
        ]
    )
    sections = [night] + [m.group(0) for m in _NIGHT_RE.finditer(previous_body or "")]
    seen: set[str] = set()
    kept: list[str] = []
    size = len(header)
    for section in sections:
        key = section.split("\n", 1)[0]
        if key in seen:
            continue  # the same night reported twice (a re-run): keep the newest text
        seen.add(key)
        if len(kept) >= MAX_NIGHTS or size + len(section) + 1 > MAX_BODY_CHARS:
            break
        kept.append(section)
        size += len(section) + 1
    return header + "\n".join(kept)


@dataclass(frozen=True)
class ExistingIssue:
    """An open issue, as ``gh issue list --json number,author,body`` describes it."""

    number: int
    author: str
    body: str

    @classmethod
    def from_gh(cls, doc: Mapping[str, Any]) -> ExistingIssue:
        author = doc.get("author") or {}
        login = author.get("login", "") if isinstance(author, Mapping) else str(author)
        return cls(int(doc["number"]), str(login), str(doc.get("body") or ""))


def parse_issue_list(doc: Any) -> list[ExistingIssue]:
    """The issues of ``gh issue list --json number,author,body`` (a JSON list of objects).

    Raises ``ValueError`` saying what is wrong for anything else (a JSON object was
    iterated as its keys, and each key then failed with an ``AttributeError``)."""
    if not isinstance(doc, list):
        raise ValueError(
            f"must be a JSON list of issues (gh issue list --json number,author,body), "
            f"not a {type(doc).__name__}"
        )
    issues: list[ExistingIssue] = []
    for i, item in enumerate(doc):
        if not isinstance(item, Mapping) or "number" not in item:
            raise ValueError(f"entry {i} must be an object with a number, not {str(item)[:60]!r}")
        try:
            issues.append(ExistingIssue.from_gh(item))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"entry {i}: {exc}") from exc
    return issues


def same_bot(login: str, bot_login: str) -> bool:
    """``github-actions[bot]`` (REST) and ``app/github-actions`` (gh/GraphQL) are one bot."""

    def norm(name: str) -> str:
        return name.removeprefix("app/").removesuffix("[bot]").lower()

    return norm(login) == norm(bot_login)


@dataclass(frozen=True)
class IssueAction:
    """What the nightly report job should do with the issue."""

    kind: Literal["none", "create", "update"]
    number: int | None = None
    title: str = TITLE
    body: str = ""


def plan_issue(d: NightlyDiff, existing: Sequence[ExistingIssue], bot_login: str) -> IssueAction:
    """Quiet night: nothing. Otherwise update our open issue, or open one."""
    if d.quiet:
        return IssueAction("none")
    ours = [i for i in existing if MARKER in i.body and same_bot(i.author, bot_login)]
    night = render_night(d)
    if ours:
        target = min(ours, key=lambda i: i.number)
        return IssueAction("update", target.number, TITLE, render_issue(night, target.body))
    return IssueAction("create", None, TITLE, render_issue(night, None))
