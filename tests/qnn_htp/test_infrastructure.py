"""The tier's own machinery on real QNN: SDK layout, ABI bridge, fresh processes, masking, numerics."""

from __future__ import annotations

import numpy as np
import pytest
from qnn_migrate_tests.qnn_htp import abi, probes
from qnn_migrate_tests.qnn_htp.compare import (
    bytes_differing,
    check_close,
    mask_signatures,
    nearly_equal,
    signatures,
)
from qnn_migrate_tests.qnn_htp.fresh import FreshRunner
from qnn_migrate_tests.qnn_htp.lowering import Lowered, LoweringSpec, lower
from qnn_migrate_tests.qnn_htp.pairs import assert_matches_reference, assert_payloads_nearly_equal
from qnn_migrate_tests.qnn_htp.sdk import HOST_LIBS, QnnSdk
from qnn_migrate_tests.qnn_htp.session_cache import SessionCache

pytestmark = pytest.mark.qnn_htp
LINEAR = LoweringSpec("qnn_migrate_tests.qnn_htp.subjects:zoo", ("linear_3d",), "deprecated")


def test_sdk_root_is_laid_out_like_an_sdk(qnn_sdk: QnnSdk) -> None:
    assert (qnn_sdk.host_libs / "libQnnHtp.so").is_file()
    assert (qnn_sdk.host_libs / "libQnnSystem.so").is_file()
    env = qnn_sdk.environment()
    assert env["QNN_SDK_ROOT"] == str(qnn_sdk.root)
    assert env["LD_LIBRARY_PATH"].split(":")[0] == str(qnn_sdk.root / HOST_LIBS)
    if qnn_sdk.origin == "wheel":
        assert not list(qnn_sdk.host_libs.glob("libonnxruntime*"))
        assert list((qnn_sdk.root / "lib" / "onnxruntime_qnn.libs").glob("libc++*"))


def test_bridge_only_for_a_newer_htp_api(qnn: FreshRunner) -> None:
    state = qnn.run(probes.abi_state)
    assert state["bridged"] == abi.needs_bridge(state["htp_api"])
    # The adaptor's own release (QAIRT 2.37) is never bridged; the wheel's QNN 2.51 is.
    assert not abi.needs_bridge((5, 37, 0))
    assert abi.needs_bridge((5, 51, 0))


def test_bridge_is_what_makes_device_creation_work(qnn: FreshRunner, qnn_sdk: QnnSdk) -> None:
    state = qnn.run(probes.abi_state)
    if not state["bridged"]:  # a real QAIRT 2.37 root: the adaptor's own layout, no bridge
        assert not abi.needs_bridge(state["htp_api"])
        assert qnn.run(probes.bridge_calls, LINEAR) == 0
        return
    calls, error = qnn.run_calls(
        [(probes.bridge_calls, (LINEAR,)), (probes.lower_unbridged, (LINEAR,))]
    )
    assert calls >= 1
    assert error, "lowering without the bridge succeeded: the bridge is not needed (or not removed)"


def test_fresh_children_byte_match_and_one_process_does_not(
    qnn: FreshRunner, qnn_cache: SessionCache
) -> None:
    # Two fresh children: the session's lowering of LINEAR (shared with test_zoo's linear_3d)
    # and one more, run beside the control.
    (first,) = qnn_cache.lowered([LINEAR])
    second, (again, twice) = qnn.run_calls([(lower, (LINEAR,)), (probes.lower_twice, (LINEAR,))])
    assert isinstance(first, Lowered), first
    assert first.delegates == {"forward": 1} and first.backends == ["QnnBackend"]
    # The signature is a compile-time timestamp: it differs, and masking removes exactly it.
    assert signatures(first.payloads[0]) != signatures(second.payloads[0])
    assert first.payloads[0] != second.payloads[0]
    assert mask_signatures(first.payloads[0]) == mask_signatures(second.payloads[0])
    assert mask_signatures(first.pte) == mask_signatures(second.pte)
    # Control: two lowerings in one process never byte-match (process-wide QNN counters).
    assert mask_signatures(again.payloads[0]) == mask_signatures(first.payloads[0])
    assert mask_signatures(twice.payloads[0]) != mask_signatures(again.payloads[0])
    # Every one of them computes what eager computes.
    for result in (first, second, again, twice):
        assert_matches_reference(result, quantized=False)


def test_masking_keeps_everything_but_the_signature() -> None:
    header = (
        bytes.fromhex("cdab7856") + (123456789).to_bytes(8, "little") + (4).to_bytes(8, "little")
    )
    data = b"xx" + header + b"QNN!" + b"tail"
    masked = mask_signatures(data)
    assert masked == b"xx" + header[:4] + bytes(8) + header[12:] + b"QNN!tail"
    assert signatures(data) == [123456789]
    # A magic whose size field does not fit is not a header: left alone.
    stray = bytes.fromhex("cdab7856") + bytes(8) + (1 << 40).to_bytes(8, "little")
    assert mask_signatures(stray) == stray


def test_bytes_differing_counts_positions_and_length() -> None:
    base = bytes(range(256)) * 8
    assert bytes_differing(base, base) == 0
    changed = bytearray(base)
    changed[100] ^= 1
    changed[900] ^= 1
    assert bytes_differing(base, bytes(changed)) == 2
    assert nearly_equal(base, bytes(changed), 2)
    assert not nearly_equal(base, bytes(changed), 1)
    # A length change is never nearly equal, however small.
    assert bytes_differing(base, base + b"x") == 1
    assert not nearly_equal(base, base + b"x", 4096)


def test_numeric_check_rejects_zeros_and_noise() -> None:
    rng = np.random.default_rng(0)
    reference = rng.standard_normal((4, 16)).astype(np.float32)
    close = reference + 1e-3 * rng.standard_normal(reference.shape).astype(np.float32)
    check_close([close], [reference], min_snr_db=40, max_rel_error=0.01)
    for bad in (np.zeros_like(reference), reference + 0.3, -reference, reference[::-1].copy()):
        with pytest.raises(AssertionError):
            check_close([bad], [reference], min_snr_db=40, max_rel_error=0.01)
    # ExecuTorch's own quantized check (atol 0.1, rtol 1) lets an all-zero output through.
    assert np.allclose(np.zeros_like(reference), reference, atol=0.1, rtol=1.0)


def test_masked_comparison_tells_linear_to_conv2d_apart(qnn_cache: SessionCache) -> None:
    """Control for every byte comparison: one option changed, the masked payloads differ."""
    plain, converted = qnn_cache.lowered(
        [
            LoweringSpec("qnn_migrate_tests.qnn_htp.subjects:zoo", ("linear_3d",), "migrated"),
            LoweringSpec(
                "qnn_migrate_tests.qnn_htp.subjects:zoo",
                ("linear_3d",),
                "migrated",
                kwargs=(("convert_linear_to_conv2d", True),),
            ),
        ]
    )
    assert isinstance(plain, Lowered) and isinstance(converted, Lowered), (plain, converted)
    assert mask_signatures(plain.payloads[0]) != mask_signatures(converted.payloads[0])
    # Nor does the looser check of the subjects whose context binary varies by a few bytes.
    with pytest.raises(AssertionError, match="of them differ"):
        assert_payloads_nearly_equal(plain, converted)
    assert plain.delegates == converted.delegates == {"forward": 1}
    for result in (plain, converted):
        check_close(
            result.outputs["forward"],
            result.reference["forward"],
            min_snr_db=50,
            max_rel_error=5e-3,
        )
