"""The results comment's "Programs" section: per test IDENTICAL / CHANGED / NEW PROGRAM (pure but ``gather``, which reads the files).

One summary line per SoC and tier ("programs: 91 identical to main's nightly (run at
abc1234), 0 changed", or "... identical to the merge base (abc1234) ..." when the run has
the merge base's shards of ``--compare base``), a table of the tests that are not
identical, and what changed in a collapsed section. Every piece of recorded text (operator names, dtypes, shapes) came from
PR code and is escaped with ``text.escape``; test ids are the planned ones. The section
folds to fit the budget it is given: the full form, then without the list of identical
tests, then without what changed, then the first rows of the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from qnn_migrate.bot import artifacts
from qnn_migrate.bot.artifacts import ArtifactError
from qnn_migrate.bot.model import Shard, ShardResult
from qnn_migrate.bot.nightly import program_baseline
from qnn_migrate.bot.nightly.program_baseline import Place
from qnn_migrate.bot.programs import (
    Comparison,
    ProgramVerdict,
    TestPrograms,
    compare,
    compare_all,
)
from qnn_migrate.bot.text import escape

BUDGET = 16_000  # bytes of the 65,536-byte comment the section may take
CHANGES_PER_TEST = 12
CHANGE_CHARS = 300
# The paths whose change between the baseline's commit and the merge base can change a
# lowered program: the QNN backend; the lowering every backend shares (exir, export, the
# generic backend transforms); the shared test harness the tests lower through; and the
# torch pin, whose export gives the graphs that are lowered.
MATTERING = (
    "backends/qualcomm/",
    "backends/transforms/",
    "backends/test/harness/",
    "exir/",
    "export/",
)
TORCH_PINS = ("torch_pin.py", ".ci/docker/ci_commit_pins/pytorch.txt", "install_requirements.py")
WHERE = (
    "that shape programs (under `backends/qualcomm`, `backends/transforms`, "
    "`backends/test/harness`, `exir` or `export`, or the torch pin)"
)


def shapes_programs(path: str) -> bool:
    """Whether a change to ``path`` (relative to the repository) can change a program."""
    return path.startswith(MATTERING) or path in TORCH_PINS


ICON = {
    ProgramVerdict.IDENTICAL: "🟰",
    ProgramVerdict.CHANGED: "🔶",
    ProgramVerdict.NEW_PROGRAM: "🆕",
    ProgramVerdict.NO_PROGRAM: "➖",
    ProgramVerdict.NOT_FINGERPRINTED: "⚠️",
}


@dataclass(frozen=True)
class ProgramGroup:
    """The comparisons of one SoC on one tier against that SoC's and tier's baseline."""

    soc: str
    simulator: bool
    baseline_sha: str | None  # None: no program baseline for this SoC and tier
    comparisons: tuple[Comparison, ...]
    stale: str = ""  # stale_note(...) or ""
    # `--compare base`: compared with the run at the merge base (``baseline_sha``), not the
    # nightly; ``base_note`` says what that run lacked (shards that did not report, failures).
    against_base: bool = False
    base_note: str = ""
    # ExecuTorch's own XNNPACK/portable tests (Shard.other_backends): their own baseline and
    # their own rows, never counted with the QNN programs of the same host.
    other_backends: bool = False

    @property
    def place(self) -> str:
        if self.other_backends:
            return "other backends (x86 simulator host)"
        return f"{self.soc} (x86 simulator)" if self.simulator else self.soc

    def count(self, verdict: ProgramVerdict) -> int:
        return sum(c.verdict is verdict for c in self.comparisons)


COMPARE_BASE_HINT = (
    "`/qnn test ... --compare base` runs the same shards at the merge base on the "
    "simulator and compares with that instead."
)


def stale_note(
    baseline_sha: str,
    merge_base_sha: str,
    changed_paths: Sequence[str],
    *,
    capped: bool = False,
    direction: str = "older",
) -> str:
    """A note when files that shape programs changed between the baseline and the merge base.

    ``changed_paths``: the files that differ between ``baseline_sha`` and ``merge_base_sha``
    (the caller reads them from GitHub's compare API, ``pr.staleness``); ``capped``: GitHub
    cut that list at its 300 files, so what matters may be among the rest. ``direction``:
    the baseline is ``older`` than the merge base (an ancestor of it), ``newer`` (main moved
    on from the merge base to it), or ``apart`` (on another line of history). Empty when
    nothing that matters changed.
    """
    mattering = [p for p in changed_paths if shapes_programs(p)]
    if (not mattering and not capped) or baseline_sha == merge_base_sha:
        return ""
    where = WHERE
    if not mattering:
        return (
            f"GitHub lists at most 300 changed files, and listed 300 between the nightly "
            f"baseline (`{baseline_sha[:12]}`) and this PR's merge base "
            f"(`{merge_base_sha[:12]}`), none {where}; such files may be among the rest, "
            "so a CHANGED program may come from main, not from this PR. " + COMPARE_BASE_HINT
        )
    count = f"{len(mattering)} file(s)" + (
        " (or more: GitHub lists at most 300 changed files)" if capped else ""
    )
    if direction == "newer":
        stands = (
            f"is newer than this PR's merge base (`{merge_base_sha[:12]}`) by {count} {where}: "
            "a CHANGED program may come from main's changes since the merge base, which "
            "this PR does not have, not from this PR."
        )
    elif direction == "apart":
        stands = (
            f"and this PR's merge base (`{merge_base_sha[:12]}`) are on different lines of "
            f"history and differ in {count} {where}: a CHANGED program may come from main, "
            "not from this PR."
        )
    else:
        stands = (
            f"is older than this PR's merge base (`{merge_base_sha[:12]}`) in {count} {where}: "
            "a CHANGED program may come from main, not from this PR."
        )
    return f"The nightly baseline (`{baseline_sha[:12]}`) {stands} " + COMPARE_BASE_HINT


def stale_unknown(baseline_sha: str, why: str) -> str:
    """The note when GitHub could not say what changed since the baseline.

    ``why`` is the bot's own text; what GitHub said in it was escaped (``pr.staleness``).
    """
    return (
        f"Whether files {WHERE} changed between the nightly "
        f"baseline (`{baseline_sha[:12]}`) and this PR's merge base could not be checked: "
        f"{why}. A CHANGED program may come from main, not from this PR. " + COMPARE_BASE_HINT
    )


def summary_line(group: ProgramGroup) -> str:
    """'programs: N identical to main's nightly (run at abc1234), M changed[, ...]'."""
    rest = [
        f"{group.count(v)} {label}"
        for v, label in (
            (ProgramVerdict.NEW_PROGRAM, "new"),
            (ProgramVerdict.NO_PROGRAM, "with no program recorded"),
            (ProgramVerdict.NOT_FINGERPRINTED, "not fingerprinted"),
        )
        if group.count(v)
    ]
    if not group.baseline_sha:
        return f"programs on {group.place}: no nightly baseline to compare with; " + ", ".join(
            rest or ["no tests"]
        )
    against = (
        f"the merge base (`{group.baseline_sha[:7]}`)"
        if group.against_base
        else f"main's nightly (run at `{group.baseline_sha[:7]}`)"
    )
    line = (
        f"programs on {group.place}: {group.count(ProgramVerdict.IDENTICAL)} identical to "
        f"{against}, {group.count(ProgramVerdict.CHANGED)} changed"
    )
    return line + "".join(f", {r}" for r in rest)


def _row(group: ProgramGroup, c: Comparison) -> str:
    note = escape(c.note, CHANGE_CHARS) if c.note else ""
    if c.verdict is ProgramVerdict.CHANGED:
        note = escape(c.changes[0], 120) + (
            f" (+{len(c.changes) - 1} more)" if c.changes[1:] else ""
        )
    return f"| {group.place} | `{c.test_id}` | {ICON[c.verdict]} {c.verdict.value} | {note} |"


def _changes(group: ProgramGroup, c: Comparison) -> list[str]:
    shown = c.changes[:CHANGES_PER_TEST]
    out = [f"- `{c.test_id}` on {group.place}:"]
    out += [f"  - {escape(change, CHANGE_CHARS)}" for change in shown]
    if len(c.changes) > len(shown):
        out.append(f"  - …and {len(c.changes) - len(shown)} more")
    return out


def _section(groups: Sequence[ProgramGroup], level: int, max_rows: int | None) -> str:
    out = ["", "### Programs", ""]
    for g in groups:
        out.append(f"**{summary_line(g)}**  ")
    out[-1] = out[-1].rstrip()
    for g in groups:
        for note in (g.stale, g.base_note):
            if note:
                out += ["", f"> ⚠️ {g.place}: {note}"]
    rows = [
        (g, c) for g in groups for c in g.comparisons if c.verdict is not ProgramVerdict.IDENTICAL
    ]
    if rows:
        shown = rows if max_rows is None else rows[:max_rows]
        out += ["", "| SoC | test | program | what |", "|---|---|---|---|"]
        out += [_row(g, c) for g, c in shown]
        if len(shown) < len(rows):
            out += ["", f"…and {len(rows) - len(shown)} more tests whose program is not identical."]
    changed = [(g, c) for g, c in rows if c.verdict is ProgramVerdict.CHANGED]
    if changed and level <= 1:
        out += ["", f"<details><summary>What changed ({len(changed)} tests)</summary>", ""]
        for g, c in changed:
            out += _changes(g, c)
        out += ["", "</details>"]
    same = [(g, c) for g in groups for c in g.comparisons if c.verdict is ProgramVerdict.IDENTICAL]
    if same and level == 0:
        out += ["", f"<details><summary>Identical ({len(same)} tests)</summary>", ""]
        out += [f"- `{c.test_id}` on {g.place}" for g, c in same]
        out += ["", "</details>"]
    return "\n".join(out)


def render_section(groups: Sequence[ProgramGroup], budget: int = BUDGET) -> str:
    """The section, folded until it fits ``budget`` UTF-8 bytes ("" when there are no groups)."""
    if not groups:
        return ""

    def size(text: str) -> int:
        return len(text.encode("utf-8"))

    rows = [
        (g, c) for g in groups for c in g.comparisons if c.verdict is not ProgramVerdict.IDENTICAL
    ]
    # Lower bounds of each level's size, so that a level that cannot fit is never rendered
    # (11,000 changed tests would render tens of megabytes before folding).
    floor = sum(len(c.test_id) + len(g.place) + 30 for g, c in rows)
    changes = sum(
        sum(min(len(x), CHANGE_CHARS) for x in c.changes[:CHANGES_PER_TEST]) for _, c in rows
    )
    same = sum(len(c.test_id) + 10 for g in groups for c in g.comparisons) - floor
    for level, least in ((0, floor + changes + same), (1, floor + changes), (2, floor)):
        if least <= budget:
            text = _section(groups, level, None)
            if size(text) <= budget:
                return text
    # Keep as many table rows as fit: measure the rows once instead of re-rendering.
    used = size(_section(groups, 2, 0)) + 200  # the table header and the "…and N more" line
    keep = 0
    for g, c in rows:
        used += size(_row(g, c)) + 1
        if used > budget:
            break
        keep += 1
    text = _section(groups, 2, keep)
    while keep > 0 and size(text) > budget:
        keep -= 1
        text = _section(groups, 2, keep)
    return text


def gather(
    planned: Sequence[Shard],
    results_dir: Path,
    baseline_dir: Path | None,
    *,
    base: Sequence[Shard] = (),
    base_results: Sequence[ShardResult] = (),
) -> tuple[list[ProgramGroup], list[str]]:
    """Per SoC and tier of ``planned``: each test's programs against that baseline; warnings.

    ``base`` (``--compare base``): the merge base's shards and ``base_results`` their
    results; a SoC and tier they cover is compared with them instead of the nightly.
    """
    warnings: list[str] = []
    recorded = any(
        artifacts.programs_files(folder)
        for shard in planned
        if (folder := artifacts.shard_folder(results_dir, shard.id)) is not None
    )
    if not recorded and not base and not _any_baseline(planned, baseline_dir):
        # No shard ran the recorder and there is nothing to compare with (a lab without
        # it, or results made by hand): the comment says nothing about programs.
        return [], warnings
    heads: dict[Place, dict[str, TestPrograms]] = {}
    order: dict[Place, list[str]] = {}
    for shard in planned:
        key = Place.of(shard)
        heads.setdefault(key, {}).update(artifacts.shard_programs(results_dir, shard))
        order.setdefault(key, []).extend(shard.tests)
    at_base: dict[Place, list[Shard]] = {}
    for shard in base:
        at_base.setdefault(Place.of(shard), []).append(shard)
    groups = []
    for place, head in heads.items():
        tests = list(dict.fromkeys(order[place]))
        if place in at_base:
            shards = at_base[place]
            groups.append(_against_base(place, head, tests, shards, results_dir, base_results))
            continue
        found = None
        if baseline_dir is not None:
            try:
                found = program_baseline.load(baseline_dir, place)
            except ArtifactError as exc:
                warnings.append(f"{exc}; programs compared with no baseline")
        comparisons = compare_all(found.tests if found else {}, head, tests)
        groups.append(
            ProgramGroup(
                place.soc,
                place.simulator,
                found.latest_sha if found else None,
                tuple(comparisons),
                other_backends=place.other_backends,
            )
        )
    return groups, warnings


def _against_base(
    place: Place,
    head: Mapping[str, TestPrograms],
    tests: Sequence[str],
    shards: Sequence[Shard],
    results_dir: Path,
    results: Sequence[ShardResult],
) -> ProgramGroup:
    """One SoC's and tier's programs against the merge base's run of the same tests.

    A test whose merge-base fingerprint is missing (its shard did not report, or did not
    record it) is NOT FINGERPRINTED with why, never IDENTICAL; the group's ``base_note``
    names the shards that did not report and the tests that failed at the merge base.
    """
    reported = {r.shard.id: r for r in results}
    found: dict[str, TestPrograms] = {}
    missing: list[str] = []
    failed: list[str] = []
    for shard in shards:
        result = reported.get(shard.id)
        if result is None or result.infra_reason:
            why = (
                f"its shard {shard.id} did not report"
                if result is None
                else f"its shard {shard.id} did not run ({(result.infra_reason or '')[:120]})"
            )
            missing.append(shard.id)
            found.update({t: TestPrograms(t, problem=why) for t in shard.tests})
            continue
        failed += [r.test_id for r in result.results if r.status.is_failure]
        found.update(artifacts.shard_programs(results_dir, shard))
    comparisons = []
    for t in tests:
        theirs = found.get(t)
        mine = compare(None, head.get(t), t)
        if theirs is not None and not theirs.problem:
            comparisons.append(compare(theirs, head.get(t), t))
        elif mine.verdict is ProgramVerdict.NEW_PROGRAM:  # the PR's is there; the base's not
            why = (theirs.problem if theirs else None) or "its run did not include this test"
            comparisons.append(
                Comparison(t, ProgramVerdict.NOT_FINGERPRINTED, note=f"at the merge base: {why}")
            )
        else:
            comparisons.append(mine)  # the PR's own: no program, or not fingerprinted
    sha = shards[0].sha
    notes = []
    if missing:
        notes.append(
            f"{len(missing)} of {len(shards)} shard(s) of the merge base's run did not report "
            "or did not run "
            f"({', '.join(f'`{m}`' for m in missing[:4])}{' …' if len(missing) > 4 else ''}): "
            "their tests are NOT FINGERPRINTED, not compared"
        )
    if failed:
        notes.append(
            f"{len(failed)} test(s) did not pass there "
            f"({', '.join(f'`{f}`' for f in failed[:4])}{' …' if len(failed) > 4 else ''})"
        )
    base_note = f"At the merge base (`{sha[:12]}`): " + "; ".join(notes) + "." if notes else ""
    return ProgramGroup(
        place.soc,
        place.simulator,
        sha,
        tuple(comparisons),
        against_base=True,
        base_note=base_note,
        other_backends=place.other_backends,
    )


def _any_baseline(planned: Sequence[Shard], baseline_dir: Path | None) -> bool:
    if baseline_dir is None:
        return False
    folder = baseline_dir / program_baseline.DIRECTORY
    return any((folder / Place.of(s).file_name).is_file() for s in planned)
