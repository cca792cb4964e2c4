"""A zoo of small models, one per pattern the migrated QNN passes handle.

Each :class:`Case` builds a model (or a dict of methods) and example inputs; quantized cases
are quantized here with ExecuTorch's ``QnnQuantizer`` (PT2E: per-channel 8a8w, 16a4w per-block
through torchao's affine ops, or QAT with one training step). Built models are cached per
process, since several tests look at the same case.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

torch.manual_seed(0)


# -- models ----------------------------------------------------------------------------------
class Conv1d(nn.Module):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self.conv = nn.Conv1d(*args, **kwargs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


class Conv1dBatchNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(4, 8, 3, padding=1)
        self.bn = nn.BatchNorm1d(8)
        self.bn.running_mean.uniform_(-0.5, 0.5)
        self.bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)))


class Conv1dTwice(nn.Module):
    """One conv1d weight used by two convolutions."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(6, 6, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(torch.relu(self.conv(x)))


class ConvTranspose(nn.Module):
    def __init__(self, cls: type[nn.Module], *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self.conv = cls(*args, **kwargs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


class Conv3d(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv3d(2, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


class Conv2dPlain(nn.Module):
    """Nothing for the migrated passes to do: a control case."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


class Linear(nn.Module):
    def __init__(self, cin: int = 8, cout: int = 6, bias: bool = True) -> None:
        super().__init__()
        self.fc = nn.Linear(cin, cout, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class SharedLinear(nn.Module):
    """Two linears with one (tied) weight, as an LLM's embedding and lm_head."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)
        self.b.weight = self.a.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


class ConvThenLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(4, 8, 3)
        self.fc = nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)).transpose(1, 2))


class Conv1dWithState(nn.Module):
    """A mutated buffer next to a replaced weight: the state must survive untouched."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(4, 4, 3, padding=1)
        self.register_buffer("last_mean", torch.zeros(1, 4, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        self.last_mean.copy_(y.mean(-1, keepdim=True))
        return y - self.last_mean


# -- cases ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """One zoo entry: how to build it and how to lower it."""

    name: str
    build: Callable[[], tuple[Any, Any]]
    quant: str | None = None  # None, "8a8w", "16a4w_block", "qat"
    convert_linear_to_conv2d: bool = False
    block_size_map: tuple[tuple[str, tuple[int, ...]], ...] = ()
    dynamic_shapes: Any = None

    @property
    def is_float(self) -> bool:
        return self.quant is None

    def model(self) -> tuple[Any, Any]:
        return _built(self.name)


def _simple(module: Callable[[], nn.Module], *shape: int) -> Callable[[], tuple[Any, Any]]:
    return lambda: (module().eval(), (torch.randn(*shape),))


def _multi_method() -> tuple[Any, Any]:
    return (
        {"encode": Conv1d(4, 8, 3, padding=1).eval(), "decode": Linear(8, 3).eval()},
        {"encode": (torch.randn(1, 4, 12),), "decode": (torch.randn(2, 5, 8),)},
    )


CASES: tuple[Case, ...] = (
    Case("conv1d", _simple(lambda: Conv1d(4, 8, 3), 1, 4, 16)),
    Case(
        "conv1d_groups_dilation_stride",
        _simple(lambda: Conv1d(8, 16, 3, groups=4, dilation=2, stride=2, padding=2), 2, 8, 20),
    ),
    Case("conv1d_padding_same", _simple(lambda: Conv1d(4, 6, 4, padding="same"), 1, 4, 15)),
    Case(
        "conv1d_padding_reflect",
        _simple(lambda: Conv1d(4, 6, 3, padding=1, padding_mode="reflect"), 1, 4, 10),
    ),
    Case(
        "conv1d_padding_circular",
        _simple(lambda: Conv1d(4, 6, 3, padding=2, padding_mode="circular"), 1, 4, 10),
    ),
    Case("conv1d_no_bias", _simple(lambda: Conv1d(4, 6, 5, bias=False, padding=2), 1, 4, 9)),
    Case("conv1d_batch_norm", _simple(Conv1dBatchNorm, 2, 4, 10)),
    Case("conv1d_shared_weight", _simple(Conv1dTwice, 1, 6, 10)),
    Case(
        "conv_transpose1d_output_padding",
        _simple(
            lambda: ConvTranspose(nn.ConvTranspose1d, 4, 6, 3, stride=2, output_padding=1),
            1,
            4,
            7,
        ),
    ),
    Case(
        "conv_transpose1d_dilation_groups",
        _simple(lambda: ConvTranspose(nn.ConvTranspose1d, 4, 6, 3, dilation=2, groups=2), 1, 4, 7),
    ),
    Case(
        "conv_transpose2d_dilation_output_padding",
        _simple(
            lambda: ConvTranspose(
                nn.ConvTranspose2d, 4, 6, 3, stride=2, dilation=2, output_padding=1
            ),
            1,
            4,
            5,
            6,
        ),
    ),
    Case(
        "conv_transpose3d_output_padding",
        _simple(
            lambda: ConvTranspose(
                nn.ConvTranspose3d, 2, 3, 3, stride=2, output_padding=1, dilation=(1, 2, 1)
            ),
            1,
            2,
            3,
            4,
            3,
        ),
    ),
    Case("conv3d", _simple(Conv3d, 1, 2, 4, 5, 6)),
    Case("conv2d_unchanged", _simple(Conv2dPlain, 1, 3, 8, 8)),
    Case("linear_2d", _simple(Linear, 3, 8)),
    Case("linear_3d", _simple(Linear, 2, 3, 8)),
    Case("linear_4d", _simple(Linear, 2, 3, 4, 8)),
    Case("linear_shared_weight", _simple(SharedLinear, 2, 3, 8)),
    Case("linear_to_conv2d_2d", _simple(Linear, 3, 8), convert_linear_to_conv2d=True),
    Case("linear_to_conv2d_3d", _simple(Linear, 2, 3, 8), convert_linear_to_conv2d=True),
    Case("linear_to_conv2d_4d", _simple(Linear, 2, 3, 4, 8), convert_linear_to_conv2d=True),
    Case(
        "linear_to_conv2d_no_bias",
        _simple(lambda: Linear(8, 4, bias=False), 2, 5, 8),
        convert_linear_to_conv2d=True,
    ),
    Case(
        "linear_to_conv2d_shared_weight",
        _simple(SharedLinear, 2, 3, 8),
        convert_linear_to_conv2d=True,
    ),
    Case("conv1d_then_linear", _simple(ConvThenLinear, 1, 4, 10)),
    Case("conv1d_mutable_buffer", _simple(Conv1dWithState, 1, 4, 9)),
    Case("quant_conv1d_8a8w", _simple(ConvThenLinear, 1, 4, 10), quant="8a8w"),
    Case(
        "quant_linear_block_16a4w",
        _simple(lambda: Linear(16, 8), 2, 3, 16),
        quant="16a4w_block",
        convert_linear_to_conv2d=True,
        block_size_map=(("linear", (1, 8)),),
    ),
    Case(
        "quant_linear_qat",
        _simple(lambda: Linear(8, 6), 4, 8),
        quant="qat",
        convert_linear_to_conv2d=True,
    ),
    Case("multi_method", _multi_method),
)

# Cases qnn_passes refuses (QNN builds static shapes only; tests/passes/test_static_shapes.py),
# kept out of CASES, whose every model lowers.
REFUSED_CASES: tuple[Case, ...] = (
    Case(
        "conv1d_dynamic_batch",
        _simple(lambda: Conv1d(4, 6, 3, padding=1), 3, 4, 10),
        dynamic_shapes={"x": {0: torch.export.Dim("batch", min=1, max=16)}},
    ),
)

BY_NAME = {c.name: c for c in (*CASES, *REFUSED_CASES)}
FLOAT_CASES = tuple(c for c in CASES if c.is_float)
QUANT_CASES = tuple(c for c in CASES if not c.is_float)


# -- building (cached) -----------------------------------------------------------------------
def quantize(case: Case, module: nn.Module, inputs: tuple[torch.Tensor, ...]) -> Any:
    """PT2E-quantize ``module`` with QnnQuantizer as the case says; returns the converted module."""
    from executorch.backends.qualcomm.quantizer.quantizer import QnnQuantizer, QuantDtype
    from executorch.backends.qualcomm.serialization.qc_schema import QcomChipset
    from torchao.quantization.pt2e import move_exported_model_to_eval
    from torchao.quantization.pt2e.quantize_pt2e import (
        convert_pt2e,
        prepare_pt2e,
        prepare_qat_pt2e,
    )

    captured = torch.export.export(module, inputs, strict=True).module()
    quantizer = QnnQuantizer(soc_model=QcomChipset.SM8650)
    dtype = QuantDtype.use_16a4w_block if case.quant == "16a4w_block" else QuantDtype.use_8a8w
    quantizer.set_default_quant_config(
        dtype,
        is_qat=case.quant == "qat",
        is_conv_per_channel=True,
        is_linear_per_channel=True,
    )
    if case.block_size_map:
        quantizer.set_block_size_map(dict(case.block_size_map))
    if case.quant == "qat":
        prepared = prepare_qat_pt2e(captured, quantizer)
        optimizer = torch.optim.SGD(prepared.parameters(), lr=1e-3)
        loss = prepared(*inputs).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        prepared = move_exported_model_to_eval(prepared)
    else:
        prepared = prepare_pt2e(captured, quantizer)
    with torch.no_grad():
        for _ in range(2):
            prepared(*inputs)
    return convert_pt2e(prepared)


@functools.cache
def _built(name: str) -> tuple[Any, Any]:
    case = BY_NAME[name]
    torch.manual_seed(sum(map(ord, name)))
    model, inputs = case.build()
    if case.quant is not None:
        model = quantize(case, model, inputs)
    return model, inputs


def params(cases: tuple[Case, ...]) -> list[Any]:
    """pytest params for ``cases``, one xdist group per case so a case's cached lowering is reused."""
    import pytest

    return [pytest.param(c, id=c.name, marks=pytest.mark.xdist_group(c.name)) for c in cases]
