"""The layer rules hold: import-linter's contracts in .importlinter, and a planted violation of
each one breaks it (the control)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from importlinter.api import read_configuration

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / ".importlinter"
PACKAGES = ("qnn_migrate", "qnn_passes")

# One planted violation per contract: files added to a copy of the packages, and what the
# contract's report must then name. Some show what a per-file ban would miss: an indirect
# import (lab-not-pr), an import inside a function (click-in-cli) and a circle closed only by
# a type-only import (no-circle).
PLANTS: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {
    "codemods-pure": (
        {
            "qnn_migrate/codemods/rules/planted_pure.py": (
                "import torch\nimport torchao\nimport executorch\nimport github\n"
                "import requests\nimport urllib.request\nimport socket\nimport subprocess\n"
                "import multiprocessing\nimport qnn_passes\nfrom qnn_migrate.bot import model\n"
            )
        },
        tuple(
            f"qnn_migrate.codemods.rules.planted_pure -> {name} (l."
            for name in (
                "torch",
                "torchao",
                "executorch",
                "github",
                "requests",
                "urllib",
                "socket",
                "subprocess",
                "multiprocessing",
                "qnn_passes",
                "qnn_migrate.bot.model",
            )
        ),
    ),
    "codemods-io": (
        {"qnn_migrate/codemods/planted_io.py": "import tempfile\nfrom pathlib import Path\n"},
        (
            "qnn_migrate.codemods.planted_io -> tempfile (l.1)",
            "qnn_migrate.codemods.planted_io -> pathlib (l.2)",
        ),
    ),
    "passes-independent": (
        {"qnn_passes/planted_console.py": "from qnn_migrate.codemods import findings\n"},
        ("qnn_passes.planted_console -> qnn_migrate.codemods.findings (l.1)",),
    ),
    "lab-not-pr": (
        {
            "qnn_migrate/bot/lab/planted_lab.py": "from qnn_migrate.bot import planted_shared\n",
            "qnn_migrate/bot/planted_shared.py": "from qnn_migrate.bot.pr import render\n",
        },
        (
            "qnn_migrate.bot.lab.planted_lab -> qnn_migrate.bot.planted_shared (l.1)",
            "qnn_migrate.bot.planted_shared -> qnn_migrate.bot.pr.render (l.1)",
        ),
    ),
    "pygithub-in-client": (
        {"qnn_migrate/bot/pr/planted_github.py": "import github\nimport requests\n"},
        (
            "qnn_migrate.bot.pr.planted_github -> github (l.1)",
            "qnn_migrate.bot.pr.planted_github -> requests (l.2)",
        ),
    ),
    "client-built-in-cli": (
        {
            "qnn_migrate/bot/nightly/planted_client.py": "from qnn_migrate.bot.github import client\n"
        },
        ("qnn_migrate.bot.nightly.planted_client -> qnn_migrate.bot.github.client (l.1)",),
    ),
    "click-in-cli": (
        {"qnn_migrate/bot/lab/planted_click.py": "def echo() -> None:\n    import click\n"},
        ("qnn_migrate.bot.lab.planted_click -> click (l.2)",),
    ),
    "processes-in-lab-process": (
        {
            "qnn_migrate/bot/pr/planted_process.py": (
                "import subprocess\nimport multiprocessing\nfrom concurrent import futures\n"
                "import pty\n"
            )
        },
        tuple(
            f"qnn_migrate.bot.pr.planted_process -> {name} (l.{line})"
            for line, name in enumerate(("subprocess", "multiprocessing", "concurrent", "pty"), 1)
        ),
    ),
    "no-circle": (
        {
            "qnn_migrate/codemods/planted_circle_a.py": (
                "from qnn_migrate.codemods import planted_circle_b\n"
            ),
            "qnn_migrate/codemods/planted_circle_b.py": (
                "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                "    from qnn_migrate.codemods import planted_circle_a\n"
            ),
        },
        ("No cycles are allowed in qnn_migrate.codemods.", ".planted_circle_"),
    ),
}


def _contracts() -> dict[str, str]:
    """Contract id -> name, from .importlinter."""
    options = read_configuration(str(CONFIG))["contracts_options"]
    return {entry["id"]: entry["name"] for entry in options}


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the packages found from ``cwd`` (the folder goes first on
    sys.path), with lines as long as they come (rich wraps at the terminal's width)."""
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from importlinter.cli import lint_imports_command; lint_imports_command()",
            f"--config={cwd / '.importlinter'}",
            "--no-cache",
            "--no-logo",
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "1000"},
        timeout=300,
    )


def _broken_sections(output: str, names: dict[str, str]) -> dict[str, str]:
    """The text under each broken contract's heading, by contract id."""
    _, marker, broken = output.partition("Broken contracts")
    assert marker, output
    starts = sorted((broken.find(f"\n{name}\n"), key) for key, name in names.items())
    starts = [(at, key) for at, key in starts if at >= 0]
    ends = [at for at, _ in starts[1:]] + [len(broken)]
    return {key: broken[at:end] for (at, key), end in zip(starts, ends, strict=True)}


def test_the_layer_contracts_hold() -> None:
    proc = _lint(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Contracts: {len(_contracts())} kept, 0 broken." in proc.stdout


def test_every_contract_has_a_planted_violation() -> None:
    assert set(PLANTS) == set(_contracts())


@pytest.fixture(scope="module")
def planted_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str]:
    """The linter's report on a copy of the packages with every plant of PLANTS added."""
    copy = tmp_path_factory.mktemp("planted")
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations, package
        source = Path(next(iter(spec.submodule_search_locations)))
        shutil.copytree(source, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(CONFIG, copy / ".importlinter")
    for files, _ in PLANTS.values():
        for relative, text in files.items():
            (copy / relative).write_text(text, encoding="utf-8")
    proc = _lint(copy)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("contract", sorted(PLANTS))
def test_a_planted_violation_breaks_the_contract(
    contract: str, planted_report: tuple[int, str]
) -> None:
    code, output = planted_report
    assert code == 1, output
    names = _contracts()
    section = _broken_sections(output, names).get(contract)
    assert section is not None, f"{contract} kept with its plant in place:\n{output}"
    _, expected = PLANTS[contract]
    missing = [text for text in expected if text not in section]
    assert missing == [], section
