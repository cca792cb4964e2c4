"""Import planning: the names new imports bind, where they go, which old imports go.

New imports go where isort would put them (merged into a top-level ``from m import ...`` of
the same module, else after the module's leading imports), except when the old import sat
inside a function, a ``try`` or an ``if`` (lazy or optional imports): then right after it, in
the same block, so the user's guard still guards. An old import goes when every use of it was
a call this run rewrote, unless the module re-exports the name (see :func:`reexport_reason`).
"""

from __future__ import annotations

import libcst as cst
import libcst.helpers
from libcst.metadata import Assignment, Scope

from qnn_migrate.codemods import findings
from qnn_migrate.codemods.reexports import imported_here
from qnn_migrate.codemods.rewrite_plan import ImportItem, RewritePlan
from qnn_migrate.codemods.rules.lower_to_qnn.context import FileContext
from qnn_migrate.codemods.rules.lower_to_qnn.mentions import binding_names, bound_name
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
            clash = any(self._bound(base, scope) for scope in self.site_scopes)
            module_bindings = self._bound(base, self.ctx.tree)
            clash = clash or any(not imports(a.node, module, obj, base) for a in module_bindings)
            if clash:
                taken = self.words | set(self.names.values())
                self.names[key] = NameAllocator(taken).fresh(base)
            else:
                self.names[key] = base
        return self.names[key]

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
    """New imports where the old one was (or at the top); old ones out when unused.

    Returns the names whose import the plan removes.
    """
    tree = ctx.tree
    top = top_imports(tree)
    anchor = top[-1] if top else _docstring(tree)
    for item, placements in sorted(names.imports.items(), key=lambda kv: kv[0]):
        module, obj, name = item
        if names.already_imported(module, obj, name):
            continue
        if None not in placements:
            # Only lazy or guarded old imports: the new ones go next to them, once per
            # block, after the last of them in that block.
            for placement in _last_per_block(ctx, placements):
                if not _block_imports(ctx, placement, module, obj, name):
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
    name = ctx.deprecation.name
    why = reexport_reason(ctx)
    for alias in _unused_aliases(ctx, rewritten_funcs):
        bound = binding_names(alias)
        at_module_level = not ctx.inside(alias, (cst.FunctionDef, cst.ClassDef))
        if bound & exported:
            ctx.note(alias, findings.KEPT_IMPORT.format(why="it is listed in `__all__`"))
        elif why is not None and name in bound and at_module_level:
            ctx.note(alias, findings.KEPT_IMPORT.format(why=why))
        else:
            plan.remove_aliases.add(alias)
    removed = {n for a in plan.remove_aliases for n in binding_names(a)}
    return frozenset(removed | {n.split(".")[0] for n in removed})


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
