"""The code a rewritten call becomes: one target per file."""

from __future__ import annotations

from qnn_migrate.codemods.targets.executorch import ExecutorchTarget
from qnn_migrate.codemods.targets.qnn_passes import QnnPassesTarget
from qnn_migrate.codemods.targets.site import CannotRewrite, Site, StatementRewrite, Target

__all__ = [
    "CannotRewrite",
    "ExecutorchTarget",
    "QnnPassesTarget",
    "Site",
    "StatementRewrite",
    "Target",
]
