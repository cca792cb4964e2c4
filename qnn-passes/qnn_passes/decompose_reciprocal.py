"""DecomposeReciprocal: ``reciprocal(x)`` -> ``1 / x`` on the edge program, as QNN's HTP/GPU/LPAI export stage does.

Before / after::

    %y = aten.reciprocal.default(%x)
    # ->
    %y = aten.div.Tensor(1, %x)        # the 1 is lifted by LiftScalarOperands afterwards
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from executorch.exir.dialects._ops import ops as exir_ops

from qnn_passes.edge_rewrite import EdgeRewrite

if TYPE_CHECKING:
    from executorch.exir.pass_base import NodeMetadata, ProxyValue

_aten = exir_ops.edge.aten


class DecomposeReciprocal(EdgeRewrite):
    """``reciprocal`` as a division."""

    targets: ClassVar[frozenset[Any]] = frozenset({_aten.reciprocal.default})

    def rewrite(
        self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], meta: NodeMetadata
    ) -> ProxyValue:
        return self.emit(_aten.div.Tensor, (1, args[0]), meta)
