"""AnnotateGetAttr: QCOM quantization attributes on get_attr constants, derived from their dequantize."""

from __future__ import annotations

from unittest import mock

import pytest
import torch
import torch.nn.functional as F
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportedProgramPassBase, ExportPass
from qnn_migrate_tests.passes.edge import ParameterToGetAttr, edge_program, run_passes
from torch import nn

from qnn_passes import (
    AnnotateGetAttr,
    CanonicalizeConv,
    ConvertLinearToConv2d,
    LiftQnnConstants,
    QnnPipelineError,
)
from qnn_passes.quant_ops import QCOM_QUANT_ATTRS, attrs_equal

DQ_CHANNEL = torch.ops.quantized_decomposed.dequantize_per_channel.default
DQ_TENSOR = torch.ops.quantized_decomposed.dequantize_per_tensor.default


class QuantLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("wq", torch.randint(-100, 100, (6, 8), dtype=torch.int8))
        self.register_buffer("scales", torch.rand(6) / 50 + 0.001)
        self.register_buffer("zps", torch.zeros(6, dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = DQ_CHANNEL(self.wq, self.scales, self.zps, 0, -127, 127, torch.int8)
        return F.linear(x, w)


def _get_attrs(program: torch.export.ExportedProgram) -> list[torch.fx.Node]:
    return [n for n in program.graph.nodes if n.op == "get_attr"]


def _converted() -> torch.export.ExportedProgram:
    """A program whose linear weight is a get_attr constant behind a dequantize."""
    return run_passes(edge_program(QuantLinear(), torch.randn(3, 8)), ConvertLinearToConv2d())


def test_writes_the_attributes_of_the_consuming_dequantize() -> None:
    program = _converted()
    (attr,) = _get_attrs(program)
    assert QCOM_QUANT_ATTRS not in attr.meta
    assert AnnotateGetAttr()(program).modified
    attrs = attr.meta[QCOM_QUANT_ATTRS]
    assert attrs["encoding"] == exir_ops.edge.quantized_decomposed.dequantize_per_channel.default
    assert (attrs["axis"], attrs["quant_min"], attrs["quant_max"], attrs["dtype"]) == (
        0,
        -127,
        127,
        torch.int8,
    )
    torch.testing.assert_close(attrs["scales"], program.state_dict["scales"])
    assert attrs["zero_points"].tolist() == [0] * 6


def test_second_run_reports_unmodified() -> None:
    program = _converted()
    assert AnnotateGetAttr()(program).modified
    assert not AnnotateGetAttr()(program).modified


def test_float_get_attr_gets_nothing() -> None:
    module, x = nn.Conv1d(2, 3, 3), torch.randn(1, 2, 5)
    program = run_passes(edge_program(module, x), CanonicalizeConv())
    assert _get_attrs(program)
    assert not AnnotateGetAttr()(program).modified
    assert all(QCOM_QUANT_ATTRS not in n.meta for n in _get_attrs(program))


def test_two_dequantizes_with_different_parameters_are_an_error() -> None:
    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("wq", torch.randint(-9, 9, (4, 4), dtype=torch.int8))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            a = DQ_TENSOR(self.wq, 0.1, 0, -128, 127, torch.int8)
            b = DQ_TENSOR(self.wq, 0.2, 0, -128, 127, torch.int8)
            return x @ a + x @ b

    program = run_passes(edge_program(Two(), torch.randn(4, 4)), ParameterToGetAttr("wq"))
    with pytest.raises(QnnPipelineError, match="different parameters"):
        AnnotateGetAttr()(program)


def test_lift_refuses_a_dequantized_constant_without_attributes() -> None:
    program = _converted()
    with pytest.raises(QnnPipelineError, match="AnnotateGetAttr"):
        LiftQnnConstants(check_quant_attrs=True)(program)


@pytest.mark.parametrize("cls", [AnnotateGetAttr, CanonicalizeConv, ConvertLinearToConv2d])
def test_passes_call_super_init(cls: type) -> None:
    calls = []
    original = ExportedProgramPassBase.__init__

    def init(self: object) -> None:
        calls.append(type(self))
        original(self)

    with mock.patch.object(ExportedProgramPassBase, "__init__", init):
        cls()
    assert calls == [cls]


def test_rebuild_drops_attributes_and_a_second_run_restores_them() -> None:
    program = _converted()
    AnnotateGetAttr()(program)
    (attr,) = _get_attrs(program)
    before = attr.meta[QCOM_QUANT_ATTRS]
    # ExportPass.call rebuilds the graph as I64toI32 and LayoutTransform do.
    program = run_passes(program, ExportPass())
    (attr,) = _get_attrs(program)
    assert QCOM_QUANT_ATTRS not in attr.meta
    assert AnnotateGetAttr()(program).modified
    assert attrs_equal(attr.meta[QCOM_QUANT_ATTRS], before)
