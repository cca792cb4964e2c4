"""What every part of the rule reads about the module being rewritten: tree, index, scopes.

One :class:`FileContext` per run of the rule on one module. It owns the report, the tree
index (parents, positions, document order) and libcst's scope analysis, resolved on first use
(a module that only defines the function never needs it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import QualifiedName, Scope

from qnn_migrate.codemods import findings, noqa
from qnn_migrate.codemods.deprecations import DEFAULT_FLOW as DEFAULT_FLOW
from qnn_migrate.codemods.deprecations import FLOWS as FLOWS
from qnn_migrate.codemods.deprecations import Catalog, Deprecation
from qnn_migrate.codemods.options import DEFAULT_LINE_LENGTH as DEFAULT_LINE_LENGTH
from qnn_migrate.codemods.options import RuleOptions as RuleOptions
from qnn_migrate.codemods.scopes import resolve_scopes
from qnn_migrate.codemods.tree_index import TreeIndex


@dataclass
class FileContext:
    """The module under rewrite and the analysis every part of the rule shares."""

    tree: cst.Module
    catalog: Catalog
    deprecation: Deprecation
    options: RuleOptions
    filename: str | None = None
    module_text: str | None = None  # the whole file, when ``tree`` is an excerpt of it
    source: str | None = None  # the exact text ``tree`` was parsed from
    report: findings.Report = field(default_factory=findings.Report)
    # `<old name> is None` / `is not None` tests of a name ExecuTorch's import binds
    availability_checks: list[cst.Name] = field(default_factory=list)
    # calls of ExecuTorch's function that ``classify`` reported (a target that migrates a
    # file whole or not at all needs to know them)
    left_calls: list[cst.Call] = field(default_factory=list)
    index: TreeIndex = field(init=False)
    _scopes: Mapping[cst.CSTNode, Scope | None] | None = field(default=None, init=False)
    _noqa: noqa.Suppressions | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.index = TreeIndex(self.tree)

    def scope_metadata(self, node: cst.CSTNode) -> Scope | None:
        """libcst's ``ScopeProvider`` value for ``node``, resolved for the module on first use."""
        if self._scopes is None:
            self._scopes = resolve_scopes(self.index)
        return self._scopes.get(node)

    def suppressed(self, node: cst.CSTNode, code: str) -> bool:
        """Whether a ``# noqa`` comment on ``node``'s line suppresses ``code``
        (``codemods/noqa.py``), read from the text the tree was parsed from."""
        if self._noqa is None:
            self._noqa = noqa.parse(self.source if self.source is not None else self.tree.code)
        return noqa.suppresses(self._noqa, self.line(node), code)

    def line(self, node: cst.CSTNode) -> int:
        return self.index.line(node)

    def leave(self, node: cst.CSTNode, reason: findings.Reason) -> None:
        """Report ``node`` as a site left alone, for ``reason``."""
        position = self.index.position(node)
        self.report.leave(position.line, reason, position.column)

    def note(self, node: cst.CSTNode, reason: findings.Reason) -> None:
        """Report something about a rewritten site, for the user to look at."""
        position = self.index.position(node)
        self.report.note(position.line, reason, position.column)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.index.parent(node)

    def scope(self, node: cst.CSTNode) -> Scope | None:
        scope = self.scope_metadata(node)
        return scope if isinstance(scope, Scope) else None

    def qualified(self, node: cst.CSTNode) -> set[QualifiedName]:
        """The qualified names of a Name, Attribute or Call, from the scope analysis."""
        scope = self.scope(node)
        if scope is None or not isinstance(node, cst.Name | cst.Attribute | cst.Call):
            return set()
        return set(scope.get_qualified_names_for(node))

    def inside_node(self, node: cst.CSTNode, ancestor: cst.CSTNode) -> bool:
        """True if ``node`` is ``ancestor`` or lies inside it."""
        walk: cst.CSTNode | None = node
        while walk is not None:
            if walk is ancestor:
                return True
            walk = self.parent(walk)
        return False

    def inside(self, node: cst.CSTNode, kinds: type | tuple[type, ...]) -> bool:
        """True if ``node`` or one of its ancestors is one of ``kinds``."""
        walk: cst.CSTNode | None = node
        while walk is not None:
            if isinstance(walk, kinds):
                return True
            walk = self.parent(walk)
        return False
