"""Lay out a ``from ... import ...`` statement after names were removed from or added to it.

The statement keeps the user's names in their order (new names at their sorted places when
the user's are sorted, else after them) with their comments, and takes the shape a formatter would give it: one line when it was one line and
still fits, otherwise one name per line with a trailing comma, ``)`` on its own line.
"""

from __future__ import annotations

import libcst as cst

from qnn_migrate.codemods.import_placement import with_added

WIDTH = 88


def relayout(
    module: cst.Module,
    node: cst.ImportFrom,
    kept: list[cst.ImportAlias],
    added: list[cst.ImportAlias],
    width: int = WIDTH,
) -> cst.ImportFrom:
    """``node`` with the aliases ``kept`` (from it) and ``added`` (new ones), within
    ``width`` columns (what is left of the line length after the statement's indentation).
    New names go where an import sorter puts them when the user's are sorted, else after
    them (:func:`~qnn_migrate.codemods.import_placement.with_added`)."""
    names = with_added(kept, added)
    code = module.code_for_node(node)
    multiline = node.lpar is not None and ("\n" in code or "\r" in code)
    if not multiline:
        flat = _flat(node, names)
        if len(module.code_for_node(flat)) <= width:
            return flat
    return _exploded(node, names, module.default_indent)


def _flat(node: cst.ImportFrom, names: list[cst.ImportAlias]) -> cst.ImportFrom:
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    aliases = [a.with_changes(comma=comma) for a in names[:-1]]
    aliases.append(names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT))
    return node.with_changes(names=aliases, lpar=None, rpar=None)


def _line_break(comment: cst.Comment | None, indent: str) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(
            whitespace=cst.SimpleWhitespace("  " if comment else ""), comment=comment
        ),
        indent=True,
        last_line=cst.SimpleWhitespace(indent),
    )


def _exploded(node: cst.ImportFrom, names: list[cst.ImportAlias], unit: str) -> cst.ImportFrom:
    aliases = []
    for i, alias in enumerate(names):
        comment = None
        empty_lines: list[cst.EmptyLine] = []
        if isinstance(alias.comma, cst.Comma) and isinstance(
            alias.comma.whitespace_after, cst.ParenthesizedWhitespace
        ):
            comment = alias.comma.whitespace_after.first_line.comment
            empty_lines = list(alias.comma.whitespace_after.empty_lines)
        last = i == len(names) - 1
        brk = _line_break(comment, "" if last else unit).with_changes(empty_lines=empty_lines)
        aliases.append(alias.with_changes(comma=cst.Comma(whitespace_after=brk)))
    lpar = node.lpar or cst.LeftParen()
    comment = None
    if isinstance(lpar.whitespace_after, cst.ParenthesizedWhitespace):
        comment = lpar.whitespace_after.first_line.comment
    return node.with_changes(
        names=aliases,
        lpar=lpar.with_changes(whitespace_after=_line_break(comment, unit)),
        rpar=cst.RightParen(),
    )
