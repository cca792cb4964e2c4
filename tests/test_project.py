"""Promises the project makes about itself: the README's commands, CI, lint and types."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    return [
        line
        for block in blocks
        for line in block.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def test_readme_has_exactly_two_quick_start_commands() -> None:
    commands = _quick_start_commands()
    assert len(commands) == 2, commands
    assert "qnn-migrate rewrite --diff examples/" in commands[0]
    assert (ROOT / "examples").is_dir()


def test_ci_runs_the_readme_test_command() -> None:
    test_command = _quick_start_commands()[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci.splitlines()


def test_ruff_is_clean() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_is_clean() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "--no-cache", str(ROOT)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_is_clean() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir=/dev/null"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _import_everything(blocked: tuple[str, ...], packages: str) -> subprocess.CompletedProcess[str]:
    """Import every module of ``packages`` in a fresh interpreter where ``blocked`` are missing."""
    code = (
        "import sys, importlib, pkgutil\n"
        # A module set to None in sys.modules makes `import it` raise ImportError.
        f"for name in {blocked!r}:\n"
        "    sys.modules[name] = None\n"
        "import qnn_migrate.cli\n"
        f"for name in {packages.split()!r}:\n"
        "    pkg = importlib.import_module(name)\n"
        "    found = list(pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'))\n"
        "    assert len(found) > 5, found\n"
        "    for m in found:\n"
        "        importlib.import_module(m.name)\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)


def test_the_rewrite_imports_without_the_bot_or_passes_extras() -> None:
    """qnn_migrate.codemods (the core) needs neither PyGithub/defusedxml nor torch."""
    proc = _import_everything(
        ("github", "defusedxml", "torch", "executorch", "torchao"), "qnn_migrate.codemods"
    )
    assert proc.returncode == 0, proc.stderr
    # Control: the same check does fail where a module imports a blocked package.
    control = _import_everything(("github",), "qnn_migrate.bot")
    assert control.returncode != 0 and "github" in control.stderr


def test_the_bot_imports_without_the_passes_extra() -> None:
    """Every module of qnn_migrate.bot imports where torch and executorch are missing."""
    proc = _import_everything(("torch", "executorch", "torchao"), "qnn_migrate.bot")
    assert proc.returncode == 0, proc.stderr


def test_a_bot_command_without_the_bot_extra_says_which_extra_to_install() -> None:
    for blocked in ("github", "defusedxml"):
        for command in ("bot parse", "matrix list"):
            code = (
                f"import sys\nsys.modules[{blocked!r}] = None\n"
                "from qnn_migrate.cli import main\n"
                f"main({command.split()!r}, prog_name='qnn-migrate')\n"
            )
            proc = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, input=""
            )
            assert proc.returncode == 1, proc.stderr
            assert f"({blocked} is not installed)" in proc.stderr
            assert "pip install 'qnn-migrate[bot]'" in proc.stderr
    # The rewrite still runs without it.
    code = "import sys\nsys.modules['github'] = None\nfrom qnn_migrate.cli import main\nmain(['rewrite', '--help'])"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.xdist_group("packaging")
def test_pip_install_adds_exactly_two_import_names(tmp_path: Path) -> None:
    """A plain install puts qnn_migrate and qnn_passes (plus metadata and the script) only.

    Built offline from a copy of the sources (no build isolation, no dependencies): a few
    seconds; the subprocess timeout only guards against a hang.
    """
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("qnn_migrate", "bot", "codemods", "qnn_passes"):
        shutil.copytree(
            ROOT / name,
            src / name,
            symlinks=True,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
        )
    target = tmp_path / "site"
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"),
            *("--no-build-isolation", "--no-compile", "--no-index", "--target", str(target)),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    names = {p.name for p in target.iterdir()}
    dist_info = {n for n in names if n.endswith(".dist-info")}
    assert len(dist_info) == 1 and next(iter(dist_info)).startswith("qnn_migrate-")
    assert names - dist_info == {"qnn_migrate", "qnn_passes", "bin"}, names
    assert (target / "bin" / "qnn-migrate").is_file()
    installed = target / "qnn_migrate"
    assert (installed / "bot" / "matrices.toml").is_file()
    assert (installed / "bot" / "artifacts.py").is_file()
    assert not (installed / "bot").is_symlink()
