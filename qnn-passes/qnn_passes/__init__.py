"""QNN passes for ExecuTorch's to-edge stage and the API that replaces to_edge_transform_and_lower_to_qnn.

Importing this package is cheap and changes nothing in ExecuTorch: names are loaded on first
use (the torch stack, the ``[passes]`` extra, is needed then), and nothing is patched.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "AnnotateGetAttr",
    "CanonicalizeConv",
    "ConvertLinearToConv2d",
    "LiftQnnConstants",
    "PassOrderError",
    "QnnConfigError",
    "QnnEdgePartitioner",
    "QnnManagerSession",
    "QnnPipelineError",
    "QnnSdkMissingError",
    "RunQnnPasses",
    "UntestedExecuTorchWarning",
    "qnn_compile_config",
    "qnn_export",
    "qnn_manager_context",
    "qnn_partitioners",
    "qnn_transform_passes",
]

_WHERE = {
    "AnnotateGetAttr": "qnn_passes.annotate_get_attr",
    "CanonicalizeConv": "qnn_passes.canonicalize_conv",
    "ConvertLinearToConv2d": "qnn_passes.convert_linear_to_conv2d",
    "LiftQnnConstants": "qnn_passes.lift_qnn_constants",
    "PassOrderError": "qnn_passes.errors",
    "QnnConfigError": "qnn_passes.errors",
    "QnnEdgePartitioner": "qnn_passes.qnn_partitioner",
    "QnnManagerSession": "qnn_passes.api",
    "QnnPipelineError": "qnn_passes.errors",
    "QnnSdkMissingError": "qnn_passes.errors",
    "RunQnnPasses": "qnn_passes.run_qnn_passes",
    "UntestedExecuTorchWarning": "qnn_passes.errors",
    "qnn_compile_config": "qnn_passes.api",
    "qnn_export": "qnn_passes.api",
    "qnn_manager_context": "qnn_passes.api",
    "qnn_partitioners": "qnn_passes.api",
    "qnn_transform_passes": "qnn_passes.api",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'qnn_passes' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:
    from qnn_passes.annotate_get_attr import AnnotateGetAttr
    from qnn_passes.api import (
        QnnManagerSession,
        qnn_compile_config,
        qnn_export,
        qnn_manager_context,
        qnn_partitioners,
        qnn_transform_passes,
    )
    from qnn_passes.canonicalize_conv import CanonicalizeConv
    from qnn_passes.convert_linear_to_conv2d import ConvertLinearToConv2d
    from qnn_passes.errors import (
        PassOrderError,
        QnnConfigError,
        QnnPipelineError,
        QnnSdkMissingError,
        UntestedExecuTorchWarning,
    )
    from qnn_passes.lift_qnn_constants import LiftQnnConstants
    from qnn_passes.qnn_partitioner import QnnEdgePartitioner
    from qnn_passes.run_qnn_passes import RunQnnPasses
