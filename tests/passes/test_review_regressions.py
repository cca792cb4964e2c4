"""Regressions for the review points of ExecuTorch PR #20738 that 1.5.1 left open.

Where ExecuTorch 1.5.1's own pass still has the defect, the test shows it first (so a fixed
upstream makes the test fail and this package's copy can be reconsidered), then shows that the
pass here does it right.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from executorch.backends.qualcomm._passes import (
    CanonicalizeConv as UpstreamCanonicalizeConv,
)
from executorch.backends.qualcomm._passes import (
    ConvertLinearToConv2d as UpstreamConvertLinearToConv2d,
)
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportPass
from executorch.exir.program._program import lift_constant_tensor_pass
from qnn_migrate_tests.passes.edge import (
    CONV,
    ParameterToGetAttr,
    check_computes_like,
    check_runs_like,
    edge_program,
    nodes,
    run_passes,
)
from torch import nn

from qnn_passes import (
    AnnotateGetAttr,
    CanonicalizeConv,
    ConvertLinearToConv2d,
    LiftQnnConstants,
    PassOrderError,
    QnnPipelineError,
    pipeline,
)
from qnn_passes.quant_ops import QCOM_QUANT_ATTRS, is_dequantize

DQ_CHANNEL = torch.ops.quantized_decomposed.dequantize_per_channel.default


def _userless_get_attr(program: torch.export.ExportedProgram) -> torch.fx.Node:
    program.graph_module.register_buffer("unused", torch.ones(3))
    first = next(iter(program.graph.nodes))
    with program.graph.inserting_before(first):
        node = program.graph.get_attr("unused")
    node.meta["val"] = torch.empty(3)
    return node


def test_userless_get_attr_is_neither_annotated_nor_lifted() -> None:
    module, x = nn.Linear(4, 2), torch.randn(1, 4)
    program = edge_program(module, x)
    node = _userless_get_attr(program)
    assert not AnnotateGetAttr()(program).modified
    assert QCOM_QUANT_ATTRS not in node.meta

    # ExecuTorch's shared lift turns it into an input nothing reads ...
    upstream = lift_constant_tensor_pass(copy.deepcopy(program))
    assert len(upstream.graph_signature.input_specs) == len(program.graph_signature.input_specs) + 1
    # ... the QNN lift removes it instead.
    lifted = LiftQnnConstants()(program).exported_program
    assert not [n for n in lifted.graph.nodes if n.op == "get_attr"]
    assert not hasattr(lifted.graph_module, "unused")
    assert lifted.graph_signature.input_specs == program.graph_signature.input_specs
    check_runs_like(lifted, module, x)


class _SumThenLinear(nn.Module):
    """The quantized weight's first user is a dequantize for a sum, its second one for the linear."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("wq", torch.randint(-100, 100, (6, 8), dtype=torch.int8))
        self.register_buffer("scales", torch.rand(6) / 50 + 0.001)
        self.register_buffer("zps", torch.zeros(6, dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        total = self.wq.to(torch.float32).sum()
        w = DQ_CHANNEL(self.wq, self.scales, self.zps, 0, -127, 127, torch.int8)
        return F.linear(x, w) + total


def test_dequantize_that_is_not_the_first_user_is_found() -> None:
    module, x = _SumThenLinear(), torch.randn(3, 8)
    program = edge_program(module, x)
    weight = next(n for n in program.graph.nodes if n.name == "b_wq")
    assert not is_dequantize(next(iter(weight.users)).target)

    # ExecuTorch 1.5.1 looks only at list(users)[0]: the conv gets the int8 weight, undequantized.
    upstream = copy.deepcopy(program)
    UpstreamConvertLinearToConv2d(upstream)(upstream.graph_module)
    (conv,) = nodes(upstream, CONV)
    assert not is_dequantize(conv.args[1].target)

    converted = run_passes(program, ConvertLinearToConv2d())
    (conv,) = nodes(converted, CONV)
    assert is_dequantize(conv.args[1].target)
    check_computes_like(run_passes(converted, LiftQnnConstants(check_quant_attrs=False)), module, x)

    # AnnotateGetAttr finds the dequantize among all users of a get_attr as well.
    attr_program = run_passes(edge_program(module, x), ParameterToGetAttr("wq"))
    (attr,) = [n for n in attr_program.graph.nodes if n.op == "get_attr"]
    assert not is_dequantize(next(iter(attr.users)).target)
    assert AnnotateGetAttr()(attr_program).modified
    assert attr.meta[QCOM_QUANT_ATTRS]["axis"] == 0


def test_bare_get_attr_conv_weight() -> None:
    module, x = nn.Conv1d(2, 3, 3), torch.randn(1, 2, 6)
    program = run_passes(edge_program(module, x), ParameterToGetAttr("weight"))

    upstream = copy.deepcopy(program)
    with pytest.raises(IndexError):
        UpstreamCanonicalizeConv(upstream)(upstream.graph_module)

    converted = run_passes(program, CanonicalizeConv(), LiftQnnConstants())
    check_runs_like(converted, module, x)


def test_second_graph_rebuild_after_annotate_get_attr() -> None:
    class QuantLinear(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("wq", torch.randint(-100, 100, (6, 8), dtype=torch.int8))
            self.register_buffer("scales", torch.rand(6) / 50 + 0.001)
            self.register_buffer("zps", torch.zeros(6, dtype=torch.int64))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return F.linear(x, DQ_CHANNEL(self.wq, self.scales, self.zps, 0, -127, 127, torch.int8))

    program = run_passes(
        edge_program(QuantLinear(), torch.randn(2, 8)), ConvertLinearToConv2d(), AnnotateGetAttr()
    )
    # A rebuild after AnnotateGetAttr loses the attributes; the QNN lift refuses the result
    # rather than handing QNN a quantized weight it would read as float.
    rebuilt = run_passes(program, ExportPass())
    with pytest.raises(QnnPipelineError, match="rebuilt the graph after AnnotateGetAttr"):
        LiftQnnConstants(check_quant_attrs=True)(rebuilt)
    # While the get_attr -> dequantize chain is intact, running AnnotateGetAttr again restores them.
    assert AnnotateGetAttr()(rebuilt).modified
    lifted = LiftQnnConstants(check_quant_attrs=True)(rebuilt).exported_program
    (dq,) = [n for n in lifted.graph.nodes if is_dequantize(n.target)]
    assert QCOM_QUANT_ATTRS in dq.args[0].meta
    # Once the chain is cut (the dequantize folded away), nothing is left to derive them from.
    (dq,) = [n for n in rebuilt.graph.nodes if is_dequantize(n.target)]
    attr = dq.args[0]
    dq.replace_all_uses_with(attr)
    rebuilt.graph.erase_node(dq)
    attr.meta.pop(QCOM_QUANT_ATTRS)
    assert not AnnotateGetAttr()(rebuilt).modified
    assert QCOM_QUANT_ATTRS not in attr.meta

    # The pipeline refuses orders that rebuild the graph after AnnotateGetAttr.
    table = pipeline.default_dep_table("htp")
    layout = pipeline.executorch_pass("LayoutTransform")
    table[AnnotateGetAttr].remove(layout)
    table[layout].append(AnnotateGetAttr)
    with pytest.raises(PassOrderError, match=r"\['LayoutTransform'\] rebuild the graph after"):
        pipeline.plan("htp", dep_table=table)


def test_the_edge_dequantize_op_sets_are_not_touched() -> None:
    # This package keeps its own q/dq families instead of adding to ExecuTorch's shared sets.
    from executorch.backends.qualcomm.builders.node_visitor import dq_ops, q_ops

    before = (set(q_ops), set(dq_ops))
    import qnn_passes.quant_ops as quant_ops

    assert quant_ops.is_dequantize(exir_ops.edge.torchao.dequantize_affine.default)
    assert (set(q_ops), set(dq_ops)) == before
