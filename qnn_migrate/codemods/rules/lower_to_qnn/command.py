"""The ``lower_to_qnn`` rule as a libcst ``CodemodCommand``, for ``python -m libcst.tool codemod``.

    python -m libcst.tool codemod -x qnn_migrate.codemods.rules.lower_to_qnn.RewriteLowerToQnn src/

The rule itself is :class:`~qnn_migrate.codemods.rules.lower_to_qnn.LowerToQnn`; this class adds what
libcst's runner expects: ``SkipFile`` when a file needs no change, the sites left alone as
warnings, ``--target`` on the command line. It is a module of its own because
``libcst.codemod`` imports ``libcst.matchers`` (a measurable start-up cost, see docs/rewrite.md), which ``qnn-migrate rewrite`` does
not need; ``qnn_migrate.codemods.rules.lower_to_qnn`` imports it on first use of the name.
"""

from __future__ import annotations

import argparse
import os

import libcst as cst
from libcst.codemod import CodemodCommand, CodemodContext, SkipFile

from qnn_migrate.codemods import config
from qnn_migrate.codemods.deprecations import default_target, lower_to_qnn, target_names
from qnn_migrate.codemods.rules.lower_to_qnn.context import DEFAULT_FLOW, FLOWS, RuleOptions
from qnn_migrate.codemods.rules.lower_to_qnn.rule import LowerToQnn, RuleResult


class RewriteLowerToQnn(CodemodCommand):
    """Rewrite to_edge_transform_and_lower_to_qnn calls to executorch's to_edge_transform_and_lower."""

    DESCRIPTION = (
        "Rewrite calls of executorch's to_edge_transform_and_lower_to_qnn to "
        "to_edge_transform_and_lower with the QNN passes, partitioner and context explicit."
    )

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        """``--target`` for ``python -m libcst.tool codemod``."""
        targets = lower_to_qnn().targets
        arg_parser.add_argument(
            "--target",
            choices=[t.name for t in targets],
            default=None,
            help="; ".join(f"{t.name}: {t.help}" for t in targets)
            + " (default: target of [tool.qnn-migrate], else the first)",
        )
        arg_parser.add_argument(
            "--flow",
            choices=FLOWS,
            default=DEFAULT_FLOW,
            help="qnn-passes target: canonical (torch.export.export, the default) or qnn-export",
        )

    def __init__(
        self, context: CodemodContext, target: str | None = None, flow: str = DEFAULT_FLOW
    ) -> None:
        super().__init__(context)
        self.target, self.flow = target, flow
        self.rule = LowerToQnn(RuleOptions(target or default_target(), flow=flow))
        self._rules: dict[tuple[str, int], LowerToQnn] = {}

    def _rule_for(self, filename: str | None) -> LowerToQnn:
        """The rule with the options ``qnn-migrate rewrite`` would use for ``filename``: the
        target and the line length of the configuration found from its directory
        (``codemods/config.py``), so that both tools write the same code."""
        if filename is None:
            return self.rule
        found = config.find(os.path.dirname(os.path.abspath(filename)), target_names())
        key = (self.target or found.target or default_target(), found.line_length)
        if key not in self._rules:
            self._rules[key] = LowerToQnn(RuleOptions(key[0], key[1], self.flow))
        return self._rules[key]

    def transform_module(self, tree: cst.Module) -> cst.Module:
        """Skip files that never mention the name before paying for any analysis.

        As ``Codemod.transform_module``, but without copying the tree or resolving metadata
        first: the rule builds a new tree and resolves what it needs itself.
        """
        name = self.rule.deprecation.name
        code = tree.code
        if name not in code:
            raise SkipFile(f"{name} is not mentioned")
        rule = self._rule_for(self.context.filename)
        result = rule.run(tree, filename=self.context.filename, source=code)
        self._warn_unfixable(result)
        if result.module is None:
            raise SkipFile(result.skipped or "nothing to rewrite")
        return result.module

    def _warn_unfixable(self, result: RuleResult) -> None:
        """The sites left alone, as libcst.tool warnings."""
        for item in result.report.unfixable:
            self.warn(f"line {item.line}: {item.reason}")

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        """The rule on ``tree`` (``transform_module`` does the work)."""
        return self.transform_module(tree)
