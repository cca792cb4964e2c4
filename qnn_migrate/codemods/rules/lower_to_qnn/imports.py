"""Import planning: the names new imports bind, where they belong, which old imports go.

New imports belong with the module's leading imports, in the section that holds ExecuTorch's
(third-party); where exactly, as isort would put them, is ``codemods/import_placement.py``.
When the old import sat inside a function, a ``try`` or an ``if`` (lazy or optional imports),
they go among the imports of that block instead, so the user's guard still guards. An old
import goes when every use of it was a call this run rewrote, unless the module re-exports
the name (see :func:`reexport_reason`).
"""

from __future__ import annotations

import libcst as cst
import libcst.helpers
from libcst.metadata import Assignment, ClassScope, Scope

from qnn_migrate.codemods import findings
from qnn_migrate.codemods import import_placement as placing
from qnn_migrate.codemods.expressions import attribute_chain, chain_root
from qnn_migrate.codemods.import_placement import ImportItem, imports, top_imports
from qnn_migrate.codemods.reexports import imported_here
from qnn_migrate.codemods.rewrite_plan import RewritePlan
from qnn_migrate.codemods.rules.lower_to_qnn.context import FileContext
from qnn_migrate.codemods.rules.lower_to_qnn.mentions import binding_names
from qnn_migrate.codemods.rules.lower_to_qnn.sites import except_fallbacks, module_object
from qnn_migrate.codemods.targets.site import NameAllocator

# Module names (file name without ``.py``) that usually re-export a package's public names.
PUBLIC_MODULE_NAMES = frozenset({"api", "public", "exports", "export_utils"})
# The roots of the modules the rewrite imports from; the section that holds them, or the old
# import (ExecuTorch's), is where the new imports go.
_THIRD_PARTY_ROOTS = ("executorch", "torch", "qnn_passes")


class ImportNames:
    """The local names of the new imports in one module, and where each was asked for."""

    def __init__(
        self, ctx: FileContext, site_scopes: set[cst.CSTNode], words: frozenset[str]
    ) -> None:
        self.ctx = ctx
        self.site_scopes = site_scopes
        self.words = words
        self.names: dict[tuple[str, str], str] = {}
        self.bases: set[str] = set()  # names new imports bind unless taken
        self.imports: dict[ImportItem, set[cst.SimpleStatementLine | None]] = {}

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
        scope = self.ctx.scope_metadata(inner)
        if not isinstance(scope, Scope) or name not in scope.assignments:
            return []
        return [a for a in scope.assignments[name] if isinstance(a, Assignment)]

    def name(self, module: str, obj: str) -> str:
        """The local name for ``from module import obj`` (``import module`` when obj is "").

        The plain name unless the module binds it to something else, or a scope around one
        of the rewritten calls does; then a fresh alias.
        """
        key = (module, obj)
        if key not in self.names:
            base = obj or module.split(".")[0]
            self.bases.add(base)
            # An identical import already there (in the module, a function, a try) is reused,
            # and so is a name only an `except ImportError:` fallback also binds.
            bindings = [
                a for scope in (*self.site_scopes, self.ctx.tree) for a in self._bound(base, scope)
            ]
            clash = any(not self._same(a, module, obj, base) for a in bindings)
            if clash:
                taken = self.words | set(self.names.values())
                self.names[key] = NameAllocator(taken).fresh(base)
            else:
                self.names[key] = base
        return self.names[key]

    def _same(self, assignment: Assignment, module: str, obj: str, name: str) -> bool:
        """True if ``assignment`` binds ``name`` to exactly what the new import would, or is
        a fallback for it (``name = None`` in an ``except`` clause)."""
        node = assignment.node
        if imports(node, ImportItem(module, obj, name)):
            return True
        target = self.ctx.parent(node)
        assign = self.ctx.parent(target) if isinstance(target, cst.AssignTarget) else None
        return (
            isinstance(assign, cst.Assign)
            and isinstance(assign.value, cst.Name)
            and assign.value.value == "None"
            and self.ctx.inside(assign, cst.ExceptHandler)
        )

    def already_imported(self, module: str, obj: str, name: str) -> bool:
        """True if the module level already binds ``name`` to exactly this, and to nothing
        else but an ``except ImportError:`` fallback of None (``try: from m import name``):
        another import of it would be a duplicate (pyflakes F811)."""
        bindings = self._bound(name, self.ctx.tree)
        item = ImportItem(module, obj, name)
        return any(imports(a.node, item) for a in bindings) and all(
            self._same(a, module, obj, name) for a in bindings
        )

    def record(self, item: ImportItem, placement: cst.SimpleStatementLine | None) -> None:
        self.imports.setdefault(item, set()).add(placement)


def import_placement(ctx: FileContext, func: cst.BaseExpression) -> cst.SimpleStatementLine | None:
    """The statement after which new imports go; None for the module's leading imports."""
    base = chain_root(func)
    if not isinstance(base, cst.Name):
        return None
    scope = ctx.scope_metadata(base)
    if scope is None:
        return None
    loader = module_object(ctx, func)
    if loader is not None:
        statement = ctx.parent(loader)  # the new imports replace `m = import_module(...)`
        return statement if isinstance(statement, cst.SimpleStatementLine) else None
    for assignment in scope[base.value]:
        if isinstance(assignment, Assignment) and isinstance(
            assignment.node, cst.Import | cst.ImportFrom
        ):
            statement = ctx.parent(assignment.node)
            if not isinstance(statement, cst.SimpleStatementLine):
                return None
            if isinstance(ctx.parent(statement), cst.Module) and any(
                statement is top for top in top_imports(ctx.tree)
            ):
                return None  # with the module's leading imports: new ones go there too
            # In a function, try or if, or after module code (a sys.path tweak, say):
            # the new imports go right after the old one, where it was importable.
            return statement
    return None


def plan_imports(
    ctx: FileContext,
    names: ImportNames,
    rewritten_funcs: list[cst.BaseExpression],
    exported: set[str],
    plan: RewritePlan,
) -> frozenset[str]:
    """New imports where isort would put them; old ones out when unused.

    Returns the names whose import the plan removes.
    """
    tree = ctx.tree
    top = top_imports(tree)
    by_module: dict[tuple[str, cst.SimpleStatementLine | None], set[ImportItem]] = {}
    for item, placements in sorted(names.imports.items(), key=lambda kv: kv[0]):
        if names.already_imported(*item):
            continue
        if None not in placements:
            # Only lazy or guarded old imports: the new ones go next to them, once per
            # block, among the imports around the last of them in that block.
            for last in placing.last_per_block(ctx.index, placements):
                if not placing.block_imports(ctx.index, last, item) and not placing.imported_around(
                    ctx.index, last, item
                ):
                    by_module.setdefault((item.module, last), set()).add(item)
            continue
        by_module.setdefault((item.module, None), set()).add(item)
    for alias in _unused_aliases(ctx, rewritten_funcs):
        why = kept_reason(ctx, alias, exported)
        if why is not None:
            ctx.note(alias, findings.KEPT_IMPORT.format(why=why))
            if not _explicit_reexport(alias, exported):
                plan.reexported.add(alias)  # marked for F401: nothing here uses it any more
        else:
            plan.remove_aliases.add(alias)
    for (_, placement), items in by_module.items():
        if placement is None:
            block: list[cst.BaseStatement] = list(tree.body)
            region = top
        else:
            block = placing.block_of(ctx.index, placement)
            region = placing.import_run(block, placement)
        _place(ctx, plan, items, block, region, placement)
    removed = {n for a in plan.remove_aliases for n in binding_names(a)}
    loaders = _unused_loaders(ctx, rewritten_funcs)
    for loader, name in loaders:
        plan.remove_statements.add(loader)
        removed.add(name)
    for alias in _only_used_by(ctx, {loader for loader, _ in loaders}):
        plan.remove_aliases.add(alias)  # `import importlib`, once no loader is left
        removed |= binding_names(alias)
    return frozenset(removed | {n.split(".")[0] for n in removed})


def kept_reason(ctx: FileContext, alias: cst.ImportAlias, exported: set[str]) -> str | None:
    """Why an import of the old name stays once this file no longer uses it, in words; None
    when it can go. It stays where the module re-exports it: listed in ``__all__``, imported
    ``as`` itself (the explicit re-export form of PEP 484 and type checkers), or by
    :func:`reexport_reason` for a module-level import of the plain name."""
    bound = binding_names(alias)
    if bound & exported:
        return "it is listed in `__all__`"
    if ctx.inside(alias, (cst.FunctionDef, cst.ClassDef)):
        return None
    if (
        alias.asname is not None
        and isinstance(alias.asname.name, cst.Name)
        and alias.asname.name.value == alias.evaluated_name
    ):
        return "it is imported `as` itself, the explicit form of a re-export"
    return reexport_reason(ctx) if ctx.deprecation.name in bound else None


def _explicit_reexport(alias: cst.ImportAlias, exported: set[str]) -> bool:
    """True if linters already see ``alias`` as a re-export: listed in ``__all__``, or
    imported ``as`` itself."""
    return bool(binding_names(alias) & exported) or (
        alias.asname is not None
        and isinstance(alias.asname.name, cst.Name)
        and alias.asname.name.value == alias.evaluated_name
    )


def plan_unused_imports(
    ctx: FileContext,
    mentions: list[cst.Name | cst.Attribute],
    exported: set[str],
    plan: RewritePlan,
) -> None:
    """Imports of ExecuTorch's old name that nothing in the file uses.

    Nothing to rewrite, yet the module fails to import the day ExecuTorch removes the
    function: such an import goes (noted), or, where the module re-exports the name
    (:func:`kept_reason`), stays and is reported as a site left for the user.
    """
    for alias in _old_name_aliases(ctx, mentions):
        statement = ctx.parent(alias)
        if statement is None or (home := ctx.scope_metadata(statement)) is None:
            continue
        bound = binding_names(alias)
        references = [
            reference
            for a in home.assignments
            if isinstance(a, Assignment) and a.node is statement and a.name in bound
            for reference in a.references
        ]
        if references:
            continue  # used: its uses decide (a rewritten call, or a site left alone)
        why = kept_reason(ctx, alias, exported)
        if why is None and isinstance(home, ClassScope):
            why = "in a class body it binds an attribute, which other code may read"
        if why is not None:
            ctx.leave(alias, findings.UNUSED_IMPORT_KEPT.format(why=why))
            continue
        plan.remove_aliases.add(alias)
        ctx.note(alias, findings.UNUSED_IMPORT_REMOVED)
        # `except ImportError: <name> = None` only stood in for the import.
        fallbacks = _fallbacks(ctx, home, bound, statement)
        plan.remove_statements.update(fallbacks or ())


def _fallbacks(
    ctx: FileContext, scope: Scope, names: set[str], statement: cst.CSTNode
) -> list[cst.Assign] | None:
    """The ``<name> = None`` statements in ``except`` clauses that are the only other
    bindings of ``names`` in ``scope`` besides ``statement``; None when there are others."""
    found = []
    for name in names:
        for assignment in scope.assignments[name]:
            node = assignment.node if isinstance(assignment, Assignment) else None
            if node is statement:
                continue
            target = ctx.parent(node) if node is not None else None
            assign = ctx.parent(target) if isinstance(target, cst.AssignTarget) else None
            if not (
                isinstance(assign, cst.Assign)
                and len(assign.targets) == 1
                and isinstance(assign.value, cst.Name)
                and assign.value.value == "None"
                and ctx.inside(assign, cst.ExceptHandler)
            ):
                return None
            found.append(assign)
    return found


def _old_name_aliases(
    ctx: FileContext, mentions: list[cst.Name | cst.Attribute]
) -> list[cst.ImportAlias]:
    """``from <ExecuTorch's module> import <old name> [as x]``: the import aliases, from the
    mentions of the name (relative imports excepted: whose module they name is unknown)."""
    found = []
    for mention in mentions:
        alias = ctx.parent(mention)
        if not isinstance(alias, cst.ImportAlias) or alias.name is not mention:
            continue
        statement = ctx.parent(alias)
        if (
            not isinstance(statement, cst.ImportFrom)
            or statement.relative
            or statement.module is None
        ):
            continue
        module = cst.helpers.get_full_name_for_node(statement.module)
        if f"{module}.{alias.evaluated_name}" in ctx.deprecation.qualified_names:
            found.append(alias)
    return found


def _unused_loaders(
    ctx: FileContext, rewritten_funcs: list[cst.BaseExpression]
) -> list[tuple[cst.Assign, str]]:
    """``m = importlib.import_module("...")`` statements whose every use was a call this run
    rewrote, with the name they bind."""
    rewritten = {func.value for func in rewritten_funcs if isinstance(func, cst.Attribute)}
    found: dict[cst.Assign, str] = {}
    for func in rewritten_funcs:
        loader = module_object(ctx, func)
        if loader is None or loader in found or not isinstance(func, cst.Attribute):
            continue
        assert isinstance(func.value, cst.Name)
        scope = ctx.scope_metadata(func.value)
        assignments = list(scope[func.value.value]) if scope is not None else []
        references = [r.node for a in assignments for r in a.references]
        if references and all(r in rewritten for r in references):
            found[loader] = func.value.value
    return list(found.items())


def _only_used_by(ctx: FileContext, loaders: set[cst.Assign]) -> set[cst.ImportAlias]:
    """Import aliases (``import importlib``) whose every use is in one of ``loaders``."""
    found: set[cst.ImportAlias] = set()
    for loader in loaders:
        call = loader.value
        assert isinstance(call, cst.Call)
        base = chain_root(call.func)
        if not isinstance(base, cst.Name) or (scope := ctx.scope_metadata(base)) is None:
            continue
        for assignment in scope[base.value]:
            node = assignment.node if isinstance(assignment, Assignment) else None
            if not isinstance(node, cst.Import):
                continue
            uses = [r.node for r in assignment.references]
            if uses and all(any(ctx.inside_node(u, loader) for loader in loaders) for u in uses):
                found |= {a for a in node.names if base.value in binding_names(a)}
    return found


def _place(
    ctx: FileContext,
    plan: RewritePlan,
    items: set[ImportItem],
    block: list[cst.BaseStatement],
    region: list[cst.SimpleStatementLine],
    placement: cst.SimpleStatementLine | None,
) -> None:
    """Plan the new imports from one module: before an old import that stays in a ``try``
    (see :data:`findings.IMPORTS_BEFORE_OLD`), else where an import sorter would put them."""
    if placement is not None and _old_import_stays_in_try(ctx, plan, placement):
        if placement not in plan.imports.before:
            ctx.note(placement, findings.IMPORTS_BEFORE_OLD)
        plan.imports.before.setdefault(placement, set()).update(items)
        return
    placing.place(plan.imports, ctx.tree, items, block, region, placement, _THIRD_PARTY_ROOTS)


def _old_import_stays_in_try(
    ctx: FileContext, plan: RewritePlan, statement: cst.SimpleStatementLine
) -> bool:
    """True if ``statement``, in the body of a ``try``, still imports the old name after the
    rewrite."""
    block = ctx.parent(statement)
    if not (isinstance(block, cst.IndentedBlock) and isinstance(ctx.parent(block), cst.Try)):
        return False
    name = ctx.deprecation.name
    return any(
        isinstance(small, cst.Import | cst.ImportFrom)
        and not isinstance(small.names, cst.ImportStar)
        and any(
            alias.evaluated_name.split(".")[-1] == name and alias not in plan.remove_aliases
            for alias in small.names
        )
        for small in statement.body
    )


def plan_availability(
    ctx: FileContext,
    names: ImportNames,
    rewritten_funcs: list[cst.BaseExpression],
    plan: RewritePlan,
) -> None:
    """``<old name> is None`` tests of an optional import, once its calls are rewritten.

    When the old import sits in a ``try`` whose ``except`` sets the name to None, and the new
    imports go into that same ``try``, the test and the fallback move to the new
    ``to_edge_transform_and_lower``: it is None exactly when that ``try`` failed. Otherwise the
    test is reported and keeps the old import.
    """
    key = ("executorch.exir", "to_edge_transform_and_lower")
    new = names.names.get(key)
    for check in ctx.availability_checks:
        fallbacks = except_fallbacks(ctx, check)
        placement = import_placement(ctx, check)
        same_try = (
            new is not None
            and placement is not None
            and ctx.inside(placement, cst.Try)
            and placement in names.imports.get(ImportItem(*key, new), set())
        )
        if not fallbacks or not same_try:
            ctx.leave(check, findings.AVAILABILITY_CHECK)
            continue
        assert new is not None
        plan.names[check] = cst.Name(new)
        for fallback in fallbacks:
            plan.names[fallback] = cst.Name(new)
        rewritten_funcs.append(check)
        ctx.note(check, findings.AVAILABILITY_REWRITTEN.format(new=f"`{new}`"))


def reexport_reason(ctx: FileContext) -> str | None:
    """Why other code may import the old name from this module, in words; None if not.

    The rules: another file of the run imports it from here (the engine's cross-file scan);
    the module is ExecuTorch's ``export_utils``, which re-exports it; the module is a
    package's ``__init__``; or its name is one of :data:`PUBLIC_MODULE_NAMES`.
    """
    filename = (ctx.filename or "").replace("\\", "/")
    if imported_here(filename, ctx.options.imported_from):
        return "another file of this run imports it from this module"
    if any(
        ("/" + filename).endswith("/" + q.rsplit(".", 1)[0].replace(".", "/") + ".py")
        for q in ctx.deprecation.qualified_names
    ):
        return "this is ExecuTorch's module that re-exports it"
    base = filename.rsplit("/", 1)[-1]
    if base == "__init__.py":
        return "a package's `__init__` is where others import names from"
    stem = base.removesuffix(".py")
    if stem in PUBLIC_MODULE_NAMES:
        return f"a module named `{stem}` is usually a public re-export point"
    return None


def _unused_aliases(
    ctx: FileContext, rewritten_funcs: list[cst.BaseExpression]
) -> set[cst.ImportAlias]:
    """Import aliases whose every use was a call this run rewrote."""
    rewritten: set[cst.CSTNode] = {
        node for func in rewritten_funcs for node in attribute_chain(func)
    }
    unused: set[cst.ImportAlias] = set()
    for func in rewritten_funcs:
        base = chain_root(func)
        if not isinstance(base, cst.Name):
            continue
        scope = ctx.scope_metadata(base)
        if scope is None:
            continue
        for assignment in scope[base.value]:
            node = assignment.node if isinstance(assignment, Assignment) else None
            if not isinstance(node, cst.Import | cst.ImportFrom) or isinstance(
                node.names, cst.ImportStar
            ):
                continue
            home = ctx.scope_metadata(node)
            if home is None:
                continue
            for alias in node.names:
                bound = binding_names(alias)
                if alias in unused:
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
