"""Suggestion hunks: applied the way GitHub commits them, they give exactly the rewrite."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qnn_migrate.bot.pr.suggestions import (
    DiffLines,
    Hunk,
    apply,
    apply_suggestion,
    diff_ranges,
    hunks,
    parses,
    split_lines,
    suggestion_lines,
    unified,
)

FIXTURES = Path(__file__).resolve().parents[2] / "codemods" / "fixtures"
PAIRS = sorted(FIXTURES.glob("**/*.in.py"))


def through_github(old: str, chosen: list[Hunk]) -> str:
    """Apply each hunk from its rendered ``suggestion`` markdown, bottom first."""
    text = old
    for hunk in sorted(chosen, key=lambda h: h.start, reverse=True):
        text = apply_suggestion(text, hunk.start, hunk.end, suggestion_lines(hunk.suggestion()))
    return text


def test_there_are_fixtures() -> None:
    assert len(PAIRS) >= 20


@pytest.mark.parametrize("source", PAIRS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_diffs_as_suggestions_give_the_golden_output(source: Path) -> None:
    old = source.read_text("utf-8")
    new = source.with_name(source.name.replace(".in.py", ".out.py")).read_text("utf-8")
    found = hunks(old, new)
    whole_file = [(1, len(split_lines(old)))]  # the whole file is in the PR's diff here
    assert all(DiffLines(whole_file).anchors(h) for h in found)
    assert through_github(old, found) == new
    assert apply(old, found) == new
    if old != new:
        assert found
        # Control: leaving any one suggestion out no longer gives the golden output.
        assert through_github(old, found[1:]) != new


@given(
    old=st.lists(st.sampled_from(["a", "b", "c", "", "x = 1"]), max_size=12),
    new=st.lists(st.sampled_from(["a", "b", "c", "", "y = 2"]), max_size=12),
    old_eol=st.booleans(),
    new_eol=st.booleans(),
)
def test_any_text_round_trips(old: list[str], new: list[str], old_eol: bool, new_eol: bool) -> None:
    a = "\n".join(old) + ("\n" if old and old_eol else "")
    b = "\n".join(new) + ("\n" if new and new_eol else "")
    if not a:  # GitHub cannot comment on an empty file; the bot never suggests there
        return
    found = hunks(a, b)
    assert apply(a, found) == b
    lines = split_lines(a)
    for h in found:
        assert 1 <= h.start <= h.end <= len(lines)
    assert [h.start for h in found] == sorted(h.start for h in found)
    assert all(x.end < y.start for x, y in itertools.pairwise(found))


def test_insertions_take_in_a_neighbouring_line() -> None:
    (top,) = hunks("b\n", "a\nb\n")
    assert (top.start, top.end, top.lines) == (1, 1, ("a", "b"))
    (below,) = hunks("a\nc\n", "a\nb\nc\n")
    assert (below.start, below.end, below.lines) == (1, 1, ("a", "b"))
    (blank,) = hunks("a\nb\n", "a\n\n")
    assert through_github("a\nb\n", [blank]) == "a\n\n"
    (gone,) = hunks("a\nb\nc\n", "a\nc\n")
    assert (gone.start, gone.end, gone.lines) == (2, 2, ())
    assert gone.suggestion() == "```suggestion\n```"


def test_fence_is_longer_than_backticks_inside() -> None:
    (h,) = hunks('x = "a"\n', 'x = """\n```py\n"""\n')
    assert h.suggestion().startswith("````suggestion\n") and h.suggestion().endswith("\n````")


def test_diff_ranges_and_anchoring() -> None:
    patch = "@@ -1,3 +1,4 @@\n a\n+b\n c\n d\n@@ -20 +21 @@\n-x\n+y\n@@ -30,2 +31,0 @@\n-p\n-q"
    assert diff_ranges(patch) == [(1, 4), (21, 21)]
    assert diff_ranges(None) == []
    h = Hunk(2, 4, ("z\n",), ("b\n", "c\n", "d\n"))
    assert DiffLines(diff_ranges(patch)).anchors(h)
    assert not DiffLines(diff_ranges(patch)).anchors(Hunk(4, 5, (), ()))
    assert not DiffLines(diff_ranges(patch)).anchors(Hunk(21, 22, (), ()))


def test_parses_checks_without_running() -> None:
    assert parses("import os\nos.system('x')\n", "f.py", "x = 1\n")
    assert not parses("def f(:\n", "f.py", "x = 1\n")
    # Newer syntax than the reference accepts falls back to libcst.
    assert not parses("x = (\n", "f.py", "def f(:\n")


def test_unified_marks_a_missing_final_newline() -> None:
    text = unified("a.py", "x = 1", "x = 2")
    assert text.startswith("--- a/a.py\n+++ b/a.py\n") and "\\ No newline at end of file" in text


def _repeated(n: int) -> tuple[str, str]:
    """A file of ``2n`` identical lines with three changed lines among them."""
    body = "    x = 1\n" * n
    old = f"a = 1\n{body}b = 1\n{body}c = 1\n"
    return old, old.replace("a = 1", "a = 2").replace("b = 1", "b = 2").replace("c = 1", "c = 2")


def test_the_hunk_diff_of_many_repeated_lines_is_linear(
    python_lines: Callable[[Callable[[], object], int], int],
) -> None:
    """Work counted in Python lines run (no clock): difflib's matcher without autojunk did
    work growing with the square of a repeated line's count (4,000 identical lines: minutes).
    Now doubling the file at most doubles the work, plus slack."""
    runs: dict[int, int] = {}
    for n in (1000, 2000, 4000):
        old, new = _repeated(n)
        found: list[Hunk] = []
        runs[n] = python_lines(lambda: found.extend(hunks(old, new)), 100 * n)  # noqa: B023
        assert [h.start for h in found] == [1, n + 2, 2 * n + 3] and apply(old, found) == new
    assert runs[4000] <= 2.2 * runs[2000] and runs[2000] <= 2.2 * runs[1000]


MAX_FILE_BYTES = 512 * 1024  # /qnn migrate's cap on a file


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    line=st.sampled_from(["x = 1\n", "\n", "    pass\n", ")\n"]),
    every=st.sampled_from([2, 7, 50, 1000]),
)
def test_hunks_of_a_file_at_the_cap_are_exact(line: str, every: int) -> None:
    """Property at /qnn migrate's file cap: the same line repeated, every ``every``-th one
    changed (thousands of changes among identical lines): the hunks, however coarse the
    diff's budget made them, give exactly the new text, in order and not overlapping."""
    count = MAX_FILE_BYTES // len(line)
    old_lines = [line] * count
    new_lines = [f"y{i} = 0\n" if i % every == 0 else line for i in range(count)]
    old, new = "".join(old_lines), "".join(new_lines)
    found = hunks(old, new)
    assert apply(old, found) == new
    assert all(x.end < y.start for x, y in itertools.pairwise(found))
