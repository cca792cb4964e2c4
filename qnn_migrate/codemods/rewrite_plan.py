"""A rule's decisions for one module, and the single transform that carries them out.

Rules decide (which calls become what, which statements expand, which imports come and go);
:class:`ApplyPlan` edits the tree accordingly in one pass. Keeping the two apart keeps the
rules free of tree surgery and makes each edit easy to test on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

import libcst as cst

from qnn_migrate.codemods.import_layout import relayout
from qnn_migrate.codemods.import_placement import ImportItem, ImportSchedule
from qnn_migrate.codemods.targets.site import StatementRewrite


@dataclass
class RewritePlan:
    """Everything a rule wants changed in one module."""

    calls: dict[cst.Call, cst.BaseExpression] = field(default_factory=dict)
    # calls that only change the function they call: -> (the new name, the index of an
    # argument `{"forward": X}` that becomes `X`, or None)
    renamed: dict[cst.Call, tuple[str, int | None]] = field(default_factory=dict)
    # module-level statements -> text of a definition to put right before them
    definitions: dict[cst.BaseStatement, str] = field(default_factory=dict)
    # names replaced by others (an availability test moved to the new import's name)
    names: dict[cst.Name, cst.Name] = field(default_factory=dict)
    # small statement -> (its rewrite, the temporary name of the call's result or None)
    statements: dict[cst.BaseSmallStatement, tuple[StatementRewrite, str | None]] = field(
        default_factory=dict
    )
    remove_aliases: set[cst.ImportAlias] = field(default_factory=set)
    # old imports that stay as re-exports, unused here after the rewrite: marked on their
    # line with a noqa marker for F401, or linters would report them (and offer to remove them)
    reexported: set[cst.ImportAlias] = field(default_factory=set)
    # whole small statements to drop (``m = importlib.import_module(...)`` no longer used)
    remove_statements: set[cst.BaseSmallStatement] = field(default_factory=set)
    # where the new import statements go (``import_placement.place`` schedules them)
    imports: ImportSchedule = field(default_factory=ImportSchedule)

    def is_empty(self) -> bool:
        """True when nothing would change."""
        return not (self.calls or self.renamed or self.statements or self.remove_aliases)

    def targets(self) -> list[cst.CSTNode]:
        """Every node whose leave hook has work to do."""
        return [
            *self.calls,
            *self.renamed,
            *self.definitions,
            *self.names,
            *self.statements,
            *self.remove_aliases,
            *self.reexported,
            *self.remove_statements,
            *self.imports.targets(),
        ]


def import_lines(
    items: set[ImportItem],
    newline: str,
    indent: str,
    width: int = 88,
    comment: str | None = None,
) -> str:
    """Source text of import statements for ``items``, one per module, sorted.

    ``comment`` goes at the end of each statement's first line.
    """
    tail = "" if comment is None else f"  {comment}"
    plain: list[str] = []
    by_module: dict[str, list[str]] = {}
    for module, obj, name in sorted(items):
        if not obj:
            plain.append(module if name == module else f"{module} as {name}")
        else:
            by_module.setdefault(module, []).append(obj if name == obj else f"{obj} as {name}")
    lines = [f"import {m}{tail}" for m in plain]
    for module, names in sorted(by_module.items()):
        line = f"from {module} import {', '.join(names)}"
        if len(line) > width:
            inner = "".join(f"{indent}{n},{newline}" for n in names)
            line = f"from {module} import ({tail}{newline}{inner})"
        else:
            line += tail
        lines.append(line)
    return newline.join(lines)


class ApplyPlan(cst.CSTTransformer):
    """Carries out a :class:`RewritePlan` on the module it was made for."""

    def __init__(
        self,
        plan: RewritePlan,
        module: cst.Module,
        paths: set[cst.CSTNode] | None = None,
        width: int = 88,
    ) -> None:
        """``paths``: every node on the way from the module to a planned change, when known;
        the transform then leaves every other subtree as it is, without visiting it.
        ``width``: the line length new and tidied lines keep within."""
        self.plan = plan
        self.width = width
        self.depth = 0  # how many indented blocks deep the statement being left is
        self.module = module
        self.paths = paths
        self.config = module.config_for_parsing
        self.newline = module.default_newline
        self.unit = module.default_indent
        self.gone: set[cst.CSTNode] = set()  # statements removed whole

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.paths is not None and node not in self.paths:
            return False  # nothing planned below: keep the subtree (its leave still runs)
        if isinstance(node, cst.IndentedBlock):
            self.depth += 1
        return super().on_visit(node)

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        # Called for every block, entered or not; ``on_visit`` counted only those entered.
        if self.paths is None or original_node in self.paths:
            self.depth -= 1
        if original_node.body and original_node.body[0] in self.gone:
            return updated_node.with_changes(body=_close_gap(updated_node.body))
        return updated_node

    def leave_Try(
        self, original_node: cst.Try, updated_node: cst.Try
    ) -> cst.BaseStatement | cst.RemovalSentinel:
        # Blocks are only empty where the plan removed every statement: a `try` that imported
        # an unused name, with `except ImportError:` fallbacks for it alone, goes whole.
        if (
            not updated_node.body.body
            and all(not handler.body.body for handler in updated_node.handlers)
            and updated_node.orelse is None
            and updated_node.finalbody is None
        ):
            self.gone.add(original_node)
            return cst.RemovalSentinel.REMOVE
        return updated_node

    @property
    def room(self) -> int:
        """The width left for a statement at the current depth."""
        return self.width - self.depth * len(self.unit)

    # -- calls and statements -----------------------------------------------------------
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        renamed = self.plan.renamed.get(original_node)
        if renamed is not None:
            name, unwrap = renamed
            args = list(updated_node.args)
            if unwrap is not None:
                display = args[unwrap].value
                assert isinstance(display, cst.Dict) and isinstance(
                    display.elements[0], cst.DictElement
                )
                args[unwrap] = args[unwrap].with_changes(value=display.elements[0].value)
            return updated_node.with_changes(func=cst.Name(name), args=args)
        replacement = self.plan.calls.get(original_node)
        if replacement is None:
            return updated_node
        return replacement.with_changes(lpar=original_node.lpar, rpar=original_node.rpar)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        replacement = self.plan.names.get(original_node)
        if replacement is None:
            return updated_node
        return updated_node.with_changes(value=replacement.value)

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement] | cst.RemovalSentinel:
        statements: list[cst.BaseStatement] = []
        if any(small in self.plan.remove_statements for small in original_node.body):
            kept = [
                new
                for old, new in zip(original_node.body, updated_node.body, strict=True)
                if old not in self.plan.remove_statements
            ]
            if kept:
                kept[-1] = kept[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
            updated_node = updated_node.with_changes(body=kept)
        before = self.plan.imports.before.get(original_node)
        marker = self.plan.imports.comments.get(original_node)
        if before:
            # The new imports sort before this one: they take its leading lines.
            text = import_lines(before, self.newline, self.unit, self.room, comment=marker)
            new = self.parse(text)
            if new:
                new[0] = _with_leading(new[0], updated_node.leading_lines)
                updated_node = updated_node.with_changes(leading_lines=[])
            statements += new
        if any(small in self.plan.statements for small in original_node.body):
            statements += self._lines(
                original_node.body,
                updated_node.body,
                updated_node.leading_lines,
                updated_node.trailing_whitespace,
            )
        elif updated_node.body:
            if self._marked(original_node.body) and not self._multiline(original_node):
                updated_node = updated_node.with_changes(
                    trailing_whitespace=_with_noqa(updated_node.trailing_whitespace)
                )
            statements.append(updated_node)
        extra = self.plan.imports.after.get(original_node)
        if extra:
            # When the new imports take the old one's place, they take its leading lines and
            # its comment (on each first line, so a noqa marker for E402 still applies).
            replacing = not updated_node.body
            comment = updated_node.trailing_whitespace.comment if replacing else None
            text = import_lines(
                extra,
                self.newline,
                self.unit,
                self.room,
                comment=marker if comment is None else comment.value,
            )
            new = self.parse(text)
            if replacing and new:
                new[0] = _with_leading(new[0], updated_node.leading_lines)
            elif original_node in self.plan.imports.new_group and new:
                new[0] = _with_leading(new[0], [cst.EmptyLine()])
            statements += new
        if not statements:
            self.gone.add(original_node)
            return cst.RemovalSentinel.REMOVE
        return statements[0] if len(statements) == 1 else cst.FlattenSentinel(statements)

    def leave_SimpleStatementSuite(
        self, original_node: cst.SimpleStatementSuite, updated_node: cst.SimpleStatementSuite
    ) -> cst.BaseSuite:
        if not any(small in self.plan.statements for small in original_node.body):
            return updated_node
        # `if x: y = call()` -> a real block, so the call can have statements of its own.
        lines = self._lines(
            original_node.body, updated_node.body, (), updated_node.trailing_whitespace
        )
        return cst.IndentedBlock(body=lines)

    def _lines(
        self,
        original: Sequence[cst.BaseSmallStatement],
        updated: Sequence[cst.BaseSmallStatement],
        leading: Sequence[cst.EmptyLine],
        trailing: cst.TrailingWhitespace,
    ) -> list[cst.BaseStatement]:
        """Small statements each on a line of its own, the planned ones expanded."""
        assert len(original) == len(updated), "statements removed from a line with a call"
        out: list[cst.BaseStatement] = []
        for i, (old, new) in enumerate(zip(original, updated, strict=True)):
            last = i == len(original) - 1
            line = cst.SimpleStatementLine(
                body=[new.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)],
                trailing_whitespace=trailing if last else cst.TrailingWhitespace(),
            )
            if old in self.plan.statements:
                out += self._expand(line, *self.plan.statements[old])
            else:
                out.append(line)
        out[0] = _with_leading(out[0], [*leading, *_leading(out[0])])
        return out

    def parse(self, text: str) -> list[cst.BaseStatement]:
        """Statements parsed from ``text`` with the module's indentation and newlines."""
        parsed = cst.parse_module(text + self.newline, config=self.config)
        body: list[cst.BaseStatement] = list(parsed.body)
        if parsed.header and body:
            body[0] = _with_leading(body[0], [*parsed.header, *_leading(body[0])])
        return body

    def _expand(
        self, updated: cst.SimpleStatementLine, rewrite: StatementRewrite, temp: str | None
    ) -> list[cst.BaseStatement]:
        prelude = self.parse(self.newline.join(rewrite.prelude)) if rewrite.prelude else []
        inner: cst.BaseStatement = updated.with_changes(leading_lines=[])
        after: list[cst.BaseStatement] = []
        if temp is not None:
            inner = self.parse(f"{temp} = {rewrite.call}")[0]
            rest = _tidy(updated.with_changes(leading_lines=[]), self.module, self.room)
            broken = _break_call(rest, self.module, self.room, self.unit, self.newline)
            after = [rest] if broken is None else self.parse(broken)
        if rewrite.context is None:
            body = [*prelude, inner, *after]
        else:
            header = self.parse(f"with {rewrite.context}:{self.newline}{self.unit}pass")[0]
            assert isinstance(header, cst.With)
            with_node = header.with_changes(body=header.body.with_changes(body=[inner]))
            body = [*prelude, with_node, *after]
        body[0] = _with_leading(body[0], [*updated.leading_lines, *_leading(body[0])])
        return body

    # -- imports --------------------------------------------------------------------------
    def leave_Import(
        self, original_node: cst.Import, updated_node: cst.Import
    ) -> cst.Import | cst.RemovalSentinel:
        kept = [a for a in original_node.names if a not in self.plan.remove_aliases]
        if len(kept) == len(original_node.names):
            return updated_node
        if not kept:
            return cst.RemovalSentinel.REMOVE
        last = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated_node.with_changes(names=[*kept[:-1], last])

    def leave_ImportFrom(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> cst.ImportFrom | cst.RemovalSentinel:
        if isinstance(original_node.names, cst.ImportStar):
            return updated_node
        marked = {}
        if self._marked([original_node]) and self._multiline(original_node):
            # One name per line: the marker goes on the line of the name (where linters
            # report it), after its comma.
            marked = {a: _noqa_after(a) for a in original_node.names if a in self.plan.reexported}
            updated_node = updated_node.with_changes(
                names=[marked.get(a, a) for a in original_node.names]
            )
        kept = [marked.get(a, a) for a in original_node.names if a not in self.plan.remove_aliases]
        merged = self.plan.imports.merged.get(original_node, set())
        if len(kept) == len(original_node.names) and not merged:
            return updated_node
        added = [
            cst.ImportAlias(
                name=cst.Name(obj),
                asname=None if name == obj else cst.AsName(name=cst.Name(name)),
            )
            for _, obj, name in sorted(merged)
        ]
        if not kept and not added:
            return cst.RemovalSentinel.REMOVE
        return relayout(self.module, updated_node, kept, added, self.room)

    def _marked(self, smalls: Sequence[cst.CSTNode]) -> bool:
        """True if one of these import statements has a name to mark as a re-export."""
        return any(
            isinstance(small, cst.Import | cst.ImportFrom)
            and not isinstance(small.names, cst.ImportStar)
            and any(alias in self.plan.reexported for alias in small.names)
            for small in smalls
        )

    def _multiline(self, node: cst.CSTNode) -> bool:
        code = self.module.code_for_node(node).rstrip("\r\n")
        return "\n" in code or "\r" in code

    def on_leave(
        self, original_node: cst.CSTNodeT, updated_node: cst.CSTNodeT
    ) -> cst.CSTNodeT | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNodeT]:
        left = super().on_leave(original_node, updated_node)
        if not isinstance(original_node, cst.BaseStatement):
            return left
        text = self.plan.definitions.get(original_node)
        if text is None:
            return left
        after: list[cst.BaseStatement] = []
        if isinstance(left, cst.FlattenSentinel):
            after = [n for n in left.nodes if isinstance(n, cst.BaseStatement)]
        elif isinstance(left, cst.BaseStatement):
            after = [left]
        definition = self.parse(text)
        if after:
            # The definition takes the blank lines above the statement; the statement keeps
            # its comments, after two blank lines (pycodestyle E305).
            lines = _leading(after[0])
            blank = next((i for i, e in enumerate(lines) if e.comment is not None), len(lines))
            definition[0] = _with_leading(definition[0], lines[:blank])
            after[0] = _with_leading(after[0], [cst.EmptyLine(), cst.EmptyLine(), *lines[blank:]])
        # A module-level statement is replaced by statements, as libcst allows.
        return cast("cst.FlattenSentinel[cst.CSTNodeT]", cst.FlattenSentinel([*definition, *after]))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if original_node.body and original_node.body[0] in self.gone:
            if updated_node.body:
                updated_node = updated_node.with_changes(body=_close_gap(updated_node.body))
            else:
                footer = _without_blanks(updated_node.footer)
                updated_node = updated_node.with_changes(footer=footer)
        if not self.plan.imports.first:
            return updated_node
        new = self.parse(import_lines(self.plan.imports.first, self.newline, self.unit, self.width))
        return updated_node.with_changes(body=[*new, *updated_node.body])


class _Flatten(cst.CSTTransformer):
    """Line breaks inside brackets removed where no space is needed: around ``(``, ``)`` and
    the dots of an attribute chain. ``ok`` turns False when another one is met."""

    def __init__(self) -> None:
        self.ok = True

    def leave_ParenthesizedWhitespace(
        self, original_node: cst.ParenthesizedWhitespace, updated_node: cst.ParenthesizedWhitespace
    ) -> cst.BaseParenthesizableWhitespace:
        return cst.SimpleWhitespace("")

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Comment):
            self.ok = False
        spaced = cst.Arg | cst.Element | cst.BinaryOperation | cst.BooleanOperation
        if isinstance(node, spaced) and "\n" in cst.Module(body=[]).code_for_node(node):
            self.ok = False  # breaks between operands or arguments need their spaces
        return self.ok and super().on_visit(node)


def _tidy(statement: cst.SimpleStatementLine, module: cst.Module, room: int) -> cst.BaseStatement:
    """A statement left over its old call's lines (``return (\n    edge_manager\n    .buffer\n)``)
    put back on one line, without the brackets that only served the line breaks, when it fits
    and holds no comment."""
    code = module.code_for_node(statement)
    if "\n" not in code.rstrip("\r\n") or len(statement.body) != 1:
        return statement
    small = statement.body[0]
    value = getattr(small, "value", None)
    if not isinstance(small, cst.Return | cst.Assign | cst.Expr) or value is None:
        return statement
    flatten = _Flatten()
    flat = value.visit(flatten)
    if not flatten.ok or not isinstance(flat, cst.BaseExpression):
        return statement
    if isinstance(flat, cst.Attribute | cst.Call | cst.Name | cst.Subscript):
        flat = flat.with_changes(lpar=[], rpar=[])
    tidied = statement.with_changes(body=[small.with_changes(value=flat)])
    line = module.code_for_node(tidied).rstrip("\r\n")
    return tidied if len(line) <= room and "\n" not in line else statement


def _break_call(
    statement: cst.BaseStatement, module: cst.Module, room: int, unit: str, newline: str
) -> str | None:
    """A one-line statement wider than ``room`` whose value is a call (what is left of a
    statement once its old call became a name: ``x = edge_manager.to_executorch(...)``),
    broken inside the call's parentheses as ruff formats it; None when it fits or is not
    of that shape."""
    code = module.code_for_node(statement).rstrip("\r\n")
    if "\n" in code or len(code) <= room or not isinstance(statement, cst.SimpleStatementLine):
        return None
    if len(statement.body) != 1 or statement.trailing_whitespace.comment is not None:
        return None
    small = statement.body[0]
    call = getattr(small, "value", None)
    if not isinstance(small, cst.Return | cst.Assign | cst.AnnAssign | cst.Expr):
        return None
    if not isinstance(call, cst.Call) or call.lpar or not call.args:
        return None
    marker = "__qnn_migrate_call__"
    head = module.code_for_node(small.with_changes(value=cst.Name(marker)))
    args = [
        module.code_for_node(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for a in call.args
    ]
    if any("\n" in a for a in args):
        return None
    one_line = ", ".join(args)
    if len(unit) + len(one_line) <= room:
        inner = f"{unit}{one_line}"
    else:
        inner = newline.join(f"{unit}{a}," for a in args)
    func = module.code_for_node(call.func)
    return head.replace(marker, f"{func}({newline}{inner}{newline})", 1)


def _close_gap(body: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """A block whose first statement was removed starts with the next one, without the
    blank lines that separated the two."""
    statements = list(body)
    if statements:
        statements[0] = _with_leading(statements[0], _without_blanks(_leading(statements[0])))
    return statements


def _without_blanks(lines: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """``lines`` from the first comment on."""
    kept = list(lines)
    while kept and kept[0].comment is None:
        kept.pop(0)
    return kept


def _leading(node: cst.BaseStatement) -> list[cst.EmptyLine]:
    if isinstance(node, cst.SimpleStatementLine | cst.BaseCompoundStatement):
        return list(node.leading_lines)
    return []


def _with_leading(node: cst.BaseStatement, lines: Sequence[cst.EmptyLine]) -> cst.BaseStatement:
    if isinstance(node, cst.SimpleStatementLine | cst.BaseCompoundStatement):
        return node.with_changes(leading_lines=lines)
    return node


NOQA_F401 = "noqa: F401"


def _noqa_comment(comment: cst.Comment | None) -> cst.Comment:
    """``comment`` with ``F401`` among its noqa codes (a bare noqa marker covers it already)."""
    if comment is None:
        return cst.Comment(f"# {NOQA_F401}")
    text = comment.value
    if "noqa" in text and ":" not in text.split("noqa", 1)[1][:2]:
        return comment  # a bare marker silences every code
    if "noqa:" in text:
        head, codes = text.split("noqa:", 1)
        return cst.Comment(f"{head}noqa: {codes.strip()}, F401")
    return cst.Comment(f"{text}  # {NOQA_F401}")


def _with_noqa(trailing: cst.TrailingWhitespace) -> cst.TrailingWhitespace:
    comment = _noqa_comment(trailing.comment)
    space = trailing.whitespace if trailing.comment is not None else cst.SimpleWhitespace("  ")
    return trailing.with_changes(whitespace=space, comment=comment)


def _noqa_after(alias: cst.ImportAlias) -> cst.ImportAlias:
    """``alias`` with the F401 marker on its line, after its comma."""
    comma = alias.comma
    if isinstance(comma, cst.Comma) and isinstance(
        comma.whitespace_after, cst.ParenthesizedWhitespace
    ):
        after = comma.whitespace_after
        return alias.with_changes(
            comma=comma.with_changes(
                whitespace_after=after.with_changes(first_line=_with_noqa(after.first_line))
            )
        )
    return alias  # the last name without a comma: the rare layout a formatter never writes
