"""CanonicalizeConv: turn conv1d into conv2d and undo dilation of transposed convs, for QNN.

QNN has no 1-D convolution and no dilation on TransposeConv. After decomposition every conv
variant is one ``aten.convolution`` node; this pass rewrites the ones QNN cannot take.

conv1d (``len(stride) == 1``), weight ``w`` of shape (O, I, K)::

    before:  x ──────────────► convolution(x, w, b, [s], [p], [d], t, [op], g) ──► y
    after:   x ─► unsqueeze_copy(x, 2) ─► convolution(·, w', b, [1, s], [0, p], [1, d], t,
                                          [0, op], g) ─► squeeze_copy(·, [2]) ─► y
             w' = get_attr(w.unsqueeze(2))                  # (O, I, 1, K), a view of w

transposed conv with dilation ``d != 1``: the kernel is dilated by hand (``d - 1`` fill values
between taps; the fill is the zero point for a quantized weight, so it dequantizes to 0) and
the dilation argument becomes all ones.

Fixes over ExecuTorch 1.5.1's pass of the same name:

* the weight may be a parameter/buffer/constant placeholder, a bare ``get_attr``, or either
  behind a dequantize; upstream assumed "placeholder or dequantize" and failed on a bare
  ``get_attr`` (``.args[0]`` of a node without args);
* a weight that is not a constant (computed in the graph) gets an ``unsqueeze_copy`` node
  instead of failing;
* a dequantized weight keeps consistent arguments: an affine ``block_size`` gains the new
  unit dimension, a per-channel ``axis`` behind the new dimension moves by one; a dequantize
  shared with other users is copied, not rewired under them; a transposed conv whose kernel
  is affine-quantized is left alone (its per-block scales cannot follow the dilation);
* the replaced weight does not stay behind as an unused program input;
* ``modified`` is True only when a node changed.

Runs on the ExportedProgram (an ``ExportedProgramPassBase``) because it reads the weight from
the program it transforms and removes orphaned inputs from the signature.
"""

from __future__ import annotations

from typing import Any, cast

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportedProgramPassBase, ExportedProgramPassResult
from torch.export import ExportedProgram

from qnn_passes import constant_inputs, quant_ops
from qnn_passes.node_meta import helper_meta

INPUT, WEIGHT, BIAS, STRIDE, PADDING, DILATION, TRANSPOSED, OUTPUT_PADDING, GROUPS = range(9)


def dilate(kernel: torch.Tensor, dilation: list[int], fill: torch.Tensor | float) -> torch.Tensor:
    """Spread the taps of ``kernel`` (dims 2..) ``dilation`` apart, filling the gaps with ``fill``."""
    i, o, *taps = kernel.shape
    grown = [k + (k - 1) * (d - 1) for k, d in zip(taps, dilation, strict=True)]
    out = torch.empty((i, o, *grown), dtype=kernel.dtype)
    out[...] = fill
    taps_index: Any = (..., *(slice(None, None, d) for d in dilation))
    out[taps_index] = kernel
    return out


def _fill_value(dq: torch.fx.Node | None, ep: ExportedProgram, kernel: torch.Tensor) -> Any:
    """The stored value that dequantizes to zero: the zero point (per tensor or per channel)."""
    if dq is None:
        return 0
    args = quant_ops.bound_args(dq)
    fam = quant_ops.family(dq.target)
    zp = quant_ops.resolve_arg(
        args.get("zero_point" if fam == quant_ops.PER_TENSOR else "zero_points"),
        lambda n: constant_inputs.read(ep, n),
    )
    if zp is None:
        return 0
    if fam == quant_ops.PER_TENSOR:
        return torch.as_tensor(zp).to(kernel.dtype).reshape(())
    axis = args["axis"] % kernel.dim()
    shape = [1] * kernel.dim()
    shape[axis] = -1
    return torch.as_tensor(zp).to(kernel.dtype).reshape(shape)


class CanonicalizeConv(ExportedProgramPassBase):
    """Rewrite conv1d as conv2d and dilated transposed convs as undilated ones (see module doc)."""

    def __init__(self) -> None:
        super().__init__()

    def call(self, exported_program: ExportedProgram) -> ExportedProgramPassResult:
        ep = exported_program
        gm = ep.graph_module
        modified = False
        # (weight source node, transform) -> replacement node, so a weight shared by several
        # convs is converted once.
        new_weights: dict[tuple[torch.fx.Node, tuple[Any, ...]], torch.fx.Node] = {}
        replaced: list[torch.fx.Node] = []
        for node in list(gm.graph.nodes):
            if node.op != "call_function" or node.target != exir_ops.edge.aten.convolution.default:
                continue
            if self._rewrite(ep, node, new_weights, replaced):
                modified = True
        for old in dict.fromkeys(replaced):
            constant_inputs.drop_if_unused(ep, old)
        if modified:
            constant_inputs.sync_signature(ep)
            gm.graph.lint()
            gm.recompile()
        return ExportedProgramPassResult(ep, modified)

    def _rewrite(
        self,
        ep: ExportedProgram,
        conv: torch.fx.Node,
        new_weights: dict[tuple[torch.fx.Node, tuple[Any, ...]], torch.fx.Node],
        replaced: list[torch.fx.Node],
    ) -> bool:
        conv_args: tuple[Any, ...] = conv.args
        stride = list(conv_args[STRIDE])
        dilation = list(conv_args[DILATION])
        transposed = bool(conv.args[TRANSPOSED])
        is_1d = len(stride) == 1
        undilate = transposed and any(d != 1 for d in dilation)
        if not (is_1d or undilate):
            return False

        weight = conv.args[WEIGHT]
        assert isinstance(weight, torch.fx.Node)
        dq = weight if quant_ops.is_dequantize(weight.target) else None
        source = dq.args[0] if dq is not None else weight
        assert isinstance(source, torch.fx.Node)
        is_const = constant_inputs.is_constant(ep, source)

        if undilate and (
            not is_const or (dq is not None and quant_ops.family(dq.target) == quant_ops.AFFINE)
        ):
            # Dilating needs the kernel's values, and per-block scales cannot follow it.
            if not is_1d:
                return False
            undilate = False

        if is_const:
            key = (source, (tuple(dilation) if undilate else None, is_1d))
            new_source = new_weights.get(key)
            if new_source is None:
                kernel = constant_inputs.read(ep, source)
                if undilate:
                    kernel = dilate(kernel, dilation, _fill_value(dq, ep, kernel))
                if is_1d:
                    kernel = kernel.unsqueeze(2)
                new_source = constant_inputs.add_get_attr(
                    ep.graph_module, kernel, f"{conv.name}_weight", after=source
                )
                new_weights[key] = new_source
            new_weight = self._retarget(ep.graph_module, conv, dq, source, new_source, is_1d)
            replaced.append(source)
        else:
            # A weight computed in the graph: add the unit dimension with an op.
            new_weight = self._unsqueeze(ep.graph_module, conv, weight, 2, before=conv)

        args = list(conv.args)
        args[WEIGHT] = new_weight
        if undilate:
            args[DILATION] = [1] * len(dilation)
        if is_1d:
            args[INPUT] = self._unsqueeze(ep.graph_module, conv, conv.args[INPUT], 2, before=conv)
            args[STRIDE] = [1, *stride]
            args[PADDING] = [0, *conv_args[PADDING]]
            args[DILATION] = [1, *cast("list[int]", args[DILATION])]
            args[OUTPUT_PADDING] = [0, *conv_args[OUTPUT_PADDING]]
        conv.args = tuple(args)
        if is_1d:
            self._squeeze_output(ep.graph_module, conv)
        return True

    def _retarget(
        self,
        gm: torch.fx.GraphModule,
        conv: torch.fx.Node,
        dq: torch.fx.Node | None,
        source: torch.fx.Node,
        new_source: torch.fx.Node,
        is_1d: bool,
    ) -> torch.fx.Node:
        """The weight argument for ``conv``: ``new_source``, behind a dequantize if there was one."""
        if dq is None:
            return new_source
        if len(dq.users) > 1:
            # Shared with other users: they keep the old weight; this conv gets its own copy.
            with gm.graph.inserting_after(dq):
                dq = gm.graph.node_copy(dq)
        dq.replace_input_with(source, new_source)
        if is_1d:
            fam = quant_ops.family(dq.target)
            args = quant_ops.bound_args(dq)
            if fam == quant_ops.AFFINE:
                block = list(args["block_size"])
                quant_ops.with_args(dq, block_size=[*block[:2], 1, *block[2:]])
            elif fam == quant_ops.PER_CHANNEL:
                axis = args["axis"] % (new_source.meta["val"].dim() - 1)
                quant_ops.with_args(dq, axis=axis + 1 if axis >= 2 else axis)
        dq.meta["val"] = new_source.meta["val"].to(dq.meta["val"].dtype)
        return dq

    def _unsqueeze(
        self,
        gm: torch.fx.GraphModule,
        conv: torch.fx.Node,
        value: Any,
        dim: int,
        *,
        before: torch.fx.Node,
    ) -> torch.fx.Node:
        with gm.graph.inserting_before(before):
            node = gm.graph.call_function(exir_ops.edge.aten.unsqueeze_copy.default, (value, dim))
        node.meta = helper_meta(conv, value.meta["val"].unsqueeze(dim), qnn_from=value)
        return node

    def _squeeze_output(self, gm: torch.fx.GraphModule, conv: torch.fx.Node) -> None:
        users = list(conv.users)
        with gm.graph.inserting_after(conv):
            squeeze = gm.graph.call_function(exir_ops.edge.aten.squeeze_copy.dims, (conv, [2]))
        squeeze.meta = dict(conv.meta)
        conv.meta["val"] = conv.meta["val"].unsqueeze(2)
        for user in users:
            user.replace_input_with(conv, squeeze)
