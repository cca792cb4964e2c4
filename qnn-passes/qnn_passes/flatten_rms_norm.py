"""FlattenRmsNorm: run QNN's RmsNorm on a 2-D tensor, restoring the shape after it.

QNN 2.51's fp16 RmsNorm over the last dimension of a tensor with more than one leading
dimension that is not 1 computes wrong values (Qwen3's per-head q/k norm, ``[16, 4, 16]`` or
``[1, 16, 4, 16]``: about 3 dB against eager), while the same values laid out as ``[64, 16]``
are right (68 dB; measured on the HTP simulator, docs/qnn-htp.md). ExecuTorch's builder passes
the op through as it is, so this pass lays it out as the case QNN gets right: the leading
dimensions are flattened into one, and the result is viewed back.

Before / after (``x: [B, H, D]``, the norm over ``D``)::

    %y = aten.rms_norm(%x, [D], %w, eps)               # [B, H, D]
    # ->
    %x2 = aten.view_copy(%x, [B * H, D])
    %y2 = aten.rms_norm(%x2, [D], %w, eps)            # [B * H, D]
    %y = aten.view_copy(%y2, [B, H, D])

Only norms over the last dimension (one normalized size) with at least two leading dimensions
larger than 1 and static sizes are rewritten; ``[1, 16, 64]`` and 2-D inputs are left as they
are (QNN computes them right, and they keep the graph the wrapper lowers). The views carry the
QNN attributes (a quantized graph's encodings) of the values they pass on, so the pass runs
after FoldQDQ and before LayoutTransform (``pipeline.OWN_PASSES``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportPass
from torch.fx.passes.infra.pass_base import PassResult

from qnn_passes.node_meta import helper_meta

if TYPE_CHECKING:
    import torch

_aten = exir_ops.edge.aten


def flattened_shape(shape: tuple[object, ...], normalized: list[object]) -> list[int] | None:
    """``[prod(leading), last]`` for a norm this pass rewrites, else None."""
    sizes = [s for s in shape if isinstance(s, int)]
    if len(normalized) != 1 or len(shape) < 3 or len(sizes) != len(shape):
        return None  # another norm, a small rank, or a symbolic size
    if sizes[-1] != normalized[0] or len([s for s in sizes[:-1] if s != 1]) < 2:
        return None
    return [math.prod(sizes[:-1]), sizes[-1]]


def _other_than(kept: torch.fx.Node) -> Callable[[torch.fx.Node], bool]:
    return lambda user: user is not kept


class FlattenRmsNorm(ExportPass):
    """Flatten the leading dimensions of each RmsNorm's input to one, and view the result back."""

    def call(self, graph_module: torch.fx.GraphModule) -> PassResult:
        graph = graph_module.graph
        modified = False
        for node in list(graph.nodes):
            if node.op != "call_function" or node.target != _aten.rms_norm.default:
                continue
            x = node.args[0]
            val = node.meta.get("val")
            if val is None or not hasattr(x, "meta") or "val" not in x.meta:
                continue
            flat = flattened_shape(tuple(val.shape), list(node.args[1]))
            if flat is None:
                continue
            shape = list(val.shape)
            with graph.inserting_before(node):
                x2 = graph.call_function(_aten.view_copy.default, (x, flat))
                x2.meta = helper_meta(node, x.meta["val"].reshape(flat), qnn_from=x)
            node.replace_input_with(x, x2)
            node.meta["val"] = val.reshape(flat)
            with graph.inserting_after(node):
                y = graph.call_function(_aten.view_copy.default, (node, shape))
                y.meta = helper_meta(node, val, qnn_from=node)
            node.replace_all_uses_with(y, delete_user_cb=_other_than(y))
            modified = True
        if modified:
            graph.lint()
            graph_module.recompile()
        return PassResult(graph_module, modified)
