"""QNN and XNNPACK in one ``to_edge_transform_and_lower`` on real QNN HTP (SM8650), as
examples/export_qnn_with_xnnpack.py lowers: what QNN is not given runs on XNNPACK, not on the
portable CPU kernels, and the mixed program runs in the pybindings and matches eager.

The model is the example's (a conv stem, an MLP); each lowering runs in a fresh process (the
session's qnn_cache). The control lowers the same model through the canonical flow without
XNNPACK: the skipped linears then fall to the portable kernels, so "nothing outside the
delegates" is a claim that can fail.
"""

from __future__ import annotations

import pytest

from qnn_htp.lowering import Lowered, LoweringSpec
from qnn_htp.pairs import assert_matches_reference
from qnn_htp.session_cache import SessionCache

pytestmark = pytest.mark.qnn_htp
BUILD = "qnn_htp.subjects:mixed"


def _lowered(cache: SessionCache, case: str, flow: str) -> Lowered:
    (result,) = cache.lowered([LoweringSpec(BUILD, (case,), flow)])
    assert isinstance(result, Lowered), f"{case} through {flow} failed: {result}"
    return result


def test_ops_skipped_for_qnn_run_on_xnnpack(qnn_cache: SessionCache) -> None:
    mixed = _lowered(qnn_cache, "linears_skipped", "qnn_then_xnnpack")
    # conv+relu+permute | linear | gelu | linear | (nothing): QNN, XNNPACK, QNN, XNNPACK.
    assert mixed.backends.count("XnnpackBackend") == 2, mixed.backends
    assert mixed.backends.count("QnnBackend") >= 1, mixed.backends
    assert mixed.outside == {"forward": []}
    assert_matches_reference(mixed, quantized=False)


def test_control_without_xnnpack_the_skipped_ops_fall_to_the_portable_kernels(
    qnn_cache: SessionCache,
) -> None:
    alone = _lowered(qnn_cache, "linears_skipped", "canonical")
    assert set(alone.backends) == {"QnnBackend"}
    assert alone.outside["forward"], "the skipped linears should be left to the CPU"
    assert_matches_reference(alone, quantized=False)


def test_with_nothing_skipped_qnn_takes_everything_and_xnnpack_nothing(
    qnn_cache: SessionCache,
) -> None:
    """QNN first: XNNPACK is only offered what QNN does not take."""
    result = _lowered(qnn_cache, "all_qnn", "qnn_then_xnnpack")
    assert set(result.backends) == {"QnnBackend"}, result.backends
    assert result.outside == {"forward": []}
    assert_matches_reference(result, quantized=False)
