"""Jupyter notebooks: the code cells rewritten as one module, then put back cell by cell.

As ruff does, the code cells of a notebook are read as one module, in order (a call in
cell 3 is resolved through an import in cell 1, and new imports go where the module's
imports are); the result is cut back into the cells at boundary lines the rewrite never
touches, and only the ``source`` of the cells that changed is replaced: outputs, execution
counts and metadata stay as they were, and the JSON is written back in the layout it was read
in (a notebook whose layout cannot be reproduced byte for byte is reported, not written).

IPython syntax is kept out of the rule's way: a line magic, a shell escape (``!ls``,
``x = !ls``), a help request (``obj?``) becomes a ``pass`` statement for the rule (so a block
it is the body of still parses) and is put back afterwards, character for character; a cell
magic (``%%bash``) cell is left whole. Such a line or cell that names the old function is
reported (QM210), as is a cell that is not valid Python even so (QM903, the cell left as it
was): nothing is skipped silently.

Pure: bytes in, the new bytes and the findings out.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from qnn_migrate.codemods import findings
from qnn_migrate.codemods.findings import Reason

SUFFIX = ".ipynb"
_MARKER = "__qnn_migrate_cell_{}__"
_MAGIC_MARK = "pass  # qnn-migrate: IPython line {}"
_MARK_LINE = re.compile(r"^[ \t]*pass  # qnn-migrate: IPython line (\d+)$")
# A line IPython transforms before Python sees it: a line magic, a shell escape, a help
# request, or an assignment from a magic or shell escape (`files = !ls`).
_IPYTHON_LINE = re.compile(
    r"^\s*(?:[%!]|\?{1,2}\s*[\w.]|[\w.]+\?{1,2}\s*$|[\w.,\s\[\]()*]+=\s*[%!])"
)


@dataclass(frozen=True)
class Finding:
    """A finding in a cell: ``cell`` counts the notebook's code cells from 1, ``line`` the
    cell's lines from 1, ``column`` from 0."""

    cell: int
    line: int
    column: int
    kind: str  # rewritten, unfixable, info, error
    reason: str
    code: str


@dataclass
class Result:
    """What the rewrite of one notebook gives: the new bytes (None: unchanged), the
    findings, and one unified diff per changed cell (when asked for)."""

    new: bytes | None = None
    findings: list[Finding] = field(default_factory=list)
    diff: str = ""


@dataclass
class _Cell:
    number: int  # among the code cells, from 1
    cell: dict[str, Any]
    text: str  # the source as one string
    masked: str = ""  # IPython lines replaced by marks
    magics: dict[int, str] = field(default_factory=dict)  # mark number -> original line


def rewrite(
    data: bytes,
    path: str,
    rewrite_code: Callable[[str], tuple[str, bool, list[tuple[int, int, str, str, str]]]],
    *,
    diff: Callable[[str, str, str], str] | None = None,
) -> Result:
    """Rewrite the code cells of the notebook ``data``.

    ``rewrite_code``: the rule on one module's text, giving the new text, whether it changed,
    and its findings as (line, 0-based column, kind, reason, code); it raises ValueError with
    a :class:`Reason` as ``args[0]`` when the module cannot be processed. ``diff``: makes a
    unified diff of one cell (headers, old, new); None: no diff.
    """
    result = Result()
    try:
        notebook = json.loads(data.decode("utf-8"))
        cells = notebook["cells"]
        if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
            raise TypeError("cells is not a list of objects")
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
        result.findings.append(_error(0, 1, findings.NOT_A_NOTEBOOK.format(error=error)))
        return result
    language = _language(notebook)
    if language not in (None, "python"):
        result.findings.append(
            _error(0, 1, findings.NOT_A_NOTEBOOK.format(error=f"its language is {language}"))
        )
        return result
    code_cells = [c for c in cells if c.get("cell_type") == "code"]
    taken: list[_Cell] = []
    for number, cell in enumerate(code_cells, 1):
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        one = _Cell(number, cell, text)
        if _mask(one, result.findings):
            taken.append(one)
    if not taken:
        return result
    module, where = _join(taken)
    try:
        new_module, changed, found = rewrite_code(module)
    except ValueError as error:
        reason = error.args[0] if error.args and isinstance(error.args[0], Reason) else None
        reason = reason or findings.INTERNAL_ERROR.format(error=error)
        result.findings.append(_error(taken[0].number, 1, reason))
        return result
    for line, column, kind, reason_text, code in found:
        number, cell_line = where[line - 1] if 0 < line <= len(where) else (taken[0].number, 1)
        result.findings.append(Finding(number, cell_line, column, kind, reason_text, code))
    if not changed:
        return result
    parts = _split(new_module, [c.number for c in taken])
    if parts is None:
        return _refuse(result, taken[0].number, "moved a cell boundary")
    diffs = []
    for cell, part in zip(taken, parts, strict=True):
        restored = _unmask(part, cell)
        if restored is None:
            return _refuse(result, cell.number, "moved or copied an IPython line of this cell")
        if not cell.text.endswith("\n") and restored.endswith("\n"):
            restored = restored[:-1]
        if restored == cell.text:
            continue
        source = cell.cell.get("source", "")
        cell.cell["source"] = (
            restored.splitlines(keepends=True) if isinstance(source, list) else restored
        )
        if diff is not None:
            header = f"{path}:cell {cell.number}"
            diffs.append(diff(header, _ended(cell.text), _ended(restored)))
    new = _dumps(notebook, data)
    if new is None:
        result.findings.append(_error(0, 1, findings.NOT_A_NOTEBOOK.format(error=_LAYOUT)))
        return result
    result.new = new
    result.diff = "".join(diffs)
    return result


_LAYOUT = (
    "its JSON layout (indentation, key order, escapes) is not one this tool writes back byte "
    "for byte, so writing it would change more than the cells' code; save it with Jupyter "
    "(or nbformat) and run again"
)


def _language(notebook: dict[str, Any]) -> str | None:
    metadata = notebook.get("metadata") if isinstance(notebook, dict) else None
    if not isinstance(metadata, dict):
        return None
    for table, key in (("kernelspec", "language"), ("language_info", "name")):
        value = metadata.get(table)
        if isinstance(value, dict) and isinstance(value.get(key), str):
            return str(value[key]).lower()
    return None


def _error(cell: int, line: int, reason: Reason) -> Finding:
    return Finding(cell, line, 0, "error", reason.text, reason.code)


def _refuse(result: Result, cell: int, what: str) -> Result:
    reason = findings.INVALID_OUTPUT.format(problem=what)
    result.findings.append(_error(cell, 1, reason))
    return result


def _mask(cell: _Cell, found: list[Finding]) -> bool:
    """Replace the cell's IPython lines by marks; False (and findings) when the cell cannot be
    rewritten: a cell magic, or not valid Python."""
    name = findings.OLD
    lines = cell.text.splitlines(keepends=True)
    first = next((line for line in lines if line.strip()), "")
    if first.lstrip().startswith("%%"):
        for number, line in enumerate(lines, 1):
            if name in line:
                found.append(_at(cell, number, line, findings.IPYTHON_MENTION))
                break
        return False
    masked = []
    continued = False
    for number, line in enumerate(lines, 1):
        if continued or _IPYTHON_LINE.search(line.rstrip("\r\n")):
            continued = line.rstrip("\r\n").endswith("\\")
            mark = len(cell.magics)
            cell.magics[mark] = line
            indent = line[: len(line) - len(line.lstrip(" \t"))]
            masked.append(indent + _MAGIC_MARK.format(mark) + "\n")
            if name in line:
                found.append(_at(cell, number, line, findings.IPYTHON_MENTION))
            continue
        masked.append(line)
    cell.masked = "".join(masked)
    if cell.masked and not cell.masked.endswith("\n"):
        cell.masked += "\n"
    try:
        ast.parse(cell.masked)
    except (SyntaxError, ValueError) as error:
        at: int = getattr(error, "lineno", None) or 1
        column: int = (getattr(error, "offset", None) or 1) - 1
        message = getattr(error, "msg", str(error))
        reason = findings.DOES_NOT_PARSE.format(error=message)
        found.append(Finding(cell.number, at, column, "error", reason.text, reason.code))
        return False
    return True


def _at(cell: _Cell, number: int, line: str, reason: Reason) -> Finding:
    return Finding(
        cell.number, number, line.find(findings.OLD), "unfixable", reason.text, reason.code
    )


def _join(cells: list[_Cell]) -> tuple[str, list[tuple[int, int]]]:
    """The cells as one module, a boundary line before each but the first (so a first cell's
    ``from __future__`` import stays first), and where each module line comes from."""
    lines: list[str] = []
    where: list[tuple[int, int]] = []
    for index, cell in enumerate(cells):
        if index:
            lines.append(_MARKER.format(cell.number) + "\n")
            where.append((cell.number, 0))
        for number, line in enumerate(cell.masked.splitlines(keepends=True), 1):
            lines.append(line)
            where.append((cell.number, number))
    return "".join(lines), where


def _split(module: str, numbers: list[int]) -> list[str] | None:
    """The rewritten module cut at the boundary lines, or None when they are not all there,
    once each and in order."""
    parts: list[list[str]] = [[]]
    expected = [_MARKER.format(n) for n in numbers[1:]]
    seen = []
    for line in module.splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        if "__qnn_migrate_cell_" in stripped:
            if stripped not in expected:
                return None
            seen.append(stripped)
            parts.append([])
            continue
        parts[-1].append(line)
    if seen != expected:
        return None
    return ["".join(p) for p in parts]


def _unmask(text: str, cell: _Cell) -> str | None:
    """Put the cell's IPython lines back in place of their marks; None when a mark is
    missing or doubled."""
    out = []
    seen: set[int] = set()
    for line in text.splitlines(keepends=True):
        match = _MARK_LINE.match(line.rstrip("\r\n"))
        if match is None:
            out.append(line)
            continue
        mark = int(match.group(1))
        if mark not in cell.magics or mark in seen:
            return None
        seen.add(mark)
        out.append(cell.magics[mark])
    if seen != set(cell.magics):
        return None
    return "".join(out)


def _ended(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _dumps(notebook: dict[str, Any], original: bytes) -> bytes | None:
    """The notebook as JSON in the layout ``original`` has (nbformat's: one-space indent,
    non-ASCII as is), or None when no layout tried gives the original back unchanged."""
    text = original.decode("utf-8")
    before = json.loads(text)
    trailing = text[len(text.rstrip("\r\n")) :]
    for indent in (1, 2, 4, None):
        for ensure_ascii in (False, True):
            if json.dumps(before, indent=indent, ensure_ascii=ensure_ascii) + trailing == text:
                dumped = json.dumps(notebook, indent=indent, ensure_ascii=ensure_ascii)
                return (dumped + trailing).encode("utf-8")
    return None


__all__ = ["SUFFIX", "Finding", "Result", "rewrite"]
