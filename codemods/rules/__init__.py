"""The rewrite rules, one per file; each is a libcst ``CodemodCommand``."""

from __future__ import annotations

from codemods.rules.lower_to_qnn import DEFAULT_TARGET, TARGETS, RewriteLowerToQnn

__all__ = ["DEFAULT_TARGET", "TARGETS", "RewriteLowerToQnn"]
