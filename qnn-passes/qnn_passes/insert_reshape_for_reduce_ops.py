"""InsertReshapeForReduceOps: ``argmax``/``argmin`` over all elements -> flatten, then dim 0.

QNN's arg-reduce ops need an axis. Before / after::

    %i = aten.argmax.default(%x)                 # dim=None
    # ->
    %f = aten.view_copy.default(%x, [-1])
    %i = aten.argmax.default(%f, 0)

``keepdim=True`` views the index back to all-ones dimensions, as PyTorch returns it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from executorch.exir.dialects._ops import ops as exir_ops

from qnn_passes.edge_rewrite import EdgeRewrite

if TYPE_CHECKING:
    from executorch.exir.pass_base import NodeMetadata, ProxyValue

_aten = exir_ops.edge.aten


class InsertReshapeForReduceOps(EdgeRewrite):
    """An explicit axis for argmax/argmin without one."""

    targets: ClassVar[frozenset[Any]] = frozenset({_aten.argmax.default, _aten.argmin.default})

    def rewrite(
        self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], meta: NodeMetadata
    ) -> ProxyValue | None:
        dim = args[1] if len(args) > 1 else kwargs.get("dim")
        if dim is not None:
            return None
        keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
        flat = self.emit(_aten.view_copy.default, (args[0], [-1]), meta)
        index = self.emit(op, (flat, 0, False), meta)
        if not keepdim:
            return index
        # keepdim without dim keeps every dimension as size 1 (upstream's rewrite returns [1]).
        rank = len(args[0].to_tensor().shape)
        return self.emit(_aten.view_copy.default, (index, [1] * rank), meta)
