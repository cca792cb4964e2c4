"""RunQnnPasses: the solved passes run as one ExportedProgram pass, with the same result."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from executorch.exir.pass_base import ExportPass, PassResult
from qnn_migrate_tests.passes.edge import check_runs_like, edge_program, run_passes
from torch import nn

from qnn_passes import CanonicalizeConv, LiftQnnConstants, RunQnnPasses


class _Unchanged(ExportPass):
    def call(self, graph_module: Any) -> PassResult:
        return PassResult(graph_module, False)


class _Fails(ExportPass):
    def call(self, graph_module: Any) -> PassResult:
        raise ValueError("broken pass")


def test_reports_modified_only_when_a_pass_did() -> None:
    program = edge_program(nn.Conv2d(1, 1, 1), torch.randn(1, 1, 2, 2))
    assert not RunQnnPasses([_Unchanged(), _Unchanged()])(program).modified
    assert RunQnnPasses([_Unchanged(), lambda gm: None])(program).modified


def test_mixed_passes_and_rebuilds_match_the_pass_manager() -> None:
    module, x = nn.Conv1d(2, 3, 3), torch.randn(1, 2, 7)
    passes = [ExportPass(), CanonicalizeConv(), ExportPass()]
    ours = RunQnnPasses(passes)(edge_program(module, x)).exported_program
    theirs = run_passes(edge_program(module, x), *passes)
    assert ours.graph_module.code == theirs.graph_module.code
    assert ours.graph_signature == theirs.graph_signature
    check_runs_like(run_passes(ours, LiftQnnConstants()), module, x)


def test_failure_keeps_its_type_and_says_where() -> None:
    program = edge_program(nn.Conv2d(1, 1, 1), torch.randn(1, 1, 2, 2))
    runner = RunQnnPasses([_Unchanged(), _Fails()], method="decode")
    with pytest.raises(ValueError, match="broken pass") as info:
        runner(program)
    assert info.value.__notes__ == [
        "qnn_passes: in QNN pass _Fails of method 'decode', after ['_Unchanged']"
    ]
    assert runner.names == ["_Unchanged", "_Fails"]
