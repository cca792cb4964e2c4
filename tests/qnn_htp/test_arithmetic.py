"""The semantics probes on real QNN HTP: each pass that rewrites arithmetic, lowered, computes what its graphs compute on the CPU.

Each bundle of tests/passes/arithmetic.py (one per pass; 3-D and 4-D inputs, reductions over
several dims, every norm order, activations and parameters) is lowered once through the
canonical flow on the real SM8650 compiler and run on the HTP simulator. In the same fresh
child the bundle's edge program is run on the CPU before and after the pass alone
(``arithmetic.cpu_values``; tests/lowering/test_arithmetic.py holds those two equal). Every
simulator output must be within the tier's float bounds of both; integer outputs (argmax)
must equal them. Cost: one small lowering per pass.
"""

from __future__ import annotations

import numpy as np
import pytest
from qnn_migrate_tests.passes.arithmetic import BY_NAME, HTP_BUNDLES
from qnn_migrate_tests.qnn_htp.compare import check_close
from qnn_migrate_tests.qnn_htp.fresh import FreshProcessError
from qnn_migrate_tests.qnn_htp.lowering import Lowered
from qnn_migrate_tests.qnn_htp.pairs import FLOAT_BOUNDS
from qnn_migrate_tests.qnn_htp.probes import arithmetic_probe
from qnn_migrate_tests.qnn_htp.session_cache import SessionCache

pytestmark = pytest.mark.qnn_htp


@pytest.mark.parametrize(
    "name",
    [pytest.param(b.name, marks=pytest.mark.xdist_group(f"arith-{b.name}")) for b in HTP_BUNDLES],
)
def test_the_lowered_pass_computes_what_its_graphs_compute(
    qnn_cache: SessionCache,
    name: str,
) -> None:
    result = qnn_cache.call(arithmetic_probe, name)
    assert not isinstance(result, FreshProcessError), str(result)
    lowered: Lowered = result["lowered"]
    assert lowered.delegates["forward"] >= 1
    htp = lowered.outputs["forward"]
    labels = BY_NAME[name].labels
    assert len(htp) == len(labels)
    for i, label in enumerate(labels):
        for graph in ("before", "after"):
            expected = result[graph][i]
            if np.issubdtype(expected.dtype, np.integer):
                np.testing.assert_array_equal(htp[i], expected, err_msg=f"{label} vs {graph}")
            else:
                check_close(
                    [htp[i]], [expected], what=f"{name}: {label} vs {graph}", **FLOAT_BOUNDS
                )
