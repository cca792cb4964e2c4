"""Finding the mentions of the old name in a module, and the names a subtree uses.

Everything here reads the :class:`~qnn_migrate.codemods.tree_index.TreeIndex` (one list of
nodes in document order) instead of visiting the tree: a libcst visit rebuilds every node it
passes, and these questions are asked of every file that mentions the name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import libcst as cst

from qnn_migrate.codemods.import_placement import bound_name
from qnn_migrate.codemods.tree_index import TreeIndex


@dataclass
class Mentions:
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


def find_mentions(index: TreeIndex, old: str) -> Mentions:
    """The mentions of ``old`` and of every alias it is imported as.

    Uses of an alias may come before its import in the file, so a second pass runs once the
    first one found aliases.
    """
    found = _find(index, old)
    if found.aliases:
        found = _find(index, old, frozenset(found.aliases))
    return found


def _find(index: TreeIndex, old: str, aliases: frozenset[str] = frozenset()) -> Mentions:
    """One pass over the index: what a visitor with these visit_* methods would collect."""
    found = Mentions()
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


def names_used(index: TreeIndex, scope: cst.CSTNode) -> set[str]:
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
                names.update(bound_name(alias) for alias in node.names)
            i = index.end(node) - offset
            continue
        i += 1
    return names


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def comprehension_targets(node: cst.BaseComp | cst.DictComp) -> set[str]:
    """The names a comprehension's ``for`` clauses bind (local to the comprehension)."""
    names: set[str] = set()
    clause: cst.CompFor | None = node.for_in
    while clause is not None:
        targets: list[cst.BaseExpression] = [clause.target]
        while targets:
            target = targets.pop()
            if isinstance(target, cst.Name):
                names.add(target.value)
            elif isinstance(target, cst.Tuple | cst.List):
                targets += [e.value for e in target.elements]
            elif isinstance(target, cst.StarredElement):
                targets.append(target.value)
        clause = clause.inner_for_in
    return names


def enclosing_comprehension_targets(
    index: TreeIndex, node: cst.CSTNode, scope: cst.CSTNode
) -> set[str]:
    """Names bound by the comprehensions between ``node`` and ``scope`` whose own scope
    ``node`` is in (a comprehension's first iterable is evaluated outside it)."""
    names: set[str] = set()
    child, parent = node, index.parent(node)
    outside: cst.CSTNode | None = None  # a comprehension whose first iterable holds node
    while parent is not None and child is not scope:
        if isinstance(parent, cst.CompFor) and parent.iter is child:
            outside = index.parent(parent)
        if isinstance(parent, _COMPREHENSIONS) and parent is not outside:
            names |= comprehension_targets(parent)
        child, parent = parent, index.parent(parent)
    return names


def expression_binders(
    index: TreeIndex, node: cst.CSTNode, stop: cst.CSTNode
) -> list[tuple[cst.CSTNode, set[str]]]:
    """The comprehensions and lambdas between ``node`` and ``stop`` (innermost first) whose
    scope ``node`` is in, each with the names it binds there."""
    found: list[tuple[cst.CSTNode, set[str]]] = []
    child, parent = node, index.parent(node)
    outside: cst.CSTNode | None = None
    while parent is not None and child is not stop:
        if isinstance(parent, cst.CompFor) and parent.iter is child:
            outside = index.parent(parent)
        if isinstance(parent, _COMPREHENSIONS) and parent is not outside:
            found.append((parent, comprehension_targets(parent)))
        elif isinstance(parent, cst.Lambda) and child is parent.body:
            params = parent.params
            every = [*params.posonly_params, *params.params, *params.kwonly_params]
            every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
            found.append((parent, {p.name.value for p in every}))
        child, parent = parent, index.parent(parent)
    return found


def binding_names(alias: cst.ImportAlias) -> set[str]:
    """Every name an alias binds in scope analysis (``import a.b`` binds a and a.b)."""
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return {alias.asname.name.value}
    parts = alias.evaluated_name.split(".")
    return {".".join(parts[: i + 1]) for i in range(len(parts))}
