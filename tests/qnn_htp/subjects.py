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

    def methods(self) -> dict[str, tuple[Any, dict[str, Any]]]:
        """``{method: (module, inputs)}``."""
        if isinstance(self.model, dict):
            return {name: (m, self.inputs[name]) for name, m in self.model.items()}
        return {"forward": (self.model, self.inputs)}

    def reference(self) -> dict[str, list[Any]]:
        """Eager outputs (float) or fake-quant outputs (quantized), as numpy, per method."""
        import torch

        result = {}
        for name, (module, inputs) in self.methods().items():
            with torch.no_grad():
                out = copy.deepcopy(module)(*inputs)  # a copy: state must not move
            outs = out if isinstance(out, tuple | list) else (out,)
            result[name] = [o.detach().numpy().copy() for o in outs]
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


def zoo(name: str, precision: str | None = None) -> Subject:
    """Zoo case ``name`` as the zoo defines it, or its float model quantized in ``precision``."""
    import torch
    from passes.zoo import BY_NAME

    case = BY_NAME[name]
    if precision is None:
        model, inputs = case.model()
        return Subject(
            model,
            inputs,
            quantized=not case.is_float,
            dynamic_shapes=case.dynamic_shapes,
            convert_linear_to_conv2d=case.convert_linear_to_conv2d,
        )
    if not case.is_float or isinstance(case.model()[0], dict):
        raise ValueError(f"zoo case {name} is not a single float model; cannot quantize it again")
    torch.manual_seed(sum(map(ord, name)))
    model, inputs = case.build()
    block = (("fc", (1, 8)),) if precision == "16a4w_block" else None
    return Subject(
        quantize(model, inputs, precision, block),
        inputs,
        quantized=True,
        dynamic_shapes=case.dynamic_shapes,
        convert_linear_to_conv2d=case.convert_linear_to_conv2d,
    )
