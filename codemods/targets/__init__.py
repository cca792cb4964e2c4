"""The code a rewritten call becomes: one target per file."""

from __future__ import annotations

from codemods.targets.executorch import ExecutorchTarget
from codemods.targets.qnn_passes import QnnPassesTarget
from codemods.targets.site import CannotRewrite, Site, StatementRewrite, Target

__all__ = [
    "CannotRewrite",
    "ExecutorchTarget",
    "QnnPassesTarget",
    "Site",
    "StatementRewrite",
    "Target",
]
