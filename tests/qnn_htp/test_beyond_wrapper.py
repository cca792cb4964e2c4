"""Real QNN HTP: what the deprecated wrapper cannot lower, or lowers wrong, lowered right through the canonical flow, or refused.

Each case of ``tests/passes/beyond.py`` (the smallest cut of a pattern of Hugging Face models:
issue 20's decoders, issue 31's static caches, weight norm, dynamic sizes and Swin's windows)
is lowered in a fresh process through the canonical flow (``torch.export.export`` +
``to_edge_transform_and_lower`` with qnn_passes) and through the deprecated wrapper. The
canonical flow must either lower it, run it on the HTP simulator (every call of a case with
decode steps, on one loaded program) and match eager within the tier's float bounds, or refuse
it at lowering time with the ``QnnConfigError`` listed in ``REFUSED``. The wrapper is the
control: it fails or computes wrongly, as the canonical flow did before qnn_passes' fixes
(figures before and after: docs/qnn-htp.md, "Beyond the wrapper"). Cost: 2 small lowerings
per case (a refusal stops before QNN), about 3 s of CPU each in a fresh fork.
"""

from __future__ import annotations

import pytest
from qnn_migrate_tests.passes.beyond import CASES
from qnn_migrate_tests.qnn_htp.fresh import FreshProcessError
from qnn_migrate_tests.qnn_htp.lowering import Lowered
from qnn_migrate_tests.qnn_htp.pairs import assert_matches_reference, lower_flows
from qnn_migrate_tests.qnn_htp.session_cache import SessionCache

pytestmark = pytest.mark.qnn_htp
BUILD = "qnn_migrate_tests.qnn_htp.subjects:beyond"
FLOWS = ("canonical", "deprecated")

# How the wrapper fails each case (ExecuTorch 1.5.1, QNN 2.51): an error it raises, or None
# where it lowers and computes wrong values.
WRAPPER_FAILS: dict[str, str | None] = {
    "qk_norm": None,
    "static_position": "expand: the requested shape has too few dimensions",
    "constant_chain": "Failed to generate Qnn context binary",
    "dynamic_arange": "arange() received an invalid combination of arguments",
    "kv_cache_write": "expand: the requested shape has too few dimensions",
    "kv_cache_held": None,
    "prefill_position": None,
    "static_pow": None,
    "weight_norm_conv": "An error occurred when running the 'LayoutTransform' pass",
    "dynamic_linear": "was not decomposed or delegated",
    "dynamic_rms_norm": "was not decomposed or delegated",
    "dynamic_arange_unsqueeze": "An error occurred when running the 'ExpandBroadcastTensorShape'",
}
# The ops the canonical flow leaves on the CPU.
OUTSIDE: dict[str, set[str]] = {
    "qk_norm": set(),
    "static_position": {"aten.copy.default"},
    # QNN declines the chain, so it stays on the CPU; BroadcastStaticOperands' expand of its
    # float operand (it cannot know QNN will decline the op) lands there with it.
    "constant_chain": {
        "aten.arange.start_step",
        "aten.expand_copy.default",
        "aten.mul.Tensor",
        "aten.view_copy.default",
        "aten.erf.default",
    },
    "kv_cache_write": set(),
    "kv_cache_held": set(),
    "prefill_position": set(),
    "static_pow": set(),
    # QNN's HTP takes no conv whose weight is computed (not static): the weight is computed on
    # QNN, the conv runs on the CPU.
    "weight_norm_conv": {"aten.convolution.default"},
    # QNN 2.51 refuses tensors of rank 6: the window partition's views and permutes run on the
    # CPU, between delegates (the rank-5 spelling delegates whole).
    "window_partition": {"aten.view_copy.default", "aten.permute_copy.default"},
}
# Cases the canonical flow refuses at lowering time, and what its QnnConfigError says.
DYNAMIC = "was exported with dynamic sizes"
REFUSED: dict[str, str] = {
    "dynamic_arange": DYNAMIC,
    "dynamic_linear": DYNAMIC,
    "dynamic_rms_norm": DYNAMIC,
    "dynamic_arange_unsqueeze": DYNAMIC,
}
# Cases where the wrapper lowers the same program right: no control from it (what the test
# shows is a limit, stated in docs/passes.md, not a fix).
WRAPPER_RIGHT = {"window_partition"}


def _op(target: str) -> str:
    # "<EdgeOpOverload: aten.copy.default>: schema = ..." -> "aten.copy.default"
    return target.split(">", 1)[0].removeprefix("<EdgeOpOverload: ")


def test_every_case_has_an_expectation() -> None:
    for case in CASES:
        assert (case.name in OUTSIDE) != (case.name in REFUSED), case.name
        assert (case.name in WRAPPER_FAILS) != (case.name in WRAPPER_RIGHT), case.name


@pytest.mark.parametrize(
    "name", [pytest.param(c.name, marks=pytest.mark.xdist_group(f"beyond-{c.name}")) for c in CASES]
)
def test_canonical_flow_lowers_right_or_refuses(
    qnn_cache: SessionCache,
    name: str,
) -> None:
    results = lower_flows(qnn_cache, BUILD, (name,), FLOWS).results
    new = results["canonical"]
    if name in REFUSED:
        assert isinstance(new, FreshProcessError), "the canonical flow lowered it"
        assert f"QnnConfigError: qnn_transform_passes: method 'forward' {REFUSED[name]}" in str(new)
    else:
        assert isinstance(new, Lowered), f"the canonical flow failed: {new}"
        assert_matches_reference(new, quantized=False)
        assert {_op(t) for t in new.outside["forward"]} == OUTSIDE[name]
        assert new.delegates["forward"] > 0

    # The control: the wrapper fails, or its outputs fail the same bounds.
    old = results["deprecated"]
    if name in WRAPPER_RIGHT:
        assert isinstance(old, Lowered), f"the wrapper failed: {old}"
        assert_matches_reference(old, quantized=False)
        return
    expected = WRAPPER_FAILS[name]
    if expected is None:
        assert isinstance(old, Lowered), f"the wrapper failed: {old}"
        with pytest.raises(AssertionError, match="SNR"):
            assert_matches_reference(old, quantized=False)
    else:
        assert isinstance(old, FreshProcessError), "the wrapper lowered it"
        assert expected in str(old)
