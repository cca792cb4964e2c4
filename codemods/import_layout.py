"""Tidy the ``from ... import ...`` statements that scheduled import changes touched.

libcst's ``AddImportsVisitor`` prepends new names on one line and ``RemoveImportsVisitor``
drops the trailing comma of a multi-line import, which leaves shapes like
``from m import (\\n    a)``. This pass puts only the statements those visitors changed back
into the shape a formatter would give them: one name per line with a trailing comma when the
statement is parenthesised over several lines or too long, one line otherwise. The user's
names keep their order (new names go after them) and their comments.
"""

from __future__ import annotations

from collections.abc import Collection

import libcst as cst

WIDTH = 88


class ImportCodes(cst.CSTVisitor):
    """Collects the source of every ``from ... import ...`` statement."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.codes: set[str] = set()

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.codes.add(self.module.code_for_node(node))


class TidyImports(cst.CSTTransformer):
    """Re-lays out import-from statements whose source is not in ``unchanged``."""

    def __init__(self, module: cst.Module, unchanged: Collection[str]) -> None:
        self.module = module
        self.unchanged = unchanged
        self.unit = module.default_indent

    def leave_ImportFrom(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> cst.ImportFrom:
        if isinstance(updated_node.names, cst.ImportStar):
            return updated_node
        code = self.module.code_for_node(updated_node)
        if code in self.unchanged:
            return updated_node
        names = list(updated_node.names)
        # AddImportsVisitor prepends the names it adds, without commas of their own.
        added = 0
        while added < len(names) - 1 and isinstance(names[added].comma, cst.MaybeSentinel):
            added += 1
        names = names[added:] + names[:added]
        multiline = updated_node.lpar is not None and ("\n" in code or "\r" in code)
        flat = self._flat(updated_node, names)
        if not multiline and len(self.module.code_for_node(flat)) <= WIDTH:
            return flat
        return self._exploded(updated_node, names)

    def _flat(self, node: cst.ImportFrom, names: list[cst.ImportAlias]) -> cst.ImportFrom:
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        aliases = [a.with_changes(comma=comma) for a in names[:-1]]
        aliases.append(names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT))
        return node.with_changes(names=aliases, lpar=None, rpar=None)

    def _line_break(self, comment: cst.Comment | None, last: bool) -> cst.ParenthesizedWhitespace:
        return cst.ParenthesizedWhitespace(
            first_line=cst.TrailingWhitespace(
                whitespace=cst.SimpleWhitespace("  " if comment else ""), comment=comment
            ),
            indent=True,
            last_line=cst.SimpleWhitespace("" if last else self.unit),
        )

    def _exploded(self, node: cst.ImportFrom, names: list[cst.ImportAlias]) -> cst.ImportFrom:
        aliases = []
        for i, alias in enumerate(names):
            comment = None
            empty_lines: list[cst.EmptyLine] = []
            if isinstance(alias.comma, cst.Comma) and isinstance(
                alias.comma.whitespace_after, cst.ParenthesizedWhitespace
            ):
                comment = alias.comma.whitespace_after.first_line.comment
                empty_lines = list(alias.comma.whitespace_after.empty_lines)
            brk = self._line_break(comment, last=i == len(names) - 1)
            brk = brk.with_changes(empty_lines=empty_lines)
            aliases.append(alias.with_changes(comma=cst.Comma(whitespace_after=brk)))
        lpar = node.lpar or cst.LeftParen()
        comment = None
        if isinstance(lpar.whitespace_after, cst.ParenthesizedWhitespace):
            comment = lpar.whitespace_after.first_line.comment
        return node.with_changes(
            names=aliases,
            lpar=lpar.with_changes(whitespace_after=self._line_break(comment, last=False)),
            rpar=cst.RightParen(),
        )
