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

Issue 31's cases (real clients that lowered wrong or failed), each the smallest cut found:

* ``kv_cache_write``: transformers' static cache, ``length.copy_(pos[0])`` then
  ``cache.index_copy_(2, arange(1) + length, k)``, read back, over several decode steps;
* ``kv_cache_held``: KV caches a step reads before it has written all of them (every static
  cache: the rows not written yet are masked, but read);
* ``prefill_position``: ``arange(n) + pos[0]`` with an n-element ``pos`` (a prefill's cache
  positions);
* ``static_pow``: ``x + p ** 2`` of a ``[4, 8]`` parameter (the power QNN folds);
* ``weight_norm_conv``: wav2vec2's positional conv, ``weight_norm(dim=2)`` (its weight is a
  power of a sum of parameters, computed every run);
* ``dynamic_linear``, ``dynamic_rms_norm``, ``dynamic_arange_unsqueeze``: a linear, an
  RMSNorm and ``arange(S).unsqueeze(-1)`` on ``[1, S, 16]`` with ``S`` dynamic;
* ``window_partition``: Swin's window partition and reverse, whose views are rank 6.

``Case.steps`` gives the inputs of calls run one after another on one program (decoders: the
state in the buffers carries over); the first call's inputs are the export example.
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


class KvCacheWrite(nn.Module):
    """transformers' StaticLayer.update cut down: a 0-d length set from the input, one row written."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("length", torch.tensor(0, dtype=torch.int64))
        self.register_buffer("cache", torch.zeros(1, 2, 8, 4))

    def forward(self, k: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        self.length.copy_(pos[0])
        self.cache.index_copy_(2, torch.arange(1) + self.length, k)
        return (self.cache * k).sum(-1)  # every row read, as attention over the cache reads it


class KvCacheHeld(nn.Module):
    """Four caches (two layers' keys and values), one row written per call, all rows read."""

    def __init__(self, caches: int = 4, rows: int = 16, dim: int = 16) -> None:
        super().__init__()
        self.caches = caches
        for i in range(caches):
            self.register_buffer(f"cache{i}", torch.zeros(1, 2, rows, dim))

    def forward(self, k: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        read = []
        for i in range(self.caches):
            cache = getattr(self, f"cache{i}")
            cache.index_copy_(2, pos, k * (i + 1))
            read.append(cache * 1.0)
        return torch.cat(read)


class PrefillPosition(nn.Module):
    """``arange(n) + pos[0]`` for an n-element ``pos``: the positions of a prefill of n tokens."""

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(x.shape[-1]) + pos[0]
        return x * positions.to(x.dtype)


class StaticPow(nn.Module):
    """``x + p ** 2``: a power of a parameter, which QNN computes at prepare time."""

    def __init__(self) -> None:
        super().__init__()
        self.p = nn.Parameter(torch.rand(4, 8) * 3 + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.p**2


class WeightNormConv(nn.Module):
    """wav2vec2's positional conv embedding cut down: a grouped conv1d, ``weight_norm(dim=2)``."""

    def __init__(self, channels: int = 32, kernel: int = 8, groups: int = 4) -> None:
        super().__init__()
        conv = nn.Conv1d(channels, channels, kernel, padding=kernel // 2, groups=groups)
        self.conv = nn.utils.parametrizations.weight_norm(conv, name="weight", dim=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


class DynamicArangeUnsqueeze(nn.Module):
    """``x * arange(S).unsqueeze(-1)`` with ``S`` dynamic (position ids as a column)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.arange(x.shape[1], dtype=torch.float32).unsqueeze(-1)


class WindowPartition(nn.Module):
    """Swin's window partition and reverse (transformers' ``window_partition``): rank-6 views."""

    def __init__(self, window: int = 4, channels: int = 16) -> None:
        super().__init__()
        self.window = window
        self.proj = nn.Linear(channels, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, h, w, c = x.shape
        s = self.window
        windows = x.view(b, h // s, s, w // s, s, c).permute(0, 1, 3, 2, 4, 5)
        windows = self.proj(windows.contiguous().view(-1, s * s, c))
        back = windows.view(b, h // s, w // s, s, s, c).permute(0, 1, 3, 2, 4, 5)
        return back.contiguous().view(b, h, w, c)


def _seq() -> Any:
    from torch.export import Dim

    return ({1: Dim("seq", min=2, max=16)},)


def _decode_steps(dim: int, n: int = 3) -> list[tuple[torch.Tensor, ...]]:
    """``n`` decode steps: a key row of width ``dim`` for each of 2 heads, at positions 0, 1, ..."""
    return [(torch.randn(1, 2, 1, dim), torch.tensor([i])) for i in range(n)]


@dataclass(frozen=True)
class Case:
    """A module, its example inputs (or the inputs of several calls) and its dynamic shapes, built by name."""

    name: str
    model: Callable[[], nn.Module]
    inputs: Callable[[], tuple[torch.Tensor, ...]] | None = None
    dynamic_shapes: Callable[[], Any] = field(default=lambda: None)
    steps: Callable[[], list[tuple[torch.Tensor, ...]]] | None = None

    def build(self) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
        model, calls = self.build_calls()
        return model, calls[0]

    def build_calls(self) -> tuple[nn.Module, list[tuple[torch.Tensor, ...]]]:
        """The model and the inputs of each call, in order (one call unless ``steps``)."""
        torch.manual_seed(0)
        model = self.model().eval()
        if self.steps is not None:
            return model, self.steps()
        assert self.inputs is not None, self.name
        return model, [self.inputs()]


CASES: tuple[Case, ...] = (
    Case("qk_norm", lambda: QkNorm(16), lambda: (torch.randn(1, 16, 4, 16),)),
    Case(
        "static_position",
        StaticPosition,
        lambda: (torch.randn(1, 8), torch.tensor([3])),
    ),
    Case("constant_chain", ConstantChain, lambda: (torch.randn(2, 8),)),
    Case("dynamic_arange", DynamicArange, lambda: (torch.randn(1, 8, 4),), _seq),
    Case("kv_cache_write", KvCacheWrite, steps=lambda: _decode_steps(4)),
    Case("kv_cache_held", KvCacheHeld, steps=lambda: _decode_steps(16)),
    Case(
        "prefill_position",
        PrefillPosition,
        lambda: (torch.randn(1, 4), torch.arange(3, 7)),
    ),
    Case("static_pow", StaticPow, lambda: (torch.randn(4, 8),)),
    Case("weight_norm_conv", WeightNormConv, lambda: (torch.randn(1, 32, 16),)),
    Case("dynamic_linear", lambda: nn.Linear(16, 16), lambda: (torch.randn(1, 8, 16),), _seq),
    Case("dynamic_rms_norm", lambda: nn.RMSNorm(16), lambda: (torch.randn(1, 8, 16),), _seq),
    Case(
        "dynamic_arange_unsqueeze",
        DynamicArangeUnsqueeze,
        lambda: (torch.randn(1, 8, 16),),
        _seq,
    ),
    Case("window_partition", WindowPartition, lambda: (torch.randn(1, 8, 8, 16),)),
)
BY_NAME = {c.name: c for c in CASES}
