"""Cut a module down to what the rule needs, and splice the rewritten excerpt back.

libcst's parse and scope analysis cost far more per line than Python's own parser, so a
large test file that calls the API in a few methods would spend most of its time on methods
that never mention it (figures in docs/rewrite.md, "Speed"). The excerpt keeps every module-level statement
(imports, assignments, class and function headers, so every module-level binding stays
visible), keeps whole every function that mentions the old name or an alias it is imported
as (``import ... as lower``: uses of ``lower`` are sites too), and drops the bodies of the
others: a module-level function keeps its signature and gets ``...`` as body, a method that
mentions neither is dropped with its class's other irrelevant methods.

The rule then runs on the excerpt. :func:`splice` maps its changes back through the line map
and refuses (returns None) any change that touches a dropped or made-up line; the engine then
runs the rule on the whole file instead. The engine also falls back when the dropped text
could matter to the rule (``global`` statements, names whose import the rule removed, a
dropped method named like an import the rule adds), so both paths give the same output;
tests check that they do, on every golden fixture.
"""

from __future__ import annotations

import ast
import bisect
import itertools
import re
from dataclasses import dataclass

from qnn_migrate.codemods.line_diff import opcodes

# Excerpts smaller than this share of the file are worth the cut; otherwise run on the file.
# Python's parser costs a fortieth of libcst's work on the lines cut, and the rewrite splices
# back in a few milliseconds, so any file long enough to have something to cut qualifies.
WORTHWHILE = 0.8
MIN_LINES = 40

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(code: str) -> list[str]:
    """Lines with their endings, split where Python's tokenizer splits them."""
    return _LINE.findall(code)


@dataclass(frozen=True)
class Excerpt:
    """The kept text, and for each of its lines the original line number (None: made up)."""

    text: str
    line_map: tuple[int | None, ...]
    dropped: str  # every dropped line, for the engine's checks
    dropped_methods: frozenset[str] = frozenset()  # names the dropped methods bound in classes

    def original_line(self, line: int) -> int:
        """The original line number of excerpt line ``line`` (1-based)."""
        mapped = self.line_map[line - 1] if 0 < line <= len(self.line_map) else None
        if mapped is not None:
            return mapped
        for back in range(min(line, len(self.line_map)) - 1, -1, -1):
            earlier: int | None = self.line_map[back]
            if earlier is not None:
                return earlier
        return 1


class _Cutter:
    def __init__(self, lines: list[str], mentioned: list[int]) -> None:
        self.lines = lines
        self.mentioned = mentioned  # numbers of the lines that mention a name, ascending
        self.kept: list[str] = []
        self.line_map: list[int | None] = []
        self.dropped: list[str] = []
        self.dropped_methods: set[str] = set()

    def keep(self, first: int, last: int) -> None:
        for number in range(first, last + 1):
            self.kept.append(self.lines[number - 1])
            self.line_map.append(number)

    def drop(self, first: int, last: int) -> None:
        self.dropped += self.lines[first - 1 : last]

    def stub(self, body_line: int) -> None:
        text = self.lines[body_line - 1]
        indent = text[: len(text) - len(text.lstrip(" \t"))]
        ending = text[len(text.rstrip("\r\n")) :] or "\n"
        self.kept.append(f"{indent}...{ending}")
        self.line_map.append(None)

    def mentions(self, first: int, last: int) -> bool:
        at = bisect.bisect_left(self.mentioned, first)
        return at < len(self.mentioned) and self.mentioned[at] <= last

    def statements(self, body: list[ast.stmt], end: int, in_class: bool) -> bool:
        """Cut a block whose statements run to line ``end``; True if anything was kept."""
        starts = [_start(s) for s in body]
        kept_any = False
        for i, node in enumerate(body):
            first, last = starts[i], (starts[i + 1] - 1 if i + 1 < len(body) else end)
            if last < first:
                continue  # shares its line with the next statement, which keeps it
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                body_line = self.body_line(node)
                if body_line is None or self.mentions(first, last):
                    self.keep(first, last)
                elif in_class:
                    self.drop(first, last)
                    self.dropped_methods.add(node.name)
                    continue
                else:
                    self.keep(first, body_line - 1)
                    self.stub(body_line)
                    self.drop(body_line, last)
            elif isinstance(node, ast.ClassDef) and (body_line := self.body_line(node)):
                self.keep(first, body_line - 1)
                if not (self.mentions(first, last) and self.statements(node.body, last, True)):
                    self.stub(body_line)
                    self.drop(body_line, last)
            else:
                self.keep(first, last)
            kept_any = True
        return kept_any

    def body_line(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> int | None:
        """The line a ``def``'s or ``class``'s body starts on, with the decorators of its first
        statement (a nested ``@decorator`` line belongs to the body, not the header); None when
        the body starts on the header's own line (``def f(): return 1``), so it has no line
        of its own to replace."""
        first = node.body[0]
        line = _start(first)
        if line == first.lineno:
            before = self.lines[line - 1].encode("utf-8")[: first.col_offset]  # offsets in bytes
            if before.strip():
                return None
        return line


def _start(node: ast.stmt) -> int:
    """First line of a statement, decorators included."""
    decorators: list[ast.expr] = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(d.lineno for d in decorators)])


def aliases(code: str, name: str) -> set[str]:
    """Every word that ``name`` may be imported as (``... import name as <word>``).

    A superset, found in the text: also ``with name as x``, or the words in a comment that
    says "name as such"; every function using one of them is kept whole, so a word too many
    only makes the excerpt longer.
    """
    gap = r"(?:\s|\\|#[^\r\n]*)*"  # whitespace, line continuations, comments (in parentheses)
    pattern = re.compile(rf"(?<![\w.]){re.escape(name)}{gap}(?<!\w)as{gap}(?<!\w)(\w+)")
    found = set()
    at = code.find(name)
    while at >= 0:  # the pattern only where str.find found the name: 20 times faster
        alias = pattern.match(code, at)
        if alias:
            found.add(alias.group(1))
        at = code.find(name, at + len(name))
    return found


def cut(code: str, name: str) -> Excerpt | None:
    """The excerpt of ``code`` for the old ``name``; None when the whole file should be used."""
    lines = split_lines(code)
    if len(lines) < MIN_LINES:
        return None
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None  # newer syntax than this Python parses: use libcst on the whole file
    if not tree.body:
        return None
    words = sorted(aliases(code, name))
    mention = re.compile(re.escape(name) + "".join(rf"|\b{re.escape(word)}\b" for word in words))
    mentioned = [number for number, line in enumerate(lines, 1) if mention.search(line)]
    cutter = _Cutter(lines, mentioned)
    cutter.keep(1, _start(tree.body[0]) - 1)
    cutter.statements(tree.body, len(lines), in_class=False)
    if len(cutter.kept) > WORTHWHILE * len(lines):
        return None
    return Excerpt(
        "".join(cutter.kept),
        tuple(cutter.line_map),
        "".join(cutter.dropped),
        frozenset(cutter.dropped_methods),
    )


def splice(code: str, excerpt: Excerpt, new_text: str) -> str | None:
    """``code`` with the changes the rule made to the excerpt; None if they touch a cut."""
    lines = split_lines(code)
    old = split_lines(excerpt.text)
    new = split_lines(new_text)
    line_map = excerpt.line_map
    edits: list[tuple[int, int, list[str]]] = []  # (first, last) original 0-based, new lines
    for tag, i1, i2, j1, j2 in opcodes(old, new):  # bounded work, whatever the lines
        if tag == "equal":
            continue
        mapped = line_map[i1:i2]
        if any(m is None for m in mapped):
            return None
        numbers = [m for m in mapped if m is not None]
        if any(b != a + 1 for a, b in itertools.pairwise(numbers)):
            return None
        if numbers:
            first, last = numbers[0] - 1, numbers[-1]
        elif i1 < len(line_map) and line_map[i1] is not None:
            first = last = (line_map[i1] or 1) - 1  # insert before the next excerpt line
        elif i1 == len(line_map) and (not line_map or line_map[-1] == len(lines)):
            first = last = len(lines)
        else:
            return None
        edits.append((first, last, new[j1:j2]))
    for first, last, replacement in reversed(edits):
        lines[first:last] = replacement
    return "".join(lines)
