"""Every zoo model (tests/passes/zoo.py) on real QNN HTP (SM8650), deprecated wrapper vs qnn_passes' flow.

Each flow lowers in its own fresh process. For every case: the same QnnBackend delegates and the
same ops outside them; delegate payloads byte-identical once the QNN context signature is
masked (or, where a payload legitimately differs, listed below with the reason, simulator
outputs within 1 LSB); simulator outputs against eager (float) or the fake-quant model
(quantized), with bounds an all-zero output fails. Extra precisions quantize float zoo models
with every dtype QnnQuantizer offers here.
"""

from __future__ import annotations

import pytest
from qnn_migrate_tests.passes.zoo import CASES, FLOAT_CASES
from qnn_migrate_tests.qnn_htp.pairs import (
    assert_matches_reference,
    assert_outputs_within_lsb,
    assert_payloads_nearly_equal,
    assert_same_structure,
    lower_both,
    payloads_identical,
)
from qnn_migrate_tests.qnn_htp.session_cache import SessionCache
from qnn_migrate_tests.qnn_htp.subjects import OPTION_VARIANTS
from qnn_migrate_tests.qnn_htp.zoo_outcomes import (
    COMPILE_NOT_DETERMINISTIC,
    FAILS_IN_BOTH,
    FAILS_ONLY_DEPRECATED,
    NUMERICS_WRONG_IN_BOTH,
    PAYLOAD_DIFFERS,
)

pytestmark = pytest.mark.qnn_htp
ZOO = "qnn_migrate_tests.qnn_htp.subjects:zoo"
# Extra precisions: (float zoo case, precision), quantized here with QnnQuantizer; and option
# variants (subjects.OPTION_VARIANTS).
PRECISIONS = [
    *[("linear_3d", p) for p in ("8a8w", "16a4w", "16a8w", "16a16w", "fp16a8w", "16a4w_block")],
    *[("linear_3d", p) for p in ("8a8w_qat", "16a4w_qat")],
    *[("conv1d", p) for p in ("8a8w", "16a4w", "16a8w")],
    *[("linear_to_conv2d_3d", p) for p in ("16a4w", "16a8w", "fp16a8w", "16a4w_block")],
    *[("linear_to_conv2d_shared_weight", p) for p in ("8a8w", "16a4w")],
    *[("conv2d_unchanged", p) for p in ("8a8w", "16a8w")],
    ("conv1d_mutable_buffer", "skip_mutable_buffer"),  # float, the buffer left to the CPU
]
FLOAT_NAMES = {c.name for c in FLOAT_CASES}


def _zoo_params() -> list[object]:
    return [
        pytest.param((c.name,), id=c.name, marks=pytest.mark.xdist_group(f"zoo-{c.name}"))
        for c in CASES
    ]


def _precision_params(xfails: dict[str, str] | None = None) -> list[object]:
    params = []
    for name, precision in PRECISIONS:
        ident = f"{name}-{precision}"
        marks = [pytest.mark.xdist_group(f"zoo-{ident}")]
        if xfails and ident in xfails:
            marks.append(pytest.mark.xfail(strict=True, reason=xfails[ident]))
        params.append(pytest.param((name, precision), id=ident, marks=marks))
    return params


def _quantized(args: tuple[str, ...]) -> bool:
    precision = len(args) > 1 and args[1] not in OPTION_VARIANTS
    return precision or args[0] not in FLOAT_NAMES


@pytest.mark.parametrize("args", _zoo_params() + _precision_params())
def test_flows_give_the_same_delegates(qnn_cache: SessionCache, args: tuple[str, ...]) -> None:
    name = args[0] if len(args) == 1 else "-".join(args)
    outcome = lower_both(qnn_cache, ZOO, args)
    if name in FAILS_IN_BOTH:
        message, _why = FAILS_IN_BOTH[name]
        assert message in outcome.error("deprecated")
        assert message in outcome.error("migrated")
        return
    if name in FAILS_ONLY_DEPRECATED:
        message, _why, delegates = FAILS_ONLY_DEPRECATED[name]
        assert message in outcome.error("deprecated")
        assert outcome.ok("migrated").delegates == delegates
        return
    old, new = outcome.ok("deprecated"), outcome.ok("migrated")
    assert_same_structure(old, new)
    assert sum(old.delegates.values()) >= 1
    if name in PAYLOAD_DIFFERS:
        assert not payloads_identical(old, new), (
            f"{name} now byte-matches: drop it from PAYLOAD_DIFFERS"
        )
        assert_outputs_within_lsb(old, new)
    elif name in COMPILE_NOT_DETERMINISTIC:
        assert_payloads_nearly_equal(old, new)
        assert_outputs_within_lsb(old, new)
    else:
        assert payloads_identical(old, new)


@pytest.mark.parametrize("args", _zoo_params() + _precision_params())
def test_outputs_match_the_reference(qnn_cache: SessionCache, args: tuple[str, ...]) -> None:
    name = args[0] if len(args) == 1 else "-".join(args)
    if name in FAILS_IN_BOTH:
        pytest.xfail(FAILS_IN_BOTH[name][1])  # shown failing in test_flows_give_the_same_delegates
    outcome = lower_both(qnn_cache, ZOO, args)
    flows = ["migrated"] if name in FAILS_ONLY_DEPRECATED else ["deprecated", "migrated"]
    if name in NUMERICS_WRONG_IN_BOTH:
        for flow in flows:
            with pytest.raises(AssertionError, match="SNR"):
                assert_matches_reference(outcome.ok(flow), _quantized(args))
        return
    for flow in flows:
        assert_matches_reference(outcome.ok(flow), _quantized(args))
