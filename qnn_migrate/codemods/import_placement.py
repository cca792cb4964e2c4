"""Where new imports go in a module, as isort (or ruff's ``I`` rules) would put them.

Generic, for any rule: given the imports a rule needs and where the statement they belong
with is (the module's leading imports, or an old import inside a function, a ``try`` or an
``if``), :func:`place` schedules in an :class:`ImportSchedule` where each goes: merged into a
``from m import ...`` of the same module in that scope, else at its sorted place in the
section (the file's own grouping by blank lines and comments decides what a section is), else
in a new section after the standard library's. Nothing here knows which names a rule imports
or why; the rule (``rules/<rule>/imports.py``) decides that.

Schedule, then apply (as LibCST's ``AddImportsVisitor`` collects imports in the context and
applies them afterwards): placement writes only into its own schedule, which the transform
that carries out a rule's plan (``rewrite_plan.ApplyPlan``) applies; nothing here imports the
rule's plan.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import libcst as cst
import libcst.helpers

from qnn_migrate.codemods.tree_index import TreeIndex

_DIGITS = re.compile(r"(\d+)")


class ImportItem(NamedTuple):
    """One name a new import binds: ``from module import obj as name``, or, when ``obj`` is
    empty, ``import module as name`` (``name == module``: plain ``import module``)."""

    module: str
    obj: str
    name: str


@dataclass
class ImportSchedule:
    """Where new import statements go in one module, decided before the tree is edited."""

    # new import statements after a given statement: the last of the module's leading
    # imports, or the old import when it sits inside a function, a try or an if
    after: dict[cst.SimpleStatementLine, set[ImportItem]] = field(default_factory=dict)
    # new import statements before a given import statement (where they sort)
    before: dict[cst.SimpleStatementLine, set[ImportItem]] = field(default_factory=dict)
    # statements after which the new imports open a group of their own (a blank line first)
    new_group: set[cst.SimpleStatementLine] = field(default_factory=set)
    # a comment the new imports next to a statement carry (the noqa marker for E402)
    comments: dict[cst.SimpleStatementLine, str] = field(default_factory=dict)
    # new import statements at the very start (a module without leading imports)
    first: set[ImportItem] = field(default_factory=set)
    # new names merged into an existing `from module import ...`
    merged: dict[cst.ImportFrom, set[ImportItem]] = field(default_factory=dict)

    def targets(self) -> list[cst.CSTNode]:
        """Every node next to or in which something is scheduled."""
        return [*self.after, *self.before, *self.merged]


def bound_name(alias: cst.ImportAlias) -> str:
    """The local name an import alias binds (``import a.b`` binds ``a``)."""
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return alias.evaluated_name.split(".")[0]


def imports(node: cst.CSTNode, item: ImportItem) -> bool:
    """True if ``node`` is an import statement that binds ``item.name`` to what ``item``
    imports."""
    module, obj, name = item
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


def top_imports(tree: cst.Module) -> list[cst.SimpleStatementLine]:
    """The module's leading import statements (after its docstring)."""
    found = []
    for i, statement in enumerate(tree.body):
        if not isinstance(statement, cst.SimpleStatementLine):
            break
        if i == 0 and _is_docstring(statement):
            continue
        if not is_import(statement):
            break
        found.append(statement)
    return found


def is_import(statement: cst.BaseStatement) -> bool:
    """True for a line of nothing but import statements."""
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, cst.Import | cst.ImportFrom) for s in statement.body
    )


def block_of(index: TreeIndex, statement: cst.SimpleStatementLine) -> list[cst.BaseStatement]:
    """The statements of the block (module or indented block) that holds ``statement``."""
    block = index.parent(statement)
    return list(block.body) if isinstance(block, cst.IndentedBlock | cst.Module) else []


def import_run(
    block: Sequence[cst.BaseStatement], placement: cst.SimpleStatementLine
) -> list[cst.SimpleStatementLine]:
    """The run of import statements in ``block`` that holds ``placement``."""
    at = next(i for i, s in enumerate(block) if s is placement)
    start, end = at, at + 1
    while start > 0 and is_import(block[start - 1]):
        start -= 1
    while end < len(block) and is_import(block[end]):
        end += 1
    return [s for s in block[start:end] if isinstance(s, cst.SimpleStatementLine)]


def block_imports(index: TreeIndex, placement: cst.SimpleStatementLine, item: ImportItem) -> bool:
    """True if the block holding ``placement`` already has this exact import."""
    return any(
        isinstance(statement, cst.SimpleStatementLine)
        and any(imports(small, item) for small in statement.body)
        for statement in block_of(index, placement)
    )


def imported_around(index: TreeIndex, placement: cst.SimpleStatementLine, item: ImportItem) -> bool:
    """True if the scope of ``placement`` already has this exact import before it: in a block
    around the one holding it (a function's import seen from a ``try`` nested in it, say), or
    nested in an earlier statement of such a block (``try: from m import x`` / ``except
    ImportError: ...`` earlier in the function). Another one would be a duplicate (pyflakes
    F811). A class body's imports do not count from the functions in it, where its names are
    not visible; a nested ``def`` or ``class`` binds in its own scope."""
    node: cst.CSTNode = placement
    in_function = False
    while (parent := index.parent(node)) is not None:
        if node is not placement and isinstance(parent, cst.IndentedBlock | cst.Module):
            hidden = in_function and isinstance(index.parent(parent), cst.ClassDef)
            for statement in () if hidden else parent.body:
                if statement is node:
                    break
                if imports_within(statement, item):
                    return True
        elif node is placement and isinstance(parent, cst.IndentedBlock | cst.Module):
            for statement in parent.body:
                if statement is node:
                    break
                if isinstance(statement, cst.BaseCompoundStatement) and imports_within(
                    statement, item
                ):
                    return True
        in_function = in_function or isinstance(parent, cst.FunctionDef | cst.Lambda)
        node = parent
    return False


def imports_within(statement: cst.BaseStatement, item: ImportItem) -> bool:
    """True if ``statement``, or a statement nested in its blocks in the same scope (the
    bodies of ``try``, ``except``, ``if``, ``with``, loops; not ``def`` or ``class``), is
    this exact import."""
    stack: list[cst.CSTNode] = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Import | cst.ImportFrom):
            if imports(node, item):
                return True
            continue
        if isinstance(node, cst.FunctionDef | cst.ClassDef | cst.Lambda | cst.BaseExpression):
            continue  # another scope, or an expression (no import statement in it)
        stack.extend(node.children)
    return False


def last_per_block(
    index: TreeIndex, placements: Iterable[cst.SimpleStatementLine | None]
) -> list[cst.SimpleStatementLine]:
    """Of several statements, the last one in each block (None entries are skipped)."""
    last: dict[cst.CSTNode | None, tuple[int, cst.SimpleStatementLine]] = {}
    for placement in placements:
        if placement is None:
            continue
        block = index.parent(placement)
        body = block_of(index, placement)
        at = next((i for i, s in enumerate(body) if s is placement), 0)
        if block not in last or at > last[block][0]:
            last[block] = (at, placement)
    return [placement for _, placement in last.values()]


def place(
    schedule: ImportSchedule,
    tree: cst.Module,
    items: set[ImportItem],
    block: Sequence[cst.BaseStatement],
    region: list[cst.SimpleStatementLine],
    placement: cst.SimpleStatementLine | None,
    roots: Sequence[str],
) -> None:
    """Plan the new imports ``items`` (all from one module) in ``region``, the imports of
    ``block`` where they belong: merged into an import of the same module in their section,
    else at their sorted place in it.

    ``placement``: the statement the new imports belong with (None: the module's leading
    imports); ``roots``: the top-level packages whose section the new imports join (the
    first that has one wins), else a new section after the standard library's.
    """
    module = next(iter(items)).module
    straight = {item for item in items if not item.obj}
    from_items = items - straight
    if from_items:
        # A reviewer expects one `from m import ...` per module in a scope: the new names
        # join one already there, in whichever section of the scope's imports it sits.
        merge = _from_import_of(module, block, region)
        if merge is not None:
            schedule.merged.setdefault(merge, set()).update(from_items)
            from_items = set()
            if not straight:
                return
            items = straight
    straight_first = bool(straight) and not from_items
    group, after = _section(_groups(region), placement, roots, _sort_key(straight_first, module))
    if group is None and after is None and not region:
        anchor = _docstring(tree) if placement is None else placement
        if anchor is None:
            schedule.first |= items
        else:
            schedule.after.setdefault(anchor, set()).update(items)
        return
    if group is None:
        assert after is not None
        schedule.after.setdefault(after, set()).update(items)
        schedule.new_group.add(after)
        carry_noqa(schedule, after)
        return
    for kind, chosen in ((True, straight), (False, from_items)):
        if not chosen:
            continue
        key = _sort_key(kind, module)
        later = next((s for s in group if _statement_key(s) > key), None)
        if later is not None:
            schedule.before.setdefault(later, set()).update(chosen)
            carry_noqa(schedule, later)
        else:
            schedule.after.setdefault(group[-1], set()).update(chosen)
            carry_noqa(schedule, group[-1])


def _from_import_of(
    module: str, block: Sequence[cst.BaseStatement], region: list[cst.SimpleStatementLine]
) -> cst.ImportFrom | None:
    """The first plain ``from module import ...`` (not a star, not relative) among the
    statements of ``block`` up to the end of ``region``: imports that run before any code
    that follows them, in the same scope."""
    if not region:
        return None
    for statement in block:
        if isinstance(statement, cst.SimpleStatementLine) and is_import(statement):
            for node in statement.body:
                if (
                    isinstance(node, cst.ImportFrom)
                    and not node.relative
                    and not isinstance(node.names, cst.ImportStar)
                    and node.module is not None
                    and cst.helpers.get_full_name_for_node(node.module) == module
                ):
                    return node
        if statement is region[-1]:
            break
    return None


def carry_noqa(schedule: ImportSchedule, neighbour: cst.SimpleStatementLine) -> None:
    """New imports next to an import marked ``# noqa: E402`` (imports after module code,
    a ``sys.path`` tweak say) carry the same marker, or ruff would flag them."""
    comments = [neighbour.trailing_whitespace.comment]
    for small in neighbour.body:
        if isinstance(small, cst.ImportFrom) and small.lpar is not None:
            after = small.lpar.whitespace_after
            if isinstance(after, cst.ParenthesizedWhitespace):
                comments.append(after.first_line.comment)  # on the line of the opening parenthesis
    if any(c is not None and "noqa" in c.value and "E402" in c.value for c in comments):
        schedule.comments[neighbour] = "# noqa: E402"


def member_key(alias: cst.ImportAlias) -> tuple[object, ...]:
    """The order of the names in a ``from m import a, B, C_D`` as ruff's isort rules (I001,
    defaults: order by type, case-insensitive, natural) sort them: constants, then classes,
    then the rest, each by name."""
    name = alias.evaluated_name
    if len(name) > 1 and name.isupper():
        kind = 0  # CONSTANT
    elif name[:1].isupper():
        kind = 1  # Class
    else:
        kind = 2  # function or variable
    natural = tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part)
        for part in _DIGITS.split(name.lower())
        if part
    )
    asname = alias.asname.name if alias.asname is not None else None
    return (kind, natural, name, asname.value if isinstance(asname, cst.Name) else "")


def with_added(kept: list[cst.ImportAlias], added: list[cst.ImportAlias]) -> list[cst.ImportAlias]:
    """The names of a ``from`` import once ``added`` join ``kept``: at their sorted places
    when ``kept`` is sorted (as an import sorter keeps it), else after the user's own order."""
    keys = [member_key(a) for a in kept]
    if keys == sorted(keys):
        return sorted([*kept, *added], key=member_key)
    return [*kept, *added]


# -- sections and their order ----------------------------------------------------------------
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


def _section(
    groups: list[list[cst.SimpleStatementLine]],
    placement: cst.SimpleStatementLine | None,
    roots: Sequence[str],
    key: tuple[int, str],
) -> tuple[list[cst.SimpleStatementLine] | None, cst.SimpleStatementLine | None]:
    """The group the new imports (sorting at ``key``) join, or (None, statement) to start a
    new group after ``statement`` (None, None: at the start)."""
    if placement is not None:
        return next(g for g in groups if any(s is placement for s in g)), None
    for root in roots:
        holding = [g for g in groups if _of_root(g, root)]
        if holding:
            return _sorted_group(groups, holding, root, key), None
    # No section of theirs: after the standard library's, as isort would open one.
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


def _of_root(group: list[cst.SimpleStatementLine], root: str) -> list[tuple[int, str]]:
    """The sort keys of the statements in ``group`` that import from package ``root``."""
    return [_statement_key(s) for s in group if any(m.split(".")[0] == root for m in _modules(s))]


def _sorted_group(
    groups: list[list[cst.SimpleStatementLine]],
    holding: list[list[cst.SimpleStatementLine]],
    root: str,
    key: tuple[int, str],
) -> list[cst.SimpleStatementLine]:
    """Of the ``holding`` groups (those of ``groups`` that import from ``root``), the one a
    new import sorting at ``key`` belongs in: the first, unless the file splits that section
    into blank-line groups sorted across the groups, as isort or usort order them
    (ExecuTorch's own files do). Then the new import joins the last group whose first import
    of ``root`` sorts before it, where a sorter would put it. A star import, from any
    package, ends the groups considered: a sorter does not move imports past one, and what
    follows it may be meant to shadow what it binds. Groups that are not in order (a group
    by topic, under a comment) keep the first group."""
    considered = []
    for group in groups:
        if any(_is_star(s) for s in group):
            break  # whatever package the star import is from
        if any(group is other for other in holding):
            considered.append(group)
    if len(considered) < 2:
        return holding[0]
    keys = [k for group in considered for k in _of_root(group, root)]
    # isort's order (`import x` before `from x import`), or usort's (by module alone)
    for by_module in (False, True):
        ordered = [_order(k, by_module) for k in keys]
        if ordered == sorted(ordered):
            chosen = considered[0]
            for group in considered[1:]:
                if _order(_of_root(group, root)[0], by_module) > _order(key, by_module):
                    break
                chosen = group
            return chosen
    return holding[0]


def _order(key: tuple[int, str], by_module: bool) -> tuple[int, str]:
    """``key`` as isort orders statements, or (``by_module``) as usort does, by module alone."""
    return (0, key[1]) if by_module else key


def _is_star(statement: cst.SimpleStatementLine) -> bool:
    return any(
        isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar)
        for small in statement.body
    )


def _sort_key(straight: bool, module: str) -> tuple[int, str]:
    """isort's (and ruff's) order in a section: ``import x`` first, then ``from x import``,
    each by module name, case-insensitively."""
    return (0 if straight else 1, module.lower())


def _statement_key(statement: cst.SimpleStatementLine) -> tuple[int, str]:
    first = statement.body[0]
    modules = _modules(statement)
    return _sort_key(isinstance(first, cst.Import), modules[0] if modules else "")


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
