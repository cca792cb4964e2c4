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

from qnn_migrate.codemods import cli
from qnn_migrate.codemods.cli import rewrite

ROOT = Path(__file__).resolve().parents[2]

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
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(OLD_CALL)
    (tmp_path / "pkg" / "b.py").write_text(UNFIXABLE)
    (tmp_path / "pkg" / "c.py").write_text(CLEAN)
    return tmp_path


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(rewrite, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_diff_prints_and_writes_nothing(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    code, out, err = _invoke("--diff", str(tree))
    assert code == 0
    assert f"--- a/{tree}/pkg/a.py" in out and "+    programs = qnn_export(" in out
    assert (tree / "pkg" / "a.py").read_text() == OLD_CALL
    assert "3 files scanned, 1 would change (1 call site), 1 site left for you" in err
    assert f"{tree}/pkg/b.py:5: " in err and "*args/**kwargs" in err


def test_default_writes_in_place_and_second_run_changes_nothing(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    code, _, err = _invoke(str(tree))
    assert code == 0 and "1 rewritten (1 call site)" in err
    rewritten = (tree / "pkg" / "a.py").read_text()
    assert "to_edge_transform_and_lower(" in rewritten and "_to_qnn" not in rewritten
    assert (tree / "pkg" / "b.py").read_text() == UNFIXABLE  # reported, not touched
    assert not list(tree.rglob(".qnn-migrate-*"))  # no temporary files left behind
    code, _, err = _invoke(str(tree))
    assert code == 0 and "0 rewritten (0 call sites)" in err
    assert (tree / "pkg" / "a.py").read_text() == rewritten


def test_check_exit_codes(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    code, out, _ = _invoke("--check", str(tree))
    assert code == 1 and out == ""
    assert (tree / "pkg" / "a.py").read_text() == OLD_CALL
    code, _, _ = _invoke("--check", str(tree / "pkg" / "b.py"), str(tree / "pkg" / "c.py"))
    assert code == 0  # unfixable sites alone are reported, not "changes needed"


def test_json_report(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    (tree / "pkg" / "broken.py").write_text("to_edge_transform_and_lower_to_qnn(\n")
    code, out, _ = _invoke("--json", "--check", str(tree))
    assert code == 3  # a file could not be processed: that wins over "changes needed"
    report = json.loads(out)
    assert set(report) == {
        "files_scanned",
        "files_changed",
        "sites_rewritten",
        "unfixable",
        "errors",
    }
    assert report["files_scanned"] == 4
    assert report["files_changed"] == [f"{tree}/pkg/a.py"]
    assert report["sites_rewritten"] == 1
    assert report["unfixable"] == [
        {"path": f"{tree}/pkg/b.py", "line": 5, "reason": report["unfixable"][0]["reason"]}
    ]
    assert [e["path"] for e in report["errors"]] == [f"{tree}/pkg/broken.py"]
    assert "does not parse" in report["errors"][0]["message"]


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
    real_read = cli.read_file

    def read_file(path: str) -> tuple[bytes, os.stat_result]:
        if path.endswith("unreadable.py"):
            raise PermissionError(13, "Permission denied")
        return real_read(path)

    monkeypatch.setattr(cli, "read_file", read_file)
    before = {p: p.read_bytes() for p in (bad_syntax, not_utf8, undeclared, unreadable)}
    code, _, err = _invoke("--jobs", "1", str(tree))
    assert code == 3
    assert f"{bad_syntax}: error: does not parse (parser error: error at 2:4" in err
    assert f"{not_utf8}: error: is not valid utf-8 (byte {len(OLD_CALL) + 5}: " in err
    assert f"{undeclared}: error: cannot be decoded (invalid or missing encoding" in err
    assert f"{unreadable}: error: cannot be read (Permission denied)" in err
    assert "4 errors" in err
    for path, data in before.items():
        assert path.read_bytes() == data  # nothing written to a file that failed
    assert "to_edge_transform_and_lower(" in (tree / "pkg" / "a.py").read_text()  # run went on


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

    monkeypatch.setattr(cli.os, "replace", refuse)
    code, _, err = _invoke("--jobs", "1", str(target))
    assert code == 3 and "cannot be written (No space left on device)" in err
    assert target.read_text() == OLD_CALL
    assert not list(tmp_path.glob(".qnn-migrate-*"))


def test_stdin_to_stdout() -> None:
    result = CliRunner().invoke(rewrite, ["-"], input=OLD_CALL)
    assert result.exit_code == 0
    assert "with qnn_manager_context(specs, programs):" in result.stdout
    result = CliRunner().invoke(rewrite, ["--check", "-"], input=OLD_CALL)
    assert result.exit_code == 1 and result.stdout == ""
    result = CliRunner().invoke(rewrite, ["--diff", "-"], input=OLD_CALL)
    assert result.exit_code == 0 and result.stdout.startswith("--- a/-")


def test_excludes_default_and_given(tmp_path: Path) -> None:
    for directory in (".git", "build", "venv_dir", "vendored", "src"):
        (tmp_path / directory).mkdir()
        (tmp_path / directory / "m.py").write_text(OLD_CALL)
    (tmp_path / "venv_dir" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / "src" / "skip_me.py").write_text(OLD_CALL)
    code, out, _ = _invoke(
        "--json", "--check", "--exclude", "vendored", "--exclude", "*/skip_*", str(tmp_path)
    )
    assert code == 1
    assert json.loads(out)["files_changed"] == [f"{tmp_path}/src/m.py"]


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
    assert code == 0 and "+    with QnnManagerContext(" in out and "qnn_passes" not in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no/such/path"], "no such file or directory: no/such/path"),
        (["--diff", "--json", "."], "--diff and --json both print to stdout"),
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
    for line in ("0  done", "1  --check only", "2  usage error", "3  some files could not"):
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
    assert report["errors"] == []
    assert report["sites_rewritten"] >= 5
    assert {u["path"] for u in report["unfixable"]} >= {"examples/fork_extensions.py"}


def test_pre_commit_hooks_run_the_cli(tmp_path: Path) -> None:
    """Each hook's entry is a working command line; pre-commit appends the staged files."""
    import shlex

    import yaml

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    by_id = {hook["id"]: hook for hook in hooks}
    assert set(by_id) == {"qnn-migrate-check", "qnn-migrate-fix"}
    for hook in hooks:
        assert hook["language"] == "python" and hook["types"] == ["python"]
    staged = tmp_path / "staged.py"
    staged.write_text(OLD_CALL)
    check = shlex.split(by_id["qnn-migrate-check"]["entry"])
    assert check[:2] == ["qnn-migrate", "rewrite"]
    assert CliRunner().invoke(rewrite, [*check[2:], str(staged)]).exit_code == 1
    fix = shlex.split(by_id["qnn-migrate-fix"]["entry"])
    assert CliRunner().invoke(rewrite, [*fix[2:], str(staged)]).exit_code == 0
    assert CliRunner().invoke(rewrite, [*check[2:], str(staged)]).exit_code == 0
