"""The packaging tier: wheels and sdists built from clones and copies of the tree, their
metadata and versions, and mypy over both packages. Each build takes tens of seconds, so these run
once per CI run (``pytest --tier all``, on 3.11), not in the default loop nor on every Python."""

from __future__ import annotations

import ast
import email
import email.message
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from qnn_migrate_tests.docs.examples import examples

ROOT = Path(__file__).resolve().parents[2]


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
    # tests/support, not the clone, on sys.path).
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


def _names_qnn_passes(requirement: str) -> bool:
    """Whether a Requires-Dist line names qnn-passes without a direct URL (``name @ url``)."""
    name = re.split(r"[ ;<>=!~\[@]", requirement, maxsplit=1)[0]
    return name.lower().replace("_", "-") == "qnn-passes" and "@" not in requirement


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
