"""LiftScalarOperands: number operands of edge ops -> tensor constants, so QNN sees tensor ops.

QNN's op builders take tensors; ``x * 2.0``, ``x > 0.5``, ``pow(x, 2)`` reach the edge program
with a Python number where the op (or its Tensor overload) wants a tensor. This pass puts the
number in a 0-d tensor constant (a ``get_attr``; ``LiftQnnConstants`` lifts it into a program
input at the end of the QNN passes) and switches a Scalar overload to its Tensor overload.
Before / after::

    %y = aten.mul.Tensor(%x, 2.0)
    %b = aten.gt.Scalar(%x, 0.5)
    # ->
    %c0 = get_attr[_qnn_scalar_constant0]       # tensor(2.0), dtype of %y
    %y = aten.mul.Tensor(%x, %c0)
    %c1 = get_attr[_qnn_scalar_constant1]       # tensor(0.5), dtype of %x (the output is bool)
    %b = aten.gt.Tensor(%x, %c1)

Which ops and overloads, which are skipped (``full``, ``arange``, ``scalar_tensor``, ...) and
which dtype a constant gets follow ExecuTorch's export-stage ``LiftConstantScalarOperands``
(its tables are read, so both stages lift the same operands); this implementation matches
the edge ops behind them instead of ATen ops, and reports ``modified`` only when it lifted
something.
"""

from __future__ import annotations

from numbers import Number
from typing import TYPE_CHECKING, Any

import torch
from executorch.backends.qualcomm._passes.lift_constant_scalar_operands import (
    SCALAR_OPS,
    SKIP_LIFT_OPS,
)
from executorch.exir.dialects.edge._ops import EdgeOpOverload
from executorch.exir.pass_base import ExportPass
from torch.fx.passes.infra.pass_base import PassResult

from qnn_passes.edge_rewrite import edge_op

if TYPE_CHECKING:
    from torch import fx

PREFIX = "_qnn_scalar_constant"


class LiftScalarOperands(ExportPass):
    """Number operands of edge ops as tensor constants (``get_attr``), Scalar overloads as Tensor ones."""

    def __init__(self) -> None:
        super().__init__()

    def call(self, graph_module: torch.fx.GraphModule) -> PassResult:
        modified = False
        taken = {name for name, _ in graph_module.named_buffers()}
        taken |= {name for name, _ in graph_module.named_parameters()}
        counter = [0]

        def new_name() -> str:
            while f"{PREFIX}{counter[0]}" in taken or hasattr(
                graph_module, f"{PREFIX}{counter[0]}"
            ):
                counter[0] += 1
            name = f"{PREFIX}{counter[0]}"
            taken.add(name)
            return name

        for node in list(graph_module.graph.nodes):
            if node.op != "call_function" or not isinstance(node.target, EdgeOpOverload):
                continue
            aten = node.target._op
            if aten in SKIP_LIFT_OPS or "val" not in node.meta:
                continue
            if self._lift(graph_module, node, aten, new_name):
                modified = True
        if modified:
            graph_module.graph.eliminate_dead_code()
            graph_module.recompile()
        return PassResult(graph_module, modified)

    def _lift(
        self,
        gm: torch.fx.GraphModule,
        node: fx.Node,
        aten: torch._ops.OpOverload,
        new_name: Any,
    ) -> bool:
        info = SCALAR_OPS.get(aten)
        schema = aten._schema.arguments
        lifted: dict[int, fx.Node] = {}
        for i, arg in enumerate(node.args):
            if i >= len(schema):
                break
            kind = schema[i].type
            tensor_got_number = isinstance(kind, torch.TensorType) and isinstance(arg, Number)
            scalar_of_listed_op = isinstance(kind, torch.NumberType) and info is not None
            if tensor_got_number or scalar_of_listed_op:
                lifted[i] = self._constant(gm, node, arg, info, new_name)
        if info is not None and info.use_schema_args:
            # e.g. leaky_relu -> prelu: an omitted number argument takes the schema default.
            for i, argument in enumerate(schema):
                if isinstance(argument.type, torch.NumberType) and i not in lifted:
                    lifted[i] = self._constant(gm, node, argument.default_value, info, new_name)
        if not lifted:
            return False
        args = list(node.args)
        if info is not None and info.use_schema_args:
            args += [None] * max(0, len(schema) - len(args))
        for i, constant in lifted.items():
            args[i] = constant
        node.args = tuple(args)
        if info is not None:
            node.target = edge_op(info.target)
        return True

    def _constant(
        self, gm: torch.fx.GraphModule, node: fx.Node, value: Any, info: Any, new_name: Any
    ) -> fx.Node:
        out = node.meta["val"]
        first = node.args[0]
        # A non-fp32 output (a comparison's bool, an int op): the constant takes the dtype of the
        # first operand, except where (its condition is bool): its own output dtype; as upstream.
        use_first = (
            isinstance(first, torch.fx.Node)
            and out.dtype != torch.float32
            and info is not None
            and not info.use_self_dtype
        )
        dtype = first.meta["val"].dtype if use_first else out.dtype  # type: ignore[union-attr]
        tensor = torch.tensor(value, dtype=dtype, device=out.device)
        name = new_name()
        gm.register_buffer(name, tensor)
        with gm.graph.inserting_before(node):
            constant = gm.graph.get_attr(name)
        constant.meta["val"] = out.fake_mode.from_tensor(tensor, static_shapes=True)
        return constant
