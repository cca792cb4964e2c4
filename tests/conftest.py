"""Test-suite wide settings."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from _pytest.mark.expression import Expression
from hypothesis import settings

TESTS = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Tier:
    """A slow tier: one folder, whose every test carries the tier's markers (added here)."""

    folder: Path
    markers: frozenset[str]
    what: str


# The default ``pytest`` runs the fast tier: every test outside these folders (the core, the
# bot on its fake lab, the rewrite, the passes on doubles). ``pytest --tier all`` (the README's
# command and .ci/run) runs every tier; ``--tier qnn_htp`` one, and so does naming a path in it
# (``pytest tests/qnn_htp/test_zoo.py``).
FAST = "fast"
TIERS = {
    "lowering": Tier(
        TESTS / "lowering",
        frozenset({"passes", "lowering"}),
        "whole lowerings through both flows on the QNN backend double: the zoo, the probes, "
        "the variants, CPU numerics and semantics",
    ),
    "qnn_htp": Tier(
        TESTS / "qnn_htp",
        frozenset({"passes", "qnn_htp"}),
        "real QNN: the HTP compiler and simulator, ExecuTorch's harness, Hugging Face models",
    ),
    "packaging": Tier(
        TESTS / "packaging",
        frozenset({"packaging"}),
        "wheels built from clones of the tree, mypy over both packages (once per CI run)",
    ),
}
# Folders whose every test needs the [passes] extra (torch, executorch), with the markers their
# tests carry. A test elsewhere that needs it says so itself with ``pytest.mark.passes``; the
# core suite is ``-m "not passes"``, which does not even import these folders (a venv without
# torch could not).
FOLDER_MARKERS = {
    TESTS / "passes": frozenset({"passes"}),
    **{tier.folder: tier.markers for tier in TIERS.values()},
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


def pytest_addoption(parser: pytest.Parser) -> None:
    names = ", ".join([FAST, *TIERS])
    parser.addoption(
        "--tier",
        default=FAST,
        metavar="TIERS",
        help=f"the tiers to run: comma-separated names ({names}) or all; default {FAST}. A "
        "path given on the command line runs its tier too (pytest tests/qnn_htp)",
    )


def pytest_configure(config: pytest.Config) -> None:
    selected_tiers(config)  # a bad --tier is a usage error before anything is collected


def selected_tiers(config: pytest.Config) -> frozenset[str]:
    """The tiers this run runs: ``--tier``'s, plus the tier of any path on the command line."""
    known = {FAST, *TIERS}
    given = str(config.getoption("tier"))
    asked = {name.strip() for name in given.split(",") if name.strip()}
    if "all" in asked:
        return frozenset(known)
    unknown = asked - known
    if unknown or not asked:
        raise pytest.UsageError(
            f"--tier {given!r}: unknown tier {', '.join(sorted(unknown)) or '(none given)'}; "
            f"give one or more of {', '.join(sorted(known))} (comma-separated), or all"
        )
    where = Path(config.invocation_params.dir)
    for arg in config.args:
        path = (where / arg.split("::", 1)[0]).resolve()
        asked |= {name for name, tier in TIERS.items() if path.is_relative_to(tier.folder)}
    return frozenset(asked)


def tier_of(path: Path) -> str:
    """The tier a test file belongs to: its folder's."""
    return next((name for name, tier in TIERS.items() if path.is_relative_to(tier.folder)), FAST)


def _folder_markers(path: Path) -> frozenset[str]:
    for folder, markers in FOLDER_MARKERS.items():
        if path.is_relative_to(folder):
            return markers
    return frozenset()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave a folder unimported when the run runs none of its tests: a tier not selected, or a
    torch-stack folder whose markers ``-m`` deselects (a venv without torch could not import it)."""
    tiers = selected_tiers(config)
    if FAST not in tiers and tier_of(collection_path) == FAST:
        # Outside the slow tiers: only the folders on the way to a selected one are entered
        # (tests/passes' conftest, say, would import torch where the run needs none).
        wanted = [TIERS[name].folder for name in tiers]
        if not any(folder.is_relative_to(collection_path) for folder in wanted):
            return True
    for name, tier in TIERS.items():
        if collection_path == tier.folder and name not in tiers:
            return True
    markers = FOLDER_MARKERS.get(collection_path)
    markexpr = config.option.markexpr
    if markers is None or not markexpr:
        return None
    selected = Expression.compile(markexpr).evaluate(lambda name, /, **_: name in markers)
    return True if not selected else None


def pytest_report_header(config: pytest.Config) -> str:
    tiers = selected_tiers(config)
    line = f"tiers: {', '.join(n for n in [FAST, *TIERS] if n in tiers)}"
    left = [n for n in TIERS if n not in tiers]
    if left:
        line += f" (not run: {', '.join(left)}; --tier all runs every tier)"
    return line


def _check_tier(item: pytest.Item) -> None:
    """A tier's marker outside the tier's folder stops the run: the folder is what the default
    run leaves out, so a marked test elsewhere would run in the fast tier unnoticed."""
    home = tier_of(item.path)
    for name, tier in TIERS.items():
        if name != home and item.get_closest_marker(name) is not None:
            raise pytest.UsageError(
                f"{item.nodeid}: marked {name} outside {tier.folder.relative_to(TESTS.parent)}/;"
                f" a test of the {name} tier lives in that folder (which marks it): move it there"
            )


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
    """Mark every test of a tier's folder (and of tests/passes) with the folder's markers, stop
    on a tier's marker outside its folder, order the run longest first, and make
    ``xdist_group`` work.

    pytest-xdist 3.8 groups tests under ``--dist loadgroup`` by appending ``@<group>`` to
    ``item._nodeid``, which pytest 9 no longer reads (``nodeid`` is ``str(item._id)``): every
    group would be ignored and a group's tests spread over both workers. The same suffix is
    written here where pytest 9 reads it (trylast: after every plugin has added its marks).
    """
    loadgroup = getattr(config.option, "dist", None) == "loadgroup"
    for item in items:
        for marker in sorted(_folder_markers(item.path)):
            item.add_marker(marker)
        _check_tier(item)
    items.sort(key=_cost_rank)  # stable: within a rank, collection order
    for item in items:
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
