"""Test-suite wide settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression

TESTS = Path(__file__).resolve().parent
# Folders whose every test needs the [passes] extra (torch, executorch), with the markers their
# tests carry. A test elsewhere that needs it says so itself with ``pytest.mark.passes``; the
# core suite is ``-m "not passes"``, which does not even import these folders (a venv without
# torch could not).
PASSES_FOLDERS = {
    TESTS / "passes": frozenset({"passes"}),
    TESTS / "qnn_htp": frozenset({"passes", "qnn_htp"}),
}

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


def _folder_markers(path: Path) -> frozenset[str]:
    for folder, markers in PASSES_FOLDERS.items():
        if path.is_relative_to(folder):
            return markers
    return frozenset()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave a torch-stack folder unimported when ``-m`` deselects every test in it."""
    markers = PASSES_FOLDERS.get(collection_path)
    markexpr = config.option.markexpr
    if markers is None or not markexpr:
        return None
    selected = Expression.compile(markexpr).evaluate(lambda name, /, **_: name in markers)
    return True if not selected else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of the torch-stack folders ``passes``."""
    for item in items:
        if "passes" in _folder_markers(item.path):
            item.add_marker(pytest.mark.passes)
