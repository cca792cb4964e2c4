"""Promises the project makes about itself: the README's commands, CI, lint, the extras and the lock
(wheels, sdists and mypy: tests/packaging)."""

from __future__ import annotations

import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

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


def test_the_top_level_part_folders_are_only_links_into_qnn_migrate() -> None:
    """``bot`` and ``codemods`` at the top are relative links for readers, never real code."""
    for name in ("bot", "codemods"):
        link = ROOT / name
        # A checkout without symlink support (core.symlinks=false) has the link's text instead.
        target = os.readlink(link) if link.is_symlink() else link.read_text(encoding="utf-8")
        assert target == f"qnn_migrate/{name}", f"{name} must be a link into qnn_migrate/"


def _lock(text: str) -> dict[str, tuple[str, str | None]]:
    """constraints.txt's pins: normalized name -> (version, marker or None)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pins = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            requirement = Requirement(line)
            (specifier,) = requirement.specifier
            assert specifier.operator == "==", line
            marker = str(requirement.marker) if requirement.marker else None
            pins[canonicalize_name(requirement.name)] = (specifier.version, marker)
    return pins


def _lock_inputs(root: Path) -> str:
    namespace = runpy.run_path(str(ROOT / ".ci" / "lock-inputs"))
    return str(namespace["inputs"](root))


def test_the_lock_was_made_from_these_pyproject_files() -> None:
    """constraints.txt records the digest of the dependencies it was resolved from."""
    header = (ROOT / "constraints.txt").read_text(encoding="utf-8")
    (recorded,) = re.findall(r"^# inputs: (\S+)$", header, flags=re.M)
    assert recorded == _lock_inputs(ROOT), (
        "constraints.txt is stale: a dependency in pyproject.toml or qnn-passes/pyproject.toml "
        "changed since it was generated; run .ci/lock, then the suite"
    )


def test_the_lock_digest_follows_a_dependency_change(tmp_path: Path) -> None:
    """Control: a moved floor gives another digest."""
    for name in ("pyproject.toml", "qnn-passes/pyproject.toml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    before = _lock_inputs(tmp_path)
    text = (tmp_path / "pyproject.toml").read_text(encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(text.replace('"libcst>=', '"libcst>=0', 1))
    assert _lock_inputs(tmp_path) != before


def _needed(
    roots: dict[str, set[str]],
) -> dict[str, str]:
    """Every installed distribution the project needs (from ``roots``: name -> extras, through
    the installed metadata's requirements, markers evaluated here), with its version."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: dict[str, str] = {}
    todo = [(name, extras) for name, extras in roots.items()]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = todo.pop()
        if (name, frozenset(extras)) in seen:
            continue
        seen.add((name, frozenset(extras)))
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # not installed here (torch on a core venv): nothing to compare
        found[canonicalize_name(name)] = dist.version
        for line in dist.requires or []:
            requirement = Requirement(line)
            environments = [{"extra": e} for e in extras] or [{"extra": ""}]
            if requirement.marker is None or any(
                requirement.marker.evaluate(env) for env in environments
            ):
                todo.append((requirement.name, set(requirement.extras)))
    return found


def _stale_pins(lock: dict[str, tuple[str, str | None]], needed: dict[str, str]) -> list[str]:
    from packaging.utils import canonicalize_name

    ours = {canonicalize_name("qnn-migrate"), canonicalize_name("qnn-passes")}
    problems = []
    for name, version in sorted(needed.items()):
        if name in ours:
            continue
        if name not in lock:
            problems.append(f"{name} {version} is installed and needed, not pinned")
        elif lock[name][0] != version.split("+")[0]:  # 2.13.0+cpu is 2.13.0's local build
            problems.append(f"{name}: installed {version}, pinned {lock[name][0]}")
    return problems


def test_every_package_the_project_needs_here_is_pinned_at_the_installed_version() -> None:
    """Offline, what the resolver needs: every installed distribution the project reaches (its
    extras' requirements and theirs) is in constraints.txt at the version installed, as CI
    installs with -c constraints.txt (707dc17's file lacked 19 of the 3.12 core install's)."""
    lock = _lock((ROOT / "constraints.txt").read_text(encoding="utf-8"))
    needed = _needed({"qnn-migrate": {"bot", "passes", "test", "test-qnn"}, "qnn-passes": set()})
    assert {"libcst", "click", "pytest"} <= needed.keys()
    assert _stale_pins(lock, needed) == []
    # Control: a pin that moved, and one that is missing, are both found.
    moved = {**lock, "click": ("0.0.1", None)}
    del moved["pathspec"]
    assert _stale_pins(moved, needed) == [
        f"click: installed {needed['click']}, pinned 0.0.1",
        f"pathspec {needed['pathspec']} is installed and needed, not pinned",
    ]
