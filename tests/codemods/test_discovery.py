"""Which files a run takes: exclusions relative to the project root, git's ignore files,
--force-exclude, and errors (never a silent pass) for what cannot be walked."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

import pathspec
import pytest

from qnn_migrate.codemods import discovery
from qnn_migrate.codemods.discovery import LOOP, Selection, discover


def _files(tmp_path: Path, *relative: str) -> None:
    for name in relative:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


def _found(paths: list[Path], root: Path, **options: object) -> list[str]:
    found = discover([str(p) for p in paths], Selection(str(root), **options))  # type: ignore[arg-type]
    assert found.errors == []
    return [os.path.relpath(f, root) for f in found.files]


def test_exclude_patterns_are_relative_to_the_project_root_not_the_path(tmp_path: Path) -> None:
    _files(tmp_path, "src/gen/a.py", "src/keep.py", "gen/b.py", "src/sub/gen/c.py")
    # "src/gen" names one directory under the root; walking src/ must not make it "gen".
    found = _found([tmp_path / "src"], tmp_path, extend_exclude=("src/gen",))
    assert found == ["src/keep.py", "src/sub/gen/c.py"]
    # A bare name matches at any depth, as ruff's do.
    found = _found([tmp_path], tmp_path, extend_exclude=("gen",))
    assert found == ["src/keep.py"]
    # Control: nothing excluded, everything found.
    assert len(_found([tmp_path], tmp_path)) == 4


def test_exclude_replaces_the_defaults_and_extend_exclude_adds(tmp_path: Path) -> None:
    _files(tmp_path, "build/a.py", "vendored/b.py", "c.py")
    assert _found([tmp_path], tmp_path) == ["c.py", "vendored/b.py"]
    assert _found([tmp_path], tmp_path, extend_exclude=("vendored",)) == ["c.py"]
    assert _found([tmp_path], tmp_path, exclude=("vendored",)) == ["c.py", "build/a.py"]


def test_gitignore_at_every_level_and_info_exclude(tmp_path: Path) -> None:
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("local_*.py\n")
    (tmp_path / ".gitignore").write_text("generated/\n*_pb2.py\n")
    _files(
        tmp_path,
        "a.py",
        "local_x.py",
        "generated/g.py",
        "pkg/m_pb2.py",
        "pkg/keep_pb2.py",
        "pkg/inner/secret.py",
        "pkg/inner/open.py",
    )
    (tmp_path / "pkg" / ".gitignore").write_text("!keep_pb2.py\ninner/secret.py\n")
    assert _found([tmp_path], tmp_path) == ["a.py", "pkg/keep_pb2.py", "pkg/inner/open.py"]
    everything = _found([tmp_path], tmp_path, respect_gitignore=False)
    assert len(everything) == 7  # the control: --no-respect-gitignore takes them all


def test_gitignore_above_the_path_applies_and_a_named_directory_is_walked(
    tmp_path: Path,
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("third_party/\n*_pb2.py\n")
    _files(tmp_path, "third_party/lib/a.py", "third_party/lib/b_pb2.py", "src/c_pb2.py")
    # src/ is walked from below the root: the root's .gitignore still applies.
    assert _found([tmp_path / "src"], tmp_path) == []
    # third_party/lib is named: walked, though ignored; the file patterns still apply.
    assert _found([tmp_path / "third_party" / "lib"], tmp_path) == ["third_party/lib/a.py"]


def test_force_exclude_applies_to_files_named(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("ignored.py\n")
    _files(tmp_path, "gen/a.py", "ignored.py", "b.py")
    named = [tmp_path / "gen" / "a.py", tmp_path / "ignored.py", tmp_path / "b.py"]
    assert len(_found(named, tmp_path, extend_exclude=("gen",))) == 3  # named: taken
    found = _found(named, tmp_path, extend_exclude=("gen",), force_exclude=True)
    assert found == ["b.py"]


def test_force_exclude_does_not_match_directories_above_the_root(tmp_path: Path) -> None:
    project = tmp_path / "build" / "project"  # "build" is a default exclude, above the root
    _files(project, "a.py")
    assert _found([project / "a.py"], project, force_exclude=True) == ["a.py"]


def test_a_symlink_loop_met_while_walking_is_an_error(tmp_path: Path) -> None:
    _files(tmp_path, "a.py")
    os.symlink("loop.py", tmp_path / "loop.py")
    found = discover([str(tmp_path)], Selection(str(tmp_path)))
    assert found.errors == [(str(tmp_path / "loop.py"), LOOP)]
    assert found.files == [str(tmp_path / "a.py")]


def test_an_explicit_symlink_loop_is_reported_as_a_loop(tmp_path: Path) -> None:
    os.symlink("loop.py", tmp_path / "loop.py")
    found = discover([str(tmp_path / "loop.py")], Selection(str(tmp_path)))
    assert found.errors == [(str(tmp_path / "loop.py"), LOOP)]
    missing = discover([str(tmp_path / "missing.py")], Selection(str(tmp_path)))
    assert missing.errors[0][1].code == "QM901"  # the control: not every error is a loop


def test_other_symlinks_are_listed_not_followed(tmp_path: Path) -> None:
    _files(tmp_path, "pkg/a.py", "outside/b.py")
    os.symlink(tmp_path / "outside", tmp_path / "pkg" / "link")
    found = discover([str(tmp_path / "pkg")], Selection(str(tmp_path)))
    assert found.files == [str(tmp_path / "pkg" / "a.py")] and found.errors == []
    assert found.links == [str(tmp_path / "pkg" / "link")]


def test_an_unreadable_directory_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _files(tmp_path, "a.py", "locked/b.py")
    real_scandir = os.scandir

    def scandir(path: str) -> object:  # tests run as root, where chmod 000 does not lock
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(discovery.os, "scandir", scandir)
    found = discover([str(tmp_path)], Selection(str(tmp_path)))
    assert found.files == [str(tmp_path / "a.py")]
    assert [(path, reason.code) for path, reason in found.errors] == [
        (str(tmp_path / "locked"), "QM905")
    ]


def test_the_one_expression_prefilter_agrees_with_pathspec_everywhere() -> None:
    lines = [
        "# comment",
        "",
        "build/",
        "*.log",
        "!keep.log",
        "/top.py",
        "a/**/b.py",
        "doc?/",
        "[ab]*.py",
        "\\#hash.py",
        "trailing\\ ",
        "**/deep",
    ]
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    fast = discovery._Ignore.of("/r", spec)
    assert fast.any_line is not None  # the prefilter is in use
    names = [
        "build",
        "x.log",
        "keep.log",
        "top.py",
        "b.py",
        "docs",
        "a.py",
        "#hash.py",
        "deep",
        "c.py",
    ]
    paths = [
        f"{prefix}{name}{suffix}"
        for prefix in ("", "a/", "a/x/", "sub/dir/")
        for name in names
        for suffix in ("", "/", "/z.py")
    ]
    verdicts = {p: spec.check_file(p).include for p in paths}
    assert {fast.verdict(p) for p in paths} >= {True, False, None}
    assert {p: fast.verdict(p) for p in paths} == verdicts


def test_a_pattern_without_a_slash_matches_names_only_as_ruff_s_do(tmp_path: Path) -> None:
    _files(tmp_path, "d/x.py", "dmx.py", "keep.py")
    # fnmatch("d/x.py", "d*x.py") holds, but the pattern has no "/": only names count.
    assert _found([tmp_path], tmp_path, extend_exclude=("d*x.py",)) == ["keep.py", "d/x.py"]
    assert _found([tmp_path], tmp_path, extend_exclude=("d/*.py",)) == ["dmx.py", "keep.py"]


def test_exclusion_matches_as_fnmatch_does() -> None:
    patterns = (
        *discovery.DEFAULT_EXCLUDES,
        "test_*",
        "*/_passes/*",
        "[a-c]*.py",
        "x?y",
        "a|b",
        "(c)",
    )
    excluded = discovery.exclusion(patterns)
    names = ["build", "pkg.egg-info", "test_x.py", "b.py", "d.py", "xzy", "a|b", "(c)", "a", "."]
    for name in names:
        for relative in (name, f"src/{name}", f"src/_passes/{name}", f"deep/er/{name}"):
            expected = any(fnmatch.fnmatch(t, p) for p in patterns for t in (name, relative))
            assert excluded(name, relative) == expected, (name, relative)
    assert not discovery.exclusion(())("build", "build")


@pytest.mark.posix  # FIFOs are POSIX
def test_a_fifo_named_py_is_an_error_walked_or_named(tmp_path: Path) -> None:
    _files(tmp_path, "a.py")
    os.mkfifo(tmp_path / "pipe.py")
    found = discover([str(tmp_path)], Selection(str(tmp_path)))
    assert found.files == [str(tmp_path / "a.py")]
    assert [(p, r.code) for p, r in found.errors] == [(str(tmp_path / "pipe.py"), "QM909")]
    named = discover([str(tmp_path / "pipe.py")], Selection(str(tmp_path)))
    assert named.files == [] and [r.code for _, r in named.errors] == ["QM909"]
    # A .gitignore that is a FIFO is reported too, not waited on.
    os.mkfifo(tmp_path / ".gitignore")
    (tmp_path / ".git").mkdir()
    walked = discover([str(tmp_path)], Selection(str(tmp_path)))
    assert sorted(r.code for _, r in walked.errors) == ["QM907", "QM909"]
