"""tree_index.py: ``TreeIndex`` (one code generation pass) against libcst's ``PositionProvider``
and a recording visitor: the same nodes, parents, positions and order."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider
from qnn_migrate_tests.codemods.support import SOURCES

from qnn_migrate.codemods.tree_index import TreeIndex

_WHITESPACE = (
    cst.SimpleWhitespace,
    cst.ParenthesizedWhitespace,
    cst.TrailingWhitespace,
    cst.EmptyLine,
    cst.Newline,
    cst.Comment,
)


class _Recorder(cst.CSTVisitor):
    """What libcst's own traversal sees: every node in visit order, with its parent."""

    def __init__(self) -> None:
        self.order: list[cst.CSTNode] = []
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self._stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._stack:
            self.parents[node] = self._stack[-1]
        self._stack.append(node)
        self.order.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()


@pytest.mark.parametrize(("name", "code"), SOURCES, ids=[name for name, _ in SOURCES])
def test_tree_index_agrees_with_libcst(name: str, code: str) -> None:
    module = cst.parse_module(code)
    index = TreeIndex(module)
    recorder = _Recorder()
    module.visit(recorder)
    # The same nodes, each with the same parent.
    assert len(index.nodes) == len(recorder.order)
    assert {id(n) for n in index.nodes} == {id(n) for n in recorder.order}
    assert index.parent(module) is None
    assert all(index.parent(node) is parent for node, parent in recorder.parents.items())
    # The same order, but for the whitespace that AsName and Del generate before the name.
    ours = [n for n in index.nodes if not isinstance(n, _WHITESPACE)]
    theirs = [n for n in recorder.order if not isinstance(n, _WHITESPACE)]
    assert all(a is b for a, b in zip(ours, theirs, strict=True))
    # Subtrees are the descendants.
    for node in index.nodes[:: max(1, len(index.nodes) // 200)]:
        below = index.subtree(node)
        assert below[0] is node
        for child in below[1:]:
            walk = index.parent(child)
            while walk is not None and walk is not node:
                walk = index.parent(walk)
            assert walk is node
    # Positions are PositionProvider's starts, for every node.
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    assert len(positions) == len(index.nodes)
    for node, where in positions.items():
        assert index.position(node) == where.start, (type(node).__name__, where)
