"""ExecuTorch's own QNN harness, rewritten by ``qnn-migrate rewrite``, passes on real QNN as the original does.

The executorch 1.5.1 wheel's ``test_qnn_delegate.py`` and the harness modules that call the
deprecated wrapper are copied, rewritten, and run with ``--enable_x86_64`` (real QNN compile,
real HTP simulator; the native runner is QnnExecutorRunnerDouble). CI runs one test of each of
the four classes of the seed's matrices (bot/matrices.toml) through every flow (harness.FLOWS); the full 27 are
``python tests/qnn_htp/run_harness.py`` (docs/qnn-htp.md has its table). Counters around the
wrapper and the qnn_passes API prove which flow each run lowered through.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from qnn_migrate_tests.qnn_htp import harness
from qnn_migrate_tests.qnn_htp.harness_main import COUNTED_QNN_PASSES, WRAPPER
from qnn_migrate_tests.qnn_htp.pairs import FLOAT_BOUNDS, QUANT_BOUNDS
from qnn_migrate_tests.qnn_htp.real_harness.support import seed_tests
from qnn_migrate_tests.qnn_htp.sdk import QnnSdk

pytestmark = [pytest.mark.qnn_htp, pytest.mark.xdist_group("qnn-harness")]
# One test per class; the known intermittent test (see docs/qnn-htp.md) is not among them.
SAMPLE = [
    "TestQNNFloatingPointOperator.test_qnn_backend_conv1d",
    "TestQNNQuantizedOperator.test_qnn_backend_linear_qat",
    "TestQNNFloatingPointModel.test_qnn_backend_conv1d_relu_log_softmax",
    "TestQNNQuantizedModel.test_qnn_backend_conv1d_relu_log_softmax",
]


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> harness.HarnessCopies:
    return harness.prepare(tmp_path_factory.mktemp("qnn-harness"))


def test_the_sample_covers_every_class_of_the_seed_matrices() -> None:
    ids = seed_tests()
    assert set(SAMPLE) <= set(ids)
    assert {i.split(".")[0] for i in SAMPLE} == {i.split(".")[0] for i in ids}
    assert len(ids) == 27


def test_rewrite_leaves_no_call_of_the_wrapper_the_harness_uses(
    copies: harness.HarnessCopies,
) -> None:
    assert copies.rewrite_exit == 0, copies.rewrite_report
    for flow in ("rewritten", "rewritten-qnn-export"):
        for name in ("utils.py", "export_utils.py"):
            rewritten = (copies.copies(flow) / name).read_text()
            assert f"{WRAPPER}(" not in rewritten, (flow, name)
            assert "qnn_transform_passes(" in rewritten, (flow, name)
    # The canonical flow exports with torch.export.export itself; --flow qnn-export does not.
    assert "torch.export.export(" in (copies.copies("rewritten") / "utils.py").read_text()
    assert "qnn_export(" in (copies.copies("rewritten-qnn-export") / "utils.py").read_text()
    original = (copies.copies("original") / "utils.py").read_text()
    assert f"{WRAPPER}(" in original


def test_sample_passes_the_same_in_every_flow(
    copies: harness.HarnessCopies, qnn_sdk: QnnSdk
) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs: dict[str, Any] = dict(
            zip(
                harness.FLOWS,
                pool.map(lambda flow: harness.run(copies, flow, SAMPLE, qnn_sdk), harness.FLOWS),
                strict=True,
            )
        )
    original = runs["original"]
    for flow, record in runs.items():
        assert sorted(record["tests"]) == sorted(SAMPLE), (flow, record["log"][-4000:])
        statuses = {t: r["status"] for t, r in record["tests"].items()}
        assert set(statuses.values()) == {"ok"}, (flow, statuses, record["log"][-4000:])
        # The tier's bounds on every output the harness compared (its own check lets an
        # all-zero output through): eager for the float classes, fake-quant for the others.
        for test, result in record["tests"].items():
            bounds = QUANT_BOUNDS if "Quantized" in test else FLOAT_BOUNDS
            assert result.get("outputs"), (flow, test, "the harness compared no output")
            for figures in result["outputs"]:
                assert figures["snr_db"] >= bounds["min_snr_db"], (flow, test, figures)
                assert figures["rel_error"] <= bounds["max_rel_error"], (flow, test, figures)
    for test, record in original["tests"].items():
        for flow in ("rewritten", "rewritten-qnn-export"):
            assert runs[flow]["tests"][test]["subtests"] == record["subtests"], (flow, test)
    # Which flow lowered: every lowering of the original went through the wrapper, every one
    # of each rewritten harness through qnn_passes, as many of them. The sample's lowerings
    # all go through lower_module_and_test_output, whose `dynamic_shapes: Dict` may be keyed
    # by method ({"forward": ...}, which the wrapper reads as forward's shapes): nothing in
    # the source proves it is not, so the default target also exports there with qnn_export,
    # which decides at run time as the wrapper did (torch.export.export stays for the call
    # sites where the source proves the shapes, checked above).
    lowerings = original["calls"].get(WRAPPER, 0)
    assert lowerings >= len(SAMPLE)
    assert not any(original["calls"].get(name) for name in COUNTED_QNN_PASSES)
    for flow, exports in (("rewritten", lowerings), ("rewritten-qnn-export", lowerings)):
        calls = runs[flow]["calls"]
        assert calls.get(WRAPPER, 0) == 0, (flow, calls)
        assert calls.get("qnn_export", 0) == exports, (flow, calls)
        for name in ("qnn_transform_passes", "qnn_partitioners", "qnn_manager_context"):
            assert calls.get(name) == lowerings, (flow, name, calls)
