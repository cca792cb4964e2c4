"""DecomposePDist: ``pdist(x)`` (p = 2) -> row pairs by index_select, then the Euclidean distance.

QNN has no pairwise-distance op; to-edge leaves ``aten._pdist_forward``. For ``x`` of
``N`` rows, the pairs ``i < j`` in row-major order (PyTorch's order) are two constant index
vectors. Before / after::

    %d = aten._pdist_forward.default(%x, 2.0)          # x [N, M] -> [N * (N - 1) / 2]
    # ->
    %i = get_attr[_tensor_constant0]                   # first rows of the pairs (int32)
    %j = get_attr[_tensor_constant1]                   # second rows
    %a = aten.index_select.default(%x, 0, %i)
    %b = aten.index_select.default(%x, 0, %j)
    %z = aten.sub.Tensor(%a, %b)
    %s = aten.pow.Tensor_Scalar(%z, 2)
    %t = aten.sum.dim_IntList(%s, [-1])
    %d = aten.sqrt.default(%t)

Other norms (p != 2) and a symbolic row count are declined and reported by CheckExportStage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import torch
from executorch.exir.dialects._ops import ops as exir_ops

from qnn_passes.decompose_cdist import euclidean
from qnn_passes.edge_rewrite import EdgeRewrite

if TYPE_CHECKING:
    from executorch.exir.pass_base import NodeMetadata, ProxyValue

_aten = exir_ops.edge.aten


class DecomposePDist(EdgeRewrite):
    """Euclidean ``pdist`` as two index_selects and elementwise edge ops."""

    targets: ClassVar[frozenset[Any]] = frozenset({_aten._pdist_forward.default})

    def rewrite(
        self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], meta: NodeMetadata
    ) -> ProxyValue | None:
        p = args[1] if len(args) > 1 else kwargs.get("p", 2.0)
        rows = args[0].to_tensor().shape[0]
        if p != 2 or not isinstance(rows, int):
            return None
        pairs = self.real(lambda: torch.triu_indices(rows, rows, offset=1, dtype=torch.int32))
        first = self.real(lambda: pairs[0].clone())
        second = self.real(lambda: pairs[1].clone())
        a = self.emit(_aten.index_select.default, (args[0], 0, first), meta)
        b = self.emit(_aten.index_select.default, (args[0], 0, second), meta)
        return euclidean(self, a, b, meta)
