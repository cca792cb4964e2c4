"""Runs ExecuTorch's QNN test harness (a copy of test_qnn_delegate.py) in this process, counting lowerings.

    python harness_main.py --copies DIR --results FILE [--rewritten] -- <test ids> <harness flags>

``DIR`` holds copies of the harness modules (``test_qnn_delegate.py``, ``utils.py``,
``export_utils.py``). With ``--rewritten`` they are the ``qnn-migrate rewrite`` output and are
installed as the modules the harness imports (``executorch.backends.qualcomm.tests.utils``,
``executorch.backends.qualcomm.export_utils``); without it the copies are the originals and
the installed modules are used. Before anything is imported, the deprecated wrapper and the
``qnn_passes`` API are wrapped with counters, so ``FILE`` (JSON) proves which flow lowered:
``{"calls": {name: n}, "tests": {id: {"status": ..., "detail": ..., "outputs": [...]}}}``.
The harness's own ``setup_environment()`` parses the flags; the tests run through unittest with
a result that records every test and subtest. The harness's output check
(``TestQNN._assert_outputs_equal``, atol 0.1 and rtol 1 for quantized tests, which an all-zero
output passes) is wrapped to record, for every output it compares, the SNR and the max error
relative to the reference (``outputs``: the simulator's against eager or the fake-quant
model), so the tier holds the harness to its own bounds too. The ABI bridge (qnn_htp.abi) is
installed first if needed.
"""

from __future__ import annotations

import argparse
import collections
import functools
import importlib.util
import json
import os
import sys
import time
import traceback
import unittest
from pathlib import Path
from typing import Any

COUNTED_QNN_PASSES = (
    "qnn_export",
    "qnn_transform_passes",
    "qnn_partitioners",
    "qnn_manager_context",
    "qnn_compile_config",
)
WRAPPER = "to_edge_transform_and_lower_to_qnn"
CALLS: collections.Counter[str] = collections.Counter()
# The test running now, and the figures of every output the harness compared, per test.
CURRENT: list[str] = [""]
NUMERICS: dict[str, list[dict[str, float]]] = collections.defaultdict(list)
# Worst outcome of a test's subtests wins.
ORDER = {"ok": 0, "skipped": 1, "FAIL": 2, "ERROR": 3}


def _counted(name: str, fn: Any) -> Any:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        CALLS[name] += 1
        return fn(*args, **kwargs)

    return wrapper


def install_counters() -> None:
    """Wrap the deprecated call and the qnn_passes API before any harness module binds them."""
    from executorch.backends.qualcomm.utils import utils as qnn_utils

    import qnn_passes
    import qnn_passes.api as api

    setattr(qnn_utils, WRAPPER, _counted(WRAPPER, getattr(qnn_utils, WRAPPER)))
    for name in COUNTED_QNN_PASSES:
        counted = _counted(name, getattr(api, name))
        setattr(api, name, counted)
        setattr(qnn_passes, name, counted)  # the package caches names it loaded


def record_numerics(test_qnn: Any) -> None:
    """Wrap ``test_qnn._assert_outputs_equal`` (ExecuTorch's harness) to record each output's
    SNR and relative max error against its reference before the harness's own check."""
    import numpy as np
    from qnn_migrate_tests.qnn_htp.compare import snr_db

    check = test_qnn._assert_outputs_equal

    @functools.wraps(check)
    def recorded(self: Any, model_output: Any, ref_output: Any) -> Any:
        for actual, reference in zip(model_output, ref_output, strict=False):
            a = np.asarray(actual.detach().float())
            r = np.asarray(reference.detach().float())
            scale = float(np.max(np.abs(r))) if r.size else 0.0
            err = float(np.max(np.abs(a.astype(np.float64) - r))) if r.size else 0.0
            NUMERICS[CURRENT[0]].append(
                {
                    "snr_db": snr_db(a, r),
                    "rel_error": err / scale if scale > 0 else (0.0 if err == 0 else float("inf")),
                }
            )
        return check(self, model_output, ref_output)

    test_qnn._assert_outputs_equal = recorded


def _load(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class RecordingResult(unittest.TextTestResult):
    """Records the outcome of every test (worst of its subtests) and the subtest counts."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.records: dict[str, dict[str, Any]] = {}
        self._started: dict[str, float] = {}

    @staticmethod
    def _id(test: Any) -> str:
        parent = getattr(test, "test_case", test)
        return ".".join(parent.id().split(".")[-2:])

    def _note(self, test: Any, status: str, detail: str = "") -> None:
        record = self.records.setdefault(
            self._id(test), {"status": "ok", "subtests": 0, "failed_subtests": 0, "detail": ""}
        )
        if ORDER[status] > ORDER[record["status"]]:
            record["status"] = status
        if detail:
            record["detail"] = (record["detail"] + "\n" + detail).strip()[-4000:]

    def startTest(self, test: Any) -> None:
        CURRENT[0] = self._id(test)
        self._started[self._id(test)] = time.perf_counter()
        self._note(test, "ok")
        super().startTest(test)

    def stopTest(self, test: Any) -> None:
        record = self.records[self._id(test)]
        record["seconds"] = round(time.perf_counter() - self._started[self._id(test)], 2)
        super().stopTest(test)

    def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:
        record = self.records.setdefault(
            self._id(test), {"status": "ok", "subtests": 0, "failed_subtests": 0, "detail": ""}
        )
        record["subtests"] += 1
        if err is not None:
            record["failed_subtests"] += 1
            failed = issubclass(err[0], test.failureException)
            self._note(
                test, "FAIL" if failed else "ERROR", f"{subtest}: {err[0].__name__}: {err[1]}"
            )
        super().addSubTest(test, subtest, err)

    def addFailure(self, test: Any, err: Any) -> None:
        self._note(test, "FAIL", "".join(traceback.format_exception_only(err[0], err[1])))
        super().addFailure(test, err)

    def addError(self, test: Any, err: Any) -> None:
        self._note(test, "ERROR", "".join(traceback.format_exception_only(err[0], err[1])))
        super().addError(test, err)

    def addSkip(self, test: Any, reason: str) -> None:
        self._note(test, "skipped", reason)
        super().addSkip(test, reason)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=Path, required=True)
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--rewritten", action="store_true")
    ours, harness_argv = parser.parse_known_args(argv)
    if harness_argv[:1] == ["--"]:
        harness_argv = harness_argv[1:]

    import torch  # noqa: F401  (before the QNN libraries, see qnn_htp.abi)
    from qnn_migrate_tests.qnn_htp.abi import install

    from qnn_migrate_tests import torch_speedup

    torch_speedup.install()  # torch's bookkeeping, accelerated: the same results
    bridge = install(Path(os.environ["QNN_SDK_ROOT"]))
    install_counters()
    if ours.rewritten:
        _load("executorch.backends.qualcomm.export_utils", ours.copies / "export_utils.py")
        _load("executorch.backends.qualcomm.tests.utils", ours.copies / "utils.py")
    harness = _load("qnn_htp_harness_under_test", ours.copies / "test_qnn_delegate.py")
    record_numerics(sys.modules["executorch.backends.qualcomm.tests.utils"].TestQNN)

    sys.argv = ["test_qnn_delegate.py", *harness_argv]
    ids = harness.setup_environment()[1:]
    suite = unittest.defaultTestLoader.loadTestsFromNames(ids, harness)
    runner = unittest.TextTestRunner(resultclass=RecordingResult, verbosity=2, stream=sys.stderr)
    result = runner.run(suite)
    assert isinstance(result, RecordingResult)
    for test, figures in NUMERICS.items():
        result.records.setdefault(test, {"status": "ok", "detail": ""})["outputs"] = figures
    ours.results.write_text(
        json.dumps(
            {
                "calls": dict(CALLS),
                "tests": result.records,
                "bridged": bridge.bridged,
                "harness": str(ours.copies / "test_qnn_delegate.py"),
            },
            indent=1,
        )
    )
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
