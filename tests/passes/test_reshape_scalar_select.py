"""ReshapeScalarSelect: a 0-d select keeps its value and its shape where Remove0DTensor would change them (static caches' positions)."""

from __future__ import annotations

import pytest
import torch
from executorch.backends.qualcomm._passes import I64toI32, Remove0DTensor
from executorch.exir.dialects._ops import ops as exir_ops
from qnn_migrate_tests.passes.beyond import KvCacheWrite, PrefillPosition, StaticPosition
from qnn_migrate_tests.passes.edge import check_runs_like, edge_program, nodes

from qnn_passes.reshape_scalar_select import ReshapeScalarSelect

_aten = exir_ops.edge.aten
INPUTS = (torch.randn(1, 8), torch.tensor([3]))


def _upstream(program: torch.export.ExportedProgram, *, cast: bool = True) -> None:
    # The two ExecuTorch passes in the order the pipeline runs them (RemoveRedundancy between
    # them changes nothing here).
    Remove0DTensor()(program.graph_module)
    if cast:
        I64toI32(program)(program.graph_module)


def test_position_buffer_survives_the_qnn_passes() -> None:
    program = edge_program(StaticPosition(), *INPUTS)
    result = ReshapeScalarSelect()(program.graph_module)
    assert result is not None and result.modified
    assert not nodes(program, _aten.select_copy.int)
    (sliced,) = nodes(program, _aten.slice_copy.Tensor)
    assert sliced.args[1:] == (0, 0, 1)
    (scalar,) = sliced.users
    assert scalar.target == _aten.view_copy.default and scalar.meta["val"].dim() == 0
    _upstream(program, cast=False)
    (copy,) = nodes(program, _aten.copy.default)
    assert copy.args[1].meta["val"].dim() == 0
    check_runs_like(program, StaticPosition(), *INPUTS)
    # I64toI32 (which retraces) accepts it now; its int32 casts are for a QNN delegate to
    # run (tests/qnn_htp/test_beyond_wrapper.py), so the numbers are checked before it.
    I64toI32(program)(program.graph_module)


def test_control_without_it_upstream_fails() -> None:
    program = edge_program(StaticPosition(), *INPUTS)
    with pytest.raises(Exception, match="too few dimensions"):
        _upstream(program)


def test_a_select_no_copy_reads_is_left_alone() -> None:
    class Reads(torch.nn.Module):
        def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
            return x + pos[0]

    program = edge_program(Reads(), *INPUTS)
    result = ReshapeScalarSelect()(program.graph_module)
    assert result is not None and not result.modified
    assert len(nodes(program, _aten.select_copy.int)) == 1


def test_a_select_from_several_elements_keeps_its_value() -> None:
    # A prefill's positions: pos[0] of a 4-element pos. Remove0DTensor alone would add all of
    # pos, elementwise, to arange(4).
    module, inputs = PrefillPosition(), (torch.randn(1, 4), torch.arange(3, 7))
    program = edge_program(module, *inputs)
    result = ReshapeScalarSelect()(program.graph_module)
    assert result is not None and result.modified
    (sliced,) = nodes(program, _aten.slice_copy.Tensor)
    assert sliced.args[1:] == (0, 0, 1) and not nodes(program, _aten.view_copy.default)
    Remove0DTensor()(program.graph_module)
    check_runs_like(program, PrefillPosition(), *inputs)


def test_control_without_it_remove0dtensor_changes_the_values() -> None:
    module, inputs = PrefillPosition(), (torch.randn(1, 4), torch.arange(3, 7))
    program = edge_program(module, *inputs)
    Remove0DTensor()(program.graph_module)
    with torch.no_grad():
        wrong = program.module()(*inputs)
        right = module(*inputs)
    assert not torch.allclose(wrong, right)
    # arange(4) + pos instead of arange(4) + pos[0]
    torch.testing.assert_close(wrong, inputs[0] * (torch.arange(4) + inputs[1]).float())


def test_a_0d_buffers_new_value_stays_0d() -> None:
    # to-edge folds length.copy_(pos[0]) away: the select itself is the buffer's new value.
    module = KvCacheWrite()
    inputs = (torch.randn(1, 2, 1, 4), torch.tensor([5]))
    program = edge_program(module, *inputs)
    mutations = program.graph_signature.buffers_to_mutate
    (length,) = [
        n for n in program.graph.output_node().args[0] if mutations.get(n.name) == "length"
    ]
    assert length.target == _aten.select_copy.int
    result = ReshapeScalarSelect()(program.graph_module)
    assert result is not None and result.modified
    Remove0DTensor()(program.graph_module)
    outputs = program.graph.output_node().args[0]
    (length,) = [n for n in outputs if n.target == _aten.view_copy.default]
    assert length.meta["val"].dim() == 0 and length.args[0].target == _aten.slice_copy.Tensor
    I64toI32(program)(program.graph_module)  # retraces: the 0-d buffer value is accepted


def test_control_without_it_the_0d_buffer_gets_a_1d_value() -> None:
    program = edge_program(KvCacheWrite(), torch.randn(1, 2, 1, 4), torch.tensor([5]))
    at = [s.target for s in program.graph_signature.output_specs].index("length")
    Remove0DTensor()(program.graph_module)
    length = program.graph.output_node().args[0][at]
    assert length.op == "placeholder" and length.meta["val"].shape == (1,)  # pos itself
