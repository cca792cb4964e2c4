"""DecomposeBinaryAlpha: ``add``/``sub`` with ``alpha != 1`` -> a multiply first (QNN ignores alpha).

Before / after::

    %y = aten.add.Tensor(%x, %z, alpha=2)
    # ->
    %m = aten.mul.Tensor(%z, 2)          # lifted by LiftScalarOperands afterwards
    %y = aten.add.Tensor(%x, %m)

With a number as the second operand the product is folded instead (``add(x, 3, alpha=2)`` ->
``add(x, 6)``).
"""

from __future__ import annotations

from numbers import Number
from typing import TYPE_CHECKING, Any, ClassVar

from executorch.exir.dialects._ops import ops as exir_ops

from qnn_passes.edge_rewrite import EdgeRewrite

if TYPE_CHECKING:
    from executorch.exir.pass_base import NodeMetadata, ProxyValue

_aten = exir_ops.edge.aten


class DecomposeBinaryAlpha(EdgeRewrite):
    """``alpha`` of add/sub as an explicit multiply."""

    targets: ClassVar[frozenset[Any]] = frozenset({_aten.add.Tensor, _aten.sub.Tensor})

    def rewrite(
        self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], meta: NodeMetadata
    ) -> ProxyValue | None:
        alpha = kwargs.get("alpha", 1)
        if alpha == 1:
            return None
        rest = {k: v for k, v in kwargs.items() if k != "alpha"}
        x, other = args[0], args[1]
        if isinstance(other, Number):
            return self.emit(op, (x, other * alpha), meta, **rest)
        scaled = self.emit(_aten.mul.Tensor, (other, alpha), meta)
        return self.emit(op, (x, scaled), meta, **rest)
