"""The export-stage probes (probes.py) lowered under RecordingQnnBackend, and the ops QNN can never take.

Three ways to lower a probe, each returning the program handed to QNN's partitioner: the
deprecated wrapper (``to_edge_transform_and_lower_to_qnn``), the canonical flow
(``torch.export.export`` then ``to_edge_transform_and_lower`` with qnn_passes), and a control
with ExecuTorch's own to-edge passes and nothing in place of the export stage. Shared by
tests/lowering/test_canonical_probes.py, tests/passes/test_canonical_api.py and probe_pte.py.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from executorch.backends.qualcomm._passes.qnn_pass_manager import get_qnn_pass_manager_cls
from executorch.backends.qualcomm.builders import node_visitor_manager
from executorch.backends.qualcomm.partition.common_defs import not_supported_operator
from executorch.backends.qualcomm.partition.qnn_partitioner import QnnPartitioner
from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn
from executorch.exir import to_edge_transform_and_lower
from qnn_migrate_tests.doubles.qnn_backend import RecordingQnnBackend
from qnn_migrate_tests.passes import flows
from qnn_migrate_tests.passes.probes import BY_NAME

from qnn_passes import (
    qnn_compile_config,
    qnn_manager_context,
    qnn_partitioners,
    qnn_transform_passes,
)
from qnn_passes.api import backend_of


def outside(program: Any) -> list[str]:
    """Names of the call_function ops QNN's partitioner can never take."""
    builders = node_visitor_manager._node_visitor_dict
    return sorted(
        str(getattr(n.target, "__name__", n.target))
        for n in program.graph.nodes
        if n.op == "call_function"
        and n.target is not __import__("operator").getitem
        and (n.target in not_supported_operator or n.target.__name__ not in builders)
    )


@functools.cache
def wrapper(name: str) -> Any:
    probe = BY_NAME[name]
    model, inputs = probe.model()
    with RecordingQnnBackend() as qnn:
        to_edge_transform_and_lower_to_qnn(model, inputs, flows.specs(probe.backend))
    return qnn.handoffs[0].program


@functools.cache
def canonical_flow(name: str, strict: bool = True) -> Any:
    probe = BY_NAME[name]
    model, inputs = probe.model()
    specs = flows.specs(probe.backend)
    with RecordingQnnBackend() as qnn:
        ep = torch.export.export(model, inputs, strict=strict)
        with qnn_manager_context(specs, ep):
            to_edge_transform_and_lower(
                ep,
                transform_passes=qnn_transform_passes(ep, specs),
                partitioner=qnn_partitioners(ep, specs),
                compile_config=qnn_compile_config(),
            )
    return qnn.handoffs[0].program


def control(name: str) -> Any:
    """ExecuTorch's to-edge passes and partitioner on a plain export: no export stage at all."""
    probe = BY_NAME[name]
    model, inputs = probe.model()
    specs = flows.specs(probe.backend)
    ep = torch.export.export(model, inputs, strict=True)
    manager = get_qnn_pass_manager_cls(backend_of(specs))()
    passes = manager.get_to_edge_transform_passes(ep, compiler_specs=specs)
    with RecordingQnnBackend() as qnn:
        to_edge_transform_and_lower(
            ep,
            transform_passes=passes,
            partitioner=[QnnPartitioner(specs)],
            compile_config=qnn_compile_config(),
        )
    return qnn.handoffs[0].program
