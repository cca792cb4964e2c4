"""The rewrite rules, one per file (``<rule>.py``), each also a libcst ``CodemodCommand``
(``<rule>_command.py``, imported only by libcst's own tooling)."""

from __future__ import annotations

from qnn_migrate.codemods.rules.lower_to_qnn import (
    DEFAULT_TARGET,
    TARGETS,
    LowerToQnn,
    NothingToRewrite,
)

__all__ = ["DEFAULT_TARGET", "TARGETS", "LowerToQnn", "NothingToRewrite"]
