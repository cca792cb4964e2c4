"""The migrated flow hands QNN's partitioner the same program as the deprecated wrapper, for every zoo model.

Both flows run for real (torch 2.13, ExecuTorch 1.5.1). Only what needs the QNN SDK is
replaced, by the RecordingQnnBackend double (tests/doubles/qnn_backend.py): the backend behind
QnnPartitioner.partition (it records the program it is handed and delegates nothing) and the
QNN manager context (it records the compile specs it is entered with).

The comparison is exact on graph structure, op arguments, placeholder kinds, constant values
and every QNN meta entry (tests/passes/canonical.py); names of generated constants may differ.
The signatures differ in exactly two documented ways, both upstream leftovers this package
does not produce: the weights a pass replaced stay as unused inputs upstream, and a weight
shared by several ops is lifted once per use upstream.
"""

from __future__ import annotations

import pytest
from qnn_migrate_tests.passes import canonical, flows
from qnn_migrate_tests.passes.canonical import upstream_leftovers
from qnn_migrate_tests.passes.zoo import CASES, Case, params

# case -> methods in which a pass replaces a weight (conv1d -> conv2d, dilated transposed
# conv, linear -> conv2d); everywhere else no input may go missing.
REPLACES_WEIGHTS: dict[str, set[str]] = {
    **{
        c.name: {"forward"}
        for c in CASES
        if c.name.startswith(("conv1d", "conv_transpose", "quant_conv1d"))
        or c.convert_linear_to_conv2d
    },
    "multi_method": {"encode"},
}


@pytest.mark.parametrize("case", params(CASES))
def test_partitioner_receives_the_same_program(case: Case) -> None:
    old_record = flows.deprecated(case.name)
    new_record = flows.migrated(case.name)
    old = flows.handed(old_record, case)
    new = flows.handed(new_record, case)
    assert list(old) == list(new) == flows.method_names(case)

    for method in old:
        orphans, duplicates = upstream_leftovers(old[method])
        expected = canonical.without_inputs(old[method], orphans + duplicates)
        actual = canonical.canonical(new[method])
        assert actual["graph"] == expected["graph"], method
        assert actual["nodes"] == expected["nodes"], method
        assert actual["outputs"] == expected["outputs"], method
        assert actual["inputs"] == expected["inputs"], method
        # What the migrated flow leaves out is exactly what upstream leaves behind.
        assert canonical.orphaned_inputs(new[method]) == []
        assert upstream_leftovers(new[method]) == ([], [])
        assert bool(orphans) == (method in REPLACES_WEIGHTS.get(case.name, set())), orphans

    # The partitioners and the manager context got the same configuration.
    for a, b in zip(old_record.handoffs, new_record.handoffs, strict=True):
        assert [(s.key, s.value) for s in a.compile_specs] == [
            (s.key, s.value) for s in b.compile_specs
        ]
        assert (a.skip_node_id_set, a.skip_node_op_set, a.skip_mutable_buffer) == (
            b.skip_node_id_set,
            b.skip_node_op_set,
            b.skip_mutable_buffer,
        )
    assert [
        {k: [(s.key, s.value) for s in v] for k, v in c.items()} for c in old_record.contexts
    ] == [{k: [(s.key, s.value) for s in v] for k, v in c.items()} for c in new_record.contexts]


# Cases whose replacement weight has other bytes than the weight it replaces (a dilated
# kernel): there the orphan upstream keeps also costs .pte bytes. For a pure reshape it costs a
# tensor value but no data, because ExecuTorch's emitter stores identical constant bytes once.
CHANGES_WEIGHT_BYTES = {
    "conv_transpose1d_dilation_groups",
    "conv_transpose2d_dilation_output_padding",
    "conv_transpose3d_output_padding",
}
# torchao's dequantize_affine has no ExecuTorch out variant: only a QNN delegate carries it,
# so a program that keeps it outside a delegate cannot be serialized here.
NOT_SERIALIZABLE = {"quant_linear_block_16a4w"}


@pytest.mark.parametrize("case", params(tuple(c for c in CASES if c.name in REPLACES_WEIGHTS)))
def test_no_orphaned_constants_and_fewer_constant_bytes(case: Case) -> None:
    old = flows.handed(flows.deprecated(case.name), case)
    new = flows.handed(flows.migrated(case.name), case)
    leftover_bytes = leftover_inputs = 0
    for method in old:
        orphans, duplicates = upstream_leftovers(old[method])
        if method not in REPLACES_WEIGHTS[case.name]:
            assert orphans == duplicates == []
            continue
        method_bytes = sum(
            v.numel() * v.element_size()
            for t in orphans + duplicates
            for v in [old[method].state_dict.get(t, old[method].constants.get(t))]
        )
        assert method_bytes > 0
        assert flows.constant_bytes(old[method]) - flows.constant_bytes(new[method]) == method_bytes
        leftover_bytes += method_bytes
        leftover_inputs += len(orphans) + len(duplicates)
    if case.name in NOT_SERIALIZABLE:
        return
    old_pte, new_pte = flows.serialize(old), flows.serialize(new)
    assert (
        flows.serialized_constants(old_pte) - flows.serialized_constants(new_pte) == leftover_inputs
    )
    if case.name in CHANGES_WEIGHT_BYTES:
        assert len(old_pte.buffer) - len(new_pte.buffer) >= leftover_bytes
