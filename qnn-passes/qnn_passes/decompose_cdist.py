"""DecomposeCDist: ``cdist(x, y)`` (p = 2) -> broadcast difference, square, sum, sqrt, on the edge program.

QNN has no pairwise-distance op; to-edge leaves ``aten._cdist_forward``. Before / after::

    %d = aten._cdist_forward.default(%x, %y, 2.0, None)      # x [..., P, M], y [..., R, M]
    # ->
    %a = aten.unsqueeze_copy.default(%x, -2)                   # [..., P, 1, M]
    %b = aten.unsqueeze_copy.default(%y, -3)                   # [..., 1, R, M]
    %z = aten.sub.Tensor(%a, %b)
    %s = aten.pow.Tensor_Scalar(%z, 2)                         # lifted to pow.Tensor_Tensor
    %t = aten.sum.dim_IntList(%s, [-1])
    %d = aten.sqrt.default(%t)

Other norms (p != 2) are declined, as upstream refuses them; CheckExportStage reports them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from executorch.exir.dialects._ops import ops as exir_ops

from qnn_passes.edge_rewrite import EdgeRewrite

if TYPE_CHECKING:
    from executorch.exir.pass_base import NodeMetadata, ProxyValue

_aten = exir_ops.edge.aten


def euclidean(rewrite: EdgeRewrite, a: ProxyValue, b: ProxyValue, meta: NodeMetadata) -> ProxyValue:
    """sqrt(sum((a - b) ** 2, -1)) in edge ops (shared with DecomposePDist)."""
    difference = rewrite.emit(_aten.sub.Tensor, (a, b), meta)
    square = rewrite.emit(_aten.pow.Tensor_Scalar, (difference, 2), meta)
    total = rewrite.emit(_aten.sum.dim_IntList, (square, [-1]), meta)
    return rewrite.emit(_aten.sqrt.default, (total,), meta)


class DecomposeCDist(EdgeRewrite):
    """Euclidean ``cdist`` in elementwise edge ops."""

    targets: ClassVar[frozenset[Any]] = frozenset({_aten._cdist_forward.default})

    def rewrite(
        self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], meta: NodeMetadata
    ) -> ProxyValue | None:
        p = args[2] if len(args) > 2 else kwargs.get("p", 2.0)
        if p != 2:
            return None
        a = self.emit(_aten.unsqueeze_copy.default, (args[0], -2), meta)
        b = self.emit(_aten.unsqueeze_copy.default, (args[1], -3), meta)
        return euclidean(self, a, b, meta)
