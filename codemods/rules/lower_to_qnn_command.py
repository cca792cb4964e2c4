"""The ``lower_to_qnn`` rule as a libcst ``CodemodCommand``, for ``python -m libcst.tool codemod``.

    python -m libcst.tool codemod -x codemods.rules.lower_to_qnn.RewriteLowerToQnn src/

The rule itself is :class:`~codemods.rules.lower_to_qnn.LowerToQnn`; this class adds what
libcst's runner expects: ``SkipFile`` when a file needs no change, the sites left alone as
warnings, ``--target`` on the command line. It is a module of its own because
``libcst.codemod`` imports ``libcst.matchers`` (0.2 s), which ``qnn-migrate rewrite`` does
not need; ``codemods.rules.lower_to_qnn`` imports it on first use of the name.
"""

from __future__ import annotations

import argparse

import libcst as cst
from libcst.codemod import CodemodCommand, CodemodContext, SkipFile

from qnn_migrate.codemods.rules.lower_to_qnn import (
    DEFAULT_TARGET,
    TARGETS,
    LowerToQnn,
    NothingToRewrite,
)


class RewriteLowerToQnn(CodemodCommand):
    """Rewrite to_edge_transform_and_lower_to_qnn calls to executorch's to_edge_transform_and_lower."""

    DESCRIPTION = (
        "Rewrite calls of executorch's to_edge_transform_and_lower_to_qnn to "
        "to_edge_transform_and_lower with the QNN passes, partitioner and context explicit."
    )

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        """``--target`` for ``python -m libcst.tool codemod``."""
        arg_parser.add_argument(
            "--target",
            choices=sorted(TARGETS),
            default=DEFAULT_TARGET,
            help="qnn-passes: use the qnn_passes helpers (default); executorch: ExecuTorch only",
        )

    def __init__(self, context: CodemodContext, target: str = DEFAULT_TARGET) -> None:
        super().__init__(context)
        self.rule = LowerToQnn(target)

    def transform_module(self, tree: cst.Module) -> cst.Module:
        """Skip files that never mention the name before paying for any analysis.

        As ``Codemod.transform_module``, but without copying the tree or resolving metadata
        first: the rule builds a new tree and resolves what it needs itself.
        """
        name = self.rule.deprecation.name
        code = tree.code
        if name not in code:
            raise SkipFile(f"{name} is not mentioned")
        self.rule.filename = self.context.filename
        self.rule.source = code
        try:
            result = self.rule.transform(tree)
        except NothingToRewrite as reason:
            self._warn_unfixable()
            raise SkipFile(str(reason)) from None
        self._warn_unfixable()
        return result

    def _warn_unfixable(self) -> None:
        """The sites left alone, as libcst.tool warnings."""
        for item in self.rule.report.unfixable:
            self.warn(f"line {item.line}: {item.reason}")

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        """The rule on ``tree`` (``transform_module`` does the work)."""
        return self.transform_module(tree)
