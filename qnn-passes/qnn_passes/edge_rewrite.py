"""EdgeRewrite: the base of this package's export-stage passes that run on edge-dialect programs.

A pass names the edge ops it rewrites (``targets``) and rewrites one call in
``rewrite(op, args, kwargs, meta)`` by emitting other edge ops through ``emit``; ExecuTorch's
``ExportPass`` retraces the graph around it, so every new node gets a fresh ``val`` (shapes,
dtypes, symbolic sizes) without hand-written meta. A graph with none of the targets is not
retraced at all and the pass reports ``modified=False``; ``decline`` leaves a call as it is (a
case the pass does not handle, which :class:`~qnn_passes.check_export_stage.CheckExportStage`
then reports).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportPass
from torch.fx.passes.infra.pass_base import PassResult

if TYPE_CHECKING:
    import torch
    from executorch.exir.dialects.edge._ops import EdgeOpOverload
    from executorch.exir.pass_base import NodeMetadata, ProxyValue


def edge_op(op: torch._ops.OpOverload) -> EdgeOpOverload:
    """The edge-dialect op of an ATen overload (``aten.exp.default`` -> ``exir_ops.edge.aten.exp.default``)."""
    namespace, _, name = op._schema.name.partition("::")
    edge: EdgeOpOverload = getattr(
        getattr(getattr(exir_ops.edge, namespace), name), op._overloadname
    )
    return edge


class EdgeRewrite(ExportPass):
    """Rewrite every call of ``targets`` (edge ops) through :meth:`rewrite`; nothing else changes."""

    targets: ClassVar[frozenset[Any]] = frozenset()

    def __init__(self) -> None:
        super().__init__()
        self._changed = False

    def call(self, graph_module: torch.fx.GraphModule) -> PassResult:
        if not any(
            n.op == "call_function" and n.target in self.targets for n in graph_module.graph.nodes
        ):
            return PassResult(graph_module, False)
        self._changed = False
        result = super().call(graph_module)
        return PassResult(result.graph_module, self._changed)

    def call_operator(
        self,
        op: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        meta: NodeMetadata,
    ) -> ProxyValue:
        if op in self.targets:
            replaced = self.rewrite(op, args, kwargs, meta)
            if replaced is not None:
                self._changed = True
                return replaced
        return super().call_operator(op, args, kwargs, meta)

    def emit(self, op: Any, args: tuple[Any, ...], meta: NodeMetadata, **kwargs: Any) -> ProxyValue:
        """One new call of ``op`` (an edge op), carrying the rewritten node's meta."""
        return super().call_operator(op, args, kwargs, meta)

    @staticmethod
    def real(make: Callable[[], torch.Tensor]) -> torch.Tensor:
        """A real (not fake) constant tensor for an argument; the retrace stores it as a ``get_attr``.

        The pass body runs under the retrace's fake mode, where a new tensor would be fake.
        """
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        with unset_fake_temporarily():
            return make()

    def rewrite(
        self,
        op: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        meta: NodeMetadata,
    ) -> ProxyValue | None:
        """The replacement of one call, or None to keep it (a case this pass does not handle)."""
        raise NotImplementedError
