"""Numerics: programs after the QNN pipeline compute what the eager model computes.

Float programs (the ones handed to the partitioner) are serialized to a .pte and run in
ExecuTorch's portable runtime. Quantized programs are compared up to the pass before FoldQDQ
(which removes activation q/dq on purpose, changing numerics), by running the program with its
q/dq ops against the converted (q/dq) eager module. Then the QCOM quantization attributes of
every get_attr constant are checked right after AnnotateGetAttr, that is after the graph
rebuilds of I64toI32 and LayoutTransform.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from executorch.exir.pass_base import ExportedProgramPassBase, ExportedProgramPassResult
from qnn_migrate_tests.passes import canonical, flows
from qnn_migrate_tests.passes.zoo import FLOAT_CASES, QUANT_CASES, Case, params

from qnn_passes.quant_ops import QCOM_QUANT_ATTRS, attrs_equal, is_dequantize

# ExecuTorch's portable convolution kernel handles 1-D and 2-D only: any 3-D convolution
# fails there with InvalidArgument (0x12), with or without these passes. Those programs are
# run by PyTorch instead (ExportedProgram.module(), the same edge ops).
NO_PORTABLE_KERNEL = {"conv3d", "conv_transpose3d_output_padding"}


@pytest.mark.parametrize("case", params(FLOAT_CASES))
def test_float_program_matches_eager(case: Case) -> None:
    programs = flows.handed(flows.migrated(case.name), case)
    inputs = flows.inputs_by_method(case)
    if case.name in NO_PORTABLE_KERNEL:
        with torch.no_grad():
            outputs = {m: [p.module()(*inputs[m])] for m, p in programs.items()}
    else:
        outputs = flows.run_portable(programs, inputs)
    for method, expected in flows.eager(case).items():
        torch.testing.assert_close(outputs[method][0], expected, rtol=1e-4, atol=1e-5)


def _upto(name: str):  # type: ignore[no-untyped-def]
    """Keep the passes before the one called ``name`` (the QNN lift still follows)."""

    def edit(passes: list[Any]) -> list[Any]:
        names = [type(p).__name__ for p in passes]
        return passes[: names.index(name)]

    return edit


@pytest.mark.parametrize("case", params(QUANT_CASES))
def test_quantized_program_before_fold_qdq_matches_eager(case: Case) -> None:
    programs = flows.handed(flows.run_migrated(case, edit_passes=_upto("FoldQDQ")), case)
    expected = flows.eager(case)
    for method, program in programs.items():
        assert any(is_dequantize(n.target) for n in program.graph.nodes)
        with torch.no_grad():
            actual = program.module()(*flows.inputs_by_method(case)[method])
        torch.testing.assert_close(actual, expected[method], rtol=1e-4, atol=1e-4)


class _SnapshotGetAttrs(ExportedProgramPassBase):
    """Test probe: records each get_attr constant that a dequantize reads, with its meta."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[torch.Tensor, dict[str, Any] | None, Any]] = []

    def call(self, exported_program: Any) -> ExportedProgramPassResult:
        gm = exported_program.graph_module
        for node in gm.graph.nodes:
            dqs = [u for u in node.users if is_dequantize(u.target) and u.args[0] is node]
            if node.op == "get_attr" and dqs:
                tensor = getattr(gm, node.target)
                self.seen.append((tensor, node.meta.get(QCOM_QUANT_ATTRS), dqs[0].target))
        return ExportedProgramPassResult(exported_program, False)


def _same_but_block_size(new: dict[str, Any], old: dict[str, Any], rank: int) -> bool:
    """Equal, except that an affine block_size may have gained trailing unit dimensions."""
    if "block_size" in old:
        old = {**old, "block_size": [*old["block_size"], *([1] * (rank - len(old["block_size"])))]}
    return attrs_equal(new, old)


@pytest.mark.parametrize("case", params(QUANT_CASES))
def test_every_get_attr_has_quant_attrs_after_graph_rebuilds(case: Case) -> None:
    probe = _SnapshotGetAttrs()

    def edit(passes: list[Any]) -> list[Any]:
        names = [type(p).__name__ for p in passes]
        at = names.index("AnnotateGetAttr")
        assert {"I64toI32", "LayoutTransform"} <= set(names[:at])
        return [*passes[: at + 1], probe, *passes[at + 1 :]]

    flows.run_migrated(case, edit_passes=edit)
    assert probe.seen, "the case should replace at least one quantized weight"
    # Upstream keeps each replaced weight as an orphan input, annotated by AnnotateQuantAttrs
    # before it was replaced: the new constant must carry the same encoding.
    upstream = flows.handed(flows.deprecated(case.name), case)
    originals = {}
    for program in upstream.values():
        for target in canonical.orphaned_inputs(program):
            node = next(
                n
                for n in program.graph.nodes
                if n.op == "placeholder"
                and any(
                    getattr(s.arg, "name", None) == n.name and s.target == target
                    for s in program.graph_signature.input_specs
                )
            )
            value = program.state_dict.get(target, program.constants.get(target))
            originals[canonical.digest(value.flatten())] = node.meta[QCOM_QUANT_ATTRS]
    assert originals
    for tensor, attrs, dq_target in probe.seen:
        assert attrs is not None
        assert attrs["encoding"] == dq_target
        old = originals[canonical.digest(tensor.flatten())]
        assert _same_but_block_size(attrs, old, tensor.dim())
