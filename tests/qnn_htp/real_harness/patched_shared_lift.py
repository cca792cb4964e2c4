"""PatchedSharedLift: the seed's shared lift, applied to a backend whose passes insert a ``get_attr``.

The seed of this project (ExecuTorch PR #20738) moved QNN passes that rewrite a weight into
a new ``get_attr`` (CanonicalizeConv, ConvertLinearToConv2d) to the to-edge stage, and made
the shared ``to_edge_transform_and_lower`` run ``lift_constant_tensor_pass`` after the
transform passes. ExecuTorch 1.5.1 ships that lift, but its XNNPACK and portable tests pass
no transform passes and XNNPACK's own passes insert placeholders, never a ``get_attr``; so
the lift changes none of their programs. This patch (the test process only, switched on by
``QNN_E2E_PATCH_SHARED_LIFT=1`` in python_wrapper.py) is the shared-code change the
reviewer asked about, applied to such a backend: the shared ``to_edge_transform_and_lower``
runs, for a call that gives no transform passes, ``BackendWeightToGetAttr`` (a pass that
does to the first weight what CanonicalizeConv does to a conv weight: its uses read a new
``get_attr`` copy) and then 1.5.1's shared lift. The program gains an input: the lifted
copy goes into the delegate that reads it, and the weight it replaced stays behind as an
unused program input (the seed's "replaced weights stay behind" review point).

Before (the edge graph of XNNPACK's TestConv1d, the weight a parameter)::

    p_conv_weight (placeholder, PARAMETER) -> convolution
After the pass and the lift::

    p_conv_weight (placeholder, PARAMETER, no users)
    _lifted_tensor_constant1 (placeholder, BUFFER) -> convolution
"""

from __future__ import annotations

from typing import Any


def patch_shared_lift() -> None:
    """Rebind the shared ``to_edge_transform_and_lower`` wherever ExecuTorch exports it."""
    import executorch.exir as exir_package
    import executorch.exir.program as program_package
    from executorch.exir.program import _program
    from torch.export.graph_signature import InputKind
    from torch.fx.passes.infra.pass_base import PassBase, PassResult

    shipped = _program.to_edge_transform_and_lower

    class BackendWeightToGetAttr(PassBase):  # type: ignore[misc]
        """The uses of the program's first used weight read a new ``get_attr`` copy of it."""

        def __init__(self, program: Any) -> None:
            super().__init__()
            self.program = program

        def call(self, graph_module: Any) -> Any:
            signature = self.program.graph_signature
            weights = {
                s.arg.name: s.target
                for s in signature.input_specs
                if s.kind == InputKind.PARAMETER and s.target is not None
            }
            graph = graph_module.graph
            for node in graph.nodes:
                if node.op == "placeholder" and node.name in weights and node.users:
                    copy = self.program.state_dict[weights[node.name]].detach().clone()
                    graph_module.register_buffer("_backend_weight", copy, persistent=False)
                    with graph.inserting_after(node):
                        attr = graph.get_attr("_backend_weight")
                    attr.meta = dict(node.meta)
                    node.replace_all_uses_with(attr)
                    graph_module.recompile()
                    return PassResult(graph_module, True)
            return PassResult(graph_module, False)

    def to_edge_transform_and_lower(programs: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs.get("transform_passes") is not None or isinstance(programs, dict):
            return shipped(programs, *args, **kwargs)
        return shipped(programs, transform_passes=[BackendWeightToGetAttr(programs)], **kwargs)

    for module in (exir_package, program_package, _program):
        module.to_edge_transform_and_lower = to_edge_transform_and_lower  # type: ignore[attr-defined]
