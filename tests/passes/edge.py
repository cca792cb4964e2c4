"""Small helpers for pass unit tests: a module in, an edge-dialect program out, and ways to look at it."""

from __future__ import annotations

from typing import Any

import torch
from executorch.exir import EdgeCompileConfig, to_edge
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportedProgramPassBase, ExportedProgramPassResult
from executorch.exir.pass_manager import ExportedProgramPassManager
from qnn_migrate_tests.passes import flows
from torch.export import ExportedProgram
from torch.export.graph_signature import ExportGraphSignature

CONV = exir_ops.edge.aten.convolution.default
LINEAR = exir_ops.edge.aten.linear.default


def edge_program(module: torch.nn.Module, *inputs: torch.Tensor) -> ExportedProgram:
    """Strict export, then to_edge keeping aten.linear whole (as QnnPartitioner asks)."""
    program = torch.export.export(module.eval(), inputs, strict=True)
    config = EdgeCompileConfig(
        _check_ir_validity=False, preserve_ops=[torch.ops.aten.linear.default]
    )
    return to_edge(program, compile_config=config).exported_program()


def run_passes(program: ExportedProgram, *passes: Any) -> ExportedProgram:
    """Run passes the way to_edge_transform_and_lower does (ExportedProgramPassManager)."""
    return ExportedProgramPassManager(list(passes))(program).exported_program


def targets(program: ExportedProgram) -> list[Any]:
    return [n.target for n in program.graph.nodes if n.op == "call_function"]


def nodes(program: ExportedProgram, target: Any) -> list[torch.fx.Node]:
    return [n for n in program.graph.nodes if n.op == "call_function" and n.target == target]


def input_targets(program: ExportedProgram) -> list[str | None]:
    return [s.target for s in program.graph_signature.input_specs]


def check_runs_like(program: ExportedProgram, module: torch.nn.Module, *inputs: Any) -> None:
    """The program, serialized and run in the portable runtime, matches eager ``module``."""
    with torch.no_grad():
        expected = module(*inputs)
    (actual, *_) = flows.run_portable({"forward": program}, {"forward": inputs})["forward"]
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)


def check_computes_like(program: ExportedProgram, module: torch.nn.Module, *inputs: Any) -> None:
    """Same, run by PyTorch (for ops the portable runtime lacks, e.g. quantized ones)."""
    with torch.no_grad():
        torch.testing.assert_close(program.module()(*inputs), module(*inputs), rtol=1e-4, atol=1e-4)


class ParameterToGetAttr(ExportedProgramPassBase):
    """Test stand-in for a non-QNN transform pass that leaves a ``get_attr``: moves parameter
    ``target`` out of the signature into an attribute of the graph module."""

    def __init__(self, target: str) -> None:
        super().__init__()
        self.target = target

    def call(self, exported_program: ExportedProgram) -> ExportedProgramPassResult:
        ep = exported_program
        spec = next(s for s in ep.graph_signature.input_specs if s.target == self.target)
        node = next(n for n in ep.graph.nodes if n.name == spec.arg.name)
        name = self.target.replace(".", "_") + "_attr"
        ep.graph_module.register_buffer(name, ep.state_dict[self.target].detach().clone())
        with ep.graph.inserting_after(node):
            attr = ep.graph.get_attr(name)
        attr.meta["val"] = node.meta["val"]
        node.replace_all_uses_with(attr)
        ep.graph.erase_node(node)
        ep._graph_signature = ExportGraphSignature(
            [s for s in ep.graph_signature.input_specs if s is not spec],
            list(ep.graph_signature.output_specs),
        )
        ep._state_dict = {k: v for k, v in ep.state_dict.items() if k != self.target}
        ep.graph_module.recompile()
        return ExportedProgramPassResult(ep, True)
