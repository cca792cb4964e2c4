"""Quantize/dequantize ops by family, and reading their arguments by schema.

ExecuTorch 1.5.1 added torchao's ``quantize_affine``/``dequantize_affine`` to the q/dq op sets
that every QNN pass shares (``builders.node_visitor.q_ops``/``dq_ops``), so every consumer of
those sets now also sees affine ops - whose arguments are laid out differently:

==============  =====================================================================
family          arguments after the input
==============  =====================================================================
per_tensor      scale, zero_point, quant_min, quant_max, dtype, *, out_dtype
per_channel     scales, zero_points, axis, quant_min, quant_max, dtype, *, out_dtype
affine          block_size, scale, zero_point, input_dtype, quant_min, quant_max, *,
                output_dtype
==============  =====================================================================

This module keeps its own sets, one per family, so a pass says which families it handles,
and reads arguments by schema name (positional or keyword) instead of by position.

:func:`quant_attrs` produces the dict ExecuTorch stores under ``QCOM_QUANT_ATTRS`` in exactly
the format of its ``get_quant_attrs`` (schema names as keys, ``None`` for arguments the node
does not pass, ``dtype`` copied from ``input_dtype`` for affine ops, ``encoding`` = the op), so
attributes written here and those ExecuTorch writes on placeholders read the same way; unlike
``get_quant_attrs`` it also reads arguments passed by keyword.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from executorch.exir.dialects._ops import ops as exir_ops

QCOM_DTYPE = "dtype"
QCOM_ENCODING = "encoding"
QCOM_QUANT_ATTRS = "quant_attrs"

PER_TENSOR = "per_tensor"
PER_CHANNEL = "per_channel"
AFFINE = "affine"


@functools.cache
def _families() -> dict[Any, tuple[str, bool]]:
    """op -> (family, is_dequantize)."""
    qd = exir_ops.edge.quantized_decomposed
    ao = exir_ops.edge.torchao
    return {
        qd.quantize_per_tensor.default: (PER_TENSOR, False),
        qd.quantize_per_tensor.tensor: (PER_TENSOR, False),
        qd.dequantize_per_tensor.default: (PER_TENSOR, True),
        qd.dequantize_per_tensor.tensor: (PER_TENSOR, True),
        qd.quantize_per_channel.default: (PER_CHANNEL, False),
        qd.dequantize_per_channel.default: (PER_CHANNEL, True),
        ao.quantize_affine.default: (AFFINE, False),
        ao.dequantize_affine.default: (AFFINE, True),
    }


def family(target: object) -> str | None:
    """``per_tensor``/``per_channel``/``affine`` for a q/dq op, else None."""
    entry = _families().get(target)
    return entry[0] if entry else None


@functools.cache
def _aten_qdq() -> frozenset[Any]:
    """The ATen overloads behind the edge q/dq ops of ``_families`` (the graph before to-edge)."""
    return frozenset(getattr(op, "_op", op) for op in _families())


def is_qdq(target: object) -> bool:
    """Whether ``target`` is a quantize or dequantize op, as an edge op or its ATen overload."""
    return target in _families() or target in _aten_qdq()


def is_dequantize(target: object) -> bool:
    entry = _families().get(target)
    return bool(entry and entry[1])


def is_quantize(target: object) -> bool:
    entry = _families().get(target)
    return bool(entry and not entry[1])


def _schema_names(target: Any) -> list[str]:
    return [a.name for a in target._schema.arguments]


def bound_args(node: torch.fx.Node) -> dict[str, Any]:
    """The node's arguments after the input, by schema name; absent ones are left out."""
    names = _schema_names(node.target)
    bound = {names[i]: a for i, a in enumerate(node.args) if i > 0}
    bound.update({k: v for k, v in node.kwargs.items() if k in names[1:]})
    return bound


def with_args(node: torch.fx.Node, **changes: Any) -> None:
    """Set arguments by schema name, keeping each where it is (positional or keyword)."""
    names = _schema_names(node.target)
    args = list(node.args)
    kwargs = dict(node.kwargs)
    for name, value in changes.items():
        i = names.index(name)
        if i < len(args):
            args[i] = value
        else:
            kwargs[name] = value
    node.args = tuple(args)
    node.kwargs = kwargs


def resolve_arg(value: Any, read_constant: Callable[[torch.fx.Node], torch.Tensor]) -> Any:
    """An argument's value: a node is read as a constant, looking through a dtype cast."""
    if not isinstance(value, torch.fx.Node):
        return value
    # A scale or zero point shared by a q and a dq, or cast by I64toI32, comes through a cast.
    if value.target == exir_ops.edge.aten._to_copy.default and isinstance(
        value.args[0], torch.fx.Node
    ):
        value = value.args[0]
    return read_constant(value)


def quant_attrs(
    node: torch.fx.Node, read_constant: Callable[[torch.fx.Node], torch.Tensor]
) -> dict[str, Any]:
    """ExecuTorch's QCOM_QUANT_ATTRS dict for q/dq ``node``; node arguments read with ``read_constant``."""
    names = _schema_names(node.target)[1:]
    attrs: dict[str, Any] = dict.fromkeys(names)
    for name, value in bound_args(node).items():
        attrs[name] = resolve_arg(value, read_constant)
    if (dtype := attrs.get("input_dtype")) is not None:
        attrs[QCOM_DTYPE] = dtype
    attrs[QCOM_ENCODING] = node.target
    return attrs


def attrs_equal(a: Any, b: Any) -> bool:
    """Equality for quant-attr values: tensors by value, containers element-wise."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (
            isinstance(a, torch.Tensor)
            and isinstance(b, torch.Tensor)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(torch.equal(a, b))
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(attrs_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(attrs_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
