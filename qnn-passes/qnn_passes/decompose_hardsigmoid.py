"""DecomposeHardsigmoid: ``hardsigmoid(x)`` -> ``clamp(x + 3, 0, 6) / 6`` on the edge program (LPAI only).

LPAI's export stage decomposes hardsigmoid (HTP and GPU run it natively); this is PyTorch's
own decomposition of the op, in edge ops. Before / after::

    %y = aten.hardsigmoid.default(%x)
    # ->
    %a = aten.add.Tensor(%x, 3.0)
    %c = aten.clamp.default(%a, 0.0, 6.0)
    %y = aten.div.Tensor(%c, 6.0)       # the numbers are lifted by LiftScalarOperands
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from executorch.exir.dialects._ops import ops as exir_ops

from qnn_passes.edge_rewrite import EdgeRewrite

if TYPE_CHECKING:
    from executorch.exir.pass_base import NodeMetadata, ProxyValue

_aten = exir_ops.edge.aten


class DecomposeHardsigmoid(EdgeRewrite):
    """``hardsigmoid`` as add, clamp, div."""

    targets: ClassVar[frozenset[Any]] = frozenset({_aten.hardsigmoid.default})

    def rewrite(
        self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], meta: NodeMetadata
    ) -> ProxyValue:
        shifted = self.emit(_aten.add.Tensor, (args[0], 3.0), meta)
        clamped = self.emit(_aten.clamp.default, (shifted, 0.0, 6.0), meta)
        return self.emit(_aten.div.Tensor, (clamped, 6.0), meta)
