"""Every node of a module in document order, with its parent and where its syntax starts.

Any libcst visit rebuilds every node of the tree it walks, which makes it the main cost of a
rewrite: libcst's ``PositionProvider`` and a visitor recording parents each took as long as
parsing. Generating the module's code also reaches every node once, in the order a visitor
sees them (but for the whitespace ``AsName`` and ``Del`` generate before their name), and
builds nothing: :class:`TreeIndex` hooks into that, noting for each node the
node around it (its parent) and the number of tokens before it, from which a position is
worked out when one is asked for. One pass costs about what printing the module costs, a
fifth of the two it replaces.

Positions are those of ``PositionProvider``: where the node's own syntax starts (after its
leading comments and blank lines and its parentheses). The hooks are the ones
``PositionProvider`` itself overrides in libcst's ``CodegenState``, which is private
(``libcst._nodes.internal``): pyproject.toml bounds libcst to the releases the suite has run
on (its floor, 1.5.0, in the floors job of ``.ci/run``; the lock's, in the others), and
``tests/codemods/test_tree_index.py`` compares positions, parents and order with libcst's own
on real files.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import TracebackType

import libcst as cst
from libcst.metadata import CodePosition

try:
    from libcst._nodes.internal import CodegenState
except ImportError as error:  # a libcst outside pyproject.toml's range moved its private API
    raise ImportError(
        f"qnn-migrate needs libcst's CodegenState (libcst._nodes.internal), which libcst "
        f"{getattr(cst, 'LIBCST_VERSION', '(this version)')} does not have; install the libcst "
        "qnn-migrate declares (pip install 'libcst>=1.5.0,<1.10')"
    ) from error

# How libcst's PositionProvider splits a token into lines.
_NEWLINE = re.compile(r"\r\n?|\n")


class TreeIndex:
    """The nodes of ``module`` in document (visit) order, their parents and start positions."""

    def __init__(self, module: cst.Module) -> None:
        state = _IndexingState(module.default_indent, module.default_newline)
        module._codegen(state)
        self.module = module
        self.nodes: list[cst.CSTNode] = state.nodes  # document order, parents before children
        self.parents: Mapping[cst.CSTNode, cst.CSTNode] = state.parents  # all but the module's
        self._spans = state.spans  # node -> (its index in nodes, the index after its subtree)
        self._starts = state.starts  # node -> number of tokens before its syntax starts
        self._tokens = state.tokens
        self._positions: list[tuple[int, int]] | None = None

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The node whose child ``node`` is; None for the module."""
        return self.parents.get(node)

    def subtree(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """``node`` and every node below it, in document order."""
        first, end = self._spans[node]
        return self.nodes[first:end]

    def end(self, node: cst.CSTNode) -> int:
        """The index in :attr:`nodes` just after ``node``'s last descendant."""
        return self._spans[node][1]

    def position(self, node: cst.CSTNode) -> CodePosition:
        """Where the node starts: line (from 1) and column (from 0), as ``PositionProvider``."""
        if self._positions is None:
            self._positions = _token_positions(self._tokens)
        line, column = self._positions[self._starts[node]]
        return CodePosition(line, column)

    def line(self, node: cst.CSTNode) -> int:
        """The line the node starts on (from 1)."""
        return self.position(node).line


def _token_positions(tokens: list[str]) -> list[tuple[int, int]]:
    """(line, column) before each token, and after the last one, counted as libcst does."""
    positions = []
    line, column = 1, 0
    for token in tokens:
        positions.append((line, column))
        if "\n" in token or "\r" in token:
            segments = _NEWLINE.split(token)
            line += len(segments) - 1
            column = len(segments[-1])
        else:
            column += len(token)
    positions.append((line, column))
    return positions


class _IndexingState(CodegenState):
    """Code generation that records, instead of positions, token counts and parents."""

    __slots__ = ("_open", "nodes", "parents", "spans", "starts")

    def __init__(self, default_indent: str, default_newline: str) -> None:
        super().__init__(default_indent=default_indent, default_newline=default_newline)
        self.nodes: list[cst.CSTNode] = []
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.spans: dict[cst.CSTNode, tuple[int, int]] = {}
        self.starts: dict[cst.CSTNode, int] = {}
        self._open: list[tuple[cst.CSTNode, int, int]] = []  # (node, index, tokens before)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if self._open:
            self.parents[node] = self._open[-1][0]
        self._open.append((node, len(self.nodes), len(self.tokens)))
        self.nodes.append(node)

    def after_codegen(self, node: cst.CSTNode) -> None:
        _, first, start = self._open.pop()
        self.spans[node] = (first, len(self.nodes))
        # A syntactic start recorded while the node was generated wins, as in libcst.
        self.starts.setdefault(node, start)

    def record_syntactic_position(  # type: ignore[override]  # a plain context manager
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> _SyntacticStart:
        return _SyntacticStart(self, node, start_node)

    def pop_trailing_newline(self) -> None:
        """Keep the module's last newline: positions are counted over every token."""


class _SyntacticStart:
    """``with state.record_syntactic_position(node)``: the node's syntax starts here (or
    where ``start_node``'s does). A class rather than a generator: it is entered for most
    nodes, and a generator-based context manager costs several times more."""

    __slots__ = ("node", "start", "start_node", "state")

    def __init__(
        self, state: _IndexingState, node: cst.CSTNode, start_node: cst.CSTNode | None
    ) -> None:
        self.state = state
        self.node = node
        self.start_node = start_node
        self.start = 0

    def __enter__(self) -> None:
        self.start = len(self.state.tokens)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        starts = self.state.starts
        starts[self.node] = self.start if self.start_node is None else starts[self.start_node]
