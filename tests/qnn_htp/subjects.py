"""What the tier lowers, built inside the child by name: zoo cases in several precisions, review cases.

A subject is ``(model, inputs, options)``: ``model`` an ``nn.Module``/GraphModule or a dict of
them, ``inputs`` a tuple or a dict of tuples, ``options`` the lowering options (dynamic shapes,
``convert_linear_to_conv2d``) and whether it is quantized (the compile specs follow).
Quantized models are PT2E-converted: run eagerly they are the fake-quant reference.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

# Precisions a float zoo model can be quantized in here, QnnQuantizer's names for them, and
# whether the quantizer trains it first (QAT, one step).
PRECISIONS: dict[str, tuple[str, bool]] = {
    "8a8w": ("use_8a8w", False),
    "16a4w": ("use_16a4w", False),
    "16a8w": ("use_16a8w", False),
    "16a16w": ("use_16a16w", False),
    "fp16a8w": ("use_fp16a8w", False),
    "16a4w_block": ("use_16a4w_block", False),
    "8a8w_qat": ("use_8a8w", True),
    "16a4w_qat": ("use_16a4w", True),
}


@dataclass
class Subject:
    """A model ready to lower, with its example inputs and lowering options."""

    model: Any
    inputs: Any
    quantized: bool
    dynamic_shapes: Any = None
    convert_linear_to_conv2d: bool = False
    lowering_kwargs: dict[str, Any] = field(default_factory=dict)
    # Inputs of the calls run one after another on one loaded program (a decoder's prefill and
    # decode steps: the state its mutable buffers hold carries over); None: one call with
    # ``inputs``. Only for a single method.
    steps: list[tuple[Any, ...]] | None = None

    def methods(self) -> dict[str, tuple[Any, dict[str, Any]]]:
        """``{method: (module, inputs)}``."""
        if isinstance(self.model, dict):
            return {name: (m, self.inputs[name]) for name, m in self.model.items()}
        return {"forward": (self.model, self.inputs)}

    def calls(self, method: str) -> list[tuple[Any, ...]]:
        """The inputs of each call of ``method``, in order."""
        if self.steps is not None:
            if isinstance(self.model, dict):
                raise ValueError("steps are for a single method, not a dict of methods")
            return list(self.steps)
        return [tuple(self.methods()[method][1])]

    def reference(self) -> dict[str, list[Any]]:
        """Eager outputs (float) or fake-quant outputs (quantized), as numpy, per method: the
        outputs of every call (``calls``) one after another, on one copy of the model."""
        import torch

        result = {}
        for name, (module, _) in self.methods().items():
            model = copy.deepcopy(module)  # a copy: the subject's own state must not move
            result[name] = []
            for inputs in self.calls(name):
                with torch.no_grad():
                    out = model(*inputs)
                outs = out if isinstance(out, tuple | list) else (out,)
                result[name] += [o.detach().numpy().copy() for o in outs]
        return result


def quantize(
    module: Any, inputs: tuple[Any, ...], precision: str, block_size_map: Any = None
) -> Any:
    """PT2E-quantize ``module`` with QnnQuantizer (SM8650) in ``precision``; the converted module."""
    import torch
    from executorch.backends.qualcomm.quantizer.quantizer import QnnQuantizer, QuantDtype
    from executorch.backends.qualcomm.serialization.qc_schema import QcomChipset
    from torchao.quantization.pt2e import move_exported_model_to_eval
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e, prepare_qat_pt2e

    dtype_name, qat = PRECISIONS[precision]
    captured = torch.export.export(module, inputs, strict=True).module()
    quantizer = QnnQuantizer(soc_model=QcomChipset.SM8650)
    quantizer.set_default_quant_config(
        getattr(QuantDtype, dtype_name),
        is_qat=qat,
        is_conv_per_channel=True,
        is_linear_per_channel=True,
    )
    if block_size_map:
        quantizer.set_block_size_map(dict(block_size_map))
    if qat:
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


# Variants of a zoo case that change a lowering option instead of the precision.
OPTION_VARIANTS: dict[str, dict[str, Any]] = {"skip_mutable_buffer": {"skip_mutable_buffer": True}}


def zoo(name: str, variant: str | None = None) -> Subject:
    """Zoo case ``name`` as the zoo defines it; or its float model quantized in ``variant`` (a
    precision), or lowered with the options of ``variant`` (one of OPTION_VARIANTS)."""
    import torch
    from qnn_migrate_tests.passes.zoo import BY_NAME

    case = BY_NAME[name]
    if variant is None or variant in OPTION_VARIANTS:
        model, inputs = case.model()
        return Subject(
            model,
            inputs,
            quantized=not case.is_float,
            dynamic_shapes=case.dynamic_shapes,
            convert_linear_to_conv2d=case.convert_linear_to_conv2d,
            lowering_kwargs=dict(OPTION_VARIANTS.get(variant or "", {})),
        )
    precision = variant
    if not case.is_float or isinstance(case.model()[0], dict):
        raise ValueError(f"zoo case {name} is not a single float model; cannot quantize it again")
    torch.manual_seed(sum(map(ord, name)))
    model, inputs = case.build()
    # Block-wise weights: blocks of 4 input channels of the (only) linear.
    block = (("linear", (1, 4)),) if precision == "16a4w_block" else None
    return Subject(
        quantize(model, inputs, precision, block),
        inputs,
        quantized=True,
        dynamic_shapes=case.dynamic_shapes,
        convert_linear_to_conv2d=case.convert_linear_to_conv2d,
    )


def _review_models() -> dict[str, tuple[Any, tuple[Any, ...], bool]]:
    """name -> (model, inputs, convert_linear_to_conv2d) of the review cases built here."""
    import torch
    from torch import nn

    dq_tensor = torch.ops.quantized_decomposed.dequantize_per_tensor.default

    class UnusedConstant(nn.Module):
        """A buffer nothing reads beside a linear lowered as conv2d (a constant with no user)."""

        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(8, 6)
            self.register_buffer("unused", torch.ones(3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x)

    class SumThenLinear(nn.Module):
        """The int8 weight's first user is a sum; the dequantize for the linear comes second.

        Per-tensor: QNN 2.51 rejects a per-channel weight dequantize in an fp16 graph ("Op
        Dequantize does not support per-channel quant tensor", in both flows)."""

        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("wq", torch.randint(-100, 100, (6, 8), dtype=torch.int8))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            total = self.wq.to(torch.float32).sum(dim=1)
            w = dq_tensor(self.wq, 0.01, 0, -127, 127, torch.int8)
            return torch.nn.functional.linear(x, w) + total

    class ConstantConvWeight(nn.Module):
        """A conv1d whose weight is a plain tensor attribute (a constant, not a parameter)."""

        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.randn(3, 2, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.conv1d(x, self.weight)

    return {
        "unused_constant": (UnusedConstant().eval(), (torch.randn(2, 3, 8),), True),
        "dequantize_not_first_user": (SumThenLinear().eval(), (torch.randn(3, 8),), True),
        "constant_conv1d_weight": (ConstantConvWeight().eval(), (torch.randn(1, 2, 6),), False),
    }


def review(name: str) -> Subject:
    """A review case of ExecuTorch PR #20738 that the zoo does not already hold (float, fp16)."""
    import torch

    torch.manual_seed(sum(map(ord, name)))
    model, inputs, l2c = _review_models()[name]
    return Subject(model, inputs, quantized=False, convert_linear_to_conv2d=l2c)


# Ops of examples/export_qnn_with_xnnpack.py's model kept away from QNN, per case.
MIXED_SKIPS: dict[str, set[str]] = {"linears_skipped": {"aten.linear.default"}, "all_qnn": set()}


def mixed(case: str) -> Subject:
    """examples/export_qnn_with_xnnpack.py's model (conv stem, MLP), with the ops of
    ``MIXED_SKIPS[case]`` kept away from QNN (for XNNPACK, in the ``qnn_then_xnnpack`` flow)."""
    import torch
    from qnn_migrate_tests.qnn_htp.flows import load_example

    example = load_example("export_qnn_with_xnnpack")
    torch.manual_seed(0)
    return Subject(
        example.ConvThenMlp().eval(),
        (torch.randn(1, 3, 8, 8),),
        quantized=False,
        lowering_kwargs={"skip_node_op_set": set(MIXED_SKIPS[case])},
    )


def arithmetic(name: str) -> Subject:
    """Arithmetic bundle ``name`` of tests/passes/arithmetic.py (float)."""
    from qnn_migrate_tests.passes.arithmetic import BY_NAME

    model, inputs = BY_NAME[name].build()
    return Subject(model, inputs, quantized=False)


def probe(name: str) -> Subject:
    """Export-stage probe ``name`` of tests/passes/probes.py (float)."""
    from qnn_migrate_tests.passes.probes import BY_NAME

    model, inputs = BY_NAME[name].model()
    return Subject(model, inputs, quantized=False)


def beyond(name: str) -> Subject:
    """Case ``name`` of tests/passes/beyond.py (float): its dynamic shapes, and its decode steps
    when it has them."""
    from qnn_migrate_tests.passes.beyond import BY_NAME

    case = BY_NAME[name]
    model, calls = case.build_calls()
    return Subject(
        model,
        calls[0],
        quantized=False,
        dynamic_shapes=case.dynamic_shapes(),
        steps=calls if case.steps is not None else None,
    )
