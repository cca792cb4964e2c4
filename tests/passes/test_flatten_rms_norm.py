"""FlattenRmsNorm: an RmsNorm over a tensor with two leading dimensions > 1 runs on 2-D, and computes the same."""

from __future__ import annotations

import pytest
import torch
from executorch.backends.qualcomm._passes import RecomposeRmsNorm
from executorch.exir.dialects._ops import ops as exir_ops
from qnn_migrate_tests.passes.beyond import QkNorm
from qnn_migrate_tests.passes.edge import check_computes_like, edge_program, nodes, run_passes

from qnn_passes.flatten_rms_norm import FlattenRmsNorm, flattened_shape

RMS = exir_ops.edge.aten.rms_norm.default
VIEW = exir_ops.edge.aten.view_copy.default


def _recomposed(shape: tuple[int, ...]) -> tuple[torch.nn.Module, torch.Tensor, torch.fx.Node]:
    torch.manual_seed(0)
    module, x = QkNorm(shape[-1]).eval(), torch.randn(*shape)
    program = run_passes(edge_program(module, x), RecomposeRmsNorm())
    return module, x, program  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("shape", "flat"),
    [
        ((1, 16, 4, 16), [64, 16]),  # Qwen3's q/k norm: 3 dB on QNN before, 68 dB after
        ((16, 4, 16), [64, 16]),
        ((2, 3, 4, 8), [24, 8]),
    ],
)
def test_norm_over_two_leading_dims_runs_on_2d(shape: tuple[int, ...], flat: list[int]) -> None:
    module, x, program = _recomposed(shape)
    (norm,) = nodes(program, RMS)  # type: ignore[arg-type]
    result = FlattenRmsNorm()(program.graph_module)  # type: ignore[attr-defined]
    assert result is not None and result.modified
    (norm,) = nodes(program, RMS)  # type: ignore[arg-type]
    assert list(norm.args[0].meta["val"].shape) == flat
    assert norm.args[0].target == VIEW and norm.args[0].args[1] == flat
    (restore,) = norm.users
    assert restore.target == VIEW and list(restore.meta["val"].shape) == list(shape)
    check_computes_like(program, module, x)  # type: ignore[arg-type]  # no portable rms_norm kernel


@pytest.mark.parametrize("shape", [(64, 16), (1, 16, 64), (1, 1, 8, 16)])
def test_layouts_qnn_gets_right_are_left_alone(shape: tuple[int, ...]) -> None:
    module, x, program = _recomposed(shape)
    before = program.graph_module.code  # type: ignore[attr-defined]
    result = FlattenRmsNorm()(program.graph_module)  # type: ignore[attr-defined]
    assert result is not None and not result.modified
    assert program.graph_module.code == before  # type: ignore[attr-defined]
    check_computes_like(program, module, x)  # type: ignore[arg-type]  # no portable rms_norm kernel


def test_which_shapes_are_flattened() -> None:
    assert flattened_shape((1, 16, 4, 16), [16]) == [64, 16]
    assert flattened_shape((1, 16, 4, 16), [4, 16]) is None  # a norm over two dims
    assert flattened_shape((16, 4, 16), [8]) is None  # not the last dimension
    assert flattened_shape((torch.SymInt, 4, 16), [16]) is None  # type: ignore[arg-type]
