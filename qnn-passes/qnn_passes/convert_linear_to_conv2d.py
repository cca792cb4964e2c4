"""ConvertLinearToConv2d: run linear layers as 1x1 conv2d, which the HTP executes faster.

For input rank 2 (d, C), 3 (N, d, C) and 4 (N, H, W, C); weight ``w`` (O, C)::

    before:  x ─► linear(x, w, b) ─► y
    after (rank 2/3):
             x ─► view_copy(x, (1|N, d, C, 1)) ─► permute_copy(·, (0, 2, 3, 1))
               ─► convolution(·, w', b, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
               ─► permute_copy(·, (0, 3, 1, 2)) ─► view_copy(·, y.shape) ─► y
    after (rank 4):
             x ─► permute_copy(x, (0, 3, 1, 2)) ─► convolution(...) ─► permute_copy(·, (0, 2, 3, 1)) ─► y
    w' = get_attr(w.reshape(O, C, 1, 1))                        # a view of w

Other ranks are left as they are. A weight behind a dequantize keeps its dequantize with the
new tensor; an affine ``block_size`` gains two unit dimensions, per-tensor and per-channel
(axis 0) arguments stay valid as they are.

Fixes over ExecuTorch 1.5.1's pass of the same name:

* a dequantize is found among all users, not only the first (``list(node.users)[0]``); a
  dequantize that also feeds non-linear users is copied for the linear users instead of being
  skipped or rewired under the others;
* a weight shared by several linears is converted once and stays shared;
* a weight computed in the graph gets a ``view_copy`` instead of failing;
* the rewired dequantize's ``val`` keeps its floating dtype (upstream gave it the quantized
  weight's dtype);
* the replaced weight does not stay behind as an unused program input;
* ``modified`` is True only when a linear was converted.
"""

from __future__ import annotations

from typing import Any

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportedProgramPassBase, ExportedProgramPassResult
from torch.export import ExportedProgram

from qnn_passes import constant_inputs, quant_ops
from qnn_passes.node_meta import helper_meta

_RANK_PLAN: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {
    # rank: (permute before conv, permute after conv)
    2: ((0, 2, 3, 1), (0, 3, 1, 2)),
    3: ((0, 2, 3, 1), (0, 3, 1, 2)),
    4: ((0, 3, 1, 2), (0, 2, 3, 1)),
}


def _pad_block_size(block_size: list[int]) -> list[int]:
    return [*block_size, *([1] * (4 - len(block_size)))]


class ConvertLinearToConv2d(ExportedProgramPassBase):
    """Replace ``aten.linear`` by permute/reshape around a 1x1 ``aten.convolution`` (see module doc)."""

    def __init__(self) -> None:
        super().__init__()

    def call(self, exported_program: ExportedProgram) -> ExportedProgramPassResult:
        ep = exported_program
        gm = ep.graph_module
        linears = [
            n
            for n in gm.graph.nodes
            if n.op == "call_function"
            and n.target == exir_ops.edge.aten.linear.default
            and n.args[0].meta["val"].dim() in _RANK_PLAN
        ]
        if not linears:
            return ExportedProgramPassResult(ep, False)
        converting = set(linears)
        new_weights: dict[torch.fx.Node, torch.fx.Node] = {}
        new_dqs: dict[torch.fx.Node, torch.fx.Node] = {}
        replaced: list[torch.fx.Node] = []
        for linear in linears:
            weight = self._weight(ep, linear, converting, new_weights, new_dqs, replaced)
            self._convert(gm, linear, weight)
        for old in dict.fromkeys(replaced):
            constant_inputs.drop_if_unused(ep, old)
        constant_inputs.sync_signature(ep)
        gm.graph.lint()
        gm.recompile()
        return ExportedProgramPassResult(ep, True)

    def _weight(
        self,
        ep: ExportedProgram,
        linear: torch.fx.Node,
        converting: set[torch.fx.Node],
        new_weights: dict[torch.fx.Node, torch.fx.Node],
        new_dqs: dict[torch.fx.Node, torch.fx.Node],
        replaced: list[torch.fx.Node],
    ) -> torch.fx.Node:
        """The (O, C, 1, 1) weight argument for the conv replacing ``linear``."""
        gm = ep.graph_module
        weight = linear.args[1]
        assert isinstance(weight, torch.fx.Node)
        dq = weight if quant_ops.is_dequantize(weight.target) else None
        source = dq.args[0] if dq is not None else weight
        assert isinstance(source, torch.fx.Node)

        if not constant_inputs.is_constant(ep, source):
            out, inp = weight.meta["val"].shape
            with gm.graph.inserting_before(linear):
                view: torch.fx.Node = gm.graph.call_function(
                    exir_ops.edge.aten.view_copy.default, (weight, [out, inp, 1, 1])
                )
            view.meta = helper_meta(
                linear, weight.meta["val"].reshape(out, inp, 1, 1), qnn_from=weight
            )
            return view

        new_source = new_weights.get(source)
        if new_source is None:
            tensor = constant_inputs.read(ep, source)
            new_source = constant_inputs.add_get_attr(
                gm, tensor.reshape(*tensor.shape, 1, 1), f"{source.name}_conv2d", after=source
            )
            new_weights[source] = new_source
            replaced.append(source)
        if dq is None:
            return new_source

        if dq in new_dqs:
            return new_dqs[dq]
        if not set(dq.users) <= converting:
            # The dequantize also feeds ops that keep the old weight: give the linears a copy.
            with gm.graph.inserting_after(dq):
                copy = gm.graph.node_copy(dq)
            for user in [u for u in dq.users if u in converting]:
                user.replace_input_with(dq, copy)
            new_dqs[dq] = copy
            dq = copy
        new_dqs[dq] = dq
        dq.replace_input_with(source, new_source)
        if quant_ops.family(dq.target) == quant_ops.AFFINE:
            block = list(quant_ops.bound_args(dq)["block_size"])
            quant_ops.with_args(dq, block_size=_pad_block_size(block))
        dq.meta["val"] = new_source.meta["val"].to(dq.meta["val"].dtype)
        return dq

    def _convert(self, gm: torch.fx.GraphModule, linear: torch.fx.Node, weight: Any) -> None:
        linear_args: tuple[Any, ...] = linear.args
        x: torch.fx.Node = linear_args[0]
        bias = linear_args[2] if len(linear_args) > 2 else linear.kwargs.get("bias")
        x_val = x.meta["val"]
        rank = x_val.dim()
        before, after = _RANK_PLAN[rank]
        graph = gm.graph

        def add(
            anchor: torch.fx.Node, target: Any, args: tuple[Any, ...], val: Any, src: torch.fx.Node
        ) -> torch.fx.Node:
            with graph.inserting_after(anchor):
                node = graph.call_function(target, args)
            node.meta = helper_meta(linear, val, qnn_from=src)
            return node

        # Input side right behind the input (after the last placeholder if it is one), output
        # side at the linear's place: the node order ExecuTorch's pass produces, so debug
        # handles (numbered in graph order) match too.
        anchor = x
        if x.op == "placeholder":
            anchor = [n for n in graph.nodes if n.op == "placeholder"][-1]
        cur, val = x, x_val
        if rank < 4:
            shape = [1, *x_val.shape, 1] if rank == 2 else [*x_val.shape, 1]
            val = val.reshape(shape)
            cur = anchor = add(anchor, exir_ops.edge.aten.view_copy.default, (cur, shape), val, x)
        val = val.permute(before)
        cur = add(anchor, exir_ops.edge.aten.permute_copy.default, (cur, list(before)), val, x)

        conv_args = (cur, weight, bias, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
        with graph.inserting_after(linear):
            conv = graph.call_function(exir_ops.edge.aten.convolution.default, conv_args)
        conv.meta = dict(linear.meta)
        val = exir_ops.edge.aten.convolution.default(
            val,
            weight.meta["val"],
            bias.meta["val"] if isinstance(bias, torch.fx.Node) else None,
            *conv_args[3:],
        )
        conv.meta["val"] = val

        val = val.permute(after)
        out = add(conv, exir_ops.edge.aten.permute_copy.default, (conv, list(after)), val, linear)
        if rank < 4:
            shape = list(linear.meta["val"].shape)
            out = add(
                out, exir_ops.edge.aten.view_copy.default, (out, shape), val.reshape(shape), linear
            )
        linear.replace_all_uses_with(out)
        graph.erase_node(linear)
