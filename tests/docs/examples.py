"""The rewrite examples of the docs: ``python`` blocks marked ``<!-- rewrite-example: before
[ARGS] -->`` and ``<!-- rewrite-example: after [ARGS] -->``, paired in order (ARGS: options of
``qnn-migrate rewrite``, the same on both). Shared by the docs tests and the fresh-clone test."""

from __future__ import annotations

import re
import shlex
from typing import NamedTuple

MARKED = re.compile(
    r"<!-- rewrite-example: (?P<side>before|after)(?P<args>[^>]*?) -->\n```python\n(?P<code>.*?)```",
    re.S,
)
BLOCK = re.compile(r"^```python\n", re.M)


class Example(NamedTuple):
    """One documented rewrite: what goes in, what the docs say comes out, with which options."""

    line: int  # of the "before" marker, from 1
    args: tuple[str, ...]
    before: str
    after: str


def examples(text: str, where: str) -> list[Example]:
    """The before/after pairs of ``text``; AssertionError naming ``where`` and the line when a
    marker has no partner or the two disagree on their options."""
    found = list(MARKED.finditer(text))
    pairs = []
    for first, second in zip(found[::2], found[1::2], strict=False):
        line = text.count("\n", 0, first.start()) + 1
        assert (first["side"], second["side"]) == ("before", "after"), (
            f"{where}:{line}: a before block must be followed by its after block"
        )
        assert first["args"] == second["args"], f"{where}:{line}: before and after differ in ARGS"
        pairs.append(
            Example(line, tuple(shlex.split(first["args"])), first["code"], second["code"])
        )
    assert len(found) % 2 == 0, f"{where}: a rewrite-example marker has no partner"
    return pairs


def unmarked_blocks(text: str) -> list[int]:
    """Lines of ``python`` blocks that no rewrite-example marker introduces."""
    marked = {m.start("code") - len("```python\n") for m in MARKED.finditer(text)}
    return [
        text.count("\n", 0, m.start()) + 1 for m in BLOCK.finditer(text) if m.start() not in marked
    ]
