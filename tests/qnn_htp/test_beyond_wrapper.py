"""Real QNN HTP: what the deprecated wrapper cannot lower, lowered right through the canonical flow.

Each case of ``tests/passes/beyond.py`` (the smallest cut of a Hugging Face decoder pattern) is
lowered in a fresh process through the canonical flow (``torch.export.export`` +
``to_edge_transform_and_lower`` with qnn_passes) and through the deprecated wrapper. The
canonical flow must lower it, run it on the HTP simulator and match eager within the tier's
float bounds; the wrapper, the control, fails or computes it wrongly, as the canonical flow
did before qnn_passes' fixes (figures before and after: docs/qnn-htp.md, "Beyond the
wrapper"). Cost: 8 small lowerings, about 3 s of CPU each in a fresh fork.
"""

from __future__ import annotations

import pytest
from passes.beyond import BY_NAME, CASES

from qnn_htp.conftest import qnn, qnn_cache, qnn_sdk  # noqa: F401 - the tier's fixtures
from qnn_htp.fresh import FreshProcessError
from qnn_htp.lowering import Lowered
from qnn_htp.pairs import assert_matches_reference, lower_flows
from qnn_htp.session_cache import SessionCache
from qnn_htp.subjects import Subject

pytestmark = pytest.mark.qnn_htp
BUILD = "qnn_htp.test_beyond_wrapper:subject"
FLOWS = ("canonical", "deprecated")

# How the wrapper fails each case (ExecuTorch 1.5.1, QNN 2.51): an error it raises, or None
# where it lowers and computes wrong values.
WRAPPER_FAILS: dict[str, str | None] = {
    "qk_norm": None,
    "static_position": "expand: the requested shape has too few dimensions",
    "constant_chain": "Failed to generate Qnn context binary",
    "dynamic_arange": "arange() received an invalid combination of arguments",
}
# The ops the canonical flow leaves on the CPU (dynamic_arange: at least these; QNN takes no
# dynamic shape, so nothing of it is delegated).
OUTSIDE: dict[str, set[str]] = {
    "qk_norm": set(),
    "static_position": {"aten.copy.default"},
    "constant_chain": {
        "aten.arange.start_step",
        "aten.mul.Tensor",
        "aten.view_copy.default",
        "aten.erf.default",
    },
    "dynamic_arange": {"aten.arange.start_step"},
}


def subject(name: str) -> Subject:
    case = BY_NAME[name]
    model, inputs = case.build()
    return Subject(model, inputs, quantized=False, dynamic_shapes=case.dynamic_shapes())


def _op(target: str) -> str:
    # "<EdgeOpOverload: aten.copy.default>: schema = ..." -> "aten.copy.default"
    return target.split(">", 1)[0].removeprefix("<EdgeOpOverload: ")


@pytest.mark.parametrize(
    "name", [pytest.param(c.name, marks=pytest.mark.xdist_group(f"beyond-{c.name}")) for c in CASES]
)
def test_canonical_flow_lowers_what_the_wrapper_cannot(
    qnn_cache: SessionCache,  # noqa: F811
    name: str,
) -> None:
    results = lower_flows(qnn_cache, BUILD, (name,), FLOWS).results
    new = results["canonical"]
    assert isinstance(new, Lowered), f"the canonical flow failed: {new}"
    assert_matches_reference(new, quantized=False)
    outside = {_op(t) for t in new.outside["forward"]}
    if name == "dynamic_arange":
        assert OUTSIDE[name] <= outside, outside
    else:
        assert outside == OUTSIDE[name]
        assert new.delegates["forward"] > 0

    # The control: the wrapper fails, or its outputs fail the same bounds.
    old = results["deprecated"]
    expected = WRAPPER_FAILS[name]
    if expected is None:
        assert isinstance(old, Lowered), f"the wrapper failed: {old}"
        with pytest.raises(AssertionError, match="SNR"):
            assert_matches_reference(old, quantized=False)
    else:
        assert isinstance(old, FreshProcessError), "the wrapper lowered it"
        assert expected in str(old)
