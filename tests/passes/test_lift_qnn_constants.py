"""LiftQnnConstants: get_attr constants become program inputs inside the QNN flow."""

from __future__ import annotations

import copy

import torch
from executorch.exir.program._program import lift_constant_tensor_pass
from qnn_migrate_tests.passes.edge import check_runs_like, edge_program, run_passes
from torch import nn
from torch.export.graph_signature import InputKind

from qnn_passes import CanonicalizeConv, LiftQnnConstants


def _with_get_attrs() -> tuple[nn.Module, torch.Tensor, torch.export.ExportedProgram]:
    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Conv1d(3, 4, 3), nn.Conv1d(4, 2, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b(torch.relu(self.a(x)))

    module, x = Two(), torch.randn(1, 3, 9)
    return module, x, run_passes(edge_program(module, x), CanonicalizeConv())


def test_matches_executorchs_lift_where_that_is_right() -> None:
    module, x, program = _with_get_attrs()
    upstream = lift_constant_tensor_pass(copy.deepcopy(program))
    result = LiftQnnConstants()(program)
    assert result.modified
    ours = result.exported_program
    assert ours.graph_signature.input_specs == upstream.graph_signature.input_specs
    assert [n.name for n in ours.graph.nodes] == [n.name for n in upstream.graph.nodes]
    for spec in ours.graph_signature.input_specs:
        if spec.kind == InputKind.BUFFER:
            assert spec.persistent and spec.target.startswith("_lifted_tensor_constant")
            torch.testing.assert_close(
                ours.state_dict[spec.target], upstream.state_dict[spec.target]
            )
    assert not [n for n in ours.graph.nodes if n.op == "get_attr"]
    check_runs_like(ours, module, x)


def test_nothing_to_lift_is_unmodified() -> None:
    program = edge_program(nn.Conv2d(1, 1, 1), torch.randn(1, 1, 2, 2))
    specs = list(program.graph_signature.input_specs)
    assert not LiftQnnConstants()(program).modified
    assert list(program.graph_signature.input_specs) == specs


def test_get_attr_nodes_of_one_attribute_become_one_input() -> None:
    module, x, program = _with_get_attrs()
    attr = next(n for n in program.graph.nodes if n.op == "get_attr")
    # A second get_attr of the same attribute, feeding the first conv.
    with program.graph.inserting_after(attr):
        twin = program.graph.get_attr(attr.target)
    twin.meta = dict(attr.meta)
    conv = next(iter(attr.users))
    conv.replace_input_with(attr, twin)
    attr_users_before = len(program.graph_signature.input_specs)
    upstream = lift_constant_tensor_pass(copy.deepcopy(program))
    ours = LiftQnnConstants()(program).exported_program
    assert len(upstream.graph_signature.input_specs) == attr_users_before + 3
    assert len(ours.graph_signature.input_specs) == attr_users_before + 2
    check_runs_like(ours, module, x)


def test_program_without_placeholders_is_lifted_too() -> None:
    class Const(nn.Module):
        def forward(self) -> torch.Tensor:
            return torch.ones(2, 2) * 3

    program = edge_program(Const())
    program.graph_module.register_buffer("c", torch.full((2, 2), 2.0))
    out = program.graph.output_node()
    with program.graph.inserting_before(out):
        attr = program.graph.get_attr("c")
        attr.meta["val"] = torch.empty(2, 2)
    value = out.args[0][0]
    with program.graph.inserting_before(out):
        mul = program.graph.call_function(torch.ops.aten.mul.Tensor, (value, attr))
    mul.meta["val"] = torch.empty(2, 2)
    out.args = ((mul,),)
    assert not [n for n in program.graph.nodes if n.op == "placeholder"]
    attrs = {n.target for n in program.graph.nodes if n.op == "get_attr"}
    assert lift_constant_tensor_pass(copy.deepcopy(program)).graph_signature.input_specs == []
    ours = LiftQnnConstants()(program).exported_program
    assert [s.kind for s in ours.graph_signature.input_specs] == [InputKind.BUFFER] * len(attrs)
    assert not [n for n in ours.graph.nodes if n.op == "get_attr"]
