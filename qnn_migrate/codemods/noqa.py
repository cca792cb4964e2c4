"""``# noqa`` comments, read as ruff reads them: which codes each line of a file suppresses.

``# noqa`` alone suppresses every code reported on its line; ``# noqa: QM101`` (or
``# noqa: QM101, QM001``, codes separated by commas or spaces) suppresses those codes only.
A site is suppressed by the comment on the line it is reported at: for a call, the line of
the called name, as ruff places a diagnostic at the start of its node. ``QM001`` suppressed
means the call is not rewritten (ruff's noqa suppresses a rule's fix with its diagnostic).
Only real comments count (read with :mod:`tokenize`), never ``# noqa`` inside a string.

Pure: text in, a mapping out.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Mapping

# ruff's own pattern: "noqa" alone, or "noqa:" and a list of codes ("A1, B2").
_NOQA = re.compile(
    r"#\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE
)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
_ANY = re.compile("noqa", re.IGNORECASE)

ALL: frozenset[str] = frozenset({"*"})  # a bare noqa comment: every code

Suppressions = Mapping[int, frozenset[str]]  # 1-based line -> codes (ALL: every code)


def parse(text: str) -> Suppressions:
    """The ``# noqa`` comments of ``text`` (Python source), by line. Text that does not
    tokenize gives what was read before the error (the rule reports such a file anyway)."""
    if _ANY.search(text) is None:
        return {}
    found: dict[int, frozenset[str]] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                codes = _codes(token.string)
                if codes is not None:
                    found[token.start[0]] = codes
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


def _codes(comment: str) -> frozenset[str] | None:
    match = _NOQA.search(comment)
    if match is None:
        return None
    listed = match.group("codes")
    if listed is None:
        return ALL
    return frozenset(code.upper() for code in _CODE.findall(listed))


def suppresses(suppressions: Suppressions, line: int, code: str) -> bool:
    """Whether the comment on ``line`` suppresses ``code``."""
    codes = suppressions.get(line)
    return codes is not None and (codes is ALL or "*" in codes or code in codes)


__all__ = ["ALL", "Suppressions", "parse", "suppresses"]
