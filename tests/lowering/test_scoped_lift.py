"""Constant lifting confined to the QNN flow (review point 1).

(a) With the shared ``lift_constant_tensor_pass`` in ``executorch.exir.program._program``
patched to a no-op, the QNN pipeline still hands the partitioner exactly the program it hands
over normally, because LiftQnnConstants did the lifting. (The deprecated flow, for contrast,
then leaves get_attr nodes behind: it depends on the shared step.)

(b) A non-QNN flow whose transform pass leaves a get_attr is not changed by anything
qnn_passes does: importing it patches nothing, and the flow's result is the same before and
after a QNN lowering ran in the same process.
"""

from __future__ import annotations

import subprocess
import sys
from unittest import mock

import pytest
import torch
from executorch.exir import to_edge_transform_and_lower
from executorch.exir.program import _program
from qnn_migrate_tests.passes import canonical, flows
from qnn_migrate_tests.passes.edge import ParameterToGetAttr
from qnn_migrate_tests.passes.zoo import BY_NAME, Case, params
from torch import nn

SCOPED = tuple(
    BY_NAME[n]
    for n in ("conv1d", "linear_to_conv2d_shared_weight", "quant_conv1d_8a8w", "multi_method")
)


@pytest.mark.parametrize("case", params(SCOPED))
def test_qnn_flow_does_not_need_the_shared_lift(case: Case) -> None:
    with mock.patch.object(_program, "lift_constant_tensor_pass", lambda ep: ep) as patched:
        lowered = flows.handed(flows.run_migrated(case), case)
        upstream = flows.handed(flows.run_deprecated(case), case)
    assert _program.lift_constant_tensor_pass is not patched
    normal = flows.handed(flows.migrated(case.name), case)
    for method, program in lowered.items():
        assert not [n for n in program.graph.nodes if n.op == "get_attr"]
        assert canonical.canonical(program) == canonical.canonical(normal[method])
    # The wrapper's flow relies on the shared step: without it get_attr nodes reach QNN.
    assert any(n.op == "get_attr" for p in upstream.values() for n in p.graph.nodes)


def _non_qnn_flow() -> tuple[str, str, list[str]]:
    """A generic lowering whose only transform pass leaves a get_attr (no partitioner)."""
    torch.manual_seed(0)
    module, x = nn.Linear(4, 3).eval(), torch.randn(2, 4)
    edge = to_edge_transform_and_lower(
        torch.export.export(module, (x,), strict=True),
        transform_passes=[ParameterToGetAttr("weight")],
    )
    program = edge.exported_program()
    return str(program.graph_signature), program.graph_module.code, sorted(program.state_dict)


def test_non_qnn_flow_is_unchanged_by_a_qnn_lowering_in_the_same_process() -> None:
    before = _non_qnn_flow()
    # ExecuTorch's shared lift (not this package) turns the get_attr into a buffer input.
    assert "_lifted_tensor_constant" in before[0]
    flows.run_migrated(BY_NAME["conv1d"])
    assert _non_qnn_flow() == before


def test_importing_qnn_passes_patches_nothing_in_executorch() -> None:
    code = """
import importlib, pkgutil, sys
modules = [
    "executorch.exir.program._program",
    "executorch.exir.pass_manager",
    "executorch.exir.pass_base",
    "executorch.backends.qualcomm._passes",
    "executorch.backends.qualcomm._passes.qnn_pass_manager",
    "executorch.backends.qualcomm.builders.node_visitor",
    "executorch.backends.qualcomm.partition.qnn_partitioner",
    "executorch.backends.qualcomm.utils.utils",
    "executorch.backends.qualcomm.utils.qnn_manager_lifecycle",
]
def snapshot():
    out = {}
    for name in modules:
        module = importlib.import_module(name)
        for key, value in vars(module).items():
            out[(name, key)] = id(value)
            if isinstance(value, (set, frozenset, list, dict)):
                out[(name, key, "len")] = len(value)
    return out
before = snapshot()
import qnn_passes
for info in pkgutil.walk_packages(qnn_passes.__path__, "qnn_passes."):
    importlib.import_module(info.name)
for name in qnn_passes.__all__:
    getattr(qnn_passes, name)
after = snapshot()
changed = sorted(str(k) for k in before if before[k] != after.get(k))
print(changed)
"""
    env = {"QNN_SDK_ROOT": "", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "[]"
