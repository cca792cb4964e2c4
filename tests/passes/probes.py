"""One small model per QNN export-stage pass, each exercising the op that pass rewrites.

``PROBES`` pairs each with the pass it probes (ExecuTorch's name) and the backend variant it
is lowered for. ``portable`` is False where the lowered program keeps an op QNN runs but
ExecuTorch's portable runtime has no kernel for (``_safe_softmax``); those
programs run through ``ExportedProgram.module()`` (the edge ops' ATen kernels) instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


class Fn(nn.Module):
    def __init__(self, fn: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *x: torch.Tensor) -> torch.Tensor:
        return self.fn(*x)


class Autocast(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cpu", enabled=False):
            y = x * 2
        return y + 1


@dataclass(frozen=True)
class Probe:
    """A model and inputs that exercise one export-stage pass."""

    name: str
    export_pass: str
    build: Callable[[], nn.Module]
    inputs: Callable[[], tuple[torch.Tensor, ...]]
    backend: str = "htp"
    portable: bool = True

    def model(self) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
        torch.manual_seed(sum(map(ord, self.name)))
        return self.build().eval(), self.inputs()


def _r(*shape: int) -> Callable[[], tuple[torch.Tensor, ...]]:
    return lambda: (torch.randn(*shape),)


def _fn(f: Callable[..., torch.Tensor]) -> Callable[[], nn.Module]:
    return lambda: Fn(f)


def _sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v)


PROBES: tuple[Probe, ...] = (
    Probe(
        "as_strided",
        "DecomposeAsStrided",
        _fn(lambda x: torch.as_strided(x + 1, (3, 2), (1, 3), 1)),
        _r(4, 4),
    ),
    Probe(
        "binary_alpha",
        "DecomposeBinaryAlpha",
        _fn(lambda x, y: torch.add(x, y, alpha=2) - torch.sub(x, y, alpha=3)),
        lambda: (torch.randn(3, 4), torch.randn(3, 4)),
    ),
    Probe(
        "cdist",
        "DecomposeCDist",
        _fn(lambda x, y: torch.cdist(x, y)),
        lambda: (torch.randn(2, 5, 3), torch.randn(2, 4, 3)),
    ),
    Probe("pdist", "DecomposePDist", _fn(lambda x: F.pdist(x)), _r(5, 3)),
    Probe(
        "pad",
        "DecomposePad",
        # Reflect and constant pads; a replicate pad fails in QNN's builder in both flows.
        _fn(lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect") + F.pad(x, (1, 2, 2, 1), value=0.5)),
        _r(1, 2, 5, 5),
    ),
    Probe(
        "sdpa",
        "DecomposeScaledDotProductAttention",
        _fn(_sdpa),
        lambda: tuple(torch.randn(1, 2, 4, 8) for _ in range(3)),
        portable=False,
    ),
    Probe(
        "roll",
        "DecomposeRoll",
        _fn(lambda x: torch.roll(x, (2, -1), (1, 0)) + torch.roll(x, 3)),
        _r(3, 5),
    ),
    Probe(
        "select_scatter",
        "DecomposeSelectScatter",
        _fn(lambda x, y: torch.select_scatter(x, y, 0, 1)),
        lambda: (torch.randn(3, 4), torch.randn(4)),
    ),
    Probe("threshold", "DecomposeThreshold", _fn(lambda x: F.threshold(x, 0.1, 20.0)), _r(3, 4)),
    Probe("triu", "DecomposeTriu", _fn(lambda x: torch.triu(x, 1)), _r(4, 4)),
    Probe(
        "linalg_vector_norm",
        "DecomposeLinalgVectorNorm",
        _fn(lambda x: torch.linalg.vector_norm(x, 2, dim=-1) + torch.linalg.vector_norm(x, 1)),
        _r(3, 4),
    ),
    Probe("expm1", "DecomposeExpM1", _fn(torch.expm1), _r(3, 4)),
    Probe("fill", "DecomposeFill", _fn(lambda x: x.clone().fill_(3.0) + x), _r(3, 4)),
    Probe(
        "var",
        "DecomposeVar",
        _fn(lambda x: torch.var(x, dim=-1) + torch.var(x, dim=0, unbiased=False)[:3]),
        _r(3, 4),
    ),
    Probe(
        "floor_divide",
        "DecomposeFloorDivide",
        _fn(torch.floor_divide),
        lambda: (torch.randn(3, 4) * 10, torch.rand(3, 4) + 1),
    ),
    Probe("autocast", "DecomposeWrapWithAutocast", Autocast, _r(3, 4)),
    Probe("square", "ConvertSquareToPow", _fn(torch.square), _r(3, 4)),
    Probe(
        "scalar_operands",
        "LiftConstantScalarOperands",
        _fn(lambda x: x * 2.0 + 1.5 - (x > 0.3).float() * torch.where(x < 0, 0.5, x)),
        _r(3, 4),
    ),
    Probe(
        "reduce_ops",
        "InsertReshapeForReduceOps",
        _fn(lambda x: torch.argmax(x) + torch.argmin(x)),
        _r(3, 4),
    ),
    Probe(
        "reciprocal",
        "DecomposeReciprocal",
        _fn(lambda x: torch.reciprocal(x.abs() + 1)),
        _r(3, 4),
    ),
    Probe(
        "hardsigmoid_lpai",
        "DecomposeHardsigmoid",
        _fn(F.hardsigmoid),
        _r(3, 4),
        backend="lpai",
    ),
)
BY_NAME = {p.name: p for p in PROBES}


def probe_params() -> list[Any]:
    import pytest

    return [pytest.param(p, id=p.name, marks=pytest.mark.xdist_group(p.name)) for p in PROBES]
