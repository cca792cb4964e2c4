"""Reading q/dq arguments by schema: per-tensor, per-channel and torchao's affine ops (review point 5)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from executorch.backends.qualcomm._passes.utils import get_quant_attrs
from executorch.backends.qualcomm.builders.utils import get_parameter
from executorch.exir.dialects._ops import ops as exir_ops
from qnn_migrate_tests.passes.edge import edge_program
from torch import nn

from qnn_passes import quant_ops

qd = torch.ops.quantized_decomposed


class _Dequantizing(nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.register_buffer("wq", torch.randint(-7, 8, (4, 8), dtype=torch.int8))
        self.register_buffer("scales", torch.rand(4) / 10 + 0.01)
        self.register_buffer("zps", torch.zeros(4, dtype=torch.int64))
        self.register_buffer("block_scale", torch.rand(4, 2) / 10 + 0.01)
        self.register_buffer("block_zp", torch.zeros(4, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "per_tensor":
            w = qd.dequantize_per_tensor.default(self.wq, 0.05, 1, -8, 7, torch.int8)
        elif self.kind == "per_channel":
            w = qd.dequantize_per_channel.default(
                self.wq, self.scales, self.zps, 0, -8, 7, torch.int8
            )
        else:
            w = torch.ops.torchao.dequantize_affine.default(
                self.wq, [1, 4], self.block_scale, self.block_zp, torch.int8, -8, 7
            )
        return F.linear(x, w)


def _dq(kind: str) -> tuple[torch.export.ExportedProgram, torch.fx.Node]:
    program = edge_program(_Dequantizing(kind), torch.randn(2, 8))
    (node,) = [n for n in program.graph.nodes if quant_ops.is_dequantize(n.target)]
    return program, node


@pytest.mark.parametrize("kind", ["per_tensor", "per_channel", "affine"])
def test_attrs_have_executorchs_format(kind: str) -> None:
    program, node = _dq(kind)
    assert quant_ops.family(node.target) == kind
    ours = quant_ops.quant_attrs(node, lambda n: get_parameter(n, program))
    theirs = get_quant_attrs(program, node)
    assert quant_ops.attrs_equal(ours, theirs)


def test_affine_arguments_are_read_by_name() -> None:
    program, node = _dq("affine")
    args = quant_ops.bound_args(node)
    assert list(args["block_size"]) == [1, 4]
    assert args["input_dtype"] == torch.int8
    assert (args["quant_min"], args["quant_max"]) == (-8, 7)
    attrs = quant_ops.quant_attrs(node, lambda n: get_parameter(n, program))
    assert attrs["dtype"] == torch.int8  # copied from input_dtype, as ExecuTorch does
    assert attrs["scale"].shape == (4, 2)


def test_arguments_passed_by_keyword_are_read() -> None:
    program, node = _dq("per_tensor")
    # The same dequantize with quant_min/quant_max/dtype passed by keyword.
    node.args, node.kwargs = node.args[:3], {"quant_min": -8, "quant_max": 7, "dtype": torch.int8}
    ours = quant_ops.quant_attrs(node, lambda n: get_parameter(n, program))
    assert (ours["quant_min"], ours["quant_max"], ours["dtype"]) == (-8, 7, torch.int8)
    # ExecuTorch's reader only looks at positional arguments.
    theirs = get_quant_attrs(program, node)
    assert theirs["quant_min"] is None


def test_with_args_keeps_positional_and_keyword_places() -> None:
    _, node = _dq("affine")
    quant_ops.with_args(node, block_size=[1, 4, 1, 1], output_dtype=torch.float32)
    assert list(node.args[1]) == [1, 4, 1, 1]
    assert node.kwargs["output_dtype"] == torch.float32


def test_families() -> None:
    edge = exir_ops.edge
    assert quant_ops.is_quantize(edge.torchao.quantize_affine.default)
    assert quant_ops.is_dequantize(edge.quantized_decomposed.dequantize_per_tensor.tensor)
    assert quant_ops.family(edge.aten.add.Tensor) is None
    assert not quant_ops.is_dequantize(edge.quantized_decomposed.quantize_per_channel.default)
