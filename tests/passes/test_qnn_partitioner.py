"""QnnEdgePartitioner's own parts: a builder that raises declines its op, constant-only partitions stay on the CPU, and mutable buffers QNN cannot hold right stay program inputs.

The real partitioner (its QNN op-support checks need a QNN backend) is run on real QNN in
tests/qnn_htp/test_beyond_wrapper.py; here each part runs on the edge program of the smallest
module that needs it, with torch's own ``create_op_support`` as the op-support answer.
"""

from __future__ import annotations

import logging

import pytest
import torch
from executorch.exir.backend.canonical_partitioners.pattern_op_partitioner import (
    generate_partitions_from_list_of_nodes,
)
from executorch.exir.dialects._ops import ops as exir_ops
from qnn_migrate_tests.passes.beyond import (
    ConstantChain,
    DynamicArange,
    KvCacheHeld,
    StaticPosition,
)
from qnn_migrate_tests.passes.edge import edge_program
from qnn_migrate_tests.passes.zoo import Conv1dWithState
from torch.export import Dim
from torch.fx.passes.operator_support import create_op_support

from qnn_passes.qnn_partitioner import (
    DeclineOnError,
    graph_inputs,
    keep_fed_partitions,
    reads_initial_contents,
    untag_mutable_buffers,
    untag_split_buffers,
)

_aten = exir_ops.edge.aten
TAG = "delegation_tag"


def _arange_builder_fails(submodules: object, node: torch.fx.Node) -> bool:
    if node.target == _aten.arange.start_step:
        # What QNN's arange builder raises on a symbolic end.
        raise TypeError("arange() received an invalid combination of arguments")
    return node.op == "call_function"


def _dynamic() -> torch.export.ExportedProgram:
    module, x = DynamicArange(), torch.randn(1, 8, 4)
    program = torch.export.export(module, (x,), dynamic_shapes=({1: Dim("seq", min=2, max=16)},))
    from executorch.exir import EdgeCompileConfig, to_edge

    return to_edge(
        program, compile_config=EdgeCompileConfig(_check_ir_validity=False)
    ).exported_program()


def test_an_op_whose_builder_raises_is_declined_with_the_reason_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    program = _dynamic()
    checker = DeclineOnError(create_op_support(_arange_builder_fails))
    with caplog.at_level(logging.INFO, logger="qnn_passes.qnn_partitioner"):
        partitions = generate_partitions_from_list_of_nodes(
            program.graph_module, op_support=checker
        )
    inside = {n.target for p in partitions for n in p.nodes}
    assert _aten.arange.start_step not in inside and _aten.mul.Tensor in inside
    ((name, reason),) = checker.declined.items()
    assert name.startswith("aten_arange") and reason.startswith("TypeError: arange()")
    assert f"QNN declines node '{name}' (aten.arange.start_step)" in caplog.text


def test_control_without_it_the_builder_error_ends_partitioning() -> None:
    with pytest.raises(TypeError, match="invalid combination"):
        generate_partitions_from_list_of_nodes(
            _dynamic().graph_module, op_support=create_op_support(_arange_builder_fails)
        )


def test_a_partition_that_reads_only_constants_is_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    program = edge_program(ConstantChain(), torch.randn(2, 8))
    not_add = create_op_support(
        lambda _, n: n.op == "call_function" and n.target != _aten.add.Tensor
    )
    partitions = generate_partitions_from_list_of_nodes(program.graph_module, op_support=not_add)
    with caplog.at_level(logging.INFO, logger="qnn_passes.qnn_partitioner"):
        kept, dropped = keep_fed_partitions(partitions, program)
    assert not kept and len(dropped) == 1
    assert _aten.arange.start_step in {n.target for n in dropped[0].nodes}
    assert "reads only constants" in caplog.text


def test_control_a_partition_that_reads_the_input_is_kept() -> None:
    program = edge_program(ConstantChain(), torch.randn(2, 8))
    every_op = create_op_support(lambda _, n: n.op == "call_function")
    partitions = generate_partitions_from_list_of_nodes(program.graph_module, op_support=every_op)
    kept, dropped = keep_fed_partitions(partitions, program)
    assert len(kept) == 1 and not dropped
    assert [n.name for n in graph_inputs(kept[0].nodes, program)] == ["x"]


def _tag_readers(program: torch.export.ExportedProgram, *, writer_too: bool) -> None:
    # What tag_mutated_buffer leaves when QNN takes the buffer's readers (the delegate owns the
    # buffer), and, with writer_too, the op that writes its new value as well.
    placeholder = next(n for n in program.graph.nodes if n.name == "b_position")
    placeholder.meta[TAG] = "qnn_0"
    for user in placeholder.users:
        user.meta[TAG] = "qnn_0"
    if writer_too:
        for value in program.graph.output_node().args[0]:
            value.meta[TAG] = "qnn_0"


def test_a_buffer_written_outside_its_delegate_stays_a_program_input() -> None:
    program = edge_program(StaticPosition(), torch.randn(1, 8), torch.tensor([3]))
    _tag_readers(program, writer_too=False)
    assert untag_split_buffers(program) == ["position"]
    placeholder = next(n for n in program.graph.nodes if n.name == "b_position")
    assert TAG not in placeholder.meta


def test_control_a_buffer_its_delegate_writes_stays_in_it() -> None:
    program = edge_program(StaticPosition(), torch.randn(1, 8), torch.tensor([3]))
    _tag_readers(program, writer_too=True)
    assert untag_split_buffers(program) == []


def _tag_everything(program: torch.export.ExportedProgram) -> None:
    # What QnnPartitioner leaves when QNN takes every op: tag_nodes (which also gives the last
    # delegate every placeholder of a buffer or parameter that has no user) and
    # tag_mutated_buffer (a buffer goes to the delegate of its readers).
    signature = program.graph_signature
    for node in program.graph.nodes:
        if node.op == "call_function" or (
            node.op == "placeholder"
            and (
                node.name in signature.inputs_to_buffers
                or node.name in signature.inputs_to_parameters
            )
        ):
            node.meta[TAG] = "qnn_0"


def _untagged(program: torch.export.ExportedProgram) -> set[str]:
    signature = program.graph_signature
    return {
        signature.inputs_to_buffers[n.name]
        for n in program.graph.nodes
        if n.op == "placeholder" and n.name in signature.inputs_to_buffers and TAG not in n.meta
    }


def test_caches_read_before_they_are_written_stay_program_inputs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # QNN's runtime would hold them in memory it never initialises (issue 31: 1.3e5 read back).
    program = edge_program(KvCacheHeld(caches=2), torch.randn(1, 2, 1, 16), torch.tensor([1]))
    _tag_everything(program)
    with caplog.at_level(logging.INFO, logger="qnn_passes.qnn_partitioner"):
        untagged = untag_mutable_buffers(program)
    assert sorted(untagged) == ["cache0", "cache1"]
    assert all("initial contents" in why for why in untagged.values())
    assert _untagged(program) == {"cache0", "cache1"}
    assert "stays a program input" in caplog.text


def test_a_buffer_written_and_never_read_stays_a_program_input() -> None:
    program = edge_program(Conv1dWithState(), torch.randn(1, 4, 9))
    _tag_everything(program)
    (placeholder,) = [n for n in program.graph.nodes if n.name == "b_last_mean"]
    assert not placeholder.users  # to-edge folded the copy away
    assert untag_mutable_buffers(program) == {
        "last_mean": "the program writes it but never reads it"
    }


def test_control_a_buffer_only_copied_into_stays_with_its_delegate() -> None:
    # length.copy_(pos[0]) reads the buffer's shape only: its initial contents are never read.
    program = edge_program(StaticPosition(), torch.randn(1, 8), torch.tensor([3]))
    (placeholder,) = [n for n in program.graph.nodes if n.name == "b_position"]
    assert not reads_initial_contents(placeholder)
    _tag_everything(program)
    assert untag_mutable_buffers(program) == {}
    assert TAG in placeholder.meta
    # ... and a buffer whose contents are read is told apart.
    (cache,) = [
        n
        for n in edge_program(
            KvCacheHeld(caches=1), torch.randn(1, 2, 1, 16), torch.tensor([1])
        ).graph.nodes
        if n.name == "b_cache0"
    ]
    assert reads_initial_contents(cache)


def test_an_rms_norm_with_a_computed_weight_is_not_kept_whole() -> None:
    from qnn_migrate_tests.passes import flows

    from qnn_passes.qnn_partitioner import QnnEdgePartitioner

    class Norms(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.rand(8))

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            constant = torch.nn.functional.rms_norm(x, (8,), self.w)
            computed = torch.nn.functional.rms_norm(x, (8,), self.w + 0.5)
            return constant, computed

    program = torch.export.export(Norms(), (torch.randn(2, 3, 8),))
    ops, keep = QnnEdgePartitioner(flows.specs()).ops_to_not_decompose(program)
    assert torch.ops.aten.rms_norm.default in ops and keep is not None
    norms = [n for n in program.graph.nodes if n.target == torch.ops.aten.rms_norm.default]
    # QNN's builder takes the weight only as a constant: the second would be declined whole.
    assert [keep(n) for n in norms] == [True, False]


def test_a_quantized_models_norm_weight_counts_as_constant() -> None:
    """A quantized model's weight reaches rms_norm through quantize/dequantize ops: still a
    constant to QNN's builder (FoldQDQ folds the ops), so the norm is kept whole and
    RecomposeRmsNorm is not handed its decomposition (quantized llama failed there). The
    control: a weight computed before its quantize is not constant."""
    from qnn_migrate_tests.passes import flows

    from qnn_passes.qnn_partitioner import QnnEdgePartitioner

    qd = torch.ops.quantized_decomposed
    q = (0.01, 0, -128, 127, torch.int8)

    class QdqNorms(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.rand(8))

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            static = qd.dequantize_per_tensor(qd.quantize_per_tensor(self.w, *q), *q)
            computed = qd.dequantize_per_tensor(qd.quantize_per_tensor(self.w * 2, *q), *q)
            return (
                torch.nn.functional.rms_norm(x, (8,), static),
                torch.nn.functional.rms_norm(x, (8,), computed),
            )

    program = torch.export.export(QdqNorms(), (torch.randn(2, 3, 8),))
    _, keep = QnnEdgePartitioner(flows.specs()).ops_to_not_decompose(program)
    assert keep is not None
    norms = [n for n in program.graph.nodes if n.target == torch.ops.aten.rms_norm.default]
    assert [keep(n) for n in norms] == [True, False]
