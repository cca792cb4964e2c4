"""The page of each code ``qnn-migrate rewrite`` reports, from the packaged ``data/codes.toml``:
what ``qnn-migrate rewrite --explain QM101`` prints (ruff's ``ruff rule F401``).

The same data is the codes table of docs/rewrite.md (a test checks that the two agree, and
that every reason of ``codemods/findings.py`` has its page), so an installed copy, which has
no docs, explains every code it can print.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import NamedTuple

DATA = Path(__file__).resolve().parent / "data" / "codes.toml"

KINDS = {
    "rewritten": "a call the rewrite rewrites",
    "unfixable": "a site the rewrite leaves for you; the exit code does not change",
    "info": "a note about what the rewrite did; the exit code does not change",
    "error": "a file or path the run could not process, left as it was; exit code 3",
}


class Code(NamedTuple):
    """One code's page: its kind, what it means, an example, and what to do."""

    code: str
    kind: str
    what: str
    example: str
    fix: str


@cache
def every_code() -> dict[str, Code]:
    """Every code's page, in the order of the data file."""
    with open(DATA, "rb") as handle:
        data = tomllib.load(handle)
    return {code: Code(code, **fields) for code, fields in data.items()}


def page(code: str) -> str:
    """The text ``--explain CODE`` prints; KeyError for a code that does not exist."""
    entry = every_code()[code.upper()]
    return "\n".join(
        [
            f"{entry.code} ({entry.kind}: {KINDS[entry.kind]})",
            "",
            f"What: {entry.what}",
            f"Example: {entry.example}",
            f"What to do: {entry.fix}",
            "",
            "A code never changes meaning; its message's wording may. Suppress it on one line "
            f"with a comment: # noqa: {entry.code}",
        ]
    )


__all__ = ["DATA", "KINDS", "Code", "every_code", "page"]
