"""DecomposeExpM1: ``expm1(x)`` -> ``exp(x) - 1`` on the edge program (QNN has no expm1 op).

Before / after::

    %y = aten.expm1.default(%x)
    # ->
    %e = aten.exp.default(%x)
    %y = aten.sub.Tensor(%e, 1.0)     # the 1.0 is lifted by LiftScalarOperands afterwards
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from executorch.exir.dialects._ops import ops as exir_ops

from qnn_passes.edge_rewrite import EdgeRewrite

if TYPE_CHECKING:
    from executorch.exir.pass_base import NodeMetadata, ProxyValue

_aten = exir_ops.edge.aten


class DecomposeExpM1(EdgeRewrite):
    """``expm1`` as ``exp`` then ``sub``, in edge ops."""

    targets: ClassVar[frozenset[Any]] = frozenset({_aten.expm1.default})

    def rewrite(
        self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], meta: NodeMetadata
    ) -> ProxyValue:
        exp = self.emit(_aten.exp.default, (args[0],), meta)
        return self.emit(_aten.sub.Tensor, (exp, 1.0), meta)
