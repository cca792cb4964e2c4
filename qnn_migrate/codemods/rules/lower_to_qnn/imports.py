"""Import planning: the names new imports bind, where they go, which old imports go.

New imports go where isort (or ruff's ``I`` rules) would put them: in the section of the
module's leading imports that holds ExecuTorch's (third-party; the file's own grouping by
blank lines decides what a section is), merged into a ``from m import ...`` of the same
module, else at their sorted place. When the old import sat inside a function, a ``try`` or
an ``if`` (lazy or optional imports), they go among the imports of that block instead, so the
user's guard still guards. An old import goes when every use of it was
a call this run rewrote, unless the module re-exports the name (see :func:`reexport_reason`).
"""

from __future__ import annotations

import sys

import libcst as cst
import libcst.helpers
from libcst.metadata import Assignment, ClassScope, Scope

from qnn_migrate.codemods import findings
from qnn_migrate.codemods.reexports import imported_here
from qnn_migrate.codemods.rewrite_plan import ImportItem, RewritePlan
from qnn_migrate.codemods.rules.lower_to_qnn.context import FileContext
from qnn_migrate.codemods.rules.lower_to_qnn.mentions import binding_names, bound_name
from qnn_migrate.codemods.rules.lower_to_qnn.sites import except_fallbacks, module_object
from qnn_migrate.codemods.targets.site import NameAllocator

# Module names (file name without ``.py``) that usually re-export a package's public names.
PUBLIC_MODULE_NAMES = frozenset({"api", "public", "exports", "export_utils"})


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
        if imports(node, module, obj, name):
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
        """True if the module level already binds ``name`` to exactly this, and only this."""
        bindings = self._bound(name, self.ctx.tree)
        return bool(bindings) and all(imports(a.node, module, obj, name) for a in bindings)

    def record(self, item: ImportItem, placement: cst.SimpleStatementLine | None) -> None:
        self.imports.setdefault(item, set()).add(placement)


def import_placement(ctx: FileContext, func: cst.BaseExpression) -> cst.SimpleStatementLine | None:
    """The statement after which new imports go; None for the module's leading imports."""
    base = func
    while isinstance(base, cst.Attribute):
        base = base.value
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
        module, obj, name = item
        if names.already_imported(module, obj, name):
            continue
        if None not in placements:
            # Only lazy or guarded old imports: the new ones go next to them, once per
            # block, among the imports around the last of them in that block.
            for last in _last_per_block(ctx, placements):
                if not _block_imports(ctx, last, module, obj, name):
                    by_module.setdefault((module, last), set()).add(item)
            continue
        by_module.setdefault((module, None), set()).add(item)
    for alias in _unused_aliases(ctx, rewritten_funcs):
        why = kept_reason(ctx, alias, exported)
        if why is not None:
            ctx.note(alias, findings.KEPT_IMPORT.format(why=why))
        else:
            plan.remove_aliases.add(alias)
    for (module, placement), items in by_module.items():
        if placement is None:
            block: list[cst.BaseStatement] = list(tree.body)
            region = top
        else:
            parent = ctx.parent(placement)
            block = list(parent.body) if isinstance(parent, cst.IndentedBlock | cst.Module) else []
            region = _import_run(block, placement)
        _place(ctx, plan, module, items, block, region, placement)
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
        base = call.func
        while isinstance(base, cst.Attribute):
            base = base.value
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


def _import_run(
    block: list[cst.BaseStatement], placement: cst.SimpleStatementLine
) -> list[cst.SimpleStatementLine]:
    """The run of import statements in ``block`` that holds ``placement``."""
    at = next(i for i, s in enumerate(block) if s is placement)
    start, end = at, at + 1
    while start > 0 and _is_import(block[start - 1]):
        start -= 1
    while end < len(block) and _is_import(block[end]):
        end += 1
    return [s for s in block[start:end] if isinstance(s, cst.SimpleStatementLine)]


def _is_import(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, cst.Import | cst.ImportFrom) for s in statement.body
    )


def _groups(region: list[cst.SimpleStatementLine]) -> list[list[cst.SimpleStatementLine]]:
    """The region split where a blank line or a comment line starts a new group, as isort
    and ruff see the sections of a file."""
    groups: list[list[cst.SimpleStatementLine]] = []
    for statement in region:
        if not groups or statement.leading_lines:
            groups.append([])
        groups[-1].append(statement)
    return groups


def _modules(statement: cst.SimpleStatementLine) -> list[str]:
    """The absolute modules a statement imports from ("." for a relative import)."""
    found = []
    for small in statement.body:
        if isinstance(small, cst.ImportFrom):
            if small.relative or small.module is None:
                found.append(".")
            else:
                found.append(cst.helpers.get_full_name_for_node(small.module) or ".")
        elif isinstance(small, cst.Import):
            found += [alias.evaluated_name for alias in small.names]
    return found


# The roots of the modules the rewrite imports from; the section that holds them, or the old
# import (ExecuTorch's), is where the new imports go.
_THIRD_PARTY_ROOTS = ("executorch", "torch", "qnn_passes")


def _section(
    groups: list[list[cst.SimpleStatementLine]], placement: cst.SimpleStatementLine | None
) -> tuple[list[cst.SimpleStatementLine] | None, cst.SimpleStatementLine | None]:
    """The group the new imports join, or (None, statement) to start a new group after
    ``statement`` (None, None: at the start)."""
    if placement is not None:
        return next(g for g in groups if any(s is placement for s in g)), None
    for root in _THIRD_PARTY_ROOTS:
        for group in groups:
            if any(m.split(".")[0] == root for s in group for m in _modules(s)):
                return group, None
    # No third-party section: after the standard library's, as isort would open one.
    stdlib = [
        g
        for g in groups
        if all(
            m.split(".")[0] in sys.stdlib_module_names or m == "__future__"
            for s in g
            for m in _modules(s)
        )
    ]
    if stdlib:
        return None, stdlib[-1][-1]
    return (groups[-1], None) if groups else (None, None)


def _sort_key(straight: bool, module: str) -> tuple[int, str]:
    """isort's (and ruff's) order in a section: ``import x`` first, then ``from x import``,
    each by module name, case-insensitively."""
    return (0 if straight else 1, module.lower())


def _statement_key(statement: cst.SimpleStatementLine) -> tuple[int, str]:
    first = statement.body[0]
    modules = _modules(statement)
    return _sort_key(isinstance(first, cst.Import), modules[0] if modules else "")


def _place(
    ctx: FileContext,
    plan: RewritePlan,
    module: str,
    items: set[ImportItem],
    block: list[cst.BaseStatement],
    region: list[cst.SimpleStatementLine],
    placement: cst.SimpleStatementLine | None,
) -> None:
    """Plan the new imports from ``module``: merged into an import of the same module in the
    section, else at their sorted place in it."""
    if placement is not None and _old_import_stays_in_try(ctx, plan, placement):
        if placement not in plan.imports_before:
            ctx.note(placement, findings.IMPORTS_BEFORE_OLD)
        plan.imports_before.setdefault(placement, set()).update(items)
        return
    straight = {item for item in items if not item[1]}
    from_items = items - straight
    groups = _groups(region)
    group, after = _section(groups, placement)
    if group is None and after is None and not region:
        anchor = _docstring(ctx.tree) if placement is None else placement
        if anchor is None:
            plan.imports_first |= items
        else:
            plan.imports_after.setdefault(anchor, set()).update(items)
        return
    if group is None:
        assert after is not None
        plan.imports_after.setdefault(after, set()).update(items)
        plan.imports_new_group.add(after)
        _carry_noqa(plan, after)
        return
    if from_items:
        merge = next(
            (
                node
                for statement in group
                for node in statement.body
                if isinstance(node, cst.ImportFrom)
                and not node.relative
                and not isinstance(node.names, cst.ImportStar)
                and node.module is not None
                and cst.helpers.get_full_name_for_node(node.module) == module
            ),
            None,
        )
        if merge is not None:
            plan.imports_merged.setdefault(merge, set()).update(from_items)
            from_items = set()
    for kind, chosen in ((True, straight), (False, from_items)):
        if not chosen:
            continue
        key = _sort_key(kind, module)
        later = next((s for s in group if _statement_key(s) > key), None)
        if later is not None:
            plan.imports_before.setdefault(later, set()).update(chosen)
            _carry_noqa(plan, later)
        else:
            plan.imports_after.setdefault(group[-1], set()).update(chosen)
            _carry_noqa(plan, group[-1])


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
            and placement in names.imports.get((*key, new), set())
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


def _carry_noqa(plan: RewritePlan, neighbour: cst.SimpleStatementLine) -> None:
    """New imports next to an import marked ``# noqa: E402`` (imports after module code,
    a ``sys.path`` tweak say) carry the same marker, or ruff would flag them."""
    comments = [neighbour.trailing_whitespace.comment]
    for small in neighbour.body:
        if isinstance(small, cst.ImportFrom) and small.lpar is not None:
            after = small.lpar.whitespace_after
            if isinstance(after, cst.ParenthesizedWhitespace):
                comments.append(after.first_line.comment)  # on the line of the opening parenthesis
    if any(c is not None and "noqa" in c.value and "E402" in c.value for c in comments):
        plan.import_comments[neighbour] = "# noqa: E402"


def _last_per_block(
    ctx: FileContext, placements: set[cst.SimpleStatementLine | None]
) -> list[cst.SimpleStatementLine]:
    """Of several old-import statements, the last one in each block."""
    last: dict[cst.CSTNode | None, tuple[int, cst.SimpleStatementLine]] = {}
    for placement in placements:
        if placement is None:
            continue
        block = ctx.parent(placement)
        body = list(block.body) if isinstance(block, cst.IndentedBlock | cst.Module) else []
        index = next((i for i, s in enumerate(body) if s is placement), 0)
        if block not in last or index > last[block][0]:
            last[block] = (index, placement)
    return [placement for _, placement in last.values()]


def top_imports(tree: cst.Module) -> list[cst.SimpleStatementLine]:
    """The module's leading import statements (after its docstring)."""
    found = []
    for i, statement in enumerate(tree.body):
        if not isinstance(statement, cst.SimpleStatementLine):
            break
        if i == 0 and _is_docstring(statement):
            continue
        if not all(isinstance(s, cst.Import | cst.ImportFrom) for s in statement.body):
            break
        found.append(statement)
    return found


def _docstring(tree: cst.Module) -> cst.SimpleStatementLine | None:
    first = tree.body[0] if tree.body else None
    if isinstance(first, cst.SimpleStatementLine) and _is_docstring(first):
        return first
    return None


def _is_docstring(statement: cst.SimpleStatementLine) -> bool:
    return (
        len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, cst.SimpleString | cst.ConcatenatedString)
    )


def _block_imports(
    ctx: FileContext, placement: cst.SimpleStatementLine, module: str, obj: str, name: str
) -> bool:
    """True if the block holding ``placement`` already has this exact import."""
    block = ctx.parent(placement)
    body = block.body if isinstance(block, cst.IndentedBlock | cst.Module) else ()
    return any(
        isinstance(statement, cst.SimpleStatementLine)
        and any(imports(small, module, obj, name) for small in statement.body)
        for statement in body
    )


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
    rewritten: set[cst.CSTNode] = set()
    for func in rewritten_funcs:
        walk: cst.CSTNode = func
        while isinstance(walk, cst.Attribute):
            rewritten.add(walk)
            walk = walk.value
        rewritten.add(walk)
    unused: set[cst.ImportAlias] = set()
    for func in rewritten_funcs:
        base = func
        while isinstance(base, cst.Attribute):
            base = base.value
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


def imports(node: cst.CSTNode, module: str, obj: str, name: str) -> bool:
    """True if ``node`` is an import statement binding ``name`` to ``module``(.``obj``)."""
    if obj and isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
        if node.relative or node.module is None:
            return False
        if cst.helpers.get_full_name_for_node(node.module) != module:
            return False
        return any(a.evaluated_name == obj and bound_name(a) == name for a in node.names)
    if not obj and isinstance(node, cst.Import):
        return any(
            bound_name(a) == name
            and (a.evaluated_name == module or (a.asname is None and name == module))
            for a in node.names
        )
    return False
