"""ConvertLinearToConv2d: linear -> permute/reshape around a 1x1 conv2d, on edge programs."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from executorch.exir.dialects._ops import ops as exir_ops
from qnn_migrate_tests.passes.edge import (
    CONV,
    LINEAR,
    check_computes_like,
    check_runs_like,
    edge_program,
    input_targets,
    nodes,
    run_passes,
    targets,
)
from torch import nn

from qnn_passes import ConvertLinearToConv2d, LiftQnnConstants
from qnn_passes.quant_ops import bound_args

DQ_CHANNEL = torch.ops.quantized_decomposed.dequantize_per_channel.default
EDGE_DQ_CHANNEL = exir_ops.edge.quantized_decomposed.dequantize_per_channel.default
DQ_AFFINE = torch.ops.torchao.dequantize_affine.default


def _lift() -> LiftQnnConstants:
    return LiftQnnConstants(check_quant_attrs=False)


@pytest.mark.parametrize("shape", [(5, 8), (2, 5, 8), (2, 3, 4, 8)], ids=["2d", "3d", "4d"])
def test_linear_becomes_a_1x1_conv2d(shape: tuple[int, ...]) -> None:
    module, x = nn.Linear(8, 6), torch.randn(*shape)
    result = ConvertLinearToConv2d()(edge_program(module, x))
    assert result.modified
    program = result.exported_program
    assert LINEAR not in targets(program)
    (conv,) = nodes(program, CONV)
    assert tuple(conv.args[1].meta["val"].shape) == (6, 8, 1, 1)
    assert conv.args[3:] == ([1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    assert input_targets(program) == ["bias", None]
    check_runs_like(run_passes(program, _lift()), module, x)


@pytest.mark.parametrize("shape", [(8,), (1, 2, 3, 4, 8)], ids=["1d", "5d"])
def test_other_ranks_are_left_alone(shape: tuple[int, ...]) -> None:
    program = edge_program(nn.Linear(8, 3), torch.randn(*shape))
    before = program.graph_module.code
    result = ConvertLinearToConv2d()(program)
    assert not result.modified
    assert result.exported_program.graph_module.code == before


def test_tied_weight_of_two_linears_is_converted_once_and_stays_shared() -> None:
    class Tied(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)
            self.b.weight = self.a.weight

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b(torch.relu(self.a(x)))

    module, x = Tied(), torch.randn(2, 3, 8)
    program = run_passes(edge_program(module, x), ConvertLinearToConv2d())
    convs = nodes(program, CONV)
    assert len(convs) == 2 and convs[0].args[1] is convs[1].args[1]
    assert "a.weight" not in input_targets(program)
    check_runs_like(run_passes(program, _lift()), module, x)


class _QuantLinear(nn.Module):
    """Per-channel int8 linear weight; optionally the weight also feeds another op first."""

    def __init__(self, also_sum: bool = False) -> None:
        super().__init__()
        self.also_sum = also_sum
        self.register_buffer("wq", torch.randint(-100, 100, (6, 8), dtype=torch.int8))
        self.register_buffer("scales", torch.rand(6) / 50 + 0.001)
        self.register_buffer("zps", torch.zeros(6, dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = DQ_CHANNEL(self.wq, self.scales, self.zps, 0, -128, 127, torch.int8)
        y = F.linear(x, w)
        return y + w.sum() if self.also_sum else y


def test_quantized_weight_keeps_its_dequantize() -> None:
    module, x = _QuantLinear(), torch.randn(3, 8)
    program = run_passes(edge_program(module, x), ConvertLinearToConv2d())
    (conv,) = nodes(program, CONV)
    dq = conv.args[1]
    assert dq.target == EDGE_DQ_CHANNEL and dq.args[0].op == "get_attr"
    assert dq.meta["val"].dtype == torch.float32
    assert "wq" not in input_targets(program)
    check_computes_like(run_passes(program, _lift()), module, x)


def test_dequantize_feeding_another_op_first_is_copied_for_the_linear() -> None:
    # Upstream checks only the dequantize's first user; here that user is the sum.
    module, x = _QuantLinear(also_sum=True), torch.randn(3, 8)
    program = run_passes(edge_program(module, x), ConvertLinearToConv2d())
    dqs = nodes(program, EDGE_DQ_CHANNEL)
    assert len(dqs) == 2
    (conv,) = nodes(program, CONV)
    assert conv.args[1] in dqs and conv.args[1].args[0].op == "get_attr"
    assert "wq" in input_targets(program)  # still read by the sum's dequantize
    check_computes_like(run_passes(program, _lift()), module, x)


def test_affine_block_size_is_padded_to_four_dimensions() -> None:
    class Affine(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("wq", torch.randint(-7, 8, (6, 16), dtype=torch.int8))
            self.register_buffer("scale", torch.rand(6, 2) / 10 + 0.01)
            self.register_buffer("zp", torch.zeros(6, 2))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            w = DQ_AFFINE(self.wq, [1, 8], self.scale, self.zp, torch.int8, -8, 7)
            return F.linear(x, w)

    module, x = Affine(), torch.randn(2, 3, 16)
    program = run_passes(edge_program(module, x), ConvertLinearToConv2d())
    (conv,) = nodes(program, CONV)
    assert list(bound_args(conv.args[1])["block_size"]) == [1, 8, 1, 1]
    check_computes_like(run_passes(program, _lift()), module, x)


def test_weight_computed_in_the_graph_gets_a_view() -> None:
    class Computed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.randn(4, 8))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return F.linear(x, self.w * 2)

    module, x = Computed(), torch.randn(3, 8)
    program = run_passes(edge_program(module, x), ConvertLinearToConv2d())
    (conv,) = nodes(program, CONV)
    assert conv.args[1].target == exir_ops.edge.aten.view_copy.default
    check_runs_like(program, module, x)
