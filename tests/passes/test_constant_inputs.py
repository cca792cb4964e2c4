"""Dropping orphaned constants never touches user inputs or state (mutated buffers)."""

from __future__ import annotations

import torch
from qnn_migrate_tests.passes.edge import check_runs_like, edge_program
from torch import nn

from qnn_passes import LiftQnnConstants, constant_inputs


class _WithState(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.full((4,), 3.0))
        self.register_buffer("state", torch.zeros(2))

    def forward(self, x: torch.Tensor, ignored: torch.Tensor) -> torch.Tensor:
        self.state.copy_(x[:2])
        return x * self.w


def test_only_unused_constants_are_dropped() -> None:
    module, inputs = _WithState(), (torch.randn(4), torch.randn(1))
    program = edge_program(module, *inputs)
    by_name = {s.target or s.arg.name: s.arg.name for s in program.graph_signature.input_specs}
    node = {n.name: n for n in program.graph.nodes}
    weight = node[by_name["w"]]
    replacement = constant_inputs.add_get_attr(
        program.graph_module, torch.full((4,), 3.0), "w_copy", after=weight
    )
    weight.replace_all_uses_with(replacement)

    assert not node[by_name["state"]].users  # functionalized: the mutation is an output
    assert not node[by_name["ignored"]].users
    assert not constant_inputs.drop_if_unused(program, node[by_name["ignored"]])
    assert not constant_inputs.drop_if_unused(program, node[by_name["state"]])
    assert not constant_inputs.drop_if_unused(program, replacement)  # used
    assert constant_inputs.drop_if_unused(program, weight)
    targets = [s.target for s in program.graph_signature.input_specs]
    assert "w" not in targets and "state" in targets and targets.count(None) == 2
    assert "w" not in program.state_dict and "state" in program.state_dict
    check_runs_like(LiftQnnConstants()(program).exported_program, _WithState(), *inputs)
