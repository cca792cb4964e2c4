"""CanonicalizeConv: conv1d -> conv2d, dilated transposed conv -> undilated, on edge programs."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from executorch.exir.dialects._ops import ops as exir_ops
from qnn_migrate_tests.passes.edge import (
    CONV,
    ParameterToGetAttr,
    check_computes_like,
    check_runs_like,
    edge_program,
    input_targets,
    nodes,
    run_passes,
    targets,
)
from torch import nn

from qnn_passes import CanonicalizeConv
from qnn_passes.canonicalize_conv import dilate
from qnn_passes.quant_ops import bound_args

UNSQUEEZE = exir_ops.edge.aten.unsqueeze_copy.default
SQUEEZE = exir_ops.edge.aten.squeeze_copy.dims
DQ_TENSOR = torch.ops.quantized_decomposed.dequantize_per_tensor.default
DQ_CHANNEL = torch.ops.quantized_decomposed.dequantize_per_channel.default
DQ_AFFINE = torch.ops.torchao.dequantize_affine.default


def test_conv1d_becomes_conv2d_between_unsqueeze_and_squeeze() -> None:
    module = nn.Conv1d(4, 8, 3, stride=2, padding=1, dilation=2, groups=2)
    x = torch.randn(2, 4, 11)
    program = edge_program(module, x)
    result = CanonicalizeConv()(program)
    assert result.modified
    program = result.exported_program
    (conv,) = nodes(program, CONV)
    assert conv.args[3:] == ([1, 2], [0, 1], [1, 2], False, [0, 0], 2)
    assert conv.args[0].target == UNSQUEEZE and conv.args[0].args[1] == 2
    assert [u.target for u in conv.users] == [SQUEEZE]
    weight = conv.args[1]
    assert weight.op == "get_attr" and tuple(weight.meta["val"].shape) == (8, 2, 1, 3)
    # The replaced weight is gone from the program, not left as an unused input.
    assert input_targets(program) == ["bias", None]
    assert "weight" not in program.state_dict
    check_runs_like(run_passes(program, _lift()), module, x)


def test_conv2d_is_left_alone_and_reported_unmodified() -> None:
    module = nn.Conv2d(3, 4, 3)
    program = edge_program(module, torch.randn(1, 3, 6, 6))
    before = program.graph_module.code
    result = CanonicalizeConv()(program)
    assert not result.modified
    assert result.exported_program.graph_module.code == before


def test_conv1d_weight_shared_by_two_convs_is_converted_once() -> None:
    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv1d(3, 3, 3, padding=1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.conv(self.conv(x))

    module, x = Twice(), torch.randn(1, 3, 7)
    program = run_passes(edge_program(module, x), CanonicalizeConv())
    convs = nodes(program, CONV)
    assert len(convs) == 2 and convs[0].args[1] is convs[1].args[1]
    assert input_targets(program) == ["conv.bias", None]
    check_runs_like(run_passes(program, _lift()), module, x)


def test_transposed_conv_dilation_is_moved_into_the_kernel() -> None:
    module = nn.ConvTranspose2d(4, 6, 3, stride=2, dilation=2, output_padding=1)
    x = torch.randn(1, 4, 5, 5)
    program = run_passes(edge_program(module, x), CanonicalizeConv())
    (conv,) = nodes(program, CONV)
    assert conv.args[5] == [1, 1]
    assert tuple(conv.args[1].meta["val"].shape) == (4, 6, 5, 5)
    check_runs_like(run_passes(program, _lift()), module, x)


def test_dilate_spreads_taps_and_fills_the_gaps() -> None:
    kernel = torch.arange(1, 10).reshape(1, 1, 3, 3)
    out = dilate(kernel, [2, 3], 0)
    assert out[0, 0].tolist() == [
        [1, 0, 0, 2, 0, 0, 3],
        [0, 0, 0, 0, 0, 0, 0],
        [4, 0, 0, 5, 0, 0, 6],
        [0, 0, 0, 0, 0, 0, 0],
        [7, 0, 0, 8, 0, 0, 9],
    ]


class _QuantTransposed(nn.Module):
    """A transposed conv whose int8 weight has a non-zero zero point (asymmetric)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("wq", torch.randint(-100, 100, (4, 6, 3, 3), dtype=torch.int8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = DQ_TENSOR(self.wq, 0.02, 5, -128, 127, torch.int8)
        return F.conv_transpose2d(x, w, dilation=2)


def test_dilated_quantized_kernel_is_filled_with_the_zero_point() -> None:
    # Filling with 0 (as upstream does) would dequantize the gaps to -5 * 0.02, not to 0.
    module, x = _QuantTransposed(), torch.randn(1, 4, 5, 5)
    program = run_passes(edge_program(module, x), CanonicalizeConv())
    (conv,) = nodes(program, CONV)
    dq = conv.args[1]
    kernel = getattr(program.graph_module, dq.args[0].target)
    assert kernel.shape == (4, 6, 5, 5)
    assert set(kernel[:, :, 1::2, :].unique().tolist()) == {5}
    check_computes_like(run_passes(program, _lift()), module, x)


def test_per_channel_zero_points_fill_along_the_channel_axis() -> None:
    class PerChannel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("wq", torch.randint(-50, 50, (3, 2, 3), dtype=torch.int8))
            self.register_buffer("scales", torch.tensor([0.1, 0.2, 0.3]))
            self.register_buffer("zps", torch.tensor([1, -2, 3]))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            w = DQ_CHANNEL(self.wq, self.scales, self.zps, 0, -128, 127, torch.int8)
            return F.conv_transpose1d(x, w, dilation=3)

    module, x = PerChannel(), torch.randn(1, 3, 6)
    program = run_passes(edge_program(module, x), CanonicalizeConv())
    check_computes_like(run_passes(program, _lift()), module, x)


def test_affine_conv1d_weight_gets_a_unit_block_dimension() -> None:
    class Affine(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("wq", torch.randint(-7, 8, (4, 8, 3), dtype=torch.int8))
            self.register_buffer("scale", torch.rand(4, 2, 1) / 10 + 0.01)
            self.register_buffer("zp", torch.zeros(4, 2, 1))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            w = DQ_AFFINE(self.wq, [1, 4, 3], self.scale, self.zp, torch.int8, -8, 7)
            return F.conv1d(x, w)

    module, x = Affine(), torch.randn(1, 8, 9)
    program = run_passes(edge_program(module, x), CanonicalizeConv())
    (conv,) = nodes(program, CONV)
    assert list(bound_args(conv.args[1])["block_size"]) == [1, 4, 1, 3]
    check_computes_like(run_passes(program, _lift()), module, x)


def test_dequantize_shared_with_another_op_is_copied_not_rewired() -> None:
    class Shared(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("wq", torch.randint(-50, 50, (4, 2, 3), dtype=torch.int8))

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            w = DQ_TENSOR(self.wq, 0.05, 0, -128, 127, torch.int8)
            return F.conv1d(x, w), w.sum()

    module, x = Shared(), torch.randn(1, 2, 8)
    program = run_passes(edge_program(module, x), CanonicalizeConv())
    (conv,) = nodes(program, CONV)
    dqs = nodes(program, exir_ops.edge.quantized_decomposed.dequantize_per_tensor.default)
    assert len(dqs) == 2 and conv.args[1] in dqs
    # The old weight still feeds the sum, so it stays an input.
    assert "wq" in input_targets(program)
    with torch.no_grad():
        for got, want in zip(run_passes(program, _lift()).module()(x), module(x), strict=True):
            torch.testing.assert_close(got, want)


def test_bare_get_attr_weight_is_replaced_and_removed() -> None:
    module, x = nn.Conv1d(2, 3, 3), torch.randn(1, 2, 6)
    program = run_passes(edge_program(module, x), ParameterToGetAttr("weight"))
    (old,) = [n for n in program.graph.nodes if n.op == "get_attr"]
    result = CanonicalizeConv()(program)
    assert result.modified
    attrs = [n for n in program.graph.nodes if n.op == "get_attr"]
    assert old not in attrs and len(attrs) == 1
    assert not hasattr(program.graph_module, "weight_attr")
    check_runs_like(run_passes(program, _lift()), module, x)


def test_weight_computed_in_the_graph_gets_an_unsqueeze() -> None:
    class Computed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.randn(3, 2, 3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return F.conv1d(x, self.w * 2)

    module, x = Computed(), torch.randn(1, 2, 7)
    program = run_passes(edge_program(module, x), CanonicalizeConv())
    (conv,) = nodes(program, CONV)
    assert conv.args[1].target == UNSQUEEZE
    assert "w" in input_targets(program)
    check_runs_like(program, module, x)
    assert UNSQUEEZE in targets(program)


def _lift():  # type: ignore[no-untyped-def]
    from qnn_passes import LiftQnnConstants

    return LiftQnnConstants(check_quant_attrs=False)
