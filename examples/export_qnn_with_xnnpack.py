"""QNN and XNNPACK in one lowering: what QNN rejects, or you keep away from it, runs on XNNPACK.

The deprecated ``to_edge_transform_and_lower_to_qnn`` lowers to QNN alone: every op QNN does not
take falls back to ExecuTorch's portable CPU kernels. The generic ``to_edge_transform_and_lower``
takes a list of partitioners and offers each one what the ones before it left, so QNN first,
then XNNPACK, puts those ops on XNNPACK's optimised CPU kernels instead:

    python examples/export_qnn_with_xnnpack.py model.pte

QNN's partitioners come first: the transform passes are QNN's, and they leave nothing XNNPACK
cannot partition in what QNN does not take (docs/passes.md, "QNN with other backends").
Needs ExecuTorch with its QNN backend and the QNN SDK (``QNN_SDK_ROOT``), as any QNN lowering.
"""

from __future__ import annotations

import sys

import torch
from executorch.backends.qualcomm.serialization.qc_schema import QcomChipset
from executorch.backends.qualcomm.utils.utils import (
    generate_htp_compiler_spec,
    generate_qnn_executorch_compiler_spec,
)
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.exir import to_edge_transform_and_lower

from qnn_passes import (
    qnn_compile_config,
    qnn_manager_context,
    qnn_partitioners,
    qnn_transform_passes,
)


class ConvThenMlp(torch.nn.Module):
    """A conv stem (for QNN) and an MLP whose linears we keep on the CPU (for XNNPACK)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.up = torch.nn.Linear(8, 16)
        self.down = torch.nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv(x)).permute(0, 2, 3, 1)
        return self.down(torch.nn.functional.gelu(self.up(y)))


def lower_qnn_then_xnnpack(model, example_inputs, compiler_specs, skip_node_op_set=None):
    """Export ``model``, give QNN what it takes (minus ``skip_node_op_set``), XNNPACK the rest."""
    programs = torch.export.export(model, example_inputs, strict=True)
    with qnn_manager_context(compiler_specs, programs):
        return to_edge_transform_and_lower(
            programs,
            transform_passes=qnn_transform_passes(
                programs, compiler_specs, skip_node_op_set=skip_node_op_set
            ),
            partitioner=[
                *qnn_partitioners(programs, compiler_specs, skip_node_op_set=skip_node_op_set),
                XnnpackPartitioner(),
            ],
            compile_config=qnn_compile_config(),
        )


def main(output: str) -> None:
    specs = generate_qnn_executorch_compiler_spec(
        soc_model=QcomChipset.SM8650,
        backend_options=generate_htp_compiler_spec(use_fp16=True),
    )
    model = ConvThenMlp().eval()
    edge = lower_qnn_then_xnnpack(
        model, (torch.randn(1, 3, 8, 8),), specs, skip_node_op_set={"aten.linear.default"}
    )
    with open(output, "wb") as f:
        f.write(edge.to_executorch().buffer)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "conv_then_mlp.pte")
