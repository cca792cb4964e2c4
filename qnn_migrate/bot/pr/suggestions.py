"""A file's rewrite -> GitHub suggestion hunks anchored on a PR's diff (pure; text in, text out).

A *hunk* is one contiguous change between the head file and the rewrite, stated as "replace
head lines ``start..end`` with these lines". GitHub applies a ``suggestion`` block that way,
so a hunk always covers at least one head line: a pure insertion is widened to take in the
unchanged line before it (or after it, at the top of the file). A review comment may only sit
on lines of the PR's diff: a hunk is *anchored* when one hunk of the PR's patch holds all of
its lines on the right (head) side.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate

import libcst as cst

from qnn_migrate.codemods.line_diff import opcodes, unified_lines

HUNK_HEADER_RE = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
BACKTICKS_RE = re.compile(r"`+")


def split_lines(text: str) -> list[str]:
    """Lines as git counts them: split after each ``\\n`` only (keeping it)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


@dataclass(frozen=True)
class Hunk:
    """Replace head lines ``start..end`` (1-based, inclusive) by ``new`` (lines with endings)."""

    start: int
    end: int
    new: tuple[str, ...]
    old: tuple[str, ...]

    @property
    def lines(self) -> tuple[str, ...]:
        """The replacement lines without their line endings, as a suggestion shows them."""
        return tuple(line[:-1] if line.endswith("\n") else line for line in self.new)

    def suggestion(self) -> str:
        """A GitHub ``suggestion`` block; its fence is longer than any backtick run inside."""
        body = "\n".join(self.lines)
        longest = max((len(run) for run in BACKTICKS_RE.findall(body)), default=0)
        fence = "`" * max(3, longest + 1)
        return (
            f"{fence}suggestion\n{body}\n{fence}" if self.lines else f"{fence}suggestion\n{fence}"
        )


def hunks(old: str, new: str) -> list[Hunk]:
    """The changes from ``old`` to ``new``, one hunk per contiguous change, top to bottom.

    The diff is ``codemods.line_diff``'s: its work is bounded whatever the file holds (past
    its budget a stretch of changes is one hunk, still exact).
    """
    a, b = split_lines(old), split_lines(new)
    spans: list[list[int]] = []
    for tag, i1, i2, j1, j2 in opcodes(a, b):
        if tag == "equal":
            continue
        if i1 == i2:  # an insertion: take in the unchanged line before it (after, at the top)
            if i1 > 0:
                i1, j1 = i1 - 1, j1 - 1
            else:
                i2, j2 = i2 + 1, j2 + 1
        if spans and i1 < spans[-1][1]:  # two widened hunks share a line: one hunk
            spans[-1][1], spans[-1][3] = max(spans[-1][1], i2), max(spans[-1][3], j2)
        else:
            spans.append([i1, i2, j1, j2])
    return [Hunk(i1 + 1, i2, tuple(b[j1:j2]), tuple(a[i1:i2])) for i1, i2, j1, j2 in spans]


def apply(old: str, chosen: Sequence[Hunk]) -> str:
    """``old`` with the chosen hunks applied (they must not overlap), in one pass over its
    lines (splicing each hunk into a list would move the rest of the file once per hunk)."""
    lines = split_lines(old)
    out: list[str] = []
    pos = 0
    for hunk in sorted(chosen, key=lambda h: h.start):
        out += lines[pos : hunk.start - 1]
        out += hunk.new
        pos = hunk.end
    out += lines[pos:]
    return "".join(out)


def apply_suggestion(old: str, start: int, end: int, lines: Sequence[str]) -> str:
    """Apply a suggestion's lines the way GitHub commits them: they replace ``start..end``,
    each ending with a newline, except where the replaced range held the file's last line and
    that line had none."""
    current = split_lines(old)
    new = [line + "\n" for line in lines]
    if new and end == len(current) and not current[-1].endswith("\n"):
        new[-1] = new[-1][:-1]
    current[start - 1 : end] = new
    return "".join(current)


def suggestion_lines(block: str) -> list[str]:
    """The lines inside a ``suggestion`` block made by :meth:`Hunk.suggestion`."""
    return block.split("\n")[1:-1]


def diff_ranges(patch: str | None) -> list[tuple[int, int]]:
    """The head-side line ranges (1-based, inclusive) of a PR file's patch hunks."""
    ranges: list[tuple[int, int]] = []
    for line in (patch or "").split("\n"):
        match = HUNK_HEADER_RE.match(line)
        if match:
            first, count = int(match.group(1)), int(match.group(2) or "1")
            if count:
                ranges.append((first, first + count - 1))
    return ranges


class DiffLines:
    """The head-side ranges of a patch, asked in O(log n) whether one of them holds a span
    (asking each range in turn costs ranges x hunks on a file the PR's author shaped)."""

    def __init__(self, ranges: Iterable[tuple[int, int]]) -> None:
        ordered = sorted(ranges)
        self._firsts = [first for first, _ in ordered]
        # _reach[i]: the furthest line any of the first i+1 ranges (by start) reaches.
        self._reach = list(accumulate((last for _, last in ordered), max))

    def holds(self, first: int, last: int) -> bool:
        """True when one range holds every line ``first..last``."""
        i = bisect_right(self._firsts, first)
        return i > 0 and self._reach[i - 1] >= last

    def anchors(self, hunk: Hunk) -> bool:
        """True when one patch hunk holds every head line the hunk replaces."""
        return self.holds(hunk.start, hunk.end)


def parses(text: str, filename: str, reference: str) -> bool:
    """Whether ``text`` parses, by Python's compiler when it accepts ``reference`` (the file
    before the change), else by libcst (syntax newer than this Python). Nothing is run."""
    try:
        ast.parse(reference, filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        try:
            cst.parse_module(text)
        except (cst.ParserSyntaxError, RecursionError, MemoryError):
            return False
        return True
    try:
        ast.parse(text, filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def unified(path: str, old: str, new: str) -> str:
    """A ``git diff``-style unified diff of one file (3 lines of context)."""
    out = unified_lines(split_lines(old), split_lines(new), f"a/{path}", f"b/{path}")
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in out
    )
