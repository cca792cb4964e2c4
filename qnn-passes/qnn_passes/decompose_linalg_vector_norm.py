"""DecomposeLinalgVectorNorm: ``linalg_vector_norm`` -> abs / pow / sum / pow, with an explicit axis.

to-edge would decompose the norm itself, but over all elements (``dim=None``) it leaves
``sum.dim_IntList(x, None)``, which QNN's reduce builder cannot read; so ``qnn_partitioners``
keeps ``aten.linalg_vector_norm`` whole and this pass rewrites it, flattening first as
upstream does. Before / after (order ``p``)::

    %n = aten.linalg_vector_norm.default(%x, p, None, False)
    # ->
    %f = aten.view_copy.default(%x, [numel])
    %a = aten.abs.default(%f)
    %e = aten.pow.Tensor_Scalar(%a, p)              # numbers lifted by LiftScalarOperands
    %s = aten.sum.dim_IntList(%e, [0], False)
    %n = aten.pow.Tensor_Scalar(%s, 1 / p)

``p = inf`` / ``-inf`` is ``amax`` / ``amin`` of ``abs`` (QNN cannot raise to an infinite
power). ``keepdim=True`` without dims views the result back to all-ones dimensions, as PyTorch
returns it. p = 0 and a symbolic size to flatten are declined and reported by CheckExportStage.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

from executorch.exir.dialects._ops import ops as exir_ops

from qnn_passes.edge_rewrite import EdgeRewrite

if TYPE_CHECKING:
    from executorch.exir.pass_base import NodeMetadata, ProxyValue

_aten = exir_ops.edge.aten


class DecomposeLinalgVectorNorm(EdgeRewrite):
    """The vector norm in abs/pow/sum (amax/amin for infinite orders) over explicit dims."""

    targets: ClassVar[frozenset[Any]] = frozenset({_aten.linalg_vector_norm.default})

    def rewrite(
        self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], meta: NodeMetadata
    ) -> ProxyValue | None:
        x: ProxyValue = args[0]
        p = float(args[1] if len(args) > 1 else kwargs.get("ord", 2.0))
        dim = args[2] if len(args) > 2 else kwargs.get("dim")
        keepdim = bool(args[3] if len(args) > 3 else kwargs.get("keepdim", False))
        if kwargs.get("dtype") is not None or p == 0:
            return None
        shape = list(x.to_tensor().shape)
        if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
            if not all(isinstance(s, int) for s in shape):
                return None
            x = self.emit(_aten.view_copy.default, (x, [math.prod(shape)]), meta)
            dims, restore = [0], [1] * len(shape) if keepdim else None
            keep = False
        else:
            dims = list(dim) if isinstance(dim, (list, tuple)) else [dim]
            restore, keep = None, keepdim
        magnitude = self.emit(_aten.abs.default, (x,), meta)
        if math.isinf(p):
            reduce = _aten.amax.default if p > 0 else _aten.amin.default
            norm = self.emit(reduce, (magnitude, dims, keep), meta)
        else:
            powered = self.emit(_aten.pow.Tensor_Scalar, (magnitude, p), meta)
            total = self.emit(_aten.sum.dim_IntList, (powered, dims, keep), meta)
            norm = self.emit(_aten.pow.Tensor_Scalar, (total, 1.0 / p), meta)
        if restore is not None:
            norm = self.emit(_aten.view_copy.default, (norm, restore), meta)
        return norm
