"""ReshapeScalarSelect: a 0-d ``select`` that a ``copy`` reads becomes ``slice`` + ``view``, so Remove0DTensor keeps the copy valid.

Static-cache decoders (transformers' ``StaticCache``, the path its ExecuTorch integration
exports) keep the position in a 0-d int64 buffer: ``buf.copy_(pos[0])``, then ``arange + buf``
and ``buf.add_(1)``. ExecuTorch's Remove0DTensor removes every ``select`` with a 0-d result
and feeds its users the selected-from tensor instead: ``copy(buf, pos)`` then copies a
``[1]`` tensor into a 0-d one, and the next pass that retraces the graph (I64toI32) fails
with "expand: the requested shape has too few dimensions!". For a ``copy`` the shape of the
source is not free, so this pass gives it the same 0-d value by ops Remove0DTensor leaves
alone; every other user of a 0-d select broadcasts, and keeps Remove0DTensor's rewrite.

Before / after (``pos: [n]``, ``buf: []``)::

    %s = aten.select_copy.int(%pos, 0, i)           # []
    %c = aten.copy(%buf, %s)
    # ->
    %t = aten.slice_copy.Tensor(%pos, 0, i, i + 1)  # [1]
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


def _scalar_select_read_by_copy(node: torch.fx.Node) -> bool:
    if node.op != "call_function" or node.target not in SELECTS:
        return False
    val = node.meta.get("val")
    if val is None or val.dim() != 0:
        return False
    return any(u.op == "call_function" and u.target in COPIES for u in node.users)


class ReshapeScalarSelect(ExportPass):
    """Rewrite each 0-d ``select`` a ``copy`` reads as ``slice_copy`` + ``view_copy`` to 0-d."""

    def call(self, graph_module: torch.fx.GraphModule) -> PassResult:
        graph = graph_module.graph
        modified = False
        for node in list(graph.nodes):
            if not _scalar_select_read_by_copy(node):
                continue
            source, dim, index = node.args[0], node.args[1], node.args[2]
            assert isinstance(source, type(node)) and isinstance(dim, int)
            assert isinstance(index, int)
            size = source.meta["val"].shape[dim]
            if not isinstance(size, int):
                continue
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
                scalar = graph.call_function(_aten.view_copy.default, (sliced, []))
                scalar.meta = helper_meta(node, node.meta["val"], qnn_from=node)
            node.replace_all_uses_with(scalar)
            graph.erase_node(node)
            modified = True
        if modified:
            graph.lint()
            graph_module.recompile()
        return PassResult(graph_module, modified)
