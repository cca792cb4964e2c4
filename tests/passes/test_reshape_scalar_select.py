"""ReshapeScalarSelect: a static cache's 0-d position buffer survives Remove0DTensor and I64toI32."""

from __future__ import annotations

import pytest
import torch
from executorch.backends.qualcomm._passes import I64toI32, Remove0DTensor
from executorch.exir.dialects._ops import ops as exir_ops

from passes.beyond import StaticPosition
from passes.edge import check_runs_like, edge_program, nodes
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
