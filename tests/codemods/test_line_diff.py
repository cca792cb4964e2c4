"""line_diff.py: a line diff whose work is bounded whatever the lines (the hunks of
``/qnn migrate``, the excerpt splice, ``--diff``)."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qnn_migrate.codemods.line_diff import (
    MAX_DIFF_STEPS,
    DiffWork,
    Opcode,
    opcodes,
    unified_lines,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PAIRS = sorted(FIXTURES.glob("**/*.in.py"))
MAX_FILE_BYTES = 512 * 1024  # /qnn migrate's cap on a file


KIND = {(True, True): "replace", (True, False): "delete", (False, True): "insert"}


def rebuilt(a: Sequence[str], b: Sequence[str], codes: list[Opcode]) -> list[str]:
    """``b`` rebuilt from ``a`` by ``codes``, checking they cover both sides in order and
    that every ``equal`` range is equal."""
    out: list[str] = []
    i = j = 0
    for tag, i1, i2, j1, j2 in codes:
        assert (i1, j1) == (i, j) and i1 <= i2 and j1 <= j2 and (i1, j1) != (i2, j2)
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
            out += a[i1:i2]
        else:
            assert tag == KIND[(i2 > i1, j2 > j1)]
            out += b[j1:j2]
        i, j = i2, j2
    assert (i, j) == (len(a), len(b))
    return out


def edits(codes: list[Opcode]) -> int:
    return sum(i2 - i1 + j2 - j1 for tag, i1, i2, j1, j2 in codes if tag != "equal")


lines = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "\n", "x = 1\n", "    pass\n"]), max_size=30)


@settings(max_examples=300, deadline=None)
@given(a=lines, b=lines, budget=st.sampled_from([0, 5, 50, MAX_DIFF_STEPS]))
def test_opcodes_rebuild_the_new_side_under_any_budget(
    a: list[str], b: list[str], budget: int
) -> None:
    work = DiffWork()
    codes = opcodes(a, b, budget=budget, work=work)
    assert rebuilt(a, b, codes) == b
    if budget == MAX_DIFF_STEPS:
        assert not work.coarse


@given(a=st.lists(st.integers(0, 40).map(str), unique=True, max_size=30), b=lines)
def test_with_no_repeated_line_the_edits_are_minimal(a: list[str], b: list[str]) -> None:
    """Control on quality: unique old lines anchor nothing wrongly; the edit count is at most
    difflib's (which is not minimal either)."""
    codes = opcodes(a, b)
    assert rebuilt(a, b, codes) == b
    assert edits(codes) <= edits(difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes())


def _as_good_as_difflib(source: Path) -> bool:
    """Checks one golden rewrite; whether the unified diff is difflib's very one."""
    a = source.read_text("utf-8").splitlines(keepends=True)
    new = source.with_name(source.name.replace(".in.py", ".out.py")).read_text("utf-8")
    b = new.splitlines(keepends=True)
    codes = opcodes(a, b)
    assert rebuilt(a, b, codes) == b
    assert edits(codes) <= edits(difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes())
    ours = list(unified_lines(a, b, "a/f.py", "b/f.py"))
    reference = list(difflib.unified_diff(a, b, "a/f.py", "b/f.py"))
    assert sum(x.startswith("@@") for x in ours) <= sum(x.startswith("@@") for x in reference)
    return ours == reference


@pytest.mark.parametrize("source", PAIRS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_on_real_rewrites_it_is_as_good_as_difflib(source: Path) -> None:
    """The golden fixtures' rewrites: exact, no more changed lines and no more hunks than
    difflib's matcher."""
    _as_good_as_difflib(source)


def test_most_real_rewrites_give_difflibs_very_diff() -> None:
    """Both are minimal here; where several minimal diffs exist, a moved blank line may sit
    elsewhere (four fixtures of the lot: the blank lines around --target executorch's helper
    in import_groups_sorted_across, import_sections_and_noqa and single_module_all_params,
    after a removed ``try`` in qnn-passes' unused_import_removed)."""
    same = [_as_good_as_difflib(source) for source in PAIRS]
    assert len(same) >= 20 and sum(same) >= len(same) - 4


def _repeated(n: int) -> tuple[list[str], list[str]]:
    a = ["a = 1\n", *["    x = 1\n"] * n, "b = 1\n", *["    x = 1\n"] * n, "c = 1\n"]
    return a, [line.replace("= 1", "= 2") if line[0] != " " else line for line in a]


def test_many_repeated_lines_cost_linear_work(
    python_lines: Callable[[Callable[[], object], int], int],
) -> None:
    """Counted in Python lines run, not time: doubling the file at most doubles the work.
    (difflib's matcher, the control, does quadratic work on the same input.)"""
    runs = {}
    for n in (1000, 2000, 4000):
        a, b = _repeated(n)
        runs[n] = python_lines(lambda: rebuilt(a, b, opcodes(a, b)), 100 * n)  # noqa: B023
    assert runs[4000] <= 2.2 * runs[2000] and runs[2000] <= 2.2 * runs[1000]
    a, b = _repeated(1000)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    with pytest.raises(AssertionError, match="more than"):
        python_lines(matcher.get_opcodes, 100 * 1000)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    line=st.sampled_from(["x = 1\n", "\n", "    pass\n"]),
    every=st.sampled_from([1, 2, 3, 97, 5000]),
    shift=st.booleans(),
)
def test_at_the_cap_the_work_stays_within_the_budget(line: str, every: int, shift: bool) -> None:
    """Property at /qnn migrate's file cap: one line repeated, every ``every``-th changed
    (or also shifted by an inserted line): steps stay within the budget plus a pass over the
    lines, and the answer is exact even where the budget made it coarse."""
    count = MAX_FILE_BYTES // len(line)
    a = [line] * count
    b = [f"y{i}\n" if i % every == 0 else line for i in range(count)]
    if shift:
        b.insert(count // 2, "inserted\n")
    work = DiffWork()
    codes = opcodes(a, b, work=work)
    assert work.steps <= MAX_DIFF_STEPS + 1 + 4 * (len(a) + len(b))
    assert rebuilt(a, b, codes) == b
