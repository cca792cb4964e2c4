"""The rewrite rules, one package per rule, each also a libcst ``CodemodCommand``
(``<rule>/command.py``, imported only by libcst's own tooling)."""

from __future__ import annotations

from qnn_migrate.codemods.rules.lower_to_qnn import LowerToQnn, RuleOptions, RuleResult

__all__ = ["LowerToQnn", "RuleOptions", "RuleResult"]
