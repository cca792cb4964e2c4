"""The codemod's semantics scenarios on real QNN: original and rewritten scripts give the same delegates.

tests/passes/test_rewrite_semantics.py shows, under the RecordingQnnBackend double, that each
scenario (every parameter of the deprecated call, a single module, a dict of methods, calls in
a comprehension) hands the partitioner the same programs as written and as rewritten (both
targets). Here the same scripts lower through the real QNN HTP compiler, each run in a fresh
process: the same delegates and ops outside, payloads byte-identical after masking, the
same simulator outputs, and those within the tier's float bounds of eager.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qnn_htp.compare import check_close, mask_signatures
from qnn_htp.fresh import FreshProcessError
from qnn_htp.pairs import FLOAT_BOUNDS
from qnn_htp.scripts import run_script
from qnn_htp.session_cache import SessionCache
from qnn_migrate.codemods.engine import rewrite_code

pytestmark = [pytest.mark.qnn_htp, pytest.mark.xdist_group("qnn-codemod-scenarios")]
SCENARIOS = Path(__file__).resolve().parents[1] / "codemods" / "semantics"
CASES = [
    ("scenario_single_module", "qnn-passes"),
    ("scenario_single_module", "executorch"),
    ("scenario_dict_of_methods", "qnn-passes"),
    ("scenario_dict_of_methods", "executorch"),
    ("scenario_comprehension", "qnn-passes"),
]
# Scenarios whose original already fails on real QNN; the rewritten script must fail alike.
FAILS_AS_WRITTEN = {
    "scenario_single_module": (
        "Failed to generate Qnn context binary",
        "the batch dimension is dynamic (Dim 1..8): QNN 2.51 cannot build the context",
    ),
}
# Where the rewritten script fails otherwise than the original, and why (target -> message).
FAILS_OTHERWISE_REWRITTEN = {
    ("scenario_single_module", "qnn-passes"): (
        "QnnConfigError: qnn_transform_passes: method 'forward' was exported with dynamic sizes",
        "qnn_passes refuses a dynamic size before any QNN work, with the way out (one method "
        "per size: qnn_passes/static_shapes.py), where the original fails in QNN's compile",
    ),
}


@pytest.mark.parametrize(("scenario", "target"), CASES, ids=[f"{s}-{t}" for s, t in CASES])
def test_rewritten_scenario_lowers_to_the_same_delegates(
    qnn_cache: SessionCache, scenario: str, target: str
) -> None:
    source = (SCENARIOS / f"{scenario}.py").read_text(encoding="utf-8")
    rewritten = rewrite_code(source, target=target, filename=scenario)
    assert rewritten.changed and not rewritten.unfixable
    # The original's run is shared by its targets' tests (the session cache), the two side by side.
    old, new = qnn_cache.outcomes(
        [(run_script, (source, scenario)), (run_script, (rewritten.code, f"{scenario}-{target}"))]
    )
    if scenario in FAILS_AS_WRITTEN:
        message, _why = FAILS_AS_WRITTEN[scenario]
        assert isinstance(old, FreshProcessError) and message in str(old)
        message, _why = FAILS_OTHERWISE_REWRITTEN.get((scenario, target), (message, _why))
        assert isinstance(new, FreshProcessError) and message in str(new)
        return
    assert not isinstance(old, FreshProcessError), str(old)
    assert not isinstance(new, FreshProcessError), str(new)
    assert len(new) == len(old) >= 1
    assert sum(sum(o.delegates.values()) for o in old) >= 1, "nothing was delegated to QNN"
    for a, b in zip(old, new, strict=True):
        assert b.methods == a.methods
        assert b.delegates == a.delegates
        assert b.outside == a.outside
        assert [mask_signatures(p) for p in b.payloads] == [mask_signatures(p) for p in a.payloads]
        for method in a.methods:
            for x, y in zip(a.outputs[method], b.outputs[method], strict=True):
                np.testing.assert_array_equal(y, x)
            # Both equal is not enough, both can be wrong: the original's outputs (so the
            # rewritten's) against eager, within the tier's float bounds.
            check_close(a.outputs[method], a.reference[method], what=method, **FLOAT_BOUNDS)
