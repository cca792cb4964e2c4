"""The GitHub composite action (action.yml): valid metadata, clean under zizmor's pedantic
audit, and its scripts run for real on a tree, with hostile inputs kept inert."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "action.yml"
# The composite action runs bash with a venv's bin/ (GitHub's Linux and macOS runners).
pytestmark = pytest.mark.posix

BIN = Path(sys.executable).parent
QNN_MIGRATE = shutil.which("qnn-migrate", path=str(BIN))
OLD_CALL = """\
from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn


def lower(model, inputs, specs):
    return to_edge_transform_and_lower_to_qnn(model, inputs, specs)
"""


def _steps() -> dict[str, dict[str, object]]:
    action = yaml.safe_load(ACTION.read_text())
    return {step["name"]: step for step in action["runs"]["steps"]}


def _tool(name: str) -> list[str]:
    path = BIN / name
    assert path.exists(), f"{name} is part of the [test] extra"
    return [str(path)]


def test_the_metadata_validates_against_github_s_schema(tmp_path: Path) -> None:
    check = [*_tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions"]
    proc = subprocess.run([*check, str(ACTION)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    broken = tmp_path / "action.yml"
    broken.write_text(ACTION.read_text().replace("using: composite", "using: compost"))
    proc = subprocess.run([*check, str(broken)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0  # the control: the schema does catch a bad action


def test_zizmor_pedantic_finds_nothing(tmp_path: Path) -> None:
    zizmor = [*_tool("zizmor"), "--offline", "--persona", "pedantic", "--no-progress"]
    proc = subprocess.run([*zizmor, str(ACTION)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The control: an input expanded inside run: is a template injection zizmor reports.
    injected = tmp_path / "action.yml"
    injected.write_text(
        ACTION.read_text().replace(
            '"$QNN_MIGRATE" rewrite', '"$QNN_MIGRATE" ${{ inputs.args }} rewrite'
        )
    )
    proc = subprocess.run([*zizmor, str(injected)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "template-injection" in proc.stdout + proc.stderr


def test_inputs_reach_the_scripts_only_through_env() -> None:
    for step in _steps().values():
        assert "${{" not in str(step.get("run", "")), step["name"]
    check = _steps()["qnn-migrate rewrite --check"]
    assert check["env"] == {
        "QNN_MIGRATE": "${{ steps.install.outputs.bin }}",
        "INPUT_PATHS": "${{ inputs.paths }}",
        "INPUT_ARGS": "${{ inputs.args }}",
    }


def _run_check_step(tree: Path, paths: str, args: str) -> subprocess.CompletedProcess[str]:
    assert QNN_MIGRATE is not None
    script = str(_steps()["qnn-migrate rewrite --check"]["run"])
    env = {
        **os.environ,
        "QNN_MIGRATE": QNN_MIGRATE,
        "INPUT_PATHS": paths,
        "INPUT_ARGS": args,
        "QNN_MIGRATE_CACHE_DIR": str(tree.parent / "cache"),
    }
    return subprocess.run(
        ["bash", "-c", script], cwd=tree, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_check_step_annotates_a_tree(tmp_path: Path) -> None:
    tree = tmp_path / "checkout"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "a.py").write_text(OLD_CALL)
    (tree / "src" / "generated").mkdir()
    (tree / "src" / "generated" / "g.py").write_text(OLD_CALL)
    (tree / "clean.py").write_text("x = 1\n")
    proc = _run_check_step(tree, "src\nclean.py", "--extend-exclude  generated")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines == [
        "::error file=src/a.py,line=5,col=12,title=qnn-migrate%3A would rewrite (QM001)::QM001 "
        "to_edge_transform_and_lower_to_qnn -> executorch.exir.to_edge_transform_and_lower"
    ], proc.stdout
    assert (tree / "src" / "a.py").read_text() == OLD_CALL  # --check writes nothing
    proc = _run_check_step(tree, "", "--extend-exclude generated")  # the default: "."
    assert proc.returncode == 1 and proc.stdout.splitlines() == lines  # file=src/a.py, no ./
    proc = _run_check_step(tree, "clean.py", "")
    assert proc.returncode == 0 and proc.stdout == ""  # the control: nothing to say


@pytest.mark.parametrize("hostile", ["$(touch pwned)", "`touch pwned`", "; touch pwned", "*"])
def test_hostile_inputs_stay_words(tmp_path: Path, hostile: str) -> None:
    tree = tmp_path / "checkout"
    tree.mkdir()
    (tree / "a.py").write_text("x = 1\n")
    proc = _run_check_step(tree, "a.py", hostile)
    assert not (tree / "pwned").exists()
    assert proc.returncode == 2, proc.stderr  # click refuses the word as a path or option
    proc = _run_check_step(tree, hostile, "")
    assert not (tree / "pwned").exists() and proc.returncode == 2


def test_the_install_step_refuses_a_version_that_is_not_one(tmp_path: Path) -> None:
    script = str(_steps()["Install qnn-migrate"]["run"])
    output = tmp_path / "github_output"
    env = {
        **os.environ,
        "PYTHON": "/nonexistent/python",  # never reached: the input is refused first
        "VERSION": "v0.1.0 --index-url http://evil.example",
        "GITHUB_OUTPUT": str(output),
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_ACTION_REPOSITORY": "owner/qnn-migrate",
    }
    proc = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stdout.startswith("::error title=qnn-migrate action::the version input is neither")
    assert "evil" not in proc.stdout and not output.exists()
    env["VERSION"] = "0.1.0"  # not a ref: there is no package index to take a version from
    proc = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
    assert proc.returncode == 2 and "neither a 40-hex commit SHA nor a release tag" in proc.stdout
    for ref in ("v0.1.0", "0" * 40):  # the controls: a tag or a commit passes and reaches Python
        env["VERSION"] = ref
        proc = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
        assert proc.returncode != 0 and "/nonexistent/python" in proc.stderr
