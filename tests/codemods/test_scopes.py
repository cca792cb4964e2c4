"""scopes.py: the expression contexts computed from the index against libcst's
``ExpressionContextProvider``, and the scopes resolved with them against libcst's own."""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
import pytest
from libcst.metadata import ExpressionContextProvider, MetadataWrapper, Scope, ScopeProvider
from qnn_migrate_tests.codemods.support import SOURCES, SYNTAX_ZOO

from qnn_migrate.codemods.scopes import expression_contexts, resolve_scopes
from qnn_migrate.codemods.tree_index import TreeIndex


@pytest.mark.parametrize(("name", "code"), SOURCES, ids=[name for name, _ in SOURCES])
def test_expression_contexts_agree_with_libcst(name: str, code: str) -> None:
    module = cst.parse_module(code)
    theirs = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ExpressionContextProvider)
    assert expression_contexts(TreeIndex(module)) == dict(theirs)


def test_scopes_resolved_with_them_are_libcsts() -> None:
    module = cst.parse_module(SYNTAX_ZOO)
    index = TreeIndex(module)
    ours = resolve_scopes(index)
    theirs = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider)
    # Both also hold the nodes parsed out of string annotations (`-> "R"`), new each time.
    in_module = {id(node) for node in index.nodes}
    assert {id(n) for n in ours if id(n) in in_module} == {
        id(n) for n in theirs if id(n) in in_module
    }

    def described(scopes: Mapping[cst.CSTNode, Scope | None], node: cst.CSTNode) -> object:
        scope = scopes[node]
        if scope is None:
            return None
        names = sorted(q.name for q in scope.get_qualified_names_for(node))
        assigned = sorted((a.name, type(a).__name__) for a in scope.assignments)
        return type(scope).__name__, names, assigned

    for node in index.nodes:
        if isinstance(node, cst.Name | cst.Attribute) and node in theirs:
            assert described(ours, node) == described(theirs, node)
