"""ReshapeScalarSelect: a 0-d ``select`` becomes ``slice`` (+ ``view`` to 0-d where a 0-d value is needed), so Remove0DTensor cannot change what it computes.

ExecuTorch's Remove0DTensor (QNN has no 0-d tensors) removes every ``select`` with a 0-d
result and feeds its users the tensor selected from instead. That is the same value only when
that tensor has one element:

* ``pos[0]`` of an n-element ``pos`` (a static cache's ``cache_position`` in a prefill of n
  tokens) becomes all of ``pos``: ``arange(n) + pos[0]`` turns into ``arange(n) + pos``, and
  the cache rows written are ``0, 2, 4, ...`` instead of ``p, p + 1, p + 2, ...``, silently;
* a 0-d buffer's new value (``buf.copy_(pos[0])``: to-edge folds the copy away, so the
  select itself is what the program writes to the buffer) becomes a ``[n]`` tensor, which
  ``to_executorch`` rejects ("expand: the requested shape has too few dimensions!");
* a ``copy`` into a 0-d buffer that stays in the graph gets a ``[1]`` source, and the next
  pass that retraces (I64toI32) fails with the same message.

This pass rewrites such a ``select`` into ops Remove0DTensor leaves alone: a one-element
``slice_copy`` (the value Remove0DTensor would give if the source had one element), viewed
back to 0-d for the users whose value must stay 0-d (a ``copy``'s source, a program output).
A ``select`` from a one-element tensor that no such user reads is left to Remove0DTensor, so
the graphs the wrapper lowered right stay as they were.

Before / after (``pos: [n]``, ``buf: []``)::

    %s = aten.select_copy.int(%pos, 0, i)           # []
    %a = aten.add.Tensor(%r, %s)
    %c = aten.copy(%buf, %s)
    # ->
    %t = aten.slice_copy.Tensor(%pos, 0, i, i + 1)  # [1]
    %a = aten.add.Tensor(%r, %t)
    %s = aten.view_copy(%t, [])                     # []
    %c = aten.copy(%buf, %s)

Runs before Remove0DTensor (``pipeline.OWN_PASSES``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportPass
from torch.fx.passes.infra.pass_base import PassResult

from qnn_passes.node_meta import helper_meta

if TYPE_CHECKING:
    import torch

_aten = exir_ops.edge.aten
SELECTS = (_aten.select.int, _aten.select_copy.int)
COPIES = (_aten.copy.default, _aten.copy_.default)


def _is_scalar_select(node: torch.fx.Node) -> bool:
    if node.op != "call_function" or node.target not in SELECTS:
        return False
    val = node.meta.get("val")
    return val is not None and val.dim() == 0


def _needs_zero_dim(user: torch.fx.Node, select: torch.fx.Node) -> bool:
    """Whether ``user`` must read ``select`` as a 0-d value: the source of a copy (into a 0-d
    buffer), or a program output (a buffer's new value, or a user output)."""
    if user.op == "output":
        return True
    return user.op == "call_function" and user.target in COPIES and select in user.args[1:]


class ReshapeScalarSelect(ExportPass):
    """Rewrite each 0-d ``select`` Remove0DTensor would get wrong as ``slice_copy`` (+ ``view_copy`` to 0-d)."""

    def call(self, graph_module: torch.fx.GraphModule) -> PassResult:
        graph = graph_module.graph
        modified = False
        for node in list(graph.nodes):
            if not _is_scalar_select(node):
                continue
            source, dim, index = node.args[0], node.args[1], node.args[2]
            assert isinstance(source, type(node)) and isinstance(dim, int)
            assert isinstance(index, int)
            size = source.meta["val"].shape[dim]
            if not isinstance(size, int):
                continue  # a symbolic size: QNN takes no dynamic shape, nothing is delegated
            zero_dim_users = [u for u in node.users if _needs_zero_dim(u, node)]
            if size == 1 and not zero_dim_users:
                continue  # Remove0DTensor's rewrite is right here
            start = index % size
            with graph.inserting_before(node):
                sliced = graph.call_function(
                    _aten.slice_copy.Tensor, (source, dim, start, start + 1)
                )
                sliced.meta = helper_meta(
                    node,
                    source.meta["val"].narrow(dim, start, 1),
                    qnn_from=node,
                )
                scalar = None
                if zero_dim_users:
                    scalar = graph.call_function(_aten.view_copy.default, (sliced, []))
                    scalar.meta = helper_meta(node, node.meta["val"], qnn_from=node)
            for user in list(node.users):
                user.replace_input_with(node, scalar if user in zero_dim_users else sliced)
            graph.erase_node(node)
            modified = True
        if modified:
            graph.lint()
            graph_module.recompile()
        return PassResult(graph_module, modified)
