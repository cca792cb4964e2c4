"""Test-suite wide settings."""

from __future__ import annotations

import os

import pytest

# ExecuTorch downloads the QNN SDK on first use unless QNN_SDK_ROOT is set; an empty value
# means "the caller takes charge of the SDK". The fast suite never loads one. A root the user
# gave is kept for the real-QNN tier (tests/qnn_htp), which uses it instead of laying one out.
if os.environ.get("QNN_SDK_ROOT"):
    os.environ.setdefault("QNN_HTP_SDK_ROOT", os.environ["QNN_SDK_ROOT"])
os.environ["QNN_SDK_ROOT"] = ""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """Under CI every test must run: a skip (e.g. a missing dependency) is a failure."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("CI") and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped under CI, which must run every test: {report.longrepr}"
