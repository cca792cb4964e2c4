"""The smallest modules that reproduce what the deprecated wrapper cannot lower (issue 20, "beyond the wrapper").

Each stands for a pattern of Hugging Face decoders, cut down to the ops that matter; the fast
tests (``tests/passes/test_flatten_rms_norm.py`` and others) and the real-QNN tier
(``tests/qnn_htp/test_beyond_wrapper.py``) build them by name from :data:`CASES`.

* ``qk_norm``: Qwen3's per-head q/k RmsNorm (transformers' ``Qwen3RMSNorm``, float32 upcast
  included) over the last dimension of ``[1, 16, 4, 16]``;
* ``static_position``: transformers' static cache position, a 0-d int64 buffer:
  ``buf.copy_(pos[0])``, ``arange + buf``, ``buf.add_(1)``;
* ``constant_chain``: an ``arange`` -> ``erf`` chain that reads no input (a llama fed only
  ``input_ids`` builds one for its rotary/mask constants);
* ``dynamic_arange``: an ``arange`` up to a dynamic sequence length.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn


class QkNorm(nn.Module):
    """transformers' Qwen3RMSNorm: float32 upcast, mean of squares over the last dim, weight."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.rand(dim) + 0.5)
        self.eps = eps

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        dtype = hidden.dtype
        hidden = hidden.to(torch.float32)
        variance = hidden.pow(2).mean(-1, keepdim=True)
        hidden = hidden * torch.rsqrt(variance + self.eps)
        return self.weight * hidden.to(dtype)


class StaticPosition(nn.Module):
    """A static cache's position: a 0-d int64 buffer set from the input, read, and advanced."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("position", torch.tensor(0, dtype=torch.int64))

    def forward(self, x: torch.Tensor, cache_position: torch.Tensor) -> torch.Tensor:
        self.position.copy_(cache_position[0])
        positions = torch.arange(x.shape[-1]) + self.position
        self.position.add_(1)
        return x * positions.to(x.dtype)


class ConstantChain(nn.Module):
    """``x + erf(0.1 * arange(n))``: the arange -> erf chain reads nothing but constants."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ramp = torch.arange(x.shape[-1], dtype=torch.float32)
        return x + torch.erf(ramp * 0.1)


class DynamicArange(nn.Module):
    """``x * arange(seq)`` with the sequence length dynamic: the arange's end is symbolic."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.arange(x.shape[1], dtype=torch.float32)[None, :, None]


def _seq() -> Any:
    from torch.export import Dim

    return ({1: Dim("seq", min=2, max=16)},)


@dataclass(frozen=True)
class Case:
    """A module, its example inputs and its dynamic shapes, built by name."""

    name: str
    model: Callable[[], nn.Module]
    inputs: Callable[[], tuple[torch.Tensor, ...]]
    dynamic_shapes: Callable[[], Any] = field(default=lambda: None)

    def build(self) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
        torch.manual_seed(0)
        return self.model().eval(), self.inputs()


CASES: tuple[Case, ...] = (
    Case("qk_norm", lambda: QkNorm(16), lambda: (torch.randn(1, 16, 4, 16),)),
    Case(
        "static_position",
        StaticPosition,
        lambda: (torch.randn(1, 8), torch.tensor([3])),
    ),
    Case("constant_chain", ConstantChain, lambda: (torch.randn(2, 8),)),
    Case("dynamic_arange", DynamicArange, lambda: (torch.randn(1, 8, 4),), _seq),
)
BY_NAME = {c.name: c for c in CASES}
