"""GPU and LPAI: the pass-manager variants ExecuTorch defines, lowered both ways under the double.

LPAI's pipeline ends with LpaiPartitionFallbackSupport, which asks the QNN backend which ops it
supports; RecordingQnnBackend answers "all" in place of the backend (there is no SDK here).
"""

from __future__ import annotations

import pytest
from qnn_migrate_tests.passes import canonical, flows
from qnn_migrate_tests.passes.zoo import BY_NAME


@pytest.mark.parametrize("backend", ["gpu", "lpai"])
@pytest.mark.parametrize("name", ["conv1d_then_linear", "linear_to_conv2d_3d"])
def test_variant_hands_over_the_same_program(backend: str, name: str) -> None:
    case = BY_NAME[name]
    old_record = flows.run_deprecated(case, backend)
    new_record = flows.run_migrated(case, backend)
    old, new = flows.handed(old_record, case)["forward"], flows.handed(new_record, case)["forward"]
    orphans = canonical.orphaned_inputs(old)
    assert orphans and canonical.orphaned_inputs(new) == []
    assert canonical.canonical(new) == canonical.without_inputs(old, orphans)
    assert (old_record.support_queries > 0) == (backend == "lpai")
    assert new_record.support_queries == old_record.support_queries
