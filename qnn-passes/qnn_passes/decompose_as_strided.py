"""DecomposeAsStrided: ``as_strided_copy`` -> a view, or a gather of the strided elements, on the edge program.

QNN has no strided view. Before / after (contiguous strides, no offset)::

    %y = aten.as_strided_copy.default(%x, [2, 8], [8, 1])
    # ->
    %y = aten.view_copy.default(%x, [2, 8])

and otherwise (the element indices are a constant, as upstream)::

    %y = aten.as_strided_copy.default(%x, [2, 2], [1, 2], 1)
    # ->
    %f = aten.view_copy.default(%x, [numel])
    %i = get_attr[_tensor_constant0]               # offset + sum(index_k * stride_k), int32
    %g = aten.index_select.default(%f, 0, %i)
    %y = aten.view_copy.default(%g, [2, 2])

Symbolic sizes are declined and reported by CheckExportStage.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from executorch.exir.dialects._ops import ops as exir_ops

from qnn_passes.edge_rewrite import EdgeRewrite

if TYPE_CHECKING:
    from executorch.exir.pass_base import NodeMetadata, ProxyValue

_aten = exir_ops.edge.aten


def _contiguous(size: list[int], stride: list[int]) -> bool:
    expected = 1
    for s, st in zip(reversed(size), reversed(stride), strict=True):
        if s != 1 and st != expected:
            return False
        expected *= s
    return True


def _element_indices(size: list[int], stride: list[int], offset: int) -> torch.Tensor:
    """Storage index of every output element, flattened (offset + sum of index * stride)."""
    index = torch.full(size, offset, dtype=torch.int32)
    for dim, (s, st) in enumerate(zip(size, stride, strict=True)):
        view = [1] * len(size)
        view[dim] = s
        index = index + (torch.arange(s, dtype=torch.int32) * st).view(view)
    return index.reshape(-1).contiguous()


class DecomposeAsStrided(EdgeRewrite):
    """``as_strided_copy`` as view_copy, or flatten + index_select + view_copy."""

    targets: ClassVar[frozenset[Any]] = frozenset({_aten.as_strided_copy.default})

    def rewrite(
        self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], meta: NodeMetadata
    ) -> ProxyValue | None:
        x = args[0]
        size, stride = list(args[1]), list(args[2])
        offset = args[3] if len(args) > 3 else kwargs.get("storage_offset")
        offset = offset or 0
        shape = list(x.to_tensor().shape)
        if not all(isinstance(v, int) for v in (*size, *stride, *shape, offset)):
            return None
        if offset == 0 and _contiguous(size, stride) and math.prod(size) == math.prod(shape):
            return self.emit(_aten.view_copy.default, (x, size), meta)
        index = self.real(lambda: _element_indices(size, stride, offset))
        flat = self.emit(_aten.view_copy.default, (x, [math.prod(shape)]), meta)
        gathered = self.emit(_aten.index_select.default, (flat, 0, index), meta)
        return self.emit(_aten.view_copy.default, (gathered, size), meta)
