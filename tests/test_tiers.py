"""The suite's tiers (tests/conftest.py): a folder is a tier, the default run is the fast one,
``--tier all`` (the README's command, .ci/run) runs every tier, and a tier's marker outside its
folder stops the run."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"


def _conftest() -> ModuleType:
    """tests/conftest.py as a module of its own (pytest already loaded it under its name)."""
    spec = importlib.util.spec_from_file_location("tiers_conftest", TESTS / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def _collected(*args: str) -> set[str]:
    """The test files ``pytest --collect-only`` finds with ``args`` (one process, no xdist)."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-n",
            "0",
            "-p",
            "no:cacheprovider",
            *args,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {line.split("::", 1)[0] for line in proc.stdout.splitlines() if "::" in line}


def test_each_tier_is_one_folder_and_every_folder_named_exists() -> None:
    conftest = _conftest()
    assert set(conftest.TIERS) == {"lowering", "qnn_htp", "packaging"}
    for name, tier in conftest.TIERS.items():
        assert tier.folder.is_dir() and name in tier.markers
        assert any(tier.folder.glob("test_*.py")), name
    assert conftest.tier_of(TESTS / "qnn_htp" / "test_zoo.py") == "qnn_htp"
    assert conftest.tier_of(TESTS / "passes" / "test_pipeline.py") == conftest.FAST


def _config(*args: str, tier: str = "fast", markexpr: str = "") -> SimpleNamespace:
    """What the conftest's hooks read of a run's config: ``pytest [-m markexpr] --tier tier args``."""
    return SimpleNamespace(
        getoption={"tier": tier}.__getitem__,
        invocation_params=SimpleNamespace(dir=ROOT),
        args=list(args),
        option=SimpleNamespace(markexpr=markexpr),
    )


def _entered(config: SimpleNamespace, conftest: ModuleType) -> set[str]:
    """The folders under tests/ that a run with ``config`` enters (its ignore hook's answers)."""
    ignore = conftest.pytest_ignore_collect
    return {
        str(folder.relative_to(ROOT))
        for folder in TESTS.iterdir()
        if folder.is_dir() and folder.name != "__pycache__" and not ignore(folder, config)
    }


def test_a_tier_runs_alone_and_the_default_leaves_it_out() -> None:
    # Two real runs, each collecting one small tier: the hooks as pytest calls them.
    packaging = _collected("--tier", "packaging")
    assert packaging and all(f.startswith("tests/packaging/") for f in packaging)
    # A path names its tier: `pytest tests/packaging/...` runs it whatever --tier says.
    assert _collected("tests/packaging") == packaging
    # The rest on the hooks themselves (a real collection of the whole suite costs ~8 s a run,
    # and the suite runs this on three Pythons). The default, the core suite's selection (-m
    # "not passes"): no slow tier, and no torch-stack folder (tests/passes).
    conftest = _conftest()
    default = _entered(_config(markexpr="not passes"), conftest)
    assert {"tests/bot", "tests/codemods", "tests/workflows"} <= default
    assert not default & {"tests/packaging", "tests/qnn_htp", "tests/lowering", "tests/passes"}
    # The default with the torch stack: passes too.
    assert "tests/passes" in _entered(_config(), conftest)
    # --tier all runs every tier beside the fast one (the README's command).
    every = _entered(_config(tier="all"), conftest)
    assert {"tests/packaging", "tests/qnn_htp", "tests/lowering"} | default <= every
    # A slow tier alone enters no fast folder (the core venv has no torch for tests/passes).
    assert _entered(_config(tier="packaging"), conftest) == {"tests/packaging"}
    assert _entered(_config("tests/qnn_htp/test_zoo.py"), conftest) >= {"tests/qnn_htp"}


def test_an_unknown_tier_is_a_usage_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "--tier", "slow"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "unknown tier slow" in proc.stderr


def _item(path: Path, *markers: str) -> SimpleNamespace:
    marks = {m: getattr(pytest.mark, m).mark for m in markers}
    return SimpleNamespace(
        path=path, nodeid=f"{path.relative_to(ROOT)}::test_x", get_closest_marker=marks.get
    )


def test_a_tiers_marker_outside_its_folder_stops_the_run() -> None:
    check = _conftest()._check_tier
    check(_item(TESTS / "qnn_htp" / "test_zoo.py", "qnn_htp", "passes"))  # at home: fine
    check(_item(TESTS / "passes" / "test_pipeline.py", "passes"))  # not a tier's marker
    with pytest.raises(pytest.UsageError, match="marked qnn_htp outside tests/qnn_htp/"):
        check(_item(TESTS / "passes" / "test_pipeline.py", "qnn_htp"))
    with pytest.raises(pytest.UsageError, match="marked packaging outside tests/packaging/"):
        check(_item(TESTS / "test_project.py", "packaging"))
