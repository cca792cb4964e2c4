"""Real QNN HTP (SM8650 compiler, HTP simulator): the canonical flow against the deprecated wrapper.

Every zoo model and every export-stage probe (tests/passes/probes.py, HTP ones) is lowered
twice, each time in a fresh process of the real-QNN tier (tests/qnn_htp/README.md):
through ``to_edge_transform_and_lower_to_qnn`` and through the canonical flow - the user's own
``torch.export.export(..., strict=True)`` per method, then ``to_edge_transform_and_lower`` with
qnn_passes. Both must give the same QnnBackend delegates and the same ops outside them, and
simulator outputs within 1 LSB of each other (fp16 ulp for float, the output's scale for
quantized); each is also held to the tier's bounds against eager / the fake-quant model,
which an all-zero output fails (the tier's controls are in tests/qnn_htp/test_infrastructure.py).

Lowerings come from the tier's session cache (qnn_htp.session_cache), keyed by LoweringSpec: a
zoo model's deprecated lowering here is the very one tests/qnn_htp/test_zoo.py compares with
the migrated flow, lowered once per session whichever test or xdist worker asks first.
"""

from __future__ import annotations

import pytest
from qnn_migrate_tests.passes.probes import PROBES
from qnn_migrate_tests.passes.zoo import CASES
from qnn_migrate_tests.qnn_htp.fresh import FreshProcessError
from qnn_migrate_tests.qnn_htp.lowering import Lowered
from qnn_migrate_tests.qnn_htp.pairs import (
    assert_matches_reference,
    assert_outputs_within_lsb,
    assert_same_structure,
    lower_flows,
)
from qnn_migrate_tests.qnn_htp.session_cache import SessionCache
from qnn_migrate_tests.qnn_htp.zoo_outcomes import (
    FAILS_IN_BOTH,
    FAILS_ONLY_DEPRECATED,
    NUMERICS_WRONG_IN_BOTH,
)

pytestmark = pytest.mark.qnn_htp
ZOO = "qnn_migrate_tests.qnn_htp.subjects:zoo"
PROBE = "qnn_migrate_tests.qnn_htp.subjects:probe"
HTP_PROBES = [p.name for p in PROBES if p.backend == "htp"]
# Probes only the deprecated wrapper cannot lower (ExecuTorch 1.5.1): what it fails with, why.
PROBE_FAILS_ONLY_DEPRECATED = {
    "autocast": (
        "DecomposeWrapWithAutocast",
        "upstream's DecomposeWrapWithAutocast fails on every wrap_with_autocast region",
    ),
}


FLOWS = ("deprecated", "canonical")


def both(cache: SessionCache, build: str, name: str) -> dict[str, Lowered | FreshProcessError]:
    return lower_flows(cache, build, (name,), FLOWS).results


def _ok(result: Lowered | FreshProcessError, flow: str) -> Lowered:
    if isinstance(result, FreshProcessError):
        raise AssertionError(f"the {flow} flow failed: {result}")
    return result


def _compare(
    results: dict[str, Lowered | FreshProcessError], quantized: bool, *, reference: bool = True
) -> None:
    old, new = _ok(results["deprecated"], "deprecated"), _ok(results["canonical"], "canonical")
    assert_same_structure(old, new)
    assert sum(new.delegates.values()) > 0
    assert_outputs_within_lsb(old, new)
    if reference:
        assert_matches_reference(new, quantized)
        assert_matches_reference(old, quantized)


@pytest.mark.parametrize(
    "name",
    [pytest.param(c.name, marks=pytest.mark.xdist_group(f"canon-{c.name}")) for c in CASES],
)
def test_zoo_model_lowers_alike(qnn_cache: SessionCache, name: str) -> None:
    results = both(qnn_cache, ZOO, name)
    if name in FAILS_IN_BOTH:
        message = FAILS_IN_BOTH[name][0]
        for flow in results:
            assert isinstance(results[flow], FreshProcessError), flow
            assert message in str(results[flow]), flow
        return
    if name in FAILS_ONLY_DEPRECATED:
        assert FAILS_ONLY_DEPRECATED[name][0] in str(results["deprecated"])
        new = _ok(results["canonical"], "canonical")
        assert_matches_reference(new, quantized=False)
        return
    case = next(c for c in CASES if c.name == name)
    # Where QNN computes a model wrongly in both flows (the tier's list), the flows must still
    # agree with each other.
    _compare(results, quantized=not case.is_float, reference=name not in NUMERICS_WRONG_IN_BOTH)


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=[pytest.mark.xdist_group(f"canon-{n}")]) for n in HTP_PROBES],
)
def test_probe_lowers_alike(qnn_cache: SessionCache, name: str) -> None:
    results = both(qnn_cache, PROBE, name)
    if name in PROBE_FAILS_ONLY_DEPRECATED:
        assert PROBE_FAILS_ONLY_DEPRECATED[name][0] in str(results["deprecated"])
        new = _ok(results["canonical"], "canonical")
        assert sum(new.delegates.values()) > 0 and all(not v for v in new.outside.values())
        assert_matches_reference(new, quantized=False)
        return
    _compare(results, quantized=False)
