"""Test-suite wide settings."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from _pytest.mark.expression import Expression
from hypothesis import settings

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

# Property tests explore new examples on every local run (that is how they find bugs); under
# CI=1 each test draws the same examples every run, so a red CI is never a roll of the dice.
# A failure found locally is kept in hypothesis's example database and replayed first.
settings.register_profile("ci", derandomize=True, database=None)
settings.load_profile("ci" if os.environ.get("CI") else "default")


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


# The longest unit of work: ExecuTorch's own harness, run in three flows, one worker.
LONGEST_GROUPS = frozenset({"qnn-harness"})


def _groups(item: pytest.Item) -> set[str]:
    """The item's ``xdist_group`` names, read as xdist reads them."""
    return {
        str(m.args[0] if m.args else m.kwargs.get("name", "default"))
        for m in item.iter_markers("xdist_group")
    }


def _cost_rank(item: pytest.Item) -> int:
    """Longest work first, so the many short core tests fill the end of the run on both
    workers (with ``--no-loadscope-reorder``, xdist hands units out in this order)."""
    groups = _groups(item)
    markers = _folder_markers(item.path) | {m.name for m in item.iter_markers()}
    if groups & LONGEST_GROUPS:
        return 0
    if "qnn_htp" in markers:
        return 1
    if "passes" in markers or groups:
        return 2
    return 3


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the run longest first, mark every test of the torch-stack folders ``passes``, and
    make ``xdist_group`` work.

    pytest-xdist 3.8 groups tests under ``--dist loadgroup`` by appending ``@<group>`` to
    ``item._nodeid``, which pytest 9 no longer reads (``nodeid`` is ``str(item._id)``): every
    group would be ignored and a group's tests spread over both workers. The same suffix is
    written here where pytest 9 reads it (trylast: after every plugin has added its marks).
    """
    loadgroup = getattr(config.option, "dist", None) == "loadgroup"
    items.sort(key=_cost_rank)  # stable: within a rank, collection order
    for item in items:
        if "passes" in _folder_markers(item.path):
            item.add_marker(pytest.mark.passes)
        if not loadgroup:
            continue
        names = sorted(_groups(item))
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix):
            item._id = type(item._id).parse(item.nodeid + suffix)  # type: ignore[attr-defined]


class TooMuchWork(AssertionError):
    """Raised by ``python_lines`` when a call runs more Python lines than it may."""


def _python_lines(call: Callable[[], object], limit: int) -> int:
    """How many Python lines ``call()`` executes (every frame, this thread): a measure of
    work that does not depend on the machine, for tests that must not time anything. Past
    ``limit`` the call is stopped with ``TooMuchWork`` (a quadratic one fails fast)."""
    count = 0

    def tracer(frame: FrameType, event: str, arg: Any) -> Callable[..., Any]:
        nonlocal count
        if event == "line":
            count += 1
            if count > limit:
                raise TooMuchWork(f"more than {limit} Python lines run")
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        call()
    finally:
        sys.settrace(previous)
    return count


@pytest.fixture
def python_lines() -> Callable[[Callable[[], object], int], int]:
    """``python_lines(call, limit)``: the Python lines ``call()`` runs (see ``_python_lines``)."""
    return _python_lines
