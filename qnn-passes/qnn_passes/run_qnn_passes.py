"""RunQnnPasses: run the solved QNN passes in order, as one ExportedProgram pass.

``to_edge_transform_and_lower`` hands each method's transform passes to ExecuTorch's
``ExportedProgramPassManager``, which, after every pass that reports a change, re-derives the
program's signature and range constraints, removes duplicate getitems and regenerates the
graph module's Python code. ExecuTorch's QNN passes report a change whether or not they made
one, so with ~37 of them that work is done ~37 times; none of it is read by the next pass
(ExecuTorch's passes see the graph, and the passes here re-sync the signature themselves). Run
as one pass, it is done once, at the end (what that saves is measured in docs/passes.md,
"Speed and memory").

Nothing else changes: the same pass objects run in the same order on the same graph module;
a pass that returns a new graph module (ExportPass-based rebuilds) replaces the program's one,
as the manager does. ``passes`` is the list, open to inspection and editing. ``modified`` is
True only if some pass reported a change (a pass that returns None counts as a change, as in
``pass_result_wrapper``). A failing pass keeps its exception, with a note naming the pass,
the method and the passes that ran before it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from executorch.exir._program_utils import _get_updated_range_constraints
from executorch.exir.pass_base import ExportedProgramPassBase, ExportedProgramPassResult
from executorch.exir.pass_manager import _can_eliminate_common_getitems
from torch.export import ExportedProgram
from torch.export.exported_program import _common_getitem_elimination_pass

from qnn_passes import constant_inputs

if TYPE_CHECKING:
    from qnn_passes.pipeline import QnnPass


def pass_name(p: object) -> str:
    return getattr(p, "__name__", None) or type(p).__name__


class RunQnnPasses(ExportedProgramPassBase):
    """Run ``passes`` (graph-module and ExportedProgram passes, mixed) in order on one program."""

    def __init__(self, passes: list[QnnPass], *, method: str = "forward") -> None:
        super().__init__()
        self.passes = passes
        self.method = method

    @property
    def names(self) -> list[str]:
        return [pass_name(p) for p in self.passes]

    def call(self, exported_program: ExportedProgram) -> ExportedProgramPassResult:
        ep = exported_program
        modified = False
        for i, p in enumerate(self.passes):
            try:
                if isinstance(p, ExportedProgramPassBase):
                    constant_inputs.sync_signature(ep)
                    result = p(ep)
                    ep, changed = result.exported_program, result.modified
                else:
                    graph_result = p(ep.graph_module)
                    changed = graph_result is None or bool(graph_result.modified)
                    if (
                        graph_result is not None
                        and graph_result.graph_module is not ep.graph_module
                    ):
                        ep._graph_module = graph_result.graph_module
            except Exception as err:
                err.add_note(
                    f"qnn_passes: in QNN pass {pass_name(p)} of method '{self.method}', after "
                    f"{self.names[:i]}"
                )
                raise
            modified = modified or changed
        if modified:
            gm = ep.graph_module
            constant_inputs.sync_signature(ep)
            # What ExecuTorch's pass manager does after each changed pass, done once.
            if _can_eliminate_common_getitems(gm):
                _common_getitem_elimination_pass(gm, ep.graph_signature, ep.module_call_graph)
            gm.recompile()
            ep._range_constraints = _get_updated_range_constraints(gm)  # type: ignore[no-untyped-call]
        return ExportedProgramPassResult(ep, modified)
