"""``qnn-migrate rewrite`` end to end: files, modes, report, exit codes, bad input, safety."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from qnn_migrate.codemods import files, runner
from qnn_migrate.codemods.cli import rewrite

ROOT = Path(__file__).resolve().parents[2]
OLD = "to_edge_transform_and_lower_to_qnn"

OLD_CALL = """\
from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn


def lower(model, inputs, specs):
    return to_edge_transform_and_lower_to_qnn(model, inputs, specs)
"""
UNFIXABLE = """\
from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn


def lower(*args):
    return to_edge_transform_and_lower_to_qnn(*args)
"""
CLEAN = "import os\n\nprint(os.getcwd())\n"


def _tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir(parents=True)
    (tmp_path / "pkg" / "a.py").write_text(OLD_CALL)
    (tmp_path / "pkg" / "b.py").write_text(UNFIXABLE)
    (tmp_path / "pkg" / "c.py").write_text(CLEAN)
    return tmp_path


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own cache directory: nothing is written to the user's."""
    monkeypatch.setenv("QNN_MIGRATE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(rewrite, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_diff_prints_and_writes_nothing(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    code, out, err = _invoke("--diff", str(tree))
    assert code == 1
    assert f"--- a/{tree}/pkg/a.py" in out and "+    programs = qnn_export(" in out
    assert (tree / "pkg" / "a.py").read_text() == OLD_CALL
    assert f"would rewrite: {tree}/pkg/a.py\n" in err
    assert "3 files scanned, 1 would change (1 call site), 1 site left for you" in err
    assert "1 site left for you, by reason (-v lists each, as path:line:col):" in err
    assert f"{tree}/pkg/b.py:5:" not in err and "  1 x QM101 " in err
    code, _, err = _invoke("--diff", "-v", str(tree))
    assert f"{tree}/pkg/b.py:5:12: QM101 " in err
    # As ruff's --diff: exit 1 when something would change; control: 0 when nothing would.
    code, out, _ = _invoke("--diff", str(tree / "pkg" / "b.py"), str(tree / "pkg" / "c.py"))
    assert code == 0 and out == ""


def test_default_writes_in_place_and_second_run_changes_nothing(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    code, _, err = _invoke(str(tree))
    assert code == 0 and "1 rewritten (1 call site)" in err
    assert f"rewrote: {tree}/pkg/a.py\n" in err
    rewritten = (tree / "pkg" / "a.py").read_text()
    assert "to_edge_transform_and_lower(" in rewritten and "_to_qnn" not in rewritten
    assert (tree / "pkg" / "b.py").read_text() == UNFIXABLE  # reported, not touched
    assert not list(tree.rglob(".qnn-migrate-*"))  # no temporary files left behind
    code, _, err = _invoke(str(tree))
    assert code == 0 and "0 rewritten (0 call sites)" in err and "rewrote:" not in err
    assert (tree / "pkg" / "a.py").read_text() == rewritten


def test_check_exit_codes(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    code, out, err = _invoke("--check", str(tree))
    assert code == 1 and out == ""
    assert err.splitlines()[0] == f"would rewrite: {tree}/pkg/a.py"
    assert (tree / "pkg" / "a.py").read_text() == OLD_CALL
    code, _, _ = _invoke("--check", str(tree / "pkg" / "b.py"), str(tree / "pkg" / "c.py"))
    assert code == 0  # unfixable sites alone are reported, not "changes needed"


def test_json_report_has_one_record_per_site(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    (tree / "pkg" / "broken.py").write_text("to_edge_transform_and_lower_to_qnn(\n")
    code, out, _ = _invoke("--output-format", "json", "--check", str(tree))
    assert code == 3  # a file could not be processed: that wins over "changes needed"
    report = json.loads(out)
    assert set(report) == {"files_scanned", "files_changed", "target", "sites"}
    assert report["files_scanned"] == 4
    assert report["files_changed"] == [f"{tree}/pkg/a.py"]
    by_kind = {s["kind"]: s for s in report["sites"]}
    assert set(by_kind) == {"rewritten", "unfixable", "error"}
    assert by_kind["rewritten"] == {
        "path": f"{tree}/pkg/a.py",
        "line": 5,
        "column": 12,
        "kind": "rewritten",
        "code": "QM001",
        "reason": by_kind["rewritten"]["reason"],
        "target": "qnn-passes",
    }
    assert (by_kind["unfixable"]["path"], by_kind["unfixable"]["line"]) == (f"{tree}/pkg/b.py", 5)
    assert by_kind["unfixable"]["code"] == "QM101"
    assert by_kind["error"]["path"] == f"{tree}/pkg/broken.py"
    assert by_kind["error"]["code"] == "QM903"
    _, shorthand, _ = _invoke("--json", "--check", str(tree))
    assert json.loads(shorthand) == report  # --json is --output-format json


def test_the_format_never_changes_what_is_written(tmp_path: Path) -> None:
    written = {}
    for fmt in output_formats():
        tree = tmp_path / fmt
        tree.mkdir()
        _tree(tree)
        code, _, _ = _invoke("--output-format", fmt, "--no-cache", str(tree))
        assert code == 0
        written[fmt] = {p.name: p.read_text() for p in sorted(tree.rglob("*.py"))}
    assert written["json"] == written["text"] == written["github"]
    assert "qnn_export(" in written["text"]["a.py"]  # the control: something was written


def output_formats() -> tuple[str, ...]:
    return ("text", "json", "github")


def test_github_format_emits_workflow_commands(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    code, out, err = _invoke("--output-format", "github", "--check", str(tree))
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"::error file={tree}/pkg/a.py,line=5,col=12,title=qnn-migrate%3A")
    assert "(QM001)::QM001 " in lines[0]
    assert lines[1].startswith(f"::warning file={tree}/pkg/b.py,line=5,")
    assert "(QM101)::QM101 " in lines[1]
    assert err.startswith("qnn-migrate rewrite: 3 files scanned")  # the summary only


def test_quiet_and_very_quiet(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    code, _, err = _invoke("--check", "-q", str(tree))
    assert code == 1 and err.splitlines() == [err.splitlines()[0]]
    assert err.startswith("qnn-migrate rewrite: 3 files scanned")
    code, out, err = _invoke("--check", "-qq", str(tree))
    assert code == 1 and out == "" and err == ""


def test_bad_files_are_skipped_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path)
    bad_syntax = tree / "syntax.py"
    bad_syntax.write_text("def f(:\n    to_edge_transform_and_lower_to_qnn(a, b, c)\n")
    not_utf8 = tree / "latin.py"
    not_utf8.write_bytes(OLD_CALL.encode() + b"# caf\xe9\n")
    undeclared = tree / "undeclared.py"
    undeclared.write_bytes(b"# caf\xe9\n" + OLD_CALL.encode())
    unreadable = tree / "unreadable.py"
    unreadable.write_text(OLD_CALL)
    real_read = files.read

    def read(path: str) -> tuple[bytes, os.stat_result]:
        if path.endswith("unreadable.py"):
            raise PermissionError(13, "Permission denied")
        return real_read(path)

    monkeypatch.setattr(files, "read", read)
    before = {p: p.read_bytes() for p in (bad_syntax, not_utf8, undeclared, unreadable)}
    code, _, err = _invoke("--jobs", "1", str(tree))
    assert code == 3
    # Python's own line and column for the syntax error (libcst's are a line off here).
    with pytest.raises(SyntaxError) as python:
        compile(bad_syntax.read_text(), str(bad_syntax), "exec")
    assert (python.value.lineno, python.value.offset) == (1, 7)
    assert f"{bad_syntax}:1:7: error: QM903 " in err
    assert f"{not_utf8}:1:1: error: QM902 " in err
    assert f"(byte {len(OLD_CALL) + 5}: " in err  # where in the file the bad byte is
    assert f"{undeclared}:1:1: error: QM902 " in err
    assert f"{unreadable}:1:1: error: QM901 " in err
    assert "4 errors" in err
    for path, data in before.items():
        assert path.read_bytes() == data  # nothing written to a file that failed
    assert "to_edge_transform_and_lower(" in (tree / "pkg" / "a.py").read_text()  # run went on


def test_a_declared_encoding_that_is_not_text_is_an_error_for_that_file(tmp_path: Path) -> None:
    """A cookie naming a bytes-to-bytes codec (rot13, hex...) or no codec at all used to end
    the run in a LookupError traceback; now that file is an error (exit 3) and the rest run."""
    tree = _tree(tmp_path)
    rot13 = tree / "rot13.py"
    rot13.write_bytes(b"# -*- coding: rot13 -*-\n" + OLD_CALL.encode())
    hexed = tree / "hexed.py"
    hexed.write_bytes(b"#!/usr/bin/env python\n# coding: hex\n" + OLD_CALL.encode())
    unknown = tree / "unknown.py"
    unknown.write_bytes(b"# coding: no-such-codec\n" + OLD_CALL.encode())
    before = {p: p.read_bytes() for p in (rot13, hexed, unknown)}
    code, _, err = _invoke("--jobs", "1", str(tree))
    assert code == 3, err
    assert f"{rot13}:1:1: error: QM902 " in err and "encoding rot13" in err
    assert f"{hexed}:2:1: error: QM902 " in err and "encoding hex" in err
    assert f"{unknown}:1:1: error: QM902 " in err and "encoding no-such-codec" in err
    assert "Traceback" not in err and "3 errors" in err
    for path, data in before.items():
        assert path.read_bytes() == data
    assert "to_edge_transform_and_lower(" in (tree / "pkg" / "a.py").read_text()  # run went on


@pytest.mark.posix  # file modes (0o755) are POSIX
def test_encoding_bom_newlines_and_mode_are_kept(tmp_path: Path) -> None:
    latin = tmp_path / "latin.py"
    latin.write_bytes(("# -*- coding: latin-1 -*-\n# café\n" + OLD_CALL).encode("latin-1"))
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + OLD_CALL.encode())
    crlf = tmp_path / "crlf.py"
    crlf.write_bytes(OLD_CALL.replace("\n", "\r\n").encode())
    os.chmod(crlf, 0o755)
    code, _, err = _invoke(str(tmp_path))
    assert code == 0, err
    assert "# café" in latin.read_bytes().decode("latin-1")
    assert b"caf\xe9" in latin.read_bytes()
    assert bom.read_bytes().startswith(b"\xef\xbb\xbf")
    assert bom.read_bytes().count(b"\xef\xbb\xbf") == 1
    data = crlf.read_bytes()
    assert b"qnn_export(" in data and data.count(b"\n") == data.count(b"\r\n")
    assert stat.S_IMODE(crlf.stat().st_mode) == 0o755
    for path in (latin, bom, crlf):
        compile(path.read_bytes(), str(path), "exec")


def test_failed_write_leaves_the_file_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "a.py"
    target.write_text(OLD_CALL)

    def refuse(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", refuse)
    code, _, err = _invoke("--jobs", "1", str(target))
    assert code == 3 and f"{target}:1:1: error: QM904 " in err and "No space left" in err
    assert target.read_text() == OLD_CALL
    assert not list(tmp_path.glob(".qnn-migrate-*"))


def test_stdin_to_stdout() -> None:
    result = CliRunner().invoke(rewrite, ["-"], input=OLD_CALL)
    assert result.exit_code == 0
    assert "with qnn_manager_context(specs, programs):" in result.stdout
    result = CliRunner().invoke(rewrite, ["--check", "-"], input=OLD_CALL)
    assert result.exit_code == 1 and result.stdout == ""
    result = CliRunner().invoke(rewrite, ["--diff", "-"], input=OLD_CALL)
    assert result.exit_code == 1 and result.stdout.startswith("--- a/-")


@pytest.mark.parametrize("fmt", ["json", "github"])
def test_stdin_with_a_report_format_is_a_usage_error(fmt: str) -> None:
    """The report and the rewritten code would both need stdout: refused, never the code
    lost; --check (nothing to write) gives the report."""
    for args in (["--output-format", fmt, "-"], *([["--json", "-"]] if fmt == "json" else [])):
        result = CliRunner().invoke(rewrite, args, input=OLD_CALL)
        assert result.exit_code == 2, args
        assert f"--output-format {fmt} prints its report" in result.stderr
        assert "drop --output-format for the code" in result.stderr
        assert "pass a file path" in result.stderr
        assert result.stdout == ""
    result = CliRunner().invoke(rewrite, ["--check", "--output-format", fmt, "-"], input=OLD_CALL)
    assert result.exit_code == 1
    if fmt == "json":
        assert json.loads(result.stdout)["files_changed"] == ["-"]
    else:
        assert result.stdout.startswith("::error file=-,") and "would rewrite" in result.stdout


def test_excludes_default_and_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no config: patterns are relative to the current directory
    for directory in (".git", "build", "venv_dir", "vendored", "src"):
        (tmp_path / directory).mkdir()
        (tmp_path / directory / "m.py").write_text(OLD_CALL)
    (tmp_path / "venv_dir" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / "src" / "skip_me.py").write_text(OLD_CALL)
    code, out, _ = _invoke(
        "--json",
        "--check",
        "--extend-exclude",
        "vendored",
        "--extend-exclude",
        "src/skip_*",
        str(tmp_path),
    )
    assert code == 1
    assert json.loads(out)["files_changed"] == [f"{tmp_path}/src/m.py"]
    # --exclude replaces the built-in list: build/ is walked now (.git too, as ruff does).
    _, out, _ = _invoke("--json", "--check", "--exclude", "vendored", str(tmp_path / "src"))
    assert json.loads(out)["files_changed"] == [
        f"{tmp_path}/src/m.py",
        f"{tmp_path}/src/skip_me.py",
    ]
    _, out, _ = _invoke("--json", "--check", "--exclude", "vendored", str(tmp_path))
    assert f"{tmp_path}/build/m.py" in json.loads(out)["files_changed"]


def test_parallel_jobs_give_the_same_result(tmp_path: Path) -> None:
    for i in range(6):
        (tmp_path / f"m{i}.py").write_text(OLD_CALL)
    code, out, _ = _invoke("--json", "--check", "--jobs", "2", str(tmp_path))
    assert code == 1
    assert json.loads(out)["files_changed"] == [f"{tmp_path}/m{i}.py" for i in range(6)]
    code, _, _ = _invoke("--jobs", "2", str(tmp_path))
    assert code == 0
    assert all("qnn_export(" in (tmp_path / f"m{i}.py").read_text() for i in range(6))


def test_target_executorch(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text(OLD_CALL)
    code, out, _ = _invoke("--diff", "--target", "executorch", str(path))
    assert code == 1 and "+    with QnnManagerContext(" in out and "qnn_passes" not in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no/such/path"], "no such file or directory: no/such/path"),
        (["--diff", "--json", "."], "--diff and --output-format json both print to stdout"),
        (["--json", "--output-format", "github", "."], "--json and --output-format github"),
        (["-", "."], "cannot be combined with other paths"),
        (["--target", "tflite", "."], "Invalid value for '--target'"),
        ([], "Missing argument"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(rewrite, args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_help_documents_exit_codes() -> None:
    result = CliRunner().invoke(rewrite, ["--help"])
    assert result.exit_code == 0
    for line in ("0  done", "1  --check or --diff", "2  usage error", "3  some files could not"):
        assert line in result.stdout


def test_progress_bar_only_when_asked_or_on_a_terminal(tmp_path: Path) -> None:
    _tree(tmp_path)
    _, _, err = _invoke("--check", str(tmp_path))
    assert "qnn-migrate rewrite  [" not in err  # CliRunner's stderr is not a terminal
    _, _, err = _invoke("--check", "--progress", str(tmp_path))
    assert err.startswith("qnn-migrate rewrite\n")  # click prints only the label off a terminal


def test_real_subprocess_on_the_bundled_examples() -> None:
    """The README's quick start, minus the install: the console entry point runs for real."""
    proc = subprocess.run(
        [sys.executable, "-m", "qnn_migrate", "rewrite", "--check", "--json", "examples/"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    kinds = [s["kind"] for s in report["sites"]]
    assert "error" not in kinds
    assert kinds.count("rewritten") >= 5
    unfixable = {s["path"] for s in report["sites"] if s["kind"] == "unfixable"}
    assert unfixable >= {"examples/fork_extensions.py"}


def test_pre_commit_hooks_run_the_cli(tmp_path: Path) -> None:
    """Each hook's entry is a working command line; pre-commit appends the staged files."""
    import shlex

    import yaml

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    by_id = {hook["id"]: hook for hook in hooks}
    assert set(by_id) == {"qnn-migrate-check", "qnn-migrate-fix"}
    for hook in hooks:
        assert hook["language"] == "python" and hook["types_or"] == ["python", "jupyter"]
        assert hook["require_serial"] is True  # one process: the run parallelises itself
        assert "--force-exclude" in shlex.split(hook["entry"])
    staged = tmp_path / "staged.py"
    staged.write_text(OLD_CALL)
    check = shlex.split(by_id["qnn-migrate-check"]["entry"])
    assert check[:2] == ["qnn-migrate", "rewrite"]
    assert CliRunner().invoke(rewrite, [*check[2:], str(staged)]).exit_code == 1
    fix = shlex.split(by_id["qnn-migrate-fix"]["entry"])
    assert CliRunner().invoke(rewrite, [*fix[2:], str(staged)]).exit_code == 0
    assert CliRunner().invoke(rewrite, [*check[2:], str(staged)]).exit_code == 0


def _project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[tool.qnn-migrate]\n{table}")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text(OLD_CALL)
    return tmp_path


def test_config_sets_the_target_and_flags_win(tmp_path: Path) -> None:
    root = _project(tmp_path, 'target = "executorch"\n')
    code, out, _ = _invoke("--diff", str(root / "src"))
    assert code == 1 and "QnnManagerContext(" in out and "qnn_passes" not in out
    code, out, _ = _invoke("--diff", "--target", "qnn-passes", str(root / "src"))
    assert code == 1 and "qnn_passes" in out  # the flag wins over the file


def test_config_excludes_are_relative_to_the_project_root(tmp_path: Path) -> None:
    root = _project(tmp_path, 'extend-exclude = ["src/a.py"]\n')
    (root / "src" / "b.py").write_text(OLD_CALL)
    code, out, _ = _invoke("--json", "--check", str(root / "src"))
    assert code == 1 and json.loads(out)["files_changed"] == [f"{root}/src/b.py"]


def test_an_unknown_config_key_is_a_usage_error_naming_file_and_key(tmp_path: Path) -> None:
    root = _project(tmp_path, 'exclude = ["x"]\ntraget = "executorch"\n')
    code, _, err = _invoke("--check", str(root / "src"))
    assert code == 2
    assert f"{root / 'pyproject.toml'}: unknown key 'traget' in [tool.qnn-migrate]" in err


def test_gitignore_is_respected_unless_told_not_to(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("generated/\n")
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "m.py").write_text(OLD_CALL)
    (tmp_path / "kept.py").write_text(OLD_CALL)
    _, out, _ = _invoke("--json", "--check", str(tmp_path))
    assert json.loads(out)["files_changed"] == [f"{tmp_path}/kept.py"]
    _, out, _ = _invoke("--json", "--check", "--no-respect-gitignore", str(tmp_path))
    assert f"{tmp_path}/generated/m.py" in json.loads(out)["files_changed"]
    # Named on the command line, an ignored file is taken, unless --force-exclude.
    named = str(tmp_path / "generated" / "m.py")
    assert _invoke("--check", named)[0] == 1
    code, _, err = _invoke("--check", "--force-exclude", named)
    assert code == 0 and "0 files scanned" in err


def test_symlink_loops_and_unreadable_directories_are_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.py").write_text(CLEAN)
    os.symlink("loop.py", tmp_path / "loop.py")
    code, _, err = _invoke("--check", str(tmp_path))
    assert code == 3 and f"{tmp_path}/loop.py:1:1: error: QM906 " in err
    code, _, err = _invoke("--check", str(tmp_path / "loop.py"))
    assert code == 3 and f"{tmp_path}/loop.py:1:1: error: QM906 " in err
    os.unlink(tmp_path / "loop.py")
    (tmp_path / "locked").mkdir()
    real_scandir = os.scandir

    def scandir(path: str) -> object:  # tests run as root, where chmod 000 does not lock
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    code, _, err = _invoke("--check", str(tmp_path))
    assert code == 3 and f"{tmp_path}/locked:1:1: error: QM905 " in err


def test_help_documents_exit_code_precedence_config_and_completion() -> None:
    result = CliRunner().invoke(rewrite, ["--help"])
    assert "the highest that applies wins: 3 over 1 over 0" in result.stdout
    assert "[tool.qnn-migrate]" in result.stdout
    assert "_QNN_MIGRATE_COMPLETE=bash_source qnn-migrate" in result.stdout


def test_shell_completion_script() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "qnn_migrate"],
        capture_output=True,
        text=True,
        env={**os.environ, "_QNN_MIGRATE_COMPLETE": "bash_source"},
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "_qnn_migrate_completion()" in proc.stdout and "complete -o nosort -F" in proc.stdout


WARM_PROBE = """
import sys
from qnn_migrate.cli import main
try:
    main(["rewrite", "--check", "--output-format", "json", sys.argv[1]], prog_name="qnn-migrate")
except SystemExit as exit:
    print("exit", exit.code)
print("libcst imported:", "libcst" in sys.modules)
from qnn_migrate.codemods.cache import tool_digest
print("tool:", tool_digest())
"""


def test_a_warm_run_reads_the_cache_and_never_imports_libcst(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")

    def run_once(cache: Path) -> tuple[dict[str, object], str, str]:
        proc = subprocess.run(
            [sys.executable, "-c", WARM_PROBE, str(tree)],
            capture_output=True,
            text=True,
            env={**os.environ, "QNN_MIGRATE_CACHE_DIR": str(cache)},
            timeout=120,
        )
        report, _, tail = proc.stdout.rpartition("}\n")
        tail, _, tool = tail.rpartition("tool: ")
        return json.loads(report + "}"), tail, tool

    for attempt in range(3):  # again if the tool's own files changed in between (a new key)
        cache = tmp_path / f"cache{attempt}"
        cold, cold_tail, cold_tool = run_once(cache)
        warm, warm_tail, warm_tool = run_once(cache)
        if cold_tool == warm_tool:
            break
    assert cold_tail == "exit 1\nlibcst imported: True\n"  # the control: parsing needs it
    assert warm_tail == "exit 1\nlibcst imported: False\n"
    assert warm == cold
    assert list(cache.rglob("*")), "the cold run wrote entries"


def test_cache_results_equal_fresh_ones_and_no_cache_writes_none(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    cache = tmp_path / "cache"
    fresh = _invoke("--json", "--check", "--cache-dir", str(cache), str(tree))
    cached = _invoke("--json", "--check", "--cache-dir", str(cache), str(tree))
    assert cached == fresh and fresh[0] == 1
    # In place from the cache: the same bytes as a rewrite without it.
    _invoke("--cache-dir", str(cache), str(tree))
    from_cache = (tree / "pkg" / "a.py").read_text()
    (tree / "pkg" / "a.py").write_text(OLD_CALL)
    other = tmp_path / "none"
    _invoke("--no-cache", "--cache-dir", str(other), str(tree))
    assert (tree / "pkg" / "a.py").read_text() == from_cache and "qnn_export(" in from_cache
    assert not other.exists()
    diff_cached = _invoke("--diff", "--cache-dir", str(cache), str(tree / "pkg" / "b.py"))
    assert diff_cached[0] == 0


EXPORT_UTILS = """\
from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn


def export(model, inputs, specs):
    return to_edge_transform_and_lower_to_qnn(model, inputs, specs)
"""
CONSUMER = """\
from mypkg.lowering import to_edge_transform_and_lower_to_qnn

print(to_edge_transform_and_lower_to_qnn)
"""
IMPORT_LINE = (
    "from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn"
)


def test_a_module_others_import_the_name_from_keeps_it_and_the_cache_knows(
    tmp_path: Path,
) -> None:
    """The run's files go to the re-export scan; the scan's verdict is part of the cache key."""
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "lowering.py").write_text(EXPORT_UTILS)
    cache = str(tmp_path / "cache")
    # Alone, the module loses the import it no longer uses (and the cache remembers that).
    code, out, _ = _invoke("--diff", "--cache-dir", cache, str(package / "lowering.py"))
    assert code == 1 and f"-{IMPORT_LINE}" in out
    # With a file that imports the name from it, the same bytes must keep the import.
    (package / "consumer.py").write_text(CONSUMER)
    code, _, _ = _invoke("--cache-dir", cache, str(package))
    assert code == 0
    assert IMPORT_LINE in (package / "lowering.py").read_text()
    assert "qnn_export(" in (package / "lowering.py").read_text()


def _blocks(path: Path, language: str) -> list[str]:
    text = path.read_text()
    return [b.split("\n", 1)[1] for b in text.split("```")[1::2] if b.startswith(language + "\n")]


def test_the_documented_pre_commit_snippet_and_action_inputs_exist() -> None:
    """The README's and docs' snippets name hooks and inputs that exist; rev is a commit SHA,
    which pre-commit checks out like any git revision (there is no release tag yet)."""
    import yaml

    hook_ids = {h["id"] for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    inputs = set(yaml.safe_load((ROOT / "action.yml").read_text())["inputs"])
    snippets = 0
    for doc in (ROOT / "README.md", ROOT / "docs" / "rewrite.md"):
        for block in _blocks(doc, "yaml"):
            data = yaml.safe_load(block.replace("<", "").replace(">", ""))
            if isinstance(data, dict) and "repos" in data:  # a whole .pre-commit-config.yaml
                data = data["repos"]
            for repo in data if isinstance(data, list) else []:
                if "hooks" in repo:
                    snippets += 1
                    assert {h["id"] for h in repo["hooks"]} <= hook_ids
                    assert repo["rev"] == "sha", block  # the <sha> placeholder: a commit
            steps = data if isinstance(data, list) else []
            if isinstance(data, dict):  # a whole workflow
                steps = [s for job in data["jobs"].values() for s in job["steps"]]
            for step in (s for s in steps if isinstance(s, dict)):
                if "qnn-migrate@" in str(step.get("uses", "")):
                    snippets += 1
                    assert set(step.get("with", {})) <= inputs
    assert snippets == 4
    tags = subprocess.run(["git", "tag"], capture_output=True, text=True, cwd=ROOT).stdout
    assert tags.strip() == "" or "rev: v" not in (ROOT / "README.md").read_text()


def test_the_documented_config_tables_are_valid() -> None:
    import tomllib

    from qnn_migrate.codemods import config
    from qnn_migrate.codemods.deprecations import target_names

    tables = 0
    for doc in (ROOT / "README.md", ROOT / "docs" / "rewrite.md"):
        for block in _blocks(doc, "toml"):
            table = tomllib.loads(block)["tool"]["qnn-migrate"]
            config.parse_table(table, str(doc), target_names())  # raises on an unknown key
            tables += 1
    assert tables == 2


def test_the_line_length_of_ruff_or_black_reaches_the_rewrite(tmp_path: Path) -> None:
    widths = {}
    for width in (60, 200):
        project = tmp_path / str(width)
        project.mkdir()
        (project / "pyproject.toml").write_text(f"[tool.ruff]\nline-length = {width}\n")
        (project / "a.py").write_text(OLD_CALL.replace("specs)", "specs, skip_node_op_set=ops)"))
        code, out, _ = _invoke("--diff", "--no-cache", str(project / "a.py"))
        assert code == 1
        added = [line[1:] for line in out.splitlines() if line.startswith("+") and line[1:2] != "+"]
        widths[width] = max(len(line) for line in added)
    assert widths[60] <= 60 < widths[200]


def test_importing_from_executorch_does_not_make_a_same_named_module_keep_the_name(
    tmp_path: Path,
) -> None:
    """Every file here imports the name from ExecuTorch's `...utils.utils`; a module of the
    run called `utils.py` is not that module and loses the import it no longer uses."""
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "utils.py").write_text(EXPORT_UTILS)
    (package / "other.py").write_text(OLD_CALL)
    code, out, _ = _invoke("--diff", "--no-cache", str(package))
    assert code == 1
    assert out.count(f"-{IMPORT_LINE}") == 2  # removed from both files


PROVEN_MODULE = """\
import torch
from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn


def lower(inputs: tuple, specs):  # a tuple: not keyed by method
    model = torch.nn.Linear(2, 2)
    return to_edge_transform_and_lower_to_qnn(model, inputs, specs)
"""


def test_flow_chooses_the_export_and_is_part_of_the_cache_key(tmp_path: Path) -> None:
    """--flow canonical (the default) exports with torch.export; qnn-export keeps qnn_export.

    The same bytes are rewritten under both flows with one cache: a cached canonical result
    must not be handed back for --flow qnn-export.
    """
    (tmp_path / "a.py").write_text(PROVEN_MODULE)
    code, canonical, _ = _invoke("--diff", str(tmp_path))
    assert code == 1 and "torch.export.export(" in canonical and "qnn_export(" not in canonical
    code, old_shape, _ = _invoke("--diff", "--flow", "qnn-export", str(tmp_path))
    assert code == 1 and "qnn_export(" in old_shape and "torch.export.export(" not in old_shape
    code, _, err = _invoke("--flow", "bogus", str(tmp_path))
    assert code == 2 and "canonical" in err and "qnn-export" in err


def test_the_command_line_does_not_import_libcst_codemod() -> None:
    probe = (
        "import sys, qnn_migrate.codemods.cli, qnn_migrate.codemods.engine\n"
        "print(sorted(m for m in sys.modules if m.startswith(('libcst.codemod', 'libcst.matchers'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert out.strip() == "[]"


def test_progress_tells_what_the_rewrite_of_a_long_file_is_doing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "LONG_FILE", len(OLD_CALL))  # this file counts as long
    (tmp_path / "a.py").write_text(OLD_CALL)
    code, _, err = _invoke("--check", "--progress", "-j1", str(tmp_path / "a.py"))
    assert code == 1
    told = [
        line for line in err.splitlines() if line.startswith(f"qnn-migrate rewrite: {tmp_path}")
    ]
    assert [line.rsplit(": ", 1)[1].split(" ")[0] for line in told] == [
        "parsing",
        "resolving",
        "rewriting",
        "writing",
        "checking",
    ]
    # Off a terminal nothing is told unless asked, and never beside a machine format.
    assert f"{tmp_path}/a.py: parsing" not in _invoke("--check", "-j1", str(tmp_path))[2]
    code, out, err = _invoke("--check", "--json", "-j1", str(tmp_path))
    assert "parsing" not in out + err and json.loads(out)["files_changed"]


@pytest.mark.posix  # FIFOs are POSIX
def test_a_fifo_named_py_is_an_error_and_every_other_file_is_processed(tmp_path: Path) -> None:
    """707dc17 opened the FIFO for reading and waited for a writer for ever (the timeout
    below fired); now it is QM909, exit 3, and the other files are rewritten as usual."""
    tree = _tree(tmp_path / "tree")
    os.mkfifo(tree / "pkg" / "pipe.py")
    for args in ([str(tree)], [str(tree / "pkg" / "pipe.py"), str(tree / "pkg" / "a.py")]):
        (tree / "pkg" / "a.py").write_text(OLD_CALL)
        proc = subprocess.run(
            [sys.executable, "-m", "qnn_migrate", "rewrite", "--no-cache", *args],
            capture_output=True,
            text=True,
            timeout=120,  # a hang is the failure under test
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 3, proc.stderr
        assert f"{tree}/pkg/pipe.py:1:1: error: QM909 is a FIFO (named pipe)" in proc.stderr
        assert f"rewrote: {tree}/pkg/a.py" in proc.stderr  # nothing else lost
        assert "to_edge_transform_and_lower(" in (tree / "pkg" / "a.py").read_text()


TWO_CALLS = """\
from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn


def lower(model, inputs, specs):
    kept = to_edge_transform_and_lower_to_qnn(model, inputs, specs)  # noqa: QM001
    return to_edge_transform_and_lower_to_qnn(model, inputs, specs){comment}


def forward(*args):
    return to_edge_transform_and_lower_to_qnn(*args){star_comment}
"""


@pytest.mark.parametrize(
    ("comment", "star_comment", "rewritten_lines", "suppressed"),
    [
        ("", "  # noqa: QM101", [6], [(5, "QM001"), (10, "QM101")]),
        ("  # noqa", "  # noqa", [], [(5, "QM001"), (6, "QM001"), (10, "QM101")]),
        # Controls: another tool's code suppresses nothing; no comment, nothing suppressed.
        ("  # noqa: E501", "  # noqa: E501", [6], [(5, "QM001")]),
        ("", "", [6], [(5, "QM001")]),
    ],
)
def test_noqa_on_a_call_line_suppresses_that_site_and_json_says_so(
    tmp_path: Path,
    comment: str,
    star_comment: str,
    rewritten_lines: list[int],
    suppressed: list[tuple[int, str]],
) -> None:
    path = tmp_path / "m.py"
    source = TWO_CALLS.format(comment=comment, star_comment=star_comment)
    path.write_text(source)
    code, out, _ = _invoke("--check", "--json", str(path))
    sites = json.loads(out)["sites"]
    assert [s["line"] for s in sites if s["kind"] == "rewritten"] == rewritten_lines
    assert [(s["line"], s["code"]) for s in sites if s["kind"] == "suppressed"] == suppressed
    left = [(s["line"], s["code"]) for s in sites if s["kind"] == "unfixable"]
    assert left == ([] if (10, "QM101") in suppressed else [(10, "QM101")])
    assert code == (1 if rewritten_lines else 0)
    code, _, err = _invoke("-v", str(path))
    text = path.read_text()
    # The suppressed call is still the old call, on its line, comment and all.
    assert "kept = to_edge_transform_and_lower_to_qnn(model, inputs, specs)  # noqa: QM001" in text
    assert ("return to_edge_transform_and_lower_to_qnn(model" in text) == (not rewritten_lines)
    assert f"{path}:5:12: suppressed: QM001 " in err
    assert "suppressed by # noqa" in err


def test_stdin_filename_finds_the_config_names_the_file_and_is_excluded_as_ruff_does(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[tool.qnn-migrate]\ntarget = "executorch"\nextend-exclude = ["generated"]\n'
    )
    name = str(project / "src" / "a.py")

    def run(*args: str, source: str = OLD_CALL) -> tuple[int, str, str]:
        result = CliRunner().invoke(rewrite, list(args), input=source)
        return result.exit_code, result.stdout, result.stderr

    # The configuration is the one above the named file (target executorch) ...
    code, out, _ = run("--stdin-filename", name)
    assert code == 0 and "QnnManagerContext(" in out and "qnn_passes" not in out
    code, out, _ = run("--stdin-filename", name, "-")  # "-" may be given too
    assert "QnnManagerContext(" in out
    # ... control: without the name, the current directory's (none: the default target).
    code, out, _ = run("-")
    assert code == 0 and "qnn_passes" in out
    # Messages name the file.
    code, _, err = run("--check", "-v", "--stdin-filename", name, source=UNFIXABLE)
    assert code == 0 and f"{name}:5:12: QM101 " in err
    code, _, err = run("--check", "-v", "-", source=UNFIXABLE)
    assert "-:5:12: QM101 " in err  # control
    # --force-exclude applies the exclusions to it: printed back as it was.
    generated = str(project / "generated" / "g.py")
    code, out, err = run("--force-exclude", "--stdin-filename", generated)
    assert code == 0 and out == OLD_CALL and err == ""
    code, out, _ = run("--stdin-filename", generated)  # control: not forced, rewritten
    assert code == 0 and out != OLD_CALL and "QnnManagerContext(" in out
    # It names standard input only.
    code, _, err = run("--stdin-filename", name, str(project))
    assert code == 2 and "--stdin-filename names standard input" in err


def test_libcst_tool_writes_what_qnn_migrate_writes_at_the_projects_line_length(
    tmp_path: Path,
) -> None:
    """docs/rewrite.md says both give the same output: 707dc17's libcst command ignored
    [tool.ruff] line-length (always 88), so on a project with another length they differed."""
    source = (ROOT / "examples" / "lowering_utils.py").read_text()
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.ruff]\nline-length = 60\n")
    ours, theirs = project / "ours.py", project / "theirs.py"
    ours.write_text(source)
    theirs.write_text(source)
    code, _, _ = _invoke("--no-cache", str(ours))
    assert code == 0
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "libcst.tool", "codemod", "--no-format", "--hide-progress"),
            *("-x", "qnn_migrate.codemods.rules.lower_to_qnn.RewriteLowerToQnn", str(theirs)),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert theirs.read_text() == ours.read_text()
    # Control: the length matters for this file (at 88 the rewrite differs).
    (project / "pyproject.toml").write_text("[tool.ruff]\nline-length = 88\n")
    ours.write_text(source)
    _invoke("--no-cache", str(ours))
    assert ours.read_text() != theirs.read_text()
