"""DecomposeVar: ``var`` -> mean / sub / mul / mean on the edge program (QNN has no variance op).

Before / after (``correction`` c, ``n`` elements reduced)::

    %v = aten.var.correction(%x, [d], correction=c, keepdim=k)
    # ->
    %m = aten.mean.dim(%x, [d], True)
    %z = aten.sub.Tensor(%x, %m)
    %s = aten.mul.Tensor(%z, %z)
    %v = aten.mean.dim(%s, [d], k)
    %v = aten.mul.Tensor(%v, n / (n - c))     # only when c != 0; lifted afterwards

``var.dim``'s ``unbiased`` is correction 1 (True) or 0 (False), as in PyTorch. A reduced size
that is symbolic (dynamic shapes) is declined and reported by CheckExportStage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from executorch.exir.dialects._ops import ops as exir_ops

from qnn_passes.edge_rewrite import EdgeRewrite

if TYPE_CHECKING:
    from executorch.exir.pass_base import NodeMetadata, ProxyValue

_aten = exir_ops.edge.aten


class DecomposeVar(EdgeRewrite):
    """Variance as mean of squared deviations, with the correction as one multiply."""

    targets: ClassVar[frozenset[Any]] = frozenset({_aten.var.correction, _aten.var.dim})

    def rewrite(
        self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], meta: NodeMetadata
    ) -> ProxyValue | None:
        x = args[0]
        shape = x.to_tensor().shape
        dim = args[1] if len(args) > 1 else kwargs.get("dim")
        if op == _aten.var.dim:
            unbiased = args[2] if len(args) > 2 else kwargs.get("unbiased", True)
            correction = 1.0 if unbiased else 0.0
            keepdim = args[3] if len(args) > 3 else kwargs.get("keepdim", False)
        else:
            given = kwargs.get("correction")
            correction = 1.0 if given is None else float(given)
            keepdim = kwargs.get("keepdim", False)
        dims = list(range(len(shape))) if dim is None else [d % len(shape) for d in dim]
        n = 1
        for d in dims:
            if not isinstance(shape[d], int):
                return None
            n *= shape[d]
        mean = self.emit(_aten.mean.dim, (x, dims, True), meta)
        deviation = self.emit(_aten.sub.Tensor, (x, mean), meta)
        square = self.emit(_aten.mul.Tensor, (deviation, deviation), meta)
        var = self.emit(_aten.mean.dim, (square, dims, bool(keepdim)), meta)
        if correction == 0.0:
            return var
        denominator = n - correction
        # n == correction: PyTorch returns inf * 0 = nan or inf; the same comes out here.
        scale = float("inf") if denominator == 0 else n / denominator
        return self.emit(_aten.mul.Tensor, (var, scale), meta)
