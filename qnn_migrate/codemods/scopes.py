"""libcst's scope analysis of a module, with its first pass done from the tree index.

``ScopeProvider`` needs ``ExpressionContextProvider`` (is a name loaded, stored or deleted?),
which libcst computes in a visit of its own: a third of the scope analysis, most of it the
visit rebuilding every node. :func:`expression_contexts` computes the same mapping from a
:class:`~codemods.tree_index.TreeIndex` in one pass over its nodes, following libcst's
``ExpressionContextVisitor`` rule by rule (which children it visits, in which context); the
scope analysis then uses it instead of running that visit. Tests compare the mapping with
libcst's on real files. Handing it over uses the wrapper's private metadata table (libcst is
bounded in pyproject.toml to the releases the suite has run on); should that table ever be
missing, libcst computes the contexts itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import libcst as cst
from libcst.metadata import (
    ExpressionContext,
    ExpressionContextProvider,
    MetadataWrapper,
    Scope,
    ScopeProvider,
)

from qnn_migrate.codemods.tree_index import TreeIndex

LOAD, STORE, DEL = ExpressionContext.LOAD, ExpressionContext.STORE, ExpressionContext.DEL
# The nodes libcst gives a context, when its visitor reaches them.
_WITH_CONTEXT = frozenset(
    {cst.Name, cst.Attribute, cst.Subscript, cst.Tuple, cst.List, cst.StarredElement}
)
_Visits = dict[cst.CSTNode | None, ExpressionContext]


def resolve_scopes(index: TreeIndex) -> Mapping[cst.CSTNode, Scope | None]:
    """``ScopeProvider``'s mapping for ``index.module`` (which is neither copied nor changed)."""
    wrapper = MetadataWrapper(index.module, unsafe_skip_copy=True)
    metadata = getattr(wrapper, "_metadata", None)
    if isinstance(metadata, dict):
        metadata[ExpressionContextProvider] = MappingProxyType(expression_contexts(index))
    return wrapper.resolve(ScopeProvider)


def expression_contexts(index: TreeIndex) -> dict[cst.CSTNode, ExpressionContext]:
    """``ExpressionContextProvider``'s mapping, from the index."""
    contexts: dict[cst.CSTNode, ExpressionContext] = {}
    visited: dict[cst.CSTNode, ExpressionContext] = {index.module: LOAD}
    special: dict[cst.CSTNode, _Visits] = {}  # the children a special node's rule visits
    parents = index.parents
    for node in index.nodes[1:]:
        parent = parents[node]
        context = visited.get(parent)
        if context is None:
            continue  # libcst's visitor never got here
        if type(parent) in _SPECIAL:
            visits = special.get(parent)
            if visits is None:
                visits = special[parent] = _visits(parent, context)
            context = visits.get(node)
            if context is None:
                continue
        visited[node] = context
        if type(node) in _WITH_CONTEXT:
            contexts[node] = context
    return contexts


def _visits(node: cst.CSTNode, context: ExpressionContext) -> _Visits:
    """The children libcst's ``ExpressionContextVisitor`` visits below ``node`` (one of
    ``_SPECIAL``), each with the context it visits it in; it visits no other child."""
    match node:
        case cst.Attribute():
            return {node.value: LOAD}  # never the attribute's name
        case cst.Subscript():
            return {node.value: LOAD} | {element: LOAD for element in node.slice}
        case cst.AsName():
            return {node.name: STORE}
        case cst.Del():
            return {node.target: DEL}
        case cst.Assign():
            return {target: STORE for target in node.targets} | {node.value: context}
        case cst.AnnAssign():
            return {node.target: STORE, node.annotation: context, node.value: context}
        case cst.AugAssign() | cst.NamedExpr():
            return {node.target: STORE, node.value: context}
        case cst.CompFor():
            visits: _Visits = {node.target: STORE, node.iter: context}
            visits.update((condition, context) for condition in node.ifs)
            visits[node.inner_for_in] = context
            return visits
        case cst.For():
            return {
                node.target: STORE,
                node.iter: context,
                node.body: context,
                node.orelse: context,
            }
        case cst.ClassDef():
            visits = {node.name: STORE, node.body: context}
            visits.update((arg, context) for arg in (*node.bases, *node.keywords))
            visits.update((decorator, context) for decorator in node.decorators)
            return visits  # not the type parameters
        case cst.FunctionDef():
            visits = {node.name: STORE, node.params: context, node.body: context}
            visits.update((decorator, context) for decorator in node.decorators)
            visits[node.returns] = context
            return visits  # not the type parameters
        case cst.Param():
            return {node.name: STORE, node.annotation: context, node.default: context}
    return {}  # a Name: nothing below it


_SPECIAL = frozenset(
    {
        cst.Name,
        cst.Attribute,
        cst.Subscript,
        cst.AsName,
        cst.Del,
        cst.Assign,
        cst.AnnAssign,
        cst.AugAssign,
        cst.NamedExpr,
        cst.CompFor,
        cst.For,
        cst.ClassDef,
        cst.FunctionDef,
        cst.Param,
    }
)
