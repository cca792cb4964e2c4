"""Promises the project makes about itself: the README's commands, CI, lint and types."""

from __future__ import annotations

import ast
import email
import email.message
import os
import re
import runpy
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from docs.examples import examples

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


def _mypy(*args: str) -> subprocess.CompletedProcess[str]:
    # mypy's own cache (.mypy_cache, ignored by git): a rerun reads only what changed. One
    # folder per interpreter: .ci/run checks the core with 3.12 and 3.13 beside the 3.11 run,
    # and their venvs see different packages.
    cache = ROOT / ".mypy_cache" / sys.implementation.cache_tag
    return subprocess.run(
        [sys.executable, "-m", "mypy", f"--cache-dir={cache}", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


@pytest.mark.passes  # qnn_passes is checked against the torch stack's own sources
@pytest.mark.xdist_group("mypy")  # one worker: the two runs share mypy's cache
def test_mypy_is_clean() -> None:
    proc = _mypy()  # every file pyproject.toml names: qnn_migrate and qnn-passes/qnn_passes
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.xdist_group("mypy")
def test_mypy_is_clean_on_the_core() -> None:
    """qnn_migrate alone, which needs no torch: what the core venvs (3.12, 3.13) check."""
    proc = _mypy("-p", "qnn_migrate")
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


def _copy_of_the_tree(dest: Path) -> Path:
    """The checkout's tracked and new files (links kept as links), uncommitted changes included.

    setuptools builds in the source folder (build/, *.egg-info); .ci/run installs the core for
    other Pythons while this suite runs, so nothing here builds in the checkout itself.
    """
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
        cwd=ROOT,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source, target = ROOT / name, dest / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted but not yet staged
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)
    return dest


def _build_wheel(source: Path, out: Path, name: str = "qnn_migrate") -> Path:
    """Build a wheel (qnn-migrate's, or ``name``'s) from ``source`` offline (no build isolation,
    no dependencies)."""
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps"),
            *("--no-build-isolation", "--no-index", "--wheel-dir", str(out), str(source)),
        ],
        capture_output=True,
        text=True,
        timeout=300,  # guards against a hang only: a build takes seconds
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = out.glob(f"{name}-*.whl")
    return wheel


def _install_wheel(wheel: Path, target: Path) -> None:
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile"),
            *("--no-index", "--target", str(target), str(wheel)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _modules(root: Path) -> set[str]:
    """Every module file under qnn_migrate/, relative to ``root``."""
    return {
        p.relative_to(root).as_posix()
        for p in (root / "qnn_migrate").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix in {".py", ".toml", ".json"}
    }


@pytest.mark.xdist_group("packaging")
def test_a_clone_without_symlinks_builds_a_complete_wheel_that_rewrites(tmp_path: Path) -> None:
    """Git for Windows' default (core.symlinks=false): the wheel still has every module.

    The clone is of the committed tree (HEAD), as pip and pre-commit clone it. Then the wheel's
    own ``qnn-migrate rewrite`` runs, and the clone's rewrite tests pass against that wheel.
    """
    clone = tmp_path / "clone"
    proc = subprocess.run(
        ["git", "-c", "core.symlinks=false", "clone", "--quiet", str(ROOT), str(clone)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    # The top-level links came out as plain files: this is the case under test.
    assert (clone / "bot").is_file() and not (clone / "bot").is_symlink()
    target = tmp_path / "site"
    _install_wheel(_build_wheel(clone, tmp_path / "dist"), target)
    assert _modules(target) == _modules(clone), "the wheel lacks modules of the clone"
    assert (target / "qnn_migrate" / "bot" / "matrices.toml").is_file()

    example = tmp_path / "example.py"
    example.write_text(
        "from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn\n"
        "edge = to_edge_transform_and_lower_to_qnn(model, (x,), specs)\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    run = subprocess.run(
        [sys.executable, "-m", "qnn_migrate", "rewrite", str(example)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "to_edge_transform_and_lower(" in example.read_text(encoding="utf-8")

    # The clone's README example: its "before" block, rewritten by the wheel's command, is
    # its "after" block, byte for byte.
    (readme,) = examples((clone / "README.md").read_text(encoding="utf-8"), "README.md")
    headline = tmp_path / "headline" / "lower.py"
    headline.parent.mkdir()
    headline.write_text(readme.before, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "qnn_migrate", "rewrite", *readme.args, str(headline)],
        capture_output=True,
        text=True,
        env=env,
        cwd=headline.parent,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert headline.read_text(encoding="utf-8") == readme.after
    where = subprocess.run(
        [sys.executable, "-c", "import qnn_migrate.codemods as m; print(m.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert where.stdout.startswith(str(target)), where.stdout + where.stderr

    # The clone's golden rewrite tests, importing qnn_migrate from the wheel (pytest puts
    # tests/, not the clone, on sys.path).
    golden = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0"),
            *("-m", "not passes", "-k", "golden", "tests/codemods"),
        ],
        capture_output=True,
        text=True,
        env={**env, "PYTHONSAFEPATH": "1"},
        cwd=clone,
        timeout=600,
    )
    assert golden.returncode == 0, golden.stdout[-3000:] + golden.stderr[-3000:]
    assert " passed" in golden.stdout


@pytest.mark.xdist_group("packaging")
def test_each_distribution_installs_exactly_its_import_name(tmp_path: Path) -> None:
    """A plain install of qnn-migrate puts qnn_migrate (plus metadata and the script) only; one
    of qnn-passes (qnn-passes/) puts qnn_passes only."""
    tree = _copy_of_the_tree(tmp_path / "tree")
    passes = tmp_path / "passes-site"
    _install_wheel(_build_wheel(tree / "qnn-passes", tmp_path / "dist", "qnn_passes"), passes)
    names = {p.name for p in passes.iterdir()}
    dist_info = {n for n in names if n.endswith(".dist-info")}
    assert len(dist_info) == 1 and next(iter(dist_info)).startswith("qnn_passes-")
    assert names - dist_info == {"qnn_passes"}, names
    modules = {
        p.relative_to(tree / "qnn-passes").as_posix()
        for p in tree.glob("qnn-passes/qnn_passes/*.py")
    }
    assert modules == {p.relative_to(passes).as_posix() for p in passes.glob("qnn_passes/*.py")}

    target = tmp_path / "site"
    _install_wheel(_build_wheel(tree, tmp_path / "dist"), target)
    names = {p.name for p in target.iterdir()}
    dist_info = {n for n in names if n.endswith(".dist-info")}
    assert len(dist_info) == 1 and next(iter(dist_info)).startswith("qnn_migrate-")
    assert names - dist_info == {"qnn_migrate", "bin"}, names
    assert (target / "bin" / "qnn-migrate").is_file()
    installed = target / "qnn_migrate"
    assert (installed / "bot" / "matrices.toml").is_file()
    assert (installed / "bot" / "artifacts.py").is_file()
    assert not (installed / "bot").is_symlink()


def test_the_top_level_part_folders_are_only_links_into_qnn_migrate() -> None:
    """``bot`` and ``codemods`` at the top are relative links for readers, never real code."""
    for name in ("bot", "codemods"):
        link = ROOT / name
        # A checkout without symlink support (core.symlinks=false) has the link's text instead.
        target = os.readlink(link) if link.is_symlink() else link.read_text(encoding="utf-8")
        assert target == f"qnn_migrate/{name}", f"{name} must be a link into qnn_migrate/"


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.message_from_bytes(archive.read(name))


def _wheel_files(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def _git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(
        ["git", *args], capture_output=True, text=True, check=True, cwd=cwd, timeout=120
    ).stdout.strip()


@pytest.mark.xdist_group("packaging")
def test_the_version_names_the_commit_from_a_clone_an_archive_and_an_sdist(
    tmp_path: Path,
) -> None:
    """setuptools-scm: 0.1.devN+g<commit>, from a clone (without symlinks), from `git archive`
    (GitHub's tarballs: .git_archival.txt), from an sdist; 0.0 where nothing says (a copy of
    the files without .git), and the build still works there."""
    head = _git("rev-parse", "HEAD")
    clone = tmp_path / "clone"
    _git("-c", "core.symlinks=false", "clone", "--quiet", str(ROOT), str(clone))
    _git("config", "core.symlinks", "false", cwd=clone)  # as Git for Windows keeps it

    def commit_of(wheel: Path) -> str:
        version = _metadata(wheel)["Version"]
        assert re.fullmatch(r"0\.1\.dev\d+\+g[0-9a-f]{7,40}", version), version
        return version.split("+g", 1)[1]

    wheel = _build_wheel(clone, tmp_path / "clone-dist")
    assert head.startswith(commit_of(wheel))
    passes = _build_wheel(clone / "qnn-passes", tmp_path / "clone-dist", "qnn_passes")
    assert _metadata(passes)["Version"] == _metadata(wheel)["Version"]  # one commit, one version

    # `qnn-migrate --version` says it.
    site = tmp_path / "site"
    _install_wheel(wheel, site)
    shown = subprocess.run(
        [sys.executable, "-m", "qnn_migrate", "--version"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(site)},
        cwd=tmp_path,
        timeout=120,
    )
    assert shown.stdout.strip() == f"qnn-migrate, version {_metadata(wheel)['Version']}"

    # A GitHub archive: no .git, the commit filled into .git_archival.txt by git.
    archive = tmp_path / "archive"
    archive.mkdir()
    tar = subprocess.run(
        ["git", "archive", "--format=tar", "HEAD"], capture_output=True, check=True, cwd=ROOT
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(archive)], input=tar, check=True)
    assert not (archive / ".git").exists()
    assert head.startswith(commit_of(_build_wheel(archive, tmp_path / "archive-dist")))

    # An sdist keeps its version in PKG-INFO; its wheel has the same.
    sdist_dir = tmp_path / "sdist"
    built = subprocess.run(
        [
            sys.executable,
            "-c",
            "from setuptools import build_meta as b; import sys; print(b.build_sdist(sys.argv[1]))",
            str(sdist_dir),
        ],
        capture_output=True,
        text=True,
        cwd=clone,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    unpacked = tmp_path / "sdist-unpacked"
    with tarfile.open(sdist_dir / built.stdout.strip().splitlines()[-1]) as sdist:
        names = sdist.getnames()
        sdist.extractall(unpacked, filter="data")
    assert any(n.endswith("/LICENSE") for n in names)
    (source,) = unpacked.iterdir()
    assert head.startswith(commit_of(_build_wheel(source, tmp_path / "sdist-dist")))

    # No git metadata at all: the fallback, and a wheel all the same.
    plain = tmp_path / "plain"
    # (the archive's own build left an egg-info with its version behind: not copied)
    shutil.copytree(archive, plain, ignore=shutil.ignore_patterns("*.egg-info", "build"))
    shutil.copy(ROOT / ".git_archival.txt", plain)  # unfilled, as a copy of the files has it
    fallback = _build_wheel(plain, tmp_path / "plain-dist")
    assert _metadata(fallback)["Version"] == "0.0"


@pytest.mark.xdist_group("packaging")
def test_the_wheels_carry_the_license_urls_and_classifiers(tmp_path: Path) -> None:
    tree = _copy_of_the_tree(tmp_path / "tree")
    assert (ROOT / "LICENSE").read_bytes() == (ROOT / "qnn-passes" / "LICENSE").read_bytes()
    assert "Copyright (c) 2026, qnn-migrate contributors" in (ROOT / "LICENSE").read_text()
    for source, name in ((tree, "qnn_migrate"), (tree / "qnn-passes", "qnn_passes")):
        wheel = _build_wheel(source, tmp_path / "dist", name)
        meta = _metadata(wheel)
        assert meta["License-Expression"] == "BSD-3-Clause"
        assert meta.get_all("License-File") == ["LICENSE"]
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in _wheel_files(wheel))
        urls = meta.get_all("Project-URL") or []
        assert any(u.startswith("Repository, https://github.com/") for u in urls), urls
        assert "Programming Language :: Python :: 3.11" in (meta.get_all("Classifier") or [])
        assert meta["Author"] == "qnn-migrate contributors" or "qnn-migrate contributors" in (
            meta.get("Author-email") or meta.get("Author") or ""
        )
        assert f"{name}/py.typed" in _wheel_files(wheel)


@pytest.mark.xdist_group("packaging")
def test_the_runtime_library_depends_on_the_torch_stack_only(tmp_path: Path) -> None:
    """What a project that ships rewritten code adds to its requirements: qnn-passes alone
    brings neither the rewrite tool (libcst, click, pathspec) nor the bot (PyGithub...)."""
    tree = _copy_of_the_tree(tmp_path / "tree")
    wheel = _build_wheel(tree / "qnn-passes", tmp_path / "dist", "qnn_passes")
    requires = {
        re.split(r"[ ;<>=!~\[]", r, maxsplit=1)[0].lower()
        for r in _metadata(wheel).get_all("Requires-Dist") or []
    }
    assert requires == {"torch", "executorch", "torchao"}
    # Control: the tool's own wheel does bring them.
    tool = _metadata(_build_wheel(tree, tmp_path / "dist"))
    tool_requires = " ".join(tool.get_all("Requires-Dist") or [])
    assert "libcst" in tool_requires and "click" in tool_requires and "PyGithub" in tool_requires
    # qnn-passes is on no package index: no requirement of the tool may name it bare, or an
    # index could serve anything published under that name (dependency confusion).
    bare = [r for r in tool.get_all("Requires-Dist") or [] if _names_qnn_passes(r)]
    assert bare == []
    assert _names_qnn_passes('qnn-passes; extra == "passes"')  # control: the check can fail
    # And nothing of qnn_passes imports the tool or click.
    for module in (tree / "qnn-passes" / "qnn_passes").glob("*.py"):
        imports = ast.walk(ast.parse(module.read_text(encoding="utf-8")))
        for node in imports:
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for imported in names:
                top = imported.split(".")[0]
                assert top not in {"qnn_migrate", "click", "libcst", "github"}, (module, imported)


def _names_qnn_passes(requirement: str) -> bool:
    """Whether a Requires-Dist line names qnn-passes without a direct URL (``name @ url``)."""
    name = re.split(r"[ ;<>=!~\[@]", requirement, maxsplit=1)[0]
    return name.lower().replace("_", "-") == "qnn-passes" and "@" not in requirement


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
