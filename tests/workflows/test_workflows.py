"""The workflows in .github/workflows: schema, zizmor, shell syntax, and the lock-down rules.

actionlint is not installed here (its PyPI wrapper downloads the binary at build time,
which cannot work offline), so three checks stand in for it: GitHub's workflow JSON schema
(check-jsonschema's vendored copy), zizmor's security audits (offline, pedantic), and
``bash -n`` on every ``run:`` script. On top come the project's own rules, checked
structurally below; each has a test proving the check catches a broken workflow.
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
BIN = Path(sys.executable).parent
PINNED_RE = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")
EXPR_RE = re.compile(r"\$\{\{(.*?)\}\}", re.S)
UNTRUSTED = (
    "github.event.comment.body",
    "github.event.issue.title",
    "github.event.issue.body",
    "github.event.pull_request.title",
    "github.event.pull_request.body",
    "github.event.pull_request.head.ref",
    "github.event.review.body",
    "github.head_ref",
    "inputs.",
)


def load(path: Path) -> dict[str, Any]:
    doc = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    assert isinstance(doc, dict), path
    return doc


def workflows() -> dict[str, dict[str, Any]]:
    return {p.name: load(p) for p in sorted(WORKFLOWS.glob("*.yml"))}


def steps(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    for name, job in doc.get("jobs", {}).items():
        for step in job.get("steps", []):
            yield name, job, step


def is_device_job(job: dict[str, Any]) -> bool:
    runs_on = job.get("runs-on")
    labels = runs_on if isinstance(runs_on, list) else [runs_on]
    return "self-hosted" in labels


def lockdown_problems(name: str, doc: dict[str, Any]) -> list[str]:
    """The project's workflow rules (HOUSE_STYLE habit 10 and issue 5), as a list of breaches."""
    out: list[str] = []
    if doc.get("permissions") != {}:
        out.append(f"{name}: top-level permissions must be {{}}")
    for job_name, job in doc.get("jobs", {}).items():
        where = f"{name}:{job_name}"
        perms = job.get("permissions")
        if not isinstance(perms, dict):
            out.append(f"{where}: permissions must be a mapping, granted per job")
        elif any(v == "write" and k in ("id-token", "packages") for k, v in perms.items()):
            out.append(f"{where}: never needs {perms}")
        if is_device_job(job):
            text = repr(job)
            if perms != {}:
                out.append(f"{where}: a device job gets permissions {{}}")
            if "secrets." in text or "github.token" in text or "GITHUB_TOKEN" in text:
                out.append(f"{where}: a device job gets no secrets and no token")
            if job.get("strategy", {}).get("fail-fast") is not False:
                out.append(f"{where}: a device matrix needs fail-fast: false")
            if job.get("runs-on") != ["self-hosted", "qnn", "${{ matrix.soc }}"]:
                out.append(f"{where}: runs-on must be [self-hosted, qnn, <soc>]")
        elif not str(job.get("runs-on", "")).startswith("ubuntu-"):
            out.append(f"{where}: non-device jobs run on GitHub-hosted runners")
    for job_name, _job, step in steps(doc):
        where = f"{name}:{job_name}:{step.get('name', '?')}"
        if "run" in step and "${{" in step["run"]:
            out.append(f"{where}: expressions inside run: (pass them through env:)")
        uses = step.get("uses")
        if uses and not uses.startswith("./") and not PINNED_RE.match(uses):
            out.append(f"{where}: {uses} is not pinned to a commit SHA")
        checkout = bool(uses) and uses.startswith("actions/checkout@")
        if checkout and step.get("with", {}).get("persist-credentials") is not False:
            out.append(f"{where}: checkout needs persist-credentials: false")
        for key, value in (step.get("with") or {}).items():
            exprs = EXPR_RE.findall(str(value))
            if key == "script" and exprs:
                out.append(f"{where}: expressions inside a script input")
            if any(u in e for e in exprs for u in UNTRUSTED[:-1]):
                out.append(f"{where}: untrusted text in with.{key}")
    return out


def all_run_scripts() -> list[tuple[str, str]]:
    return [
        (f"{name}:{job}:{step.get('name')}", step["run"])
        for name, doc in workflows().items()
        for job, _, step in steps(doc)
        if "run" in step
    ]


# ------------------------------------------------------------------------------ tools


def run_zizmor(target: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "zizmor"), "--offline", "--pedantic", "--no-progress", str(target)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_zizmor_finds_nothing() -> None:
    proc = run_zizmor(WORKFLOWS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The one reviewed exception: issue_comment is the trigger issue 5 asks for.
    ignores = [
        (p.name, line.strip())
        for p in WORKFLOWS.glob("*.yml")
        for line in p.read_text().splitlines()
        if "zizmor: ignore" in line
    ]
    assert ignores == [
        (
            "qnn-command.yml",
            "issue_comment: # zizmor: ignore[dangerous-triggers] reviewed, see above",
        )
    ]


def test_zizmor_catches_template_injection(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    text = (WORKFLOWS / "qnn-command.yml").read_text()
    bad.write_text(
        text.replace(
            "run: qnn-migrate bot on-event --event-name issue_comment",
            'run: echo "${{ github.event.comment.body }}"',
        )
    )
    proc = run_zizmor(bad)
    assert proc.returncode != 0 and "template-injection" in proc.stdout + proc.stderr


def test_workflows_match_githubs_schema(tmp_path: Path) -> None:
    files = sorted(str(p) for p in WORKFLOWS.glob("*.yml"))
    assert len(files) == 3, files
    cmd = [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows"]
    proc = subprocess.run([*cmd, *files], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    broken = tmp_path / "broken.yml"
    broken.write_text((WORKFLOWS / "ci.yml").read_text().replace("runs-on:", "runs_on:"))
    proc = subprocess.run(
        [*cmd, str(broken)], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode != 0


@pytest.mark.parametrize(("where", "script"), all_run_scripts(), ids=lambda v: str(v)[:60])
def test_run_scripts_parse_as_bash(where: str, script: str) -> None:
    bash = shutil.which("bash")
    assert bash, "bash is needed to check the workflows' scripts"
    proc = subprocess.run([bash, "-n", "-c", script], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{where}: {proc.stderr}"


# -------------------------------------------------------------------- lock-down rules


def test_every_workflow_is_locked_down() -> None:
    problems = [p for name, doc in workflows().items() for p in lockdown_problems(name, doc)]
    assert problems == []


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [
        (lambda d: d.update(permissions={"contents": "write"}), "top-level permissions"),
        (
            lambda d: d["jobs"]["devices"].update(permissions={"contents": "read"}),
            "gets permissions {}",
        ),
        (
            lambda d: d["jobs"]["devices"]["steps"][2].update(
                env={"GITHUB_TOKEN": "${{ secrets.X }}"}
            ),
            "no secrets and no token",
        ),
        (
            lambda d: d["jobs"]["devices"]["strategy"].update({"fail-fast": True}),
            "fail-fast: false",
        ),
        (
            lambda d: d["jobs"]["devices"]["steps"][3].update(run='echo "${{ inputs.shards }}"'),
            "expressions inside run",
        ),
        (
            lambda d: d["jobs"]["devices"]["steps"][0]["with"].update(
                {"persist-credentials": True}
            ),
            "persist-credentials: false",
        ),
        (
            lambda d: d["jobs"]["plan"]["steps"][0].update(uses="actions/checkout@v7"),
            "not pinned",
        ),
        (lambda d: d["jobs"]["report"].update({"runs-on": "self-hosted"}), "gets permissions {}"),
    ],
)
def test_the_lockdown_check_catches_breaches(breakage: Any, expected: str) -> None:
    doc = copy.deepcopy(workflows()["qnn-device-tests.yml"])
    breakage(doc)
    assert any(expected in p for p in lockdown_problems("qnn-device-tests.yml", doc))


def test_command_workflow_only_parses_and_dispatches() -> None:
    doc = workflows()["qnn-command.yml"]
    assert doc["on"] == {"issue_comment": {"types": ["created"]}}
    (job,) = doc["jobs"].values()
    assert job["runs-on"].startswith("ubuntu-")
    assert job["permissions"]["actions"] == "write"  # workflow_dispatch
    assert set(job["permissions"].values()) <= {"read", "write"}
    # The PR's code is never checked out: the only checkout is the default branch.
    checkouts = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout@")]
    assert [c["with"] for c in checkouts] == [{"persist-credentials": False}]
    runs = [s["run"] for s in job["steps"] if "run" in s]
    assert runs[-1] == "qnn-migrate bot on-event --event-name issue_comment"
    assert "github.event.comment.body" not in repr(job["steps"])


def test_device_workflow_shape() -> None:
    doc = workflows()["qnn-device-tests.yml"]
    on = doc["on"]
    assert set(on["workflow_dispatch"]["inputs"]) == {"pr", "sha", "shards", "comment_id"}
    assert on["schedule"][0]["cron"]
    group = doc["concurrency"]["group"]
    assert "inputs.pr" in group and doc["concurrency"]["cancel-in-progress"] is True
    jobs = doc["jobs"]
    assert [n for n, j in jobs.items() if is_device_job(j)] == ["devices"]
    devices = jobs["devices"]
    assert devices["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    checkout = devices["steps"][0]
    assert checkout["with"]["ref"] == "${{ matrix.shard.sha }}"
    assert "always()" in jobs["report"]["if"] and "devices" in jobs["report"]["needs"]
    assert "always()" in jobs["nightly"]["if"] and "schedule" in jobs["nightly"]["if"]
    assert jobs["nightly"]["permissions"] == {"contents": "write", "issues": "write"}
    assert "workflow_dispatch" in jobs["report"]["if"]
    # Device results are uploaded even when tests fail.
    upload = [s for s in devices["steps"] if "upload-artifact" in str(s.get("uses"))]
    assert upload and upload[0]["if"] == "${{ !cancelled() }}"


def test_the_bot_dispatches_this_workflow_with_these_inputs() -> None:
    from qnn_migrate.bot import catalog

    assert (WORKFLOWS / catalog.load().policy.device_workflow).is_file()
    dispatch = (ROOT / "bot" / "pr" / "dispatch.py").read_text()
    for name in ("pr", "sha", "shards", "comment_id"):
        assert f'"{name}":' in dispatch


def bot_calls(script: str) -> list[tuple[str, list[str], set[str]]]:
    """(command, subcommand words, --options) of each ``qnn-migrate bot`` call in a script."""
    joined = script.replace("\\\n", " ")
    array_opts = set(
        re.findall(r"(--[a-z][a-z-]*)", " ".join(re.findall(r"args\+?=\((.*?)\)", joined)))
    )
    calls = []
    for line in joined.splitlines():
        found = re.search(r"qnn-migrate\"? bot ((?:[a-z][a-z-]* ?)+)(.*)$", line)
        if found:
            words = found.group(1).split()
            opts = set(re.findall(r"(?:^|\s)(--[a-z][a-z-]*)", found.group(2)))
            if "${args[@]}" in found.group(2):
                opts |= array_opts
            calls.append((words[0], words[1:], opts))
    return calls


def test_every_bot_command_and_option_the_workflows_use_exists() -> None:
    import click

    from qnn_migrate.bot.cli.main import bot

    calls = [c for _, script in all_run_scripts() for c in bot_calls(script)]
    names = {c[0] for c in calls}
    assert names >= {
        "on-event",
        "plan",
        "device-matrix",
        "check-head",
        "run-shard",
        "report",
        "nightly",
    }
    for name, sub, opts in calls:
        ctx = click.Context(bot)
        command = bot.get_command(ctx, name)
        assert command is not None, f"qnn-migrate bot {name}: no such command"
        for word in sub:
            assert isinstance(command, click.Group), f"{name} has no subcommand {word}"
            command = command.get_command(ctx, word)
            assert command is not None, f"qnn-migrate bot {name} {word}: no such command"
        known = {o for p in command.params for o in p.opts}
        assert opts <= known, f"qnn-migrate bot {name} {' '.join(sub)}: unknown {opts - known}"


def test_the_option_check_sees_a_typo() -> None:
    (call,) = bot_calls('qnn-migrate bot report --results-dir x --baseline-dri y "${args[@]}"')
    assert call == ("report", [], {"--results-dir", "--baseline-dri"})


def _readme_test_command() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    lines = [ln for b in blocks for ln in b.splitlines() if ln.strip() and not ln.startswith("#")]
    return lines[1]


def test_ci_runs_the_readme_test_command() -> None:
    doc = workflows()["ci.yml"]
    (job,) = doc["jobs"].values()
    runs = [s["run"].strip() for s in job["steps"] if "run" in s]
    assert runs == [_readme_test_command()]
    assert next(s for s in job["steps"] if "run" in s)["env"] == {"CI": "1"}
    assert doc["on"]["pull_request"] is None and doc["on"]["push"] == {"branches": ["main"]}
