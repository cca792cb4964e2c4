"""A script that patches one of ExecuTorch's QNN export-stage passes before it lowers.

The patch turns every add into a subtraction, so whether it ran is in the lowered program's
outputs: x - y (0.75 everywhere) where it did, x + y (1.25) where it did not.
"""

import torch
from executorch.backends.qualcomm._passes import DecomposeFloorDivide
from executorch.backends.qualcomm.serialization.qc_schema import QcomChipset
from executorch.backends.qualcomm.utils.utils import (
    generate_htp_compiler_spec,
    generate_qnn_executorch_compiler_spec,
    to_edge_transform_and_lower_to_qnn,
)
from torch.fx.passes.infra.pass_base import PassResult


def add_becomes_sub(self, graph_module):
    for node in graph_module.graph.nodes:
        if node.op == "call_function" and node.target == torch.ops.aten.add.Tensor:
            node.target = torch.ops.aten.sub.Tensor
    graph_module.recompile()
    return PassResult(graph_module, True)


DecomposeFloorDivide.call = add_becomes_sub


class Add(torch.nn.Module):
    def forward(self, x, y):
        return x + y


example_inputs = (torch.ones(2, 3), torch.full((2, 3), 0.25))
RESULT = to_edge_transform_and_lower_to_qnn(
    Add().eval(),
    example_inputs,
    generate_qnn_executorch_compiler_spec(
        soc_model=QcomChipset.SM8650,
        backend_options=generate_htp_compiler_spec(use_fp16=True),
    ),
)
