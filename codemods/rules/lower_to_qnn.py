"""Rule: ``to_edge_transform_and_lower_to_qnn(...)`` becomes ``to_edge_transform_and_lower(...)``.

:class:`LowerToQnn`: module tree in, module tree out, nothing printed or written;
:class:`NothingToRewrite` when there is nothing to do; sites it leaves alone are in
``report``. ``RewriteLowerToQnn``, the same rule as a libcst ``CodemodCommand`` for
``python -m libcst.tool codemod``, lives in ``lower_to_qnn_command.py`` and is importable from
here too: libcst's codemod package imports ``libcst.matchers`` (0.2 s), which
``qnn-migrate rewrite`` does not need. What a name refers to is resolved with libcst's scope
analysis (qualified names asked of the scopes), so aliases (``import ...utils as u``), the
``export_utils`` re-export and fully qualified calls are found, and same-named things that
are *not* ExecuTorch's function are not. Parents, positions and the mentions of the name
come from one :class:`~codemods.tree_index.TreeIndex` pass instead of libcst visits.

Each call goes one of two ways (the code itself comes from the target, see
``codemods/targets``):

* **statement form** - the call is evaluated unconditionally, once, by a simple statement
  (one-line blocks and ``;`` lines are split first), and nothing evaluated before it in that
  statement has side effects: the target's
  statements go before the statement, which is wrapped in ``with <context>:``. When the call is
  only part of the statement (``f(...).to_executorch()``, an argument, an element), its result
  goes to a fresh name inside the ``with`` and the statement follows it, unchanged but for the
  name, so nothing else runs inside the context;
* **expression form** - anywhere else (comprehensions, lambdas, conditional branches, compound
  statement headers): one expression, binding with ``:=`` where needed.

Imports: new ones go where ``AddImportsVisitor`` would put them (merged into a top-level
``from m import ...`` of the same module, else after the module's leading imports), except when
the old import sat inside a function, a ``try`` or an ``if`` (lazy or optional imports): then
right after it, in the same block, so the user's guard still guards. An old import goes when
every use of it was a call this run rewrote (``__all__`` keeps it). The rule plans both from
the scope analysis it already has and applies them in its single pass; libcst's
``AddImportsVisitor``/``RemoveImportsVisitor`` would each compute metadata for the whole
module again, which on a 700-line file cost twice what the rule itself costs.

Sites the rule will not touch are reported with their line and a reason; see
``codemods/findings.py`` for the messages.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import cast

import libcst as cst
import libcst.helpers
from libcst.metadata import Assignment, QualifiedName, QualifiedNameSource, Scope

from qnn_migrate.codemods import findings
from qnn_migrate.codemods.call_binding import BindError, BoundCall, bind_call
from qnn_migrate.codemods.deprecations import Catalog, Deprecation, catalog, lower_to_qnn
from qnn_migrate.codemods.expressions import evaluated_before, is_side_effect_free
from qnn_migrate.codemods.knowledge import Knowledge
from qnn_migrate.codemods.layout import Printer, Source
from qnn_migrate.codemods.rewrite_plan import ApplyPlan, ImportItem, RewritePlan
from qnn_migrate.codemods.scopes import resolve_scopes
from qnn_migrate.codemods.targets.executorch import ExecutorchTarget
from qnn_migrate.codemods.targets.qnn_passes import QnnPassesTarget
from qnn_migrate.codemods.targets.site import CannotRewrite, NameAllocator, Site, Target
from qnn_migrate.codemods.tree_index import TreeIndex

TARGETS: dict[str, Callable[[], Target]] = {
    "qnn-passes": QnnPassesTarget,
    "executorch": ExecutorchTarget,
}
DEFAULT_TARGET = "qnn-passes"

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_NAME_FOR_RESULT = "edge_manager"  # the temporary for a call that is part of a statement


class NothingToRewrite(Exception):
    """The module needs no change (the message says why); ``report`` may still list sites."""


@dataclass
class _Mentions:
    """Every mention of the old name (or of an alias of it) in a module, in document order."""

    mentions: list[cst.Name | cst.Attribute] = field(default_factory=list)
    strings: list[cst.CSTNode] = field(default_factory=list)
    aliases: set[str] = field(default_factory=set)  # `import ... to_edge_..._qnn as <alias>`
    definition: cst.FunctionDef | None = None  # a module-level `def to_edge_..._qnn`
    exported: set[str] = field(default_factory=set)  # the strings of a module-level __all__


_FOUND_KINDS = frozenset(
    {
        cst.Name,
        cst.Attribute,
        cst.SimpleString,
        cst.FormattedStringText,
        cst.ImportAlias,
        cst.FunctionDef,
        cst.ClassDef,
        cst.Assign,
        cst.AugAssign,
    }
)


def _find(index: TreeIndex, old: str, aliases: frozenset[str] = frozenset()) -> _Mentions:
    """One pass over the index: what a visitor with these visit_* methods would collect.

    ``aliases``: names that count as mentions too (found by a first pass: uses of an alias
    may come before its import in the file).
    """
    found = _Mentions()
    definitions: list[int] = []  # where the enclosing function and class definitions end
    for i, node in enumerate(index.nodes):
        kind = type(node)
        if kind not in _FOUND_KINDS:
            continue  # most nodes: whitespace, operators, other expressions
        if kind is cst.Name:
            value = cast(cst.Name, node).value
            if value == old or value in aliases:
                found.mentions.append(cast(cst.Name, node))
        elif kind is cst.Attribute:
            if cast(cst.Attribute, node).attr.value == old:
                found.mentions.append(cast(cst.Attribute, node))
        elif kind is cst.SimpleString or kind is cst.FormattedStringText:
            if old in cast(cst.SimpleString | cst.FormattedStringText, node).value:
                found.strings.append(node)
        elif kind is cst.ImportAlias:
            alias = cast(cst.ImportAlias, node)
            if alias.evaluated_name == old and alias.evaluated_alias is not None:
                found.aliases.add(alias.evaluated_alias)
        else:
            while definitions and i >= definitions[-1]:
                definitions.pop()
            if kind is cst.FunctionDef or kind is cst.ClassDef:
                function = cast(cst.FunctionDef, node)
                if kind is cst.FunctionDef and not definitions and function.name.value == old:
                    found.definition = function
                definitions.append(index.end(node))
            elif kind is cst.Assign and not definitions:
                assign = cast(cst.Assign, node)
                for target in assign.targets:
                    _export(target.target, assign.value, found.exported)
            elif kind is cst.AugAssign and not definitions:
                augmented = cast(cst.AugAssign, node)
                _export(augmented.target, augmented.value, found.exported)
    return found


def _export(
    target: cst.BaseExpression, value: cst.BaseExpression | None, exported: set[str]
) -> None:
    """The strings of ``__all__ = [...]`` (or ``+=``) at module level."""
    if (
        isinstance(target, cst.Name)
        and target.value == "__all__"
        and isinstance(value, cst.List | cst.Tuple)
    ):
        for element in value.elements:
            if isinstance(element.value, cst.SimpleString):
                text = element.value.evaluated_value
                if isinstance(text, str):
                    exported.add(text)


def _names_used(index: TreeIndex, scope: cst.CSTNode) -> set[str]:
    """Every identifier a subtree uses or binds (for fresh names), attributes and keywords
    excepted: the names a visitor of its Name nodes would see, skipping ``Attribute.attr``
    and ``Arg.keyword``, with the names an import binds instead of its dotted parts."""
    names: set[str] = set()
    nodes = index.subtree(scope)
    offset = index.end(scope) - len(nodes)
    i = 0
    while i < len(nodes):
        node = nodes[i]
        kind = type(node)
        if kind is cst.Name:
            assert isinstance(node, cst.Name)
            parent = index.parent(node)
            if not (
                (isinstance(parent, cst.Attribute) and parent.attr is node)
                or (isinstance(parent, cst.Arg) and parent.keyword is node)
            ):
                names.add(node.value)
        elif kind is cst.Import or kind is cst.ImportFrom:
            assert isinstance(node, cst.Import | cst.ImportFrom)
            if not isinstance(node.names, cst.ImportStar):
                names.update(_bound_name(alias) for alias in node.names)
            i = index.end(node) - offset
            continue
        i += 1
    return names


def _bound_name(alias: cst.ImportAlias) -> str:
    """The local name an import alias binds (``import a.b`` binds ``a``)."""
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return alias.evaluated_name.split(".")[0]


@dataclass(frozen=True)
class _Where:
    """Where a call sits, as far as the rewrite is concerned."""

    statement: cst.BaseStatement  # the statement that contains the call
    small: cst.CSTNode  # the small statement (or compound statement) that contains it
    scope: cst.CSTNode  # the FunctionDef/Lambda/ClassDef/Module whose names the new names avoid
    statement_form: bool
    direct: bool  # statement form: the call is the whole value of the statement
    context: str  # expression form: what the call is part of, in words


class LowerToQnn:
    """Rewrite to_edge_transform_and_lower_to_qnn calls to executorch's to_edge_transform_and_lower."""

    def __init__(
        self,
        target: str = DEFAULT_TARGET,
        *,
        filename: str | None = None,
        module_text: str | None = None,
        source: str | None = None,
    ) -> None:
        """``filename``: the module's path, if it has one (ExecuTorch's re-exporting module
        keeps its import).

        ``module_text``: the whole file, when the tree given is an excerpt of it (see
        ``codemods/excerpt.py``); names the rewrite introduces at module or class level avoid
        every identifier-like word in it.
        ``source``: the exact text the tree was parsed from, if the caller has it (saves
        printing the tree again).
        """
        if target not in TARGETS:
            raise ValueError(f"unknown target {target!r}; choose one of {sorted(TARGETS)}")
        self.target = TARGETS[target]()
        self.catalog: Catalog = catalog()
        self.deprecation: Deprecation = lower_to_qnn()
        self.filename = filename
        self.module_text = module_text
        self.source = source
        self.report = findings.Report()
        self.class_level_sites = False  # a rewritten call sits directly in a class body
        self.removed_names: set[str] = set()  # names whose import the rewrite removed
        self.import_names: set[str] = set()  # names new imports bind unless taken

    # -- entry point ----------------------------------------------------------------------
    def transform(self, tree: cst.Module) -> cst.Module:
        """Find the sites, plan each one, plan the imports, then apply it all in one pass.

        Raises :class:`NothingToRewrite` when the module needs no change. ``tree`` itself is
        never changed (a new tree is built), so it is neither copied nor printed again.
        """
        self.report = findings.Report()
        self.class_level_sites = False
        self.removed_names = set()
        self.import_names = set()
        self.module = tree
        self._index = TreeIndex(tree)
        self._scopes: Mapping[cst.CSTNode, Scope | None] | None = None  # when first needed
        found = _find(self._index, self.deprecation.name)
        if found.aliases:
            # `from ... import to_edge_transform_and_lower_to_qnn as lower`: uses of `lower`
            # may come before the import in the file, so look again knowing the aliases.
            found = _find(self._index, self.deprecation.name, frozenset(found.aliases))
        if found.definition is not None:
            self.report.leave(self._line(found.definition), findings.DEFINING_MODULE)
            raise NothingToRewrite("defines the deprecated function")
        for string in found.strings:
            self._report_string(string)

        calls = [c for c in (self._classify(m) for m in found.mentions) if c is not None]
        calls = self._drop_nested(calls)
        per_statement: dict[cst.CSTNode, int] = {}
        wheres: dict[cst.Call, _Where] = {}
        for call, _ in calls:
            where = self._where(call)
            if isinstance(where, str):
                self.report.leave(self._line(call), where)
                continue
            wheres[call] = where
            per_statement[where.small] = per_statement.get(where.small, 0) + 1
        self._state = _FileState(self, tree, [self._scopes_around(call) for call in wheres])
        plan = RewritePlan()
        for call, bound in calls:
            if call not in wheres:
                continue
            where = wheres[call]
            if per_statement[where.small] > 1 and where.statement_form:
                # Two calls in one statement: each stays an expression, in its place.
                scope = self._walrus_scope(call)
                if isinstance(scope, str):
                    self.report.leave(self._line(call), scope)
                    continue
                where = _Where(
                    where.statement, where.small, scope, False, False, "a statement with two calls"
                )
            self._plan_site(call, bound, where, plan)

        self.report.unfixable.sort()
        if plan.is_empty():
            raise NothingToRewrite("nothing to rewrite")
        self._plan_imports(plan, found.exported)
        paths: set[cst.CSTNode] = set()
        for target in plan.targets():
            walk: cst.CSTNode | None = self._parent(target)
            while walk is not None and walk not in paths:
                paths.add(walk)
                walk = self._parent(walk)
        return tree.visit(ApplyPlan(plan, self.module, paths))

    def scope_metadata(self, node: cst.CSTNode) -> Scope | None:
        """libcst's ``ScopeProvider`` value for ``node``, resolved for the module on first use
        (a module that only defines the function never needs it)."""
        if self._scopes is None:
            self._scopes = resolve_scopes(self._index)
        return self._scopes.get(node)

    # -- classification -------------------------------------------------------------------
    def _line(self, node: cst.CSTNode) -> int:
        return self._index.line(node)

    def _parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._index.parent(node)

    def _scope(self, node: cst.CSTNode) -> Scope | None:
        scope = self.scope_metadata(node)
        return scope if isinstance(scope, Scope) else None

    def _qualified(self, node: cst.CSTNode) -> set[QualifiedName]:
        scope = self._scope(node)
        if scope is None or not isinstance(node, cst.Name | cst.Attribute | cst.Call):
            return set()
        return set(scope.get_qualified_names_for(node))

    def _report_string(self, node: cst.CSTNode) -> None:
        parent = self._parent(node)
        while parent is not None and not isinstance(parent, cst.Call | cst.BaseStatement):
            parent = self._parent(parent)
        patch = isinstance(parent, cst.Call) and any(
            q.name in self.catalog.patchers for q in self._qualified(parent.func)
        )
        self.report.leave(self._line(node), findings.PATCH_STRING if patch else findings.STRING)

    def _is_binding(self, node: cst.Name | cst.Attribute, parent: cst.CSTNode | None) -> bool:
        """True where the mention names something being defined or imported, not used."""
        if isinstance(node, cst.Name):
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                return True  # seen as the Attribute itself
            if isinstance(parent, cst.FunctionDef | cst.ClassDef | cst.Param) and (
                parent.name is node
            ):
                return True
            if isinstance(parent, cst.Arg) and parent.keyword is node:
                return True
            if isinstance(parent, cst.NameItem | cst.AsName):
                return True
            if isinstance(parent, cst.For | cst.CompFor) and parent.target is node:
                return True
        if isinstance(parent, cst.AssignTarget | cst.AnnAssign) and parent.target is node:
            return True
        walk: cst.CSTNode | None = parent
        while walk is not None and not isinstance(walk, cst.BaseStatement):
            if isinstance(walk, cst.Import | cst.ImportFrom):
                return True
            walk = self._parent(walk)
        return False

    def _classify(self, node: cst.Name | cst.Attribute) -> tuple[cst.Call, BoundCall] | None:
        """A call site to rewrite, or None (after reporting it when it needs reporting)."""
        parent = self._parent(node)
        if self._is_binding(node, parent):
            return None
        qualified = self._qualified(node)
        ours = {q for q in qualified if q.name in self.deprecation.qualified_names}
        is_call = isinstance(parent, cst.Call) and parent.func is node
        line = self._line(node)
        if not ours:
            if not is_call:
                return None
            if isinstance(node, cst.Attribute):
                receiver = self.module.code_for_node(node.value)
                self.report.leave(line, findings.OTHER_OBJECT.format(receiver=receiver))
            elif qualified:
                where = ", ".join(sorted(_describe(q) for q in qualified))
                self.report.leave(line, findings.OTHER_FUNCTION.format(where=where))
            else:
                self.report.leave(line, findings.UNRESOLVED)
            return None
        if qualified - ours:
            other = self._other_binding(node)
            if other is not None:
                self.report.leave(line, findings.AMBIGUOUS.format(other=other))
                return None
        if not is_call:
            self.report.leave(line, findings.AS_VALUE.format(how=_how_used(parent, node)))
            return None
        assert isinstance(parent, cst.Call)
        bound = bind_call(parent, self.deprecation.parameters)
        if isinstance(bound, BindError):
            if bound.kind == "star":
                self.report.leave(line, findings.STAR_ARGS)
            elif bound.kind == "unknown_keyword":
                self.report.leave(line, findings.UNKNOWN_KEYWORD.format(names=bound.detail))
            else:
                self.report.leave(line, findings.BAD_CALL.format(problem=bound.detail))
            return None
        missing = [p for p in self.deprecation.parameters[:3] if p not in bound.args]
        if missing:
            problem = "no " + ", ".join(f"`{p}`" for p in missing)
            self.report.leave(line, findings.BAD_CALL.format(problem=problem))
            return None
        return parent, bound

    def _other_binding(self, node: cst.Name | cst.Attribute) -> str | None:
        """Describe a binding of the name that is neither the import nor an except fallback."""
        base = node
        while isinstance(base, cst.Attribute):
            base = base.value  # type: ignore[assignment]
        if not isinstance(base, cst.Name):
            return "another value"
        scope = self.scope_metadata(base)
        if scope is None:
            return "another value"
        for assignment in scope[base.value]:
            if not isinstance(assignment, Assignment):
                return "a builtin"
            if isinstance(assignment.node, cst.Import | cst.ImportFrom):
                continue
            if not self._inside_except(assignment.node):
                return f"what line {self._line(assignment.node)} binds"
        return None

    def _inside_except(self, node: cst.CSTNode) -> bool:
        walk: cst.CSTNode | None = node
        while walk is not None:
            if isinstance(walk, cst.ExceptHandler):
                return True
            walk = self._parent(walk)
        return False

    def _drop_nested(
        self, calls: list[tuple[cst.Call, BoundCall]]
    ) -> list[tuple[cst.Call, BoundCall]]:
        """Leave alone (and report) calls that contain, or sit inside, another site."""
        sites = {call for call, _ in calls}
        nested: set[cst.Call] = set()
        for call, _ in calls:
            walk = self._parent(call)
            while walk is not None:
                if walk in sites:
                    nested |= {call, walk}  # type: ignore[arg-type]
                walk = self._parent(walk)
        for call in nested:
            self.report.leave(self._line(call), findings.NESTED)
        return [(c, b) for c, b in calls if c not in nested]

    # -- where a call sits ----------------------------------------------------------------
    def _where(self, call: cst.Call) -> _Where | str:
        node: cst.CSTNode = call
        context = ""  # why the call must stay an expression, for messages
        while True:
            parent = self._parent(node)
            if parent is None:
                raise AssertionError("a call outside any statement")
            if isinstance(parent, cst.FormattedStringExpression):
                return findings.FSTRING
            if isinstance(parent, cst.BaseSmallStatement | cst.BaseCompoundStatement):
                break
            before = evaluated_before(parent, node)
            if not context and (before is None or not all(_free(b) for b in before)):
                context = _context(parent, before)
            node = parent
        small = parent
        statement: cst.CSTNode | None = small
        while statement is not None and not isinstance(statement, cst.BaseStatement):
            statement = self._parent(statement)  # one-line blocks: up to their compound statement
        assert isinstance(statement, cst.BaseStatement)
        if isinstance(small, cst.BaseCompoundStatement):
            context = context or _context(small, None)
        else:
            before = evaluated_before(small, node)
            if not context and (before is None or not all(_free(b) for b in before)):
                context = _context(small, before)
        in_block = isinstance(statement, cst.SimpleStatementLine) and isinstance(
            self._parent(statement), cst.IndentedBlock | cst.Module
        )
        # `if x: y = call()` becomes a block; `a = 1; y = call()` separate lines.
        in_suite = isinstance(self._parent(small), cst.SimpleStatementSuite)
        if not context and (in_block or in_suite):
            scope = self._block_scope(statement)
            return _Where(statement, small, scope, True, self._direct(small, call), "")
        walrus_scope = self._walrus_scope(call)
        if isinstance(walrus_scope, str):
            return walrus_scope
        return _Where(
            statement, small, walrus_scope, False, False, context or "a larger expression"
        )

    def _direct(self, small: cst.CSTNode, call: cst.Call) -> bool:
        """The call is the whole value of ``small`` and its targets are plain names."""
        match small:
            case cst.Expr(value=value) | cst.Return(value=value):
                return value is call
            case cst.Assign(value=value, targets=targets):
                return value is call and all(_plain_target(t.target) for t in targets)
            case (
                cst.AnnAssign(value=value, target=target)
                | cst.AugAssign(value=value, target=target)
            ):
                return value is call and _plain_target(target)
        return False

    def _block_scope(self, statement: cst.CSTNode) -> cst.CSTNode:
        walk = self._parent(statement)
        while walk is not None:
            if isinstance(walk, cst.FunctionDef | cst.ClassDef | cst.Module):
                return walk
            walk = self._parent(walk)
        return self.module

    def _walrus_scope(self, call: cst.Call) -> cst.CSTNode | str:
        """The scope a ``:=`` at the call binds in, or why Python forbids one there."""
        node: cst.CSTNode = call
        in_comprehension = False
        while True:
            parent = self._parent(node)
            if parent is None:
                return self.module
            if isinstance(parent, _COMPREHENSIONS):
                in_comprehension = True
            if isinstance(parent, cst.CompFor) and node is parent.iter:
                return findings.COMPREHENSION_ITERABLE
            if isinstance(parent, cst.Lambda) and node is parent.body:
                return parent
            if isinstance(parent, cst.FunctionDef) and node is parent.body:
                return parent
            if isinstance(parent, cst.ClassDef) and node is parent.body:
                return findings.CLASS_COMPREHENSION if in_comprehension else parent
            if isinstance(parent, cst.Module):
                return parent
            node = parent

    # -- planning -------------------------------------------------------------------------
    def _plan_site(
        self, call: cst.Call, bound: BoundCall, where: _Where, plan: RewritePlan
    ) -> None:
        state = self._state
        statement_ws = state.indent_of(self._line(where.statement))
        block_ws = statement_ws
        if where.statement_form and isinstance(self._parent(where.small), cst.SimpleStatementSuite):
            block_ws += self.module.default_indent  # the one-line block becomes a real one
        position = self._index.position(call)
        call_ws = state.indent_of(position.line)
        split = where.statement_form and not where.direct
        names = state.names(where.scope)
        temp = names.fresh(_NAME_FOR_RESULT) if split else None
        pending: set[ImportItem] = set()
        placement = self._import_placement(call.func)
        if isinstance(where.scope, cst.ClassDef):
            self.class_level_sites = True

        def import_name(module: str, obj: str) -> str:
            name = state.import_name(module, obj)
            pending.add((module, obj, name))
            return name

        sources = {}
        for param, arg in bound.args.items():
            start = self._line(arg.value)
            sources[param] = Source(arg.value, _relative(state.indent_of(start), statement_ws))
        site = Site(
            bound=bound,
            sources=sources,
            names=names,
            import_name=import_name,
            printer=state.printer,
            knowledge=state.knowledge,
            context=where.context,
            indent="" if split else _relative(call_ws, statement_ws),
            block_column=len(block_ws),
            call_column=(
                len(f"{temp} = ") if temp else max(position.column - len(statement_ws), 0)
            ),
        )
        try:
            if where.statement_form:
                rewrite = self.target.statement(site)
            else:
                expression = self.target.expression(site)
        except CannotRewrite as reason:
            self.report.leave(self._line(call), str(reason))
            return

        config = self.module.config_for_parsing
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
            state.record_import(item, placement)
        state.rewritten_funcs.append(call.func)
        self.report.rewritten += 1

    def _import_placement(self, func: cst.BaseExpression) -> cst.SimpleStatementLine | None:
        """The statement after which new imports go; None for the module's leading imports."""
        base = func
        while isinstance(base, cst.Attribute):
            base = base.value
        if not isinstance(base, cst.Name):
            return None
        scope = self.scope_metadata(base)
        if scope is None:
            return None
        for assignment in scope[base.value]:
            if isinstance(assignment, Assignment) and isinstance(
                assignment.node, cst.Import | cst.ImportFrom
            ):
                statement = self._parent(assignment.node)
                if not isinstance(statement, cst.SimpleStatementLine):
                    return None
                if isinstance(self._parent(statement), cst.Module) and any(
                    statement is top for top in self._top_imports()
                ):
                    return None  # with the module's leading imports: new ones go there too
                # In a function, try or if, or after module code (a sys.path tweak, say):
                # the new imports go right after the old one, where it was importable.
                return statement
        return None

    def _scopes_around(self, call: cst.Call) -> list[cst.CSTNode]:
        """The function, lambda and class nodes around a call, innermost first."""
        found: list[cst.CSTNode] = []
        walk = self._parent(call)
        while walk is not None:
            if isinstance(walk, cst.FunctionDef | cst.Lambda | cst.ClassDef):
                found.append(walk)
            walk = self._parent(walk)
        return found

    def _plan_imports(self, plan: RewritePlan, exported: set[str]) -> None:
        """New imports where the old one was (or at the top); old ones out when unused."""
        state = self._state
        top = self._top_imports()
        anchor = top[-1] if top else self._docstring()
        for item, placements in sorted(state.imports.items(), key=lambda kv: kv[0]):
            module, obj, name = item
            if state.already_imported(module, obj, name):
                continue
            if None not in placements:
                # Only lazy or guarded old imports: the new ones go next to them, once per
                # block, after the last of them in that block.
                for placement in self._last_per_block(placements):
                    if not self._block_imports(placement, module, obj, name):
                        plan.imports_after.setdefault(placement, set()).add(item)
                continue
            merge = next(
                (
                    node
                    for statement in top
                    for node in statement.body
                    if obj
                    and isinstance(node, cst.ImportFrom)
                    and not node.relative
                    and not isinstance(node.names, cst.ImportStar)
                    and node.module is not None
                    and cst.helpers.get_full_name_for_node(node.module) == module
                ),
                None,
            )
            if merge is not None:
                plan.imports_merged.setdefault(merge, set()).add(item)
            elif anchor is not None:
                plan.imports_after.setdefault(anchor, set()).add(item)
            else:
                plan.imports_first.add(item)
        plan.remove_aliases = self._unused_aliases(exported)
        self.removed_names = {n for a in plan.remove_aliases for n in _binding_names(a)}
        self.removed_names |= {n.split(".")[0] for n in self.removed_names}

    def _last_per_block(
        self, placements: set[cst.SimpleStatementLine | None]
    ) -> list[cst.SimpleStatementLine]:
        """Of several old-import statements, the last one in each block."""
        last: dict[cst.CSTNode | None, tuple[int, cst.SimpleStatementLine]] = {}
        for placement in placements:
            if placement is None:
                continue
            block = self._parent(placement)
            body = list(block.body) if isinstance(block, cst.IndentedBlock | cst.Module) else []
            index = next((i for i, s in enumerate(body) if s is placement), 0)
            if block not in last or index > last[block][0]:
                last[block] = (index, placement)
        return [placement for _, placement in last.values()]

    def _top_imports(self) -> list[cst.SimpleStatementLine]:
        """The module's leading import statements (after its docstring)."""
        found = []
        for i, statement in enumerate(self.module.body):
            if not isinstance(statement, cst.SimpleStatementLine):
                break
            if i == 0 and _is_docstring(statement):
                continue
            if not all(isinstance(s, cst.Import | cst.ImportFrom) for s in statement.body):
                break
            found.append(statement)
        return found

    def _docstring(self) -> cst.SimpleStatementLine | None:
        first = self.module.body[0] if self.module.body else None
        if isinstance(first, cst.SimpleStatementLine) and _is_docstring(first):
            return first
        return None

    def _block_imports(
        self, placement: cst.SimpleStatementLine, module: str, obj: str, name: str
    ) -> bool:
        """True if the block holding ``placement`` already has this exact import."""
        block = self._parent(placement)
        body = block.body if isinstance(block, cst.IndentedBlock | cst.Module) else ()
        return any(
            isinstance(statement, cst.SimpleStatementLine)
            and any(_imports(small, module, obj, name) for small in statement.body)
            for statement in body
        )

    def _reexports(self) -> bool:
        """True if this file is a module other code imports the old name from.

        ExecuTorch's ``export_utils`` re-exports it: its import of the name must stay even when
        the module's own calls are rewritten, or ``from ...export_utils import ...`` breaks.
        """
        filename = "/" + (self.filename or "").replace("\\", "/")
        return any(
            filename.endswith("/" + q.rsplit(".", 1)[0].replace(".", "/") + ".py")
            for q in self.deprecation.qualified_names
        )

    def _unused_aliases(self, exported: set[str]) -> set[cst.ImportAlias]:
        """Import aliases whose every use was a call this run rewrote."""
        if self._reexports():
            exported = exported | {self.deprecation.name}
        rewritten: set[cst.CSTNode] = set()
        for func in self._state.rewritten_funcs:
            walk: cst.CSTNode = func
            while isinstance(walk, cst.Attribute):
                rewritten.add(walk)
                walk = walk.value
            rewritten.add(walk)
        unused: set[cst.ImportAlias] = set()
        for func in self._state.rewritten_funcs:
            base = func
            while isinstance(base, cst.Attribute):
                base = base.value
            if not isinstance(base, cst.Name):
                continue
            scope = self.scope_metadata(base)
            if scope is None:
                continue
            for assignment in scope[base.value]:
                node = assignment.node if isinstance(assignment, Assignment) else None
                if not isinstance(node, cst.Import | cst.ImportFrom) or isinstance(
                    node.names, cst.ImportStar
                ):
                    continue
                home = self.scope_metadata(node)
                if home is None:
                    continue
                for alias in node.names:
                    bound = _binding_names(alias)
                    if bound & exported or alias in unused:
                        continue
                    references = [
                        reference.node
                        for a in home.assignments
                        if isinstance(a, Assignment) and a.node is node and a.name in bound
                        for reference in a.references
                    ]
                    if references and all(r in rewritten for r in references):
                        unused.add(alias)
        return unused


def _is_docstring(statement: cst.SimpleStatementLine) -> bool:
    return (
        len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, cst.SimpleString | cst.ConcatenatedString)
    )


def _binding_names(alias: cst.ImportAlias) -> set[str]:
    """Every name an alias binds in scope analysis (``import a.b`` binds a and a.b)."""
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return {alias.asname.name.value}
    parts = alias.evaluated_name.split(".")
    return {".".join(parts[: i + 1]) for i in range(len(parts))}


def _relative(line_ws: str, statement_ws: str) -> str:
    return line_ws[len(statement_ws) :] if line_ws.startswith(statement_ws) else ""


def _plain_target(node: cst.BaseExpression) -> bool:
    """An assignment target whose evaluation has no side effects (``x``, ``a.b``, ``d[k]``)."""
    match node:
        case cst.Subscript(value=value, slice=slices):
            return is_side_effect_free(value) and all(_free(s) for s in slices)
        case cst.Tuple(elements=elements) | cst.List(elements=elements):
            return all(_plain_target(e.value) for e in elements)
    return is_side_effect_free(node)


def _free(node: cst.CSTNode) -> bool:
    """Side-effect free, for the wrapper nodes that appear between a call and its statement."""
    match node:
        case (
            cst.Arg(value=value) | cst.Element(value=value) | cst.ComparisonTarget(comparator=value)
        ):
            return is_side_effect_free(value)
        case cst.DictElement(key=key, value=value):
            return is_side_effect_free(key) and is_side_effect_free(value)
        case cst.SubscriptElement(slice=cst.Index(value=value)):
            return is_side_effect_free(value)
        case cst.BaseExpression():
            return is_side_effect_free(node)
    return False


def _context(parent: cst.CSTNode, before: list[cst.CSTNode] | None) -> str:
    """In words, what keeps a call inside ``parent`` from getting statements of its own."""
    if before is not None:
        return "an expression that first evaluates something with side effects"
    match parent:
        case (
            cst.ListComp()
            | cst.SetComp()
            | cst.DictComp()
            | cst.GeneratorExp()
            | (cst.CompFor() | cst.CompIf())
        ):
            return "a comprehension"
        case cst.Lambda():
            return "a lambda"
        case cst.IfExp():
            return "a conditional expression"
        case cst.BooleanOperation():
            return "an `and`/`or` operand"
        case cst.Assert():
            return "an assert"
        case cst.BaseCompoundStatement() | cst.Param() | cst.Decorator() | cst.WithItem():
            return "a compound statement's header (if/for/while/with/def/class)"
    return "a larger expression"


def _describe(name: QualifiedName) -> str:
    if name.source is QualifiedNameSource.LOCAL:
        return "defined in this file"
    return name.name


def _how_used(parent: cst.CSTNode | None, node: cst.CSTNode) -> str:
    """How a value is used, to complete "to_edge_transform_and_lower_to_qnn is ... here"."""
    match parent:
        case cst.Arg():
            return "passed as an argument"
        case cst.Assign() | cst.AnnAssign():
            return "assigned to a name"
        case cst.AssignTarget():
            return "replaced by an assignment"
        case cst.Element() | cst.DictElement():
            return "put in a collection"
        case cst.Return():
            return "returned"
        case cst.Attribute():
            return "read an attribute of"
        case cst.Param():
            return "a parameter's default value"
    return "used as a value"


_WORD = re.compile(r"\w+")


class _FileState:
    """Per-file memory shared by the sites: fresh names per scope, import names, layout."""

    def __init__(
        self, command: LowerToQnn, tree: cst.Module, site_scopes: list[list[cst.CSTNode]]
    ) -> None:
        self.command = command
        self.tree = tree
        self.printer = Printer(tree)
        self.knowledge = Knowledge(
            command.catalog.evidence,
            lambda node: {q.name for q in command._qualified(node)},
            command._scope,
            command._parent,
        )
        self.site_scopes = {scope for scopes in site_scopes for scope in scopes}
        self._lines: list[str] | None = None
        self._words: frozenset[str] | None = None
        self._scope_names: dict[cst.CSTNode, set[str]] = {}
        self._import_names: dict[tuple[str, str], str] = {}
        self.imports: dict[ImportItem, set[cst.SimpleStatementLine | None]] = {}
        self.rewritten_funcs: list[cst.BaseExpression] = []

    def code_lines(self) -> list[str]:
        if self._lines is None:
            self._lines = (self.command.source or self.tree.code).splitlines()
        return self._lines

    def indent_of(self, line: int) -> str:
        lines = self.code_lines()
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        return text[: len(text) - len(text.lstrip(" \t"))]

    def words(self) -> frozenset[str]:
        """Every identifier-like word in the file: names at module or class level avoid them."""
        if self._words is None:
            text = self.command.module_text or self.command.source or self.tree.code
            self._words = frozenset(_WORD.findall(text))
        return self._words

    def names(self, scope: cst.CSTNode) -> NameAllocator:
        """Fresh names for one site in ``scope``.

        In a function, fresh with respect to every name the function (and what is nested in
        it) uses; at module or class level, to every word of the file, since any function
        could read a global. Sites run one after the other, so two sites in one scope may
        reuse the same generated names.
        """
        if scope not in self._scope_names:
            if isinstance(scope, cst.Module | cst.ClassDef):
                taken = set(self.words())
            else:
                taken = _names_used(self.command._index, scope)
            self._scope_names[scope] = taken
        return NameAllocator(self._scope_names[scope] | set(self._import_names.values()))

    def _bound(self, name: str, node: cst.CSTNode) -> list[Assignment]:
        """Bindings of ``name`` made directly in the scope that ``node`` opens."""
        inner: cst.CSTNode | None
        if isinstance(node, cst.FunctionDef | cst.ClassDef):
            inner = node.body.body[0] if isinstance(node.body, cst.IndentedBlock) else None
            inner = inner or node.body
        elif isinstance(node, cst.Lambda):
            inner = node.body
        else:
            inner = node
        scope = self.command.scope_metadata(inner)
        if not isinstance(scope, Scope) or name not in scope.assignments:
            return []
        return [a for a in scope.assignments[name] if isinstance(a, Assignment)]

    def import_name(self, module: str, obj: str) -> str:
        """The local name for ``from module import obj`` (``import module`` when obj is "").

        The plain name unless the module binds it to something else, or a scope around one
        of the rewritten calls does; then a fresh alias.
        """
        key = (module, obj)
        if key not in self._import_names:
            base = obj or module.split(".")[0]
            self.command.import_names.add(base)
            clash = any(self._bound(base, scope) for scope in self.site_scopes)
            module_bindings = self._bound(base, self.tree)
            clash = clash or any(not _imports(a.node, module, obj, base) for a in module_bindings)
            if clash:
                taken = self.words() | set(self._import_names.values())
                name = NameAllocator(taken).fresh(base)
            else:
                name = base
            self._import_names[key] = name
        return self._import_names[key]

    def already_imported(self, module: str, obj: str, name: str) -> bool:
        """True if the module level already binds ``name`` to exactly this, and only this."""
        bindings = self._bound(name, self.tree)
        return bool(bindings) and all(_imports(a.node, module, obj, name) for a in bindings)

    def record_import(self, item: ImportItem, placement: cst.SimpleStatementLine | None) -> None:
        self.imports.setdefault(item, set()).add(placement)


def _imports(node: cst.CSTNode, module: str, obj: str, name: str) -> bool:
    """True if ``node`` is an import statement binding ``name`` to ``module``(.``obj``)."""
    if obj and isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
        if node.relative or node.module is None:
            return False
        if cst.helpers.get_full_name_for_node(node.module) != module:
            return False
        return any(a.evaluated_name == obj and _bound_name(a) == name for a in node.names)
    if not obj and isinstance(node, cst.Import):
        return any(
            _bound_name(a) == name
            and (a.evaluated_name == module or (a.asname is None and name == module))
            for a in node.names
        )
    return False


def __getattr__(name: str) -> object:
    """``RewriteLowerToQnn``, the libcst ``CodemodCommand``, imported on first use."""
    if name == "RewriteLowerToQnn":
        from qnn_migrate.codemods.rules.lower_to_qnn_command import RewriteLowerToQnn

        return RewriteLowerToQnn
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
