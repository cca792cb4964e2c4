"""The canonical flow - the user's own torch.export.export, then to_edge_transform_and_lower - hands QNN's partitioner what the deprecated wrapper does.

For every zoo model the program handed to ``QnnPartitioner.partition`` (recorded by the
RecordingQnnBackend double) is compared with the wrapper's exactly, as in
test_differential.py: the zoo's models hold none of the ops QNN's export-stage passes
rewrite, and the migrated passes at the start of the to-edge stage leave them untouched.
"""

from __future__ import annotations

import pytest
from qnn_migrate_tests.passes import canonical, flows
from qnn_migrate_tests.passes.canonical import upstream_leftovers
from qnn_migrate_tests.passes.zoo import CASES, Case, params


@pytest.mark.parametrize("case", params(CASES))
def test_canonical_flow_hands_over_the_wrappers_program(case: Case) -> None:
    old = flows.handed(flows.deprecated(case.name), case)
    new_record = flows.canonical_flow(case.name)
    new = flows.handed(new_record, case)
    assert list(old) == list(new) == flows.method_names(case)
    for method in old:
        orphans, duplicates = upstream_leftovers(old[method])
        expected = canonical.without_inputs(old[method], orphans + duplicates)
        assert canonical.canonical(new[method]) == expected, method
        assert canonical.orphaned_inputs(new[method]) == []
    assert [
        {k: [(s.key, s.value) for s in v] for k, v in c.items()} for c in new_record.contexts
    ] == [
        {k: [(s.key, s.value) for s in v] for k, v in c.items()}
        for c in flows.deprecated(case.name).contexts
    ]
