"""The codemod's semantics scenarios on real QNN: original and rewritten scripts give the same delegates.

tests/lowering/test_rewrite_semantics.py shows, under the RecordingQnnBackend double, that each
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
from qnn_migrate_tests.qnn_htp.compare import check_close, mask_signatures
from qnn_migrate_tests.qnn_htp.fresh import FreshProcessError
from qnn_migrate_tests.qnn_htp.pairs import FLOAT_BOUNDS
from qnn_migrate_tests.qnn_htp.scripts import run_script
from qnn_migrate_tests.qnn_htp.session_cache import SessionCache

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


PATCH = "DecomposeFloorDivide.call = add_becomes_sub\n"


def test_a_patched_export_stage_pass_still_applies_after_the_rewrite(
    qnn_cache: SessionCache,
) -> None:
    """The script patches ExecuTorch's DecomposeFloorDivide so that adds become subtractions.
    Rewritten by both targets (the qnn-passes one exports with qnn_export because of the
    patch, QM402), the patched method still runs: the same delegates and payloads as the
    original, and outputs x - y. The control: the canonical flow's spelling (the rewrite of
    the script without the patch, the patch put back) is refused by qnn_transform_passes,
    which would not run ExecuTorch's export stage."""
    scenario = "scenario_patched_export_pass"
    source = (SCENARIOS / f"{scenario}.py").read_text(encoding="utf-8")
    assert source.count(PATCH) == 1
    rewritten = {t: rewrite_code(source, target=t, filename=scenario) for t in TARGETS}
    assert [u.code for u in rewritten["qnn-passes"].unfixable] == ["QM402"]
    assert "qnn_export(" in rewritten["qnn-passes"].code
    assert not rewritten["executorch"].unfixable
    canonical = rewrite_code(source.replace(PATCH, ""), target="qnn-passes", filename=scenario)
    assert "torch.export.export(" in canonical.code and "qnn_export" not in canonical.code
    control = canonical.code.replace("class Add(", PATCH + "\n\nclass Add(", 1)
    old, *new, refused = qnn_cache.outcomes(
        [
            (run_script, (source, scenario)),
            *[(run_script, (rewritten[t].code, f"{scenario}-{t}")) for t in TARGETS],
            (run_script, (control, f"{scenario}-canonical")),
        ]
    )
    assert isinstance(refused, FreshProcessError)
    assert "DecomposeFloorDivide.call was replaced" in str(refused)
    assert not isinstance(old, FreshProcessError), str(old)
    (original,) = old
    assert sum(original.delegates.values()) >= 1, "nothing was delegated to QNN"
    np.testing.assert_allclose(original.outputs["forward"][0], np.full((2, 3), 0.75), rtol=1e-3)
    for target, lowered in zip(TARGETS, new, strict=True):
        assert not isinstance(lowered, FreshProcessError), f"{target}: {lowered}"
        (b,) = lowered
        assert b.delegates == original.delegates and b.outside == original.outside, target
        assert [mask_signatures(p) for p in b.payloads] == [
            mask_signatures(p) for p in original.payloads
        ], target
        np.testing.assert_array_equal(b.outputs["forward"][0], original.outputs["forward"][0])


TARGETS = ("qnn-passes", "executorch")
