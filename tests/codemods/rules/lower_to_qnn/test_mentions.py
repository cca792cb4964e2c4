"""rules/lower_to_qnn/mentions.py: the rule's name collection over the index against a libcst
visitor doing the same."""

from __future__ import annotations

import libcst as cst
import pytest
from qnn_migrate_tests.codemods.support import SOURCES

from qnn_migrate.codemods.rules.lower_to_qnn.mentions import bound_name as _bound_name
from qnn_migrate.codemods.rules.lower_to_qnn.mentions import names_used as _names_used
from qnn_migrate.codemods.tree_index import TreeIndex


class _NameCollector(cst.CSTVisitor):
    """The reference for ``_names_used``: the rule's former visitor."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Import(self, node: cst.Import) -> bool:
        self.names.update(_bound_name(alias) for alias in node.names)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if not isinstance(node.names, cst.ImportStar):
            self.names.update(_bound_name(alias) for alias in node.names)
        return False


@pytest.mark.parametrize(("name", "code"), SOURCES, ids=[name for name, _ in SOURCES])
def test_names_used_agrees_with_a_visitor(name: str, code: str) -> None:
    module = cst.parse_module(code)
    index = TreeIndex(module)
    scopes = [n for n in index.nodes if isinstance(n, cst.FunctionDef | cst.Lambda)]
    for scope in [module, *scopes]:
        reference = _NameCollector()
        scope.visit(reference)
        assert _names_used(index, scope) == reference.names
