"""A fork-shaped repository adopts the bot with only the files docs/adopting.md lists.

The layout: an ExecuTorch-shaped checkout holding ExecuTorch 1.5.1's own
test_qnn_delegate.py, the two caller workflows and the config copied from
``.github/adopt`` (the qnn-migrate commit filled in), and the registry regenerated from
that test file; beside it, this repository's reusable workflows and action as GitHub would
fetch them. Both must pass the workflow schema and zizmor, and the bot run from the fork's
checkout must plan from the fork's config, found without flags.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from qnn_migrate_tests.workflows.templates import filled

from qnn_migrate.bot import catalog as catalog_mod
from qnn_migrate.bot import doctor

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ADOPT = ROOT / ".github" / "adopt"
PIN = "5f1d0c3b9a8e7d6c5b4a39281706f5e4d3c2b1a0"  # the qnn-migrate commit the fork adopts
SHA = "c0ffee" + "0" * 34  # a commit of the fork
FORK_MATRIX = """
[matrices.fork_only]
description = "a matrix only this fork has"
guards = ["backends/qualcomm/_passes/fork_pass.py"]
tests = [
  "TestQNNFloatingPointOperator.test_qnn_backend_conv2d",
  "TestQNNQuantizedOperator.test_qnn_backend_conv2d",
]
"""


# The fork's registry comes from the installed ExecuTorch's own harness: the [passes] extra.
pytestmark = pytest.mark.passes


def _harness() -> Path:
    import executorch

    path = Path(next(iter(executorch.__path__))) / "backends/qualcomm/tests/test_qnn_delegate.py"
    if not path.is_file():
        pytest.fail(f"executorch has no {path}; install the [passes] extra")
    return path


def bot(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return subprocess.run(
        [str(BIN / "qnn-migrate"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the fork's checkout, qnn-migrate as the fork's workflows call it)."""
    base = tmp_path_factory.mktemp("adopt")
    fork = base / "executorch"
    tests = fork / "backends" / "qualcomm" / "tests"
    tests.mkdir(parents=True)
    shutil.copy(_harness(), tests / "test_qnn_delegate.py")
    workflows = fork / ".github" / "workflows"
    workflows.mkdir(parents=True)
    for template in sorted((ADOPT / "workflows").glob("*.yml")):
        text = filled(template.read_text(), PIN)
        (workflows / template.name).write_text(text)
    (fork / ".github" / "qnn-bot.toml").write_text(
        (ADOPT / "qnn-bot.toml").read_text() + FORK_MATRIX
    )
    subprocess.run(["git", "init", "-q", str(fork)], check=True)
    made = bot(
        "matrix",
        "registry",
        "--from",
        "backends/qualcomm/tests/test_qnn_delegate.py",
        "--version",
        "1.5.1",
        "--out",
        ".github/qnn-test-registry.json",
        cwd=fork,
    )
    assert made.returncode == 0, made.stderr

    upstream = base / "qnn-migrate"
    shutil.copytree(ROOT / ".github" / "workflows", upstream / ".github" / "workflows")
    shutil.copytree(ROOT / ".github" / "actions", upstream / ".github" / "actions")
    return fork, upstream


def test_the_fork_adds_only_the_documented_files(layout: tuple[Path, Path]) -> None:
    fork, _ = layout
    added = sorted(str(p.relative_to(fork)) for p in (fork / ".github").rglob("*") if p.is_file())
    assert added == [
        ".github/qnn-bot.toml",
        ".github/qnn-test-registry.json",
        ".github/workflows/qnn-command.yml",
        ".github/workflows/qnn-device-tests.yml",
    ]
    docs = (ROOT / "docs" / "adopting.md").read_text()
    for name in added:
        assert f"`{name}`" in docs, name


def test_the_layout_passes_the_schema_and_zizmor(layout: tuple[Path, Path]) -> None:
    fork, upstream = layout
    files = [*sorted((fork / ".github/workflows").glob("*.yml"))]
    files += sorted((upstream / ".github/workflows").glob("qnn-bot-*.yml"))
    schema = [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows"]
    proc = subprocess.run(
        [*schema, *map(str, files)], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    action = upstream / ".github/actions/run-shard/action.yml"
    proc = subprocess.run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-actions", str(action)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    zizmor = [str(BIN / "zizmor"), "--offline", "--persona", "pedantic", "--no-progress"]
    for target in (fork / ".github/workflows", upstream / ".github"):
        proc = subprocess.run(
            [*zizmor, str(target)], capture_output=True, text=True, timeout=120, check=False
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "No findings" in proc.stdout + proc.stderr


def test_the_bot_plans_from_the_forks_config_without_flags(layout: tuple[Path, Path]) -> None:
    fork, _ = layout
    planned = bot("bot", "plan", "--matrix", "fork_only", "--sha", SHA, cwd=fork)
    assert planned.returncode == 0, planned.stderr
    shards = json.loads(planned.stdout)
    assert [p["shard"]["id"] for p in shards] == ["sm8650-fork_only-1"]
    assert shards[0]["runs_on"] == ["self-hosted", "qnn", "sm8650"]
    # Control: outside the fork the bundled data has no such matrix.
    elsewhere = bot("bot", "plan", "--matrix", "fork_only", "--sha", SHA, cwd=fork.parent)
    assert elsewhere.returncode != 0 and "fork_only" in elsewhere.stderr + elsewhere.stdout

    shards_file = fork.parent / "shards.json"
    shards_file.write_text(planned.stdout)
    matrix = bot("bot", "device-matrix", "--shards-file", str(shards_file), "--sha", SHA, cwd=fork)
    assert matrix.returncode == 0, matrix.stderr
    lines = dict(line.split("=", 1) for line in matrix.stdout.splitlines())
    assert json.loads(lines["matrix"])["include"][0]["label"] == "sm8650"

    # The fork's [simulator] tier: its shards go to its simulator label only.
    sim = bot("bot", "plan", "--matrix", "fork_only", "--sim", "--sha", SHA, cwd=fork)
    assert sim.returncode == 0, sim.stderr
    shards_file.write_text(sim.stdout)
    matrix = bot("bot", "device-matrix", "--shards-file", str(shards_file), "--sha", SHA, cwd=fork)
    lines = dict(line.split("=", 1) for line in matrix.stdout.splitlines())
    (entry,) = json.loads(lines["matrix"])["include"]
    assert (entry["id"], entry["label"]) == ("sim-sm8650-fork_only-1", "x86-simulator")
    assert entry["shard"]["runs_on"] == "x86-simulator"

    proc = subprocess.run(
        [str(BIN / "qnn-migrate"), "bot", "parse"],
        input="/qnn test fork_only\n",
        cwd=fork,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["matrices"] == ["fork_only"]


def test_the_forks_registry_comes_from_its_own_harness(layout: tuple[Path, Path]) -> None:
    fork, _ = layout
    catalog = catalog_mod.load(search_from=fork)
    assert catalog.source == str(fork / ".github" / "qnn-bot.toml")
    assert catalog.registry.version == "1.5.1"
    assert "fork_only" in catalog.matrices and "canonicalize_conv" in catalog.matrices
    # Found from anywhere inside the checkout, and nowhere above it.
    assert catalog_mod.discover(fork / "backends" / "qualcomm") == fork / ".github" / "qnn-bot.toml"
    assert catalog_mod.discover(fork.parent) is None


def test_doctor_accepts_the_layout_and_catches_a_mismatched_pin(layout: tuple[Path, Path]) -> None:
    fork, _ = layout
    checks, catalog = doctor.local_checks(fork)
    assert catalog is not None
    assert [c.ok for c in checks] == [True, True, True], [c.line() for c in checks]
    broken = fork.parent / "broken"
    shutil.copytree(fork, broken)
    caller = broken / ".github/workflows/qnn-command.yml"
    caller.write_text(caller.read_text().replace(f'bot-ref: "{PIN}"', 'bot-ref: "v0.0.9"'))
    checks, _ = doctor.local_checks(broken)
    assert any(c.ok is False and "bot-ref" in c.detail for c in checks)
    template = doctor.local_checks(ADOPT.parent.parent)  # this repository: no caller files
    assert any(c.ok is False for c in template[0])


def _dry_run_blocks() -> list[str]:
    """The ``sh`` blocks of docs/adopting.md's "A first dry run", as written."""
    docs = (ROOT / "docs" / "adopting.md").read_text()
    section = docs.split("## A first dry run", 1)[1].split("\n## ", 1)[0]
    return [block for block in re.findall(r"```sh\n(.*?)```", section, re.S)]


# A DOUBLE for `run-shard`, which needs a runner host: it writes what run-shard writes for
# the shard (every test passed) where the documented --out points, and nothing else.
FAKE_RUN_SHARD = """\
fake_run_shard() {
  out="$(printf '%s\\n' "$@" | sed -n '/^--out$/{n;p;}')"
  mkdir -p "$out"
  python3 -c '
import json, sys
from qnn_migrate.bot.artifacts import read_shards
from qnn_migrate.bot.model import ShardResult, Status, TestResult
(shard,) = read_shards(__import__("pathlib").Path(sys.argv[1]))
result = ShardResult.complete(shard, [TestResult(t, Status.PASS) for t in shard.tests])
json.dump(result.to_dict(), open(sys.argv[2] + "/result.json", "w"))
' shard.json "$out"
}
"""


def test_the_dry_run_in_adopting_md_works_as_written(layout: tuple[Path, Path]) -> None:
    """5aad75f's dry run gave run-shard the whole list and report --dry-run too few options."""
    fork, _ = layout
    work = fork.parent / "dry-run"
    shutil.copytree(fork, work)
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "fork"], check=True)
    plan_block, run_block = _dry_run_blocks()
    assert "qnn-migrate bot run-shard" in run_block
    script = (
        "set -euo pipefail\n"
        + plan_block
        + FAKE_RUN_SHARD
        + run_block.replace("qnn-migrate bot run-shard", "fake_run_shard")
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        ["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    shards = json.loads((work / "shards.json").read_text())
    first = shards[0]["shard"]["id"]
    assert (work / "results" / first / "result.json").is_file()
    comment = (work / "comment.md").read_text()
    assert first in comment or "canonicalize_conv" in comment
    summary = json.loads(done.stderr.strip().splitlines()[-1])
    assert (
        summary["ran"] == len(shards[0]["shard"]["tests"]) and summary["expected"] >= summary["ran"]
    )
