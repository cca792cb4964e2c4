"""Output shapes: one site's new code, planned as statements before its statement (wrapped in
``with``) or as one expression, with fresh names that never shadow the user's.

The code itself comes from the target (``codemods/targets``); this module gives the target
a :class:`~qnn_migrate.codemods.targets.site.Site` (bound arguments with their indentation,
columns, a name allocator, an import recorder) and records the result in the plan.
"""

from __future__ import annotations

import re

import libcst as cst

from qnn_migrate.codemods import findings
from qnn_migrate.codemods.call_binding import BoundCall
from qnn_migrate.codemods.import_placement import ImportItem
from qnn_migrate.codemods.knowledge import Knowledge
from qnn_migrate.codemods.layout import Printer, Source
from qnn_migrate.codemods.rewrite_plan import RewritePlan
from qnn_migrate.codemods.rules.lower_to_qnn.context import FileContext
from qnn_migrate.codemods.rules.lower_to_qnn.imports import ImportNames, import_placement
from qnn_migrate.codemods.rules.lower_to_qnn.mentions import (
    enclosing_comprehension_targets,
    expression_binders,
    names_used,
)
from qnn_migrate.codemods.rules.lower_to_qnn.sites import Where
from qnn_migrate.codemods.targets.site import (
    CannotRewrite,
    NameAllocator,
    OrderCannotBeKept,
    Site,
    Target,
)

NAME_FOR_RESULT = "edge_manager"  # the temporary for a call that is part of a statement
_WORD = re.compile(r"\w+")


class SiteWriter:
    """Plans the sites of one module, one after the other, sharing names and imports."""

    def __init__(
        self, ctx: FileContext, target: Target | None, site_scopes: set[cst.CSTNode]
    ) -> None:
        """``target``: None when the sites are not planned one by one (``helper.py``)."""
        self.ctx = ctx
        self.target = target
        self.printer = Printer(ctx.tree, width=ctx.options.line_length)
        self.knowledge = Knowledge(
            ctx.catalog.evidence,
            lambda node: {q.name for q in ctx.qualified(node)},
            ctx.scope,
            ctx.parent,
            keeps_arguments=ctx.deprecation.qualified_names,
        )
        text = ctx.module_text or ctx.source or ctx.tree.code
        self.words = frozenset(_WORD.findall(text))
        self.imports = ImportNames(ctx, site_scopes, self.words)
        self._lines = (ctx.source or ctx.tree.code).splitlines()
        self._scope_names: dict[cst.CSTNode, set[str]] = {}
        self.rewritten_funcs: list[cst.BaseExpression] = []
        self.class_level_sites = False  # a rewritten call sits directly in a class body

    def indent_of(self, line: int) -> str:
        text = self._lines[line - 1] if 0 < line <= len(self._lines) else ""
        return text[: len(text) - len(text.lstrip(" \t"))]

    def names(self, scope: cst.CSTNode) -> NameAllocator:
        """Fresh names for one site in ``scope``.

        In a function, fresh with respect to every name the function (and what is nested in
        it) uses or binds, a comprehension's own loop variables included (a new binding of
        the same name would be legal, but a reader would take the two for one); at module
        or class level, to every word of the file, since any function could read a global.
        Sites run one after the other, so two sites in one scope may reuse the same
        generated names.
        """
        if scope not in self._scope_names:
            if isinstance(scope, cst.Module | cst.ClassDef):
                taken = set(self.words)
            else:
                index = self.ctx.index
                taken = names_used(index, scope)
            self._scope_names[scope] = taken
        return NameAllocator(self._scope_names[scope] | set(self.imports.names.values()))

    def plan_site(self, call: cst.Call, bound: BoundCall, where: Where, plan: RewritePlan) -> None:
        """Ask the target for this site's code and record it in ``plan`` (or report why not)."""
        ctx = self.ctx
        statement_ws = self.indent_of(ctx.line(where.statement))
        block_ws = statement_ws
        if where.statement_form and isinstance(ctx.parent(where.small), cst.SimpleStatementSuite):
            block_ws += ctx.tree.default_indent  # the one-line block becomes a real one
        position = ctx.index.position(call)
        call_ws = self.indent_of(position.line)
        split = where.statement_form and not where.direct
        names = self.names(where.scope)
        # A `:=` inside a comprehension may not rebind the comprehension's own variables.
        names.reserve(enclosing_comprehension_targets(ctx.index, call, where.scope))
        temp = names.fresh(NAME_FOR_RESULT) if split else None
        pending: set[ImportItem] = set()
        placement = import_placement(ctx, call.func)

        def import_name(module: str, obj: str) -> str:
            name = self.imports.name(module, obj)
            pending.add(ImportItem(module, obj, name))
            return name

        sources = {}
        for param, arg in bound.args.items():
            # Positions leave out an expression's own parentheses: `(` may be a line above.
            lpar = getattr(arg.value, "lpar", ())
            start = ctx.line(lpar[0] if lpar else arg.value)
            sources[param] = Source(arg.value, _relative(self.indent_of(start), statement_ws))
        site = Site(
            bound=bound,
            sources=sources,
            names=names,
            import_name=import_name,
            printer=self.printer,
            knowledge=self.knowledge,
            flow=ctx.options.flow,
            context=where.context,
            indent="" if split else _relative(call_ws, statement_ws),
            block_column=len(block_ws),
            call_column=(
                len(f"{temp} = ") if temp else max(position.column - len(statement_ws), 0)
            ),
        )
        assert self.target is not None, "a target that plans sites one by one"
        try:
            if where.statement_form:
                rewrite = self.target.statement(site)
            else:
                expression = self.target.expression(site)
        except OrderCannotBeKept as cannot:
            ctx.leave(call, self._order_advice(call, bound, where, cannot))
            return
        except CannotRewrite as cannot:
            ctx.leave(call, cannot.reason)
            return

        if isinstance(where.scope, cst.ClassDef):
            self.class_level_sites = True
        config = ctx.tree.config_for_parsing
        if where.statement_form:
            assert isinstance(where.small, cst.BaseSmallStatement)
            plan.statements[where.small] = (rewrite, temp)
            if temp is None:
                plan.calls[call] = cst.parse_expression(rewrite.call, config=config)
            else:
                plan.calls[call] = cst.Name(temp)
        else:
            plan.calls[call] = cst.parse_expression(expression, config=config)
        for item in pending:
            self.imports.record(item, placement)
        self.rewritten_funcs.append(call.func)
        self.note_comments(where.statement)
        ctx.report.rewritten += 1
        ctx.report.rewritten_at.append((position.line, position.column))

    def _order_advice(
        self, call: cst.Call, bound: BoundCall, where: Where, reason: OrderCannotBeKept
    ) -> findings.Reason:
        """The reason for an order the expression cannot keep, with advice that can be
        followed here: arguments that read a comprehension's or a lambda's own variables
        cannot be assigned to names before the statement."""
        index = self.ctx.index
        read: set[str] = set()
        for param in reason.params:
            value = bound.args[param].value
            read |= {n.value for n in index.subtree(value) if isinstance(n, cst.Name)}
        for binder, names in expression_binders(index, call, where.statement):
            variables = sorted(names & read)
            if variables:
                kind = "the lambda" if isinstance(binder, cst.Lambda) else "the comprehension"
                return findings.ORDER_LOOP_VARIABLE.format(
                    names=", ".join(f"`{p}`" for p in reason.params),
                    variables=", ".join(f"`{v}`" for v in variables),
                    where=kind,
                )
        return reason.reason

    def note_comments(self, statement: cst.BaseStatement) -> None:
        """Comments right above the rewritten statement that name the old API: they describe
        code that is gone, so they are listed for the user to update."""
        lines = getattr(statement, "leading_lines", ())
        old = self.ctx.deprecation.name
        first = self.ctx.line(statement) - len(lines)
        for offset, line in enumerate(lines):
            if line.comment is not None and old in line.comment.value:
                column = len(self.indent_of(first + offset))
                self.ctx.report.note(first + offset, findings.OLD_COMMENT, column)


def _relative(line_ws: str, statement_ws: str) -> str:
    return line_ws[len(statement_ws) :] if line_ws.startswith(statement_ws) else ""
