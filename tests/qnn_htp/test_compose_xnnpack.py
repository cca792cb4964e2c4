"""QNN and XNNPACK in one ``to_edge_transform_and_lower`` on real QNN HTP (SM8650), as
examples/export_qnn_with_xnnpack.py lowers: what QNN is not given runs on XNNPACK, not on the
portable CPU kernels, and the mixed program runs in the pybindings and matches eager.

The model is the example's (a conv stem, an MLP); each lowering runs in a fresh process (the
session's qnn_cache). The control lowers the same model through the canonical flow without
XNNPACK: nothing then takes the skipped linears and the lowering stops, so the mixed
program's delegates are XNNPACK's doing.
"""

from __future__ import annotations

import pytest
from qnn_migrate_tests.qnn_htp.compare import check_close
from qnn_migrate_tests.qnn_htp.fresh import FreshProcessError
from qnn_migrate_tests.qnn_htp.lowering import Lowered, LoweringSpec
from qnn_migrate_tests.qnn_htp.pairs import assert_matches_reference
from qnn_migrate_tests.qnn_htp.session_cache import SessionCache

pytestmark = pytest.mark.qnn_htp
BUILD = "qnn_migrate_tests.qnn_htp.subjects:mixed"


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


def test_control_without_xnnpack_nothing_takes_the_skipped_linears(
    qnn_cache: SessionCache,
) -> None:
    """Without XNNPACK the skipped linears are not delegated. QNN's partitioner asks to-edge to
    keep ``aten.linear`` whole, so they are not decomposed either, and ExecuTorch's check stops
    the lowering (measured: the canonical flow with ``skip_node_op_set={"aten.linear.default"}``
    and QNN alone fails this way)."""
    (alone,) = qnn_cache.lowered([LoweringSpec(BUILD, ("linears_skipped",), "canonical")])
    assert isinstance(alone, FreshProcessError), "the skipped linears were lowered by QNN alone"
    assert "aten.linear.default" in str(alone)
    assert "was not decomposed or delegated" in str(alone)


def test_with_nothing_skipped_qnn_takes_everything_and_xnnpack_nothing(
    qnn_cache: SessionCache,
) -> None:
    """QNN first: XNNPACK is only offered what QNN does not take."""
    result = _lowered(qnn_cache, "all_qnn", "qnn_then_xnnpack")
    assert set(result.backends) == {"QnnBackend"}, result.backends
    assert result.outside == {"forward": []}
    # All fp16 on HTP (conv, gelu, two linears): measured 48.9 dB, max error 0.51 %, a little
    # under the tier's float bound; the mixed program (linears in fp32 on XNNPACK) meets it.
    check_close(
        result.outputs["forward"],
        result.reference["forward"],
        min_snr_db=45.0,
        max_rel_error=1e-2,
        what=result.label,
    )
