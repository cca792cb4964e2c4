"""Suggestion hunks: applied the way GitHub commits them, they give exactly the rewrite."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qnn_migrate.bot.pr.suggestions import (
    Hunk,
    anchored,
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
    assert all(anchored(h, whole_file) for h in found)
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
    assert anchored(h, diff_ranges(patch))
    assert not anchored(Hunk(4, 5, (), ()), diff_ranges(patch))
    assert not anchored(Hunk(21, 22, (), ()), diff_ranges(patch))


def test_parses_checks_without_running() -> None:
    assert parses("import os\nos.system('x')\n", "f.py", "x = 1\n")
    assert not parses("def f(:\n", "f.py", "x = 1\n")
    # Newer syntax than the reference accepts falls back to libcst.
    assert not parses("x = (\n", "f.py", "def f(:\n")


def test_unified_marks_a_missing_final_newline() -> None:
    text = unified("a.py", "x = 1", "x = 2")
    assert text.startswith("--- a/a.py\n+++ b/a.py\n") and "\\ No newline at end of file" in text
