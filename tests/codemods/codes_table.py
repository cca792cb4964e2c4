"""docs/rewrite.md's table of finding codes (``| QM001 | kind | what | example | what to do |``), read as rows."""

from __future__ import annotations

import re

CODE = re.compile(r"QM\d{3}")


def documented(text: str) -> dict[str, list[str]]:
    """The rows of the codes table: code -> its cells (kind, what, example, what to do)."""
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| QM") and CODE.fullmatch(cells[0]):
            rows.setdefault(cells[0], []).extend(cells[1:])
    return rows
