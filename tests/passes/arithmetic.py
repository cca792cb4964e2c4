"""Semantics probes for the passes that rewrite arithmetic: one bundle of cases per pass, run on the CPU and on the HTP simulator.

A bundle is one module whose outputs are the pass's op on several shapes and arguments: 3-D
and 4-D inputs, reductions over several dimensions, every order a norm takes, activations and
static operands (parameters: what QNN computes while it prepares the graph, where weight norm's
16 dB came from). ``tests/lowering/test_arithmetic.py`` runs the edge program before and after
the pass alone on the CPU (the ATen kernels of the edge ops) and compares them;
``tests/qnn_htp/test_arithmetic.py`` lowers each bundle once through the canonical flow on real
QNN and holds every output to both. One module per pass keeps the real-QNN cost at one lowering
per pass, and a wrong output is still named (``Bundle.labels``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

Fn = Callable[..., torch.Tensor]


class Outputs(nn.Module):
    """``forward(*inputs)`` returns ``fn(self, *inputs)`` for each ``fn``; ``static`` is a
    parameter (a constant of the program) the functions may use."""

    def __init__(self, fns: dict[str, Fn], static: torch.Tensor) -> None:
        super().__init__()
        self.fns = list(fns.values())
        self.static = nn.Parameter(static)

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(fn(self.static, *inputs) for fn in self.fns)


@dataclass(frozen=True)
class Bundle:
    """The cases of one pass: labelled functions of (static, *inputs), and the inputs."""

    name: str
    passes: tuple[str, ...]  # "module:Class" run alone on the CPU, in order
    cases: dict[str, Fn]
    inputs: Callable[[], tuple[torch.Tensor, ...]]
    static: Callable[[], torch.Tensor]
    backend: str = "htp"  # the variant whose HTP/GPU/LPAI pipeline the pass belongs to
    # ATen ops to-edge must keep whole so that the pass sees them (QNN's partitioner asks).
    keep: tuple[Any, ...] = ()

    @property
    def labels(self) -> list[str]:
        return list(self.cases)

    def build(self) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
        torch.manual_seed(sum(map(ord, self.name)))
        static = self.static()
        return Outputs(self.cases, static).eval(), self.inputs()


def _x34() -> tuple[torch.Tensor, ...]:
    return torch.randn(3, 4, 5), torch.randn(2, 3, 4, 5)


def _p() -> torch.Tensor:
    return torch.rand(4, 6, 3) + 0.25


_Q = "qnn_passes"
_aten = torch.ops.aten

BUNDLES: tuple[Bundle, ...] = (
    Bundle(
        "linalg_vector_norm",
        (f"{_Q}.decompose_linalg_vector_norm:DecomposeLinalgVectorNorm",),
        {
            "2 over (0, 1) of 3-D": lambda p, x, y: torch.linalg.vector_norm(x, 2, (0, 1)),
            "1 over (1, 3) of 4-D, keepdim": lambda p, x, y: torch.linalg.vector_norm(
                y, 1, (1, 3), keepdim=True
            ),
            "inf over the last dim": lambda p, x, y: torch.linalg.vector_norm(y, float("inf"), -1),
            "-inf over (0, 2)": lambda p, x, y: torch.linalg.vector_norm(x, float("-inf"), (0, 2)),
            "3 over all of 4-D": lambda p, x, y: torch.linalg.vector_norm(y, 3),
            "2 over all, keepdim": lambda p, x, y: torch.linalg.vector_norm(x, 2, keepdim=True),
            "0.5 over (2, 3)": lambda p, x, y: torch.linalg.vector_norm(y, 0.5, (2, 3)),
            "2 over (0, 1) of a parameter, keepdim (weight norm)": lambda p, x, y: (
                torch.linalg.vector_norm(p, 2, (0, 1), keepdim=True) * x[:1, :1, :3]
            ),
        },
        _x34,
        _p,
        keep=(_aten.linalg_vector_norm.default,),
    ),
    Bundle(
        "var",
        (f"{_Q}.decompose_var:DecomposeVar",),
        {
            "over (0, 2) of 3-D": lambda p, x, y: torch.var(x, (0, 2)),
            "over (1, 3) of 4-D, correction 0, keepdim": lambda p, x, y: torch.var(
                y, (1, 3), correction=0, keepdim=True
            ),
            "over the last dim, unbiased": lambda p, x, y: torch.var(y, -1, unbiased=True),
            "over all": lambda p, x, y: torch.var(x),
            "over (0, 1) of a parameter": lambda p, x, y: torch.var(p, (0, 1)) + x[0, 0, :3],
        },
        _x34,
        _p,
    ),
    Bundle(
        "cdist",
        (f"{_Q}.decompose_cdist:DecomposeCDist",),
        {
            "3-D batches": lambda p, x, y: torch.cdist(x, x[:, :2] * 0.5 + 1),
            "4-D batches": lambda p, x, y: torch.cdist(y, y[:, :, 1:3]),
            "against a parameter": lambda p, x, y: torch.cdist(x[:, :, :3], p[:3]),
        },
        _x34,
        _p,
    ),
    Bundle(
        "pdist",
        (f"{_Q}.decompose_pdist:DecomposePDist",),
        {
            "5 rows of 4": lambda p, x, y: F.pdist(x[0]),
            "6 rows of 3 from a parameter": lambda p, x, y: F.pdist(p[0]) + x[0, 0, 0],
        },
        _x34,
        _p,
    ),
    Bundle(
        "expm1",
        (f"{_Q}.decompose_expm1:DecomposeExpM1",),
        {
            "3-D": lambda p, x, y: torch.expm1(x),
            "4-D": lambda p, x, y: torch.expm1(y),
            "a parameter": lambda p, x, y: torch.expm1(p) + x[0, 0, :3],
        },
        _x34,
        _p,
    ),
    Bundle(
        "reciprocal",
        (f"{_Q}.decompose_reciprocal:DecomposeReciprocal",),
        {
            "3-D": lambda p, x, y: torch.reciprocal(x.abs() + 0.5),
            "4-D": lambda p, x, y: torch.reciprocal(y.abs() + 0.5),
            "a parameter": lambda p, x, y: torch.reciprocal(p) * x[0, 0, :3],
        },
        _x34,
        _p,
    ),
    Bundle(
        "binary_alpha",
        (f"{_Q}.decompose_binary_alpha:DecomposeBinaryAlpha",),
        {
            "add, alpha 2, 3-D": lambda p, x, y: torch.add(x, x * x, alpha=2),
            "sub, alpha -0.5, 4-D broadcast": lambda p, x, y: torch.sub(y, x, alpha=-0.5),
            "add a parameter, alpha 3": lambda p, x, y: torch.add(x[:, :, :3], p[:3, :4], alpha=3),
        },
        _x34,
        _p,
    ),
    Bundle(
        "roll",
        (f"{_Q}.decompose_roll:DecomposeRoll",),
        {
            "3-D over two dims": lambda p, x, y: torch.roll(x, (1, -2), (0, 2)),
            "4-D over one dim": lambda p, x, y: torch.roll(y, 3, 1),
            "flattened": lambda p, x, y: torch.roll(x, 7),
        },
        _x34,
        _p,
        keep=(_aten.roll.default,),
    ),
    Bundle(
        "scalar_operands",
        (f"{_Q}.lift_scalar_operands:LiftScalarOperands",),
        {
            "mul, add, sub, div by numbers": lambda p, x, y: (x * 2.5 + 1.5 - 0.25) / 3.0,
            "comparison and where": lambda p, x, y: torch.where(y > 0.25, y, 0.5),
            "pow 3 of an activation": lambda p, x, y: x**3,
            "rsub, clamp": lambda p, x, y: torch.clamp(1.0 - y, -0.5, 0.75),
            "numbers with a parameter": lambda p, x, y: (p * 2.0 - 1.0).sum((0, 1)) + x[0, 0, :3],
        },
        _x34,
        _p,
    ),
    Bundle(
        "static_operands",
        (
            f"{_Q}.lift_scalar_operands:LiftScalarOperands",
            f"{_Q}.broadcast_static_operands:BroadcastStaticOperands",
        ),
        {
            "parameter ** 2": lambda p, x, y: p**2 + x[0, 0, :3],
            "parameter ** 0.5": lambda p, x, y: p**0.5 + x[0, 0, :3],
            "2 ** parameter": lambda p, x, y: 2.0**p + x[0, 0, :3],
            "sum of a parameter ** -0.5": lambda p, x, y: (
                p.sum((0, 1), keepdim=True) ** -0.5 * x[:1, :1, :3]
            ),
            "(parameter * 2 - 1) summed over (0, 1)": lambda p, x, y: (
                (p * 2.0 - 1.0).sum((0, 1)) + x[0, 0, :3]
            ),
            "where(parameter > 1, parameter, 0.5) / 3": lambda p, x, y: (
                torch.where(p > 1.0, p, 0.5) / 3.0 + x[0, 0, :3]
            ),
        },
        _x34,
        lambda: torch.rand(4, 8, 3) * 3 + 0.5,
    ),
    Bundle(
        "rms_norm",
        (f"{_Q}.flatten_rms_norm:FlattenRmsNorm",),
        {
            "[3, 4, 5] over the last dim": lambda p, x, y: F.rms_norm(x, (5,), p[0, :5, 0] + 0.5),
            "[2, 3, 4, 5] over the last dim": lambda p, x, y: F.rms_norm(y, (5,), eps=1e-6),
            "[1, 16, 4, 16] per head (Qwen3)": lambda p, x, y: F.rms_norm(
                y.repeat(1, 6, 2, 4)[:1, :16, :4, :16], (16,)
            ),
        },
        _x34,
        lambda: torch.rand(4, 6, 3),
        keep=(_aten.rms_norm.default,),
    ),
    Bundle(
        "scalar_select",
        (f"{_Q}.reshape_scalar_select:ReshapeScalarSelect",),
        {
            "arange(5) + pos[0] of 4 positions": lambda p, x, y: (
                x[0, 0]
                * (torch.arange(5) + (y[0, 0, 0] * 10).round().to(torch.int64)[0]).to(x.dtype)
            ),
            "x * v[2] of a 5-vector": lambda p, x, y: x * x[0, 0][2],
        },
        _x34,
        _p,
    ),
    Bundle(
        "reduce_ops",
        (f"{_Q}.insert_reshape_for_reduce_ops:InsertReshapeForReduceOps",),
        {
            "argmax over all of 3-D": lambda p, x, y: torch.argmax(x),
            "argmin over all of 4-D": lambda p, x, y: torch.argmin(y),
        },
        _x34,
        _p,
    ),
    Bundle(
        "hardsigmoid_lpai",
        (f"{_Q}.decompose_hardsigmoid:DecomposeHardsigmoid",),
        {
            "3-D": lambda p, x, y: F.hardsigmoid(x * 3),
            "4-D": lambda p, x, y: F.hardsigmoid(y * 3),
        },
        _x34,
        _p,
        backend="lpai",
        keep=(_aten.hardsigmoid.default,),
    ),
)
BY_NAME = {b.name: b for b in BUNDLES}
# Bundles lowered on the HTP simulator (the LPAI pass has no HTP lowering to probe).
HTP_BUNDLES = tuple(b for b in BUNDLES if b.backend == "htp")


def _resolve(path: str) -> Any:
    import importlib

    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def edge_before(bundle: Bundle) -> tuple[nn.Module, tuple[torch.Tensor, ...], Any]:
    """The model, its inputs, and its edge program as the pass meets it (QNN keeps ``keep`` whole)."""
    from executorch.exir import EdgeCompileConfig, to_edge

    model, inputs = bundle.build()
    exported = torch.export.export(model, inputs, strict=True)
    config = EdgeCompileConfig(
        _check_ir_validity=False,
        preserve_ops=[_aten.linear.default, *bundle.keep],
    )
    return model, inputs, to_edge(exported, compile_config=config).exported_program()


def apply(bundle: Bundle, program: Any) -> tuple[Any, bool]:
    """``program`` after the bundle's passes alone, in order; whether the last one changed it."""
    from executorch.exir.pass_base import ExportedProgramPassBase

    modified = False
    for path in bundle.passes:
        step = _resolve(path)()
        if isinstance(step, ExportedProgramPassBase):
            result = step(program)
            program, modified = result.exported_program, result.modified
        else:
            result = step(program.graph_module)
            program._graph_module = result.graph_module
            modified = bool(result.modified)
    return program, modified


def run(program: Any, inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
    """The program's outputs on the CPU (the ATen kernels of its edge ops)."""
    with torch.no_grad():
        out = program.module()(*inputs)
    return list(out) if isinstance(out, tuple | list) else [out]


def cpu_values(bundle: Bundle) -> dict[str, Any]:
    """Eager, the edge graph before the passes and after them, on the CPU; numpy per output."""
    import copy

    model, inputs, program = edge_before(bundle)
    before = run(program, inputs)
    after_program, modified = apply(bundle, copy.deepcopy(program))
    after = run(after_program, inputs)
    with torch.no_grad():
        eager = list(model(*inputs))
    return {
        "eager": [t.numpy() for t in eager],
        "before": [t.numpy() for t in before],
        "after": [t.numpy() for t in after],
        "modified": modified,
    }
