"""BroadcastStaticOperands: an elementwise op of static operands gets operands of its output's shape; an activation's op is left alone.

On real QNN (tests/qnn_htp/test_beyond_wrapper.py: ``static_pow``, ``weight_norm_conv``;
tests/qnn_htp/test_arithmetic.py: ``static_operands``) the broadcast ones come out wrong or do
not prepare, and the expanded ones are right; here the rewrite itself: which ops it touches,
what they become, and that the program still computes what eager does.
"""

from __future__ import annotations

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from qnn_migrate_tests.passes.beyond import StaticPow, WeightNormConv
from qnn_migrate_tests.passes.edge import (
    check_computes_like,
    check_runs_like,
    edge_program,
    nodes,
    run_passes,
)

from qnn_passes.broadcast_static_operands import BroadcastStaticOperands, constant_derived
from qnn_passes.lift_qnn_constants import LiftQnnConstants
from qnn_passes.lift_scalar_operands import LiftScalarOperands

_aten = exir_ops.edge.aten


def _lifted(module: torch.nn.Module, *inputs: torch.Tensor) -> torch.export.ExportedProgram:
    """The edge program with its number operands lifted, as the pow reaches the pipeline."""
    program = edge_program(module, *inputs)
    LiftScalarOperands()(program.graph_module)
    return program


def _operand_shapes(program: torch.export.ExportedProgram) -> list[list[tuple[int, ...]]]:
    return [
        [tuple(a.meta["val"].shape) for a in n.args[:2]]
        for n in nodes(program, _aten.pow.Tensor_Tensor)
    ]


def test_a_static_pow_gets_a_full_exponent_and_computes_the_same() -> None:
    x, model = torch.randn(4, 8), StaticPow()
    program = _lifted(model, x)
    assert _operand_shapes(program) == [[(4, 8), ()]]  # the control: broadcast before
    result = BroadcastStaticOperands()(program)
    assert result.modified
    program = result.exported_program
    assert _operand_shapes(program) == [[(4, 8), (4, 8)]]
    program = run_passes(program, LiftQnnConstants(check_quant_attrs=False))
    check_runs_like(program, model, x)


def test_weight_norms_two_pows_are_both_expanded() -> None:
    x = torch.randn(1, 32, 16)
    model = WeightNormConv()
    program = _lifted(model, x)
    before = _operand_shapes(program)
    assert before == [[(32, 8, 8), ()], [(1, 1, 8), ()]]  # |v| ** 2 and the sum's ** 0.5
    program = BroadcastStaticOperands()(program).exported_program
    assert _operand_shapes(program) == [[s, s] for s, _ in before]
    program = run_passes(program, LiftQnnConstants(check_quant_attrs=False))
    check_runs_like(program, model, x)


def test_control_an_activations_pow_is_left_alone() -> None:
    class Square(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.p = torch.nn.Parameter(torch.rand(4, 8))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (x + self.p) ** 2  # the base depends on the input

    program = _lifted(Square(), torch.randn(4, 8))
    (power,) = nodes(program, _aten.pow.Tensor_Tensor)
    static = constant_derived(program)
    assert power.args[1] in static and power.args[0] not in static
    result = BroadcastStaticOperands()(program)
    assert not result.modified
    assert _operand_shapes(result.exported_program) == [[(4, 8), ()]]


def test_a_computed_broadcast_operand_is_expanded_by_an_op() -> None:
    class ComputedExponent(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.p = torch.nn.Parameter(torch.rand(4, 8) + 0.5)
            self.q = torch.nn.Parameter(torch.tensor([0.25, 0.25]))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.p ** self.q.sum()  # the exponent is computed from a parameter

    x, model = torch.randn(4, 8), ComputedExponent()
    program = _lifted(model, x)
    assert _operand_shapes(program) == [[(4, 8), ()]]
    program = BroadcastStaticOperands()(program).exported_program
    (power,) = nodes(program, _aten.pow.Tensor_Tensor)
    assert power.args[1].target == _aten.expand_copy.default
    assert _operand_shapes(program) == [[(4, 8), (4, 8)]]
    check_runs_like(program, model, x)


def test_a_static_chain_of_numbers_gets_full_operands_at_every_op() -> None:
    class ScaleShift(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.p = torch.nn.Parameter(torch.rand(4, 6, 3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            # QNN 2.51 cannot prepare this with the numbers broadcast.
            return (self.p * 2.0 - 1.0).sum((0, 1)) + x

    x, model = torch.randn(3), ScaleShift()
    program = _lifted(model, x)
    ops = (_aten.mul.Tensor, _aten.sub.Tensor)
    assert [
        [tuple(a.meta["val"].shape) for a in n.args] for t in ops for n in nodes(program, t)
    ] == [
        [(4, 6, 3), ()],
        [(4, 6, 3), ()],
    ]
    program = BroadcastStaticOperands()(program).exported_program
    assert [
        [tuple(a.meta["val"].shape) for a in n.args] for t in ops for n in nodes(program, t)
    ] == [
        [(4, 6, 3), (4, 6, 3)],
        [(4, 6, 3), (4, 6, 3)],
    ]
    # The add reads the input: left alone.
    (add,) = nodes(program, _aten.add.Tensor)
    assert tuple(add.args[1].meta["val"].shape) == (3,)
    program = run_passes(program, LiftQnnConstants(check_quant_attrs=False))
    check_computes_like(program, model, x)
