"""DecomposeRoll: ``roll`` -> two slices and a cat per rolled dimension, on the edge program.

to-edge would turn ``aten.roll`` into index arithmetic (``arange``, ``fmod``, ``index_select``)
that QNN cannot run, so :func:`qnn_passes.api.qnn_partitioners` keeps ``aten.roll`` whole
(``ops_to_not_decompose``) and this pass rewrites it. Before / after (``s = shift % size``)::

    %y = aten.roll.default(%x, [s], [d])
    # ->
    %a = aten.slice_copy.Tensor(%x, d, size - s, size)
    %b = aten.slice_copy.Tensor(%x, d, 0, size - s)
    %y = aten.cat.default([%a, %b], d)

Without dims the flattened tensor is rolled and viewed back. A symbolic size along a rolled
dimension is declined and reported by CheckExportStage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from executorch.exir.dialects._ops import ops as exir_ops

from qnn_passes.edge_rewrite import EdgeRewrite

if TYPE_CHECKING:
    from executorch.exir.pass_base import NodeMetadata, ProxyValue

_aten = exir_ops.edge.aten


class DecomposeRoll(EdgeRewrite):
    """``roll`` as slice_copy + cat."""

    targets: ClassVar[frozenset[Any]] = frozenset({_aten.roll.default})

    def rewrite(
        self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], meta: NodeMetadata
    ) -> ProxyValue | None:
        x: ProxyValue = args[0]
        shape = list(x.to_tensor().shape)
        shifts = list(args[1]) if isinstance(args[1], (list, tuple)) else [args[1]]
        dims = args[2] if len(args) > 2 else kwargs.get("dims", [])
        dims = list(dims) if isinstance(dims, (list, tuple)) else [dims]
        if not all(isinstance(s, int) for s in shape):
            return None
        if not dims:
            numel = 1
            for s in shape:
                numel *= s
            flat = self.emit(_aten.view_copy.default, (x, [numel]), meta)
            rolled = self._roll(flat, shifts[0], 0, numel, meta)
            return self.emit(_aten.view_copy.default, (rolled, shape), meta)
        for shift, dim in zip(shifts, dims, strict=True):
            x = self._roll(x, shift, dim % len(shape), shape[dim], meta)
        return x

    def _roll(
        self, x: ProxyValue, shift: int, dim: int, size: int, meta: NodeMetadata
    ) -> ProxyValue:
        s = shift % size if size else 0
        if s == 0:
            return x
        tail = self.emit(_aten.slice_copy.Tensor, (x, dim, size - s, size), meta)
        head = self.emit(_aten.slice_copy.Tensor, (x, dim, 0, size - s), meta)
        return self.emit(_aten.cat.default, ([tail, head], dim), meta)
