"""The workflows: schema, zizmor, shell syntax, and the lock-down rules.

Three kinds of file: this repository's own workflows (``.github/workflows``: ci, and the
reusable ``qnn-bot-*.yml`` an adopting repository calls), the composite action of the
device job (``.github/actions/run-shard``), and the caller templates an adopting
repository copies (``.github/adopt/workflows``).

actionlint is not installed here (its PyPI wrapper downloads the binary at build time,
which cannot work offline), so three checks stand in for it: GitHub's workflow JSON schema
(check-jsonschema's vendored copy), zizmor's security audits (offline, pedantic), and
``bash -n`` on every ``run:`` script. On top come the project's own rules, checked
structurally below; each has a test proving the check catches a broken workflow. ci.yml's
jobs (lint, core on 3 OSes x 3 Pythons, full = the README's test command) are checked
against what they promise at the end of this file.
"""

from __future__ import annotations

import copy
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from qnn_migrate_tests.workflows.lockdown import (
    DEVICE_RUNS_ON,
    PINNED_RE,
    hosted_runner_labels,
    is_device_job,
    load,
    lockdown_problems,
    steps,
)
from qnn_migrate_tests.workflows.templates import filled
from ruamel.yaml import YAML

from qnn_migrate.bot.pr.lanes import Lane

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
ADOPT = ROOT / ".github" / "adopt" / "workflows"
ACTIONS = ROOT / ".github" / "actions"
BIN = Path(sys.executable).parent


def workflows() -> dict[str, dict[str, Any]]:
    """This repository's workflows and the adopter's callers (by file name; none shared)."""
    files = [*sorted(WORKFLOWS.glob("*.yml")), *sorted(ADOPT.glob("*.yml"))]
    docs = {p.name: load(p) for p in files}
    for p in ADOPT.glob("*.yml"):  # as an adopter fills them in
        docs[p.name] = YAML(typ="safe").load(filled(p.read_text(encoding="utf-8")))
    assert len(docs) == len(files), "a caller template shares a name with a workflow here"
    return docs


def actions() -> dict[str, dict[str, Any]]:
    return {p.parent.name: load(p) for p in sorted(ACTIONS.glob("*/action.yml"))}


def action_problems(name: str, doc: dict[str, Any]) -> list[str]:
    """A composite action's steps obey the same rules as a workflow's."""
    out: list[str] = []
    if doc.get("runs", {}).get("using") != "composite":
        out.append(f"{name}: only composite actions here")
    for _, _, step in steps(doc):
        where = f"{name}:{step.get('name', '?')}"
        if "run" in step and "${{" in step["run"]:
            out.append(f"{where}: expressions inside run: (pass them through env:)")
        uses = step.get("uses")
        if uses and not PINNED_RE.match(uses):
            out.append(f"{where}: {uses} is not pinned to a commit SHA")
        if "secrets." in repr(step) or "github.token" in repr(step):
            out.append(f"{where}: the device job's action gets no secrets and no token")
    return out


def all_run_scripts() -> list[tuple[str, str]]:
    sources = {**workflows(), **{f"action {k}": v for k, v in actions().items()}}
    return [
        (f"{name}:{job}:{step.get('name')}", step["run"])
        for name, doc in sources.items()
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


def run_zizmor_on(*targets: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "zizmor"), "--offline", "--persona", "pedantic", "--no-progress"]
        + [str(t) for t in targets],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_zizmor_finds_nothing(tmp_path: Path) -> None:
    # zizmor reads .github/workflows and action folders by layout; the templates by name,
    # filled in as an adopter fills them.
    templates = []
    for template in sorted(ADOPT.glob("*.yml")):
        templates.append(tmp_path / template.name)
        templates[-1].write_text(filled(template.read_text(encoding="utf-8")), encoding="utf-8")
    proc = run_zizmor_on(WORKFLOWS, ACTIONS, *templates)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "qnn-device-tests.yml" in proc.stderr and "run-shard/action.yml" in proc.stderr
    # The one reviewed exception: issue_comment is the trigger the bot is built on.
    ignores = [
        (p.name, line.strip())
        for p in [*WORKFLOWS.glob("*.yml"), *ADOPT.glob("*.yml"), *ACTIONS.glob("*/action.yml")]
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
    text = (WORKFLOWS / "qnn-bot-command.yml").read_text()
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
    assert len(files) >= 3, files  # every workflow, the optional ones included
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
    problems += [p for name, doc in actions().items() for p in action_problems(name, doc)]
    assert problems == []


def test_the_action_check_catches_breaches() -> None:
    doc = copy.deepcopy(actions()["run-shard"])
    doc["runs"]["steps"][1]["run"] = 'echo "${{ inputs.shard }}"'
    doc["runs"]["steps"][2]["uses"] = "actions/upload-artifact@v7"
    found = action_problems("run-shard", doc)
    assert any("expressions inside run" in p for p in found)
    assert any("not pinned" in p for p in found)


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [
        (lambda d: d.update(permissions={"contents": "write"}), "top-level permissions"),
        (
            lambda d: d["jobs"]["devices"].update(permissions={"contents": "read"}),
            "gets permissions {}",
        ),
        (
            lambda d: d["jobs"]["devices"]["steps"][1].update(
                env={"GITHUB_TOKEN": "${{ secrets.X }}"}
            ),
            "no secrets and no token",
        ),
        (
            lambda d: d["jobs"]["devices"]["strategy"].update({"fail-fast": True}),
            "fail-fast: false",
        ),
        (
            lambda d: d["jobs"]["devices"]["steps"][1].update(run='echo "${{ inputs.shards }}"'),
            "expressions inside run",
        ),
        (
            lambda d: d["jobs"]["devices"]["steps"][0]["with"].update(
                {"persist-credentials": True}
            ),
            "persist-credentials: false",
        ),
        (
            lambda d: d["jobs"]["devices"]["steps"][0].update(uses="actions/checkout@v7"),
            "not pinned",
        ),
        (
            lambda d: d["jobs"]["plan"].update(
                uses="qnn-lab/qnn-migrate/.github/workflows/qnn-bot-plan.yml@main"
            ),
            "not pinned",
        ),
        (lambda d: d["jobs"]["report"].update(secrets="inherit"), "gets no secrets"),
        (
            lambda d: d["jobs"]["devices"].update({"runs-on": ["self-hosted", "sm8650"]}),
            "runs-on must be",
        ),
    ],
)
def test_the_lockdown_check_catches_breaches(breakage: Any, expected: str) -> None:
    doc = copy.deepcopy(workflows()["qnn-device-tests.yml"])
    breakage(doc)
    assert any(expected in p for p in lockdown_problems("qnn-device-tests.yml", doc))


_GATE_IF_RE = re.compile(r"^needs\.gate\.outputs\.(\w+) (==|!=) '([\w-]+)'$")

# What the gate prints for each kind of commenter (``bot.pr.lanes``).
GATE_OUTPUTS = {lane: {"lane": lane.value} for lane in Lane}


def _runs_job(job: dict[str, Any], outputs: dict[str, str]) -> bool | None:
    """Does ``job`` run for a comment the gate answered ``outputs``? None: cannot tell."""
    m = _GATE_IF_RE.match(str(job.get("if", "")).strip())
    if m is None:
        return None
    key, op, value = m.groups()
    return (outputs.get(key, "") == value) == (op == "==")


def command_lane_problems(
    jobs: dict[str, Any], gate_outputs: dict[Lane, dict[str, str]] = GATE_OUTPUTS
) -> list[str]:
    """Can a later comment drop a pending command of someone whose command may matter?

    A concurrency group keeps one pending run and drops the older one unless it says
    ``queue: max``. For each kind of commenter, the gate's answer picks the one job that
    handles the comment; for a kept lane (``Lane.kept``: who may start runs, the PR's
    author, anyone the permission check could not be made for) that job must queue that
    way, or be in no group, and the kept lanes must not share one queue.
    """
    out: list[str] = []
    kept_per_job: dict[str, int] = {}
    handlers = {
        name: job
        for name, job in jobs.items()
        if any("bot on-event" in s.get("run", "") for s in job.get("steps", []))
    }
    for name, job in jobs.items():
        group = job.get("concurrency")
        if name not in handlers:
            if group is not None:
                out.append(f"{name}: a job every comment reaches sits in a concurrency group")
            continue
        if isinstance(group, dict) and group.get("cancel-in-progress"):
            out.append(f"{name}: cancels a command in progress")
        if "gate" not in (job.get("needs") or []):
            out.append(f"{name}: every comment enters this lane's group, maintainers' too")
    if out:
        return out
    for outputs in (o for lane, o in gate_outputs.items() if lane.kept):
        for n, job in handlers.items():
            kept_per_job[n] = kept_per_job.get(n, 0) + bool(_runs_job(job, outputs))
    for lane, outputs in gate_outputs.items():
        chosen = [n for n, job in handlers.items() if _runs_job(job, outputs)]
        if any(_runs_job(job, outputs) is None for job in handlers.values()):
            out.append(f"{lane.value}: a job's condition is not a test of the gate's output")
            continue
        if len(chosen) != 1:
            out.append(f"{lane.value}: handled by {len(chosen)} jobs, not one")
            continue
        group = handlers[chosen[0]].get("concurrency")
        if not lane.kept or group is None:
            continue
        if not isinstance(group, dict) or group.get("queue") != "max":
            out.append(f"{lane.value}: a pending command can be dropped ({chosen[0]})")
        elif kept_per_job[chosen[0]] > 1 and "needs.gate.outputs.lane" not in str(
            group.get("group", "")
        ):
            out.append(f"{lane.value}: shares one queue with the other kept lanes ({chosen[0]})")
    return out


def test_no_command_that_may_matter_is_dropped() -> None:
    doc = workflows()["qnn-bot-command.yml"]
    assert doc["on"] == {"workflow_call": doc["on"]["workflow_call"]}
    jobs = doc["jobs"]
    assert command_lane_problems(jobs) == []
    assert "concurrency" not in jobs["gate"]
    assert jobs["command"]["needs"] == "gate" and jobs["others"]["needs"] == "gate"
    assert jobs["command"]["concurrency"]["queue"] == "max"
    gate_runs = [s["run"] for s in jobs["gate"]["steps"] if "run" in s]
    assert gate_runs[-1].startswith("qnn-migrate bot gate ")
    assert jobs["gate"]["outputs"] == {"lane": "${{ steps.gate.outputs.lane }}"}


def test_the_lane_check_flags_the_one_group_for_every_comment() -> None:
    # The shape before the gate: one job, one per-PR group, the default queue of one.
    old = {
        "command": {
            "concurrency": {"group": "qnn-command-${{ github.event.issue.number }}"},
            "steps": [{"run": "qnn-migrate bot on-event --event-name issue_comment"}],
        }
    }
    assert command_lane_problems(old) == [
        "command: every comment enters this lane's group, maintainers' too"
    ]
    no_queue = copy.deepcopy(workflows()["qnn-bot-command.yml"]["jobs"])
    del no_queue["command"]["concurrency"]["queue"]
    assert command_lane_problems(no_queue) == [
        f"{lane}: a pending command can be dropped (command)"
        for lane in ("runs", "author", "unsure")
    ]


def test_the_lane_check_flags_the_two_lanes_that_dropped_the_author_and_the_unsure() -> None:
    """The shape before the lanes: a yes/no gate, so the PR's author and anyone the
    permission check failed for went to the lane where any later comment dropped them."""
    jobs = copy.deepcopy(workflows()["qnn-bot-command.yml"]["jobs"])
    jobs["command"]["if"] = "needs.gate.outputs.trusted == 'true'"
    jobs["command"]["concurrency"]["group"] = "qnn-command-${{ github.event.issue.number }}"
    jobs["others"]["if"] = "needs.gate.outputs.trusted != 'true'"
    yes_no = {lane: {"trusted": "true" if lane is Lane.RUNS else "false"} for lane in Lane}
    assert command_lane_problems(jobs, yes_no) == [
        "author: a pending command can be dropped (others)",
        "unsure: a pending command can be dropped (others)",
    ]
    # One queue for every kept lane: an author's flood would queue ahead of maintainers.
    shared = copy.deepcopy(workflows()["qnn-bot-command.yml"]["jobs"])
    shared["command"]["concurrency"]["group"] = "qnn-command-${{ github.event.issue.number }}"
    assert command_lane_problems(shared) == [
        f"{lane}: shares one queue with the other kept lanes (command)"
        for lane in ("runs", "author", "unsure")
    ]


def test_command_workflows_only_parse_and_dispatch() -> None:
    caller = workflows()["qnn-command.yml"]
    assert caller["on"] == {"issue_comment": {"types": ["created"]}}
    (call,) = caller["jobs"].values()
    assert call["uses"].startswith("qnn-lab/qnn-migrate/.github/workflows/qnn-bot-command.yml@")
    assert call["with"]["bot-ref"] == call["uses"].rsplit("@", 1)[1]
    assert call["permissions"]["actions"] == "write"  # workflow_dispatch
    for job in workflows()["qnn-bot-command.yml"]["jobs"].values():
        assert job["runs-on"].startswith("ubuntu-")
        assert set(job["permissions"].values()) <= {"read", "write"}
        # The PR's code is never checked out: the only checkout is the default branch.
        checkouts = [
            s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout@")
        ]
        assert [c["with"] for c in checkouts] == [{"persist-credentials": False}]
        assert "github.event.comment.body" not in repr(job["steps"])
        installs = [s["run"] for s in job["steps"] if "pip install" in s.get("run", "")]
        assert installs and all(
            "git+https://github.com/$BOT_REPOSITORY@$BOT_REF" in i for i in installs
        )


def test_device_workflow_shape() -> None:
    doc = workflows()["qnn-device-tests.yml"]
    on = doc["on"]
    assert set(on["workflow_dispatch"]["inputs"]) == {"pr", "sha", "shards", "comment_id"}
    assert on["schedule"][0]["cron"]
    group = doc["concurrency"]["group"]
    assert "inputs.pr" in group and doc["concurrency"]["cancel-in-progress"] is True
    jobs = doc["jobs"]
    # The one job that reaches the runners is defined in this (the adopter's) file.
    assert [n for n, j in jobs.items() if is_device_job(j)] == ["devices"]
    devices = jobs["devices"]
    assert devices["runs-on"] == DEVICE_RUNS_ON
    assert devices["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    # The code under test is not checked out by actions/checkout (its reused work folder and
    # .git outlive the job): run-shard fetches the pinned SHA fresh, as the job user.
    config, run = devices["steps"]
    assert config["with"]["sparse-checkout"] == ".github" and "ref" not in config["with"]
    assert "matrix.shard.sha" not in repr(devices["steps"])
    assert run["uses"].startswith("qnn-lab/qnn-migrate/.github/actions/run-shard@")
    pins = {jobs["plan"]["uses"], jobs["report"]["uses"], run["uses"]}
    assert len({p.rsplit("@", 1)[1] for p in pins}) == 1  # one qnn-migrate version
    # After failed device jobs too, but never in a cancelled run (test below).
    assert "!cancelled()" in jobs["report"]["if"] and "devices" in jobs["report"]["needs"]
    report = workflows()["qnn-bot-report.yml"]["jobs"]
    assert "schedule" in report["nightly"]["if"]
    assert report["nightly"]["permissions"] == {
        "contents": "write",
        "issues": "write",
        "actions": "read",
    }
    nightly_runs = [s["run"] for s in report["nightly"]["steps"] if "run" in s]
    assert "qnn-migrate bot nightly publish" in nightly_runs[-1]
    assert not any("git " in r or "gh " in r for r in nightly_runs)
    assert "workflow_dispatch" in report["report"]["if"]
    # Device results are uploaded even when tests fail.
    action = actions()["run-shard"]["runs"]["steps"]
    upload = [s for s in action if "upload-artifact" in str(s.get("uses"))]
    assert upload and upload[0]["if"] == "${{ !cancelled() }}"


def reporting_jobs(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The jobs that write results: they run ``qnn-migrate bot report`` or the nightly's
    publish, or call the reusable report workflow."""
    for name, job in doc.get("jobs", {}).items():
        runs = " ".join(str(step.get("run", "")) for step in job.get("steps", []))
        calls = "qnn-bot-report.yml" in str(job.get("uses", ""))
        if calls or "qnn-migrate bot report" in runs or "bot nightly publish" in runs:
            yield name, job


def superseded_run_problems(name: str, doc: dict[str, Any]) -> list[str]:
    """A job that writes the PR comment, the commit status or the baselines must not run in a
    cancelled run: a newer command (or night) cancelled it, and the comment and the SHA's
    status now belong to that run (or to whoever cancelled it, who said so). ``always()``
    runs on cancellation; ``!cancelled()`` does not, and still runs after failures."""
    out: list[str] = []
    for job_name, job in reporting_jobs(doc):
        condition = str(job.get("if", ""))
        if "always()" in condition or "!cancelled()" not in condition.replace(" ", ""):
            out.append(f"{name}:{job_name}: if: {condition!r} (needs !cancelled(), not always())")
    return out


def test_a_cancelled_run_never_reports() -> None:
    docs = workflows()
    found = [(name, job) for name, doc in docs.items() for job, _ in reporting_jobs(doc)]
    assert ("qnn-device-tests.yml", "report") in found
    assert ("qnn-bot-report.yml", "report") in found and ("qnn-bot-report.yml", "nightly") in found
    assert [p for name, doc in docs.items() for p in superseded_run_problems(name, doc)] == []
    # Failures still report: the condition is not success().
    device = docs["qnn-device-tests.yml"]["jobs"]["report"]["if"]
    assert "success()" not in device and "needs.plan.result == 'success'" in device


def test_the_cancelled_run_check_catches_always() -> None:
    """Control: the condition this repository had (``always()``), and none at all."""
    doc = copy.deepcopy(workflows()["qnn-device-tests.yml"])
    doc["jobs"]["report"]["if"] = "${{ always() && needs.plan.result == 'success' }}"
    assert superseded_run_problems("x.yml", doc) == [
        "x.yml:report: if: \"${{ always() && needs.plan.result == 'success' }}\" "
        "(needs !cancelled(), not always())"
    ]
    report = copy.deepcopy(workflows()["qnn-bot-report.yml"])
    del report["jobs"]["nightly"]["if"]
    assert [p.split(":")[1] for p in superseded_run_problems("r.yml", report)] == ["nightly"]


def test_the_bot_dispatches_this_workflow_with_these_inputs() -> None:
    from qnn_migrate.bot import catalog

    assert (ADOPT / catalog.load().policy.device_workflow).is_file()
    dispatch = (ROOT / "qnn_migrate" / "bot" / "pr" / "runs.py").read_text()  # runs.start
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
        found = re.search(r"(?:qnn-migrate\"?|-m qnn_migrate) bot ((?:[a-z][a-z-]* ?)+)(.*)$", line)
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
        "gate",
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


# ------------------------------------------------------------------------- ci.yml
#
# ci.yml promises three jobs, each a subset of the README's test command: lint (ruff, ruff
# format, mypy --strict), core (the suite without torch on 3 OSes x 3 Pythons; off Linux the
# rewrite's tests only) and full (the README's line itself). Every install is pinned with
# -c constraints.txt. Each check below is a function with a control showing it can fail.

CI_OSES = ["ubuntu-24.04", "macos-15", "windows-2025"]
CI_PYTHONS = ["3.11", "3.12", "3.13"]
RUNNER_OS = {"ubuntu": "Linux", "macos": "macOS", "windows": "Windows"}
# What the rewrite-only lane runs off Linux (tests/codemods: the rewrite; test_cli: the CLI).
REWRITE_TESTS = ["tests/codemods", "tests/test_cli.py"]


def ci() -> dict[str, Any]:
    return workflows()["ci.yml"]


def _quick_start() -> list[str]:
    """The Quick start's command lines (step 1, step 2), read from the README as it is now."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    lines = [ln for b in blocks for ln in b.splitlines() if ln.strip() and not ln.startswith("#")]
    assert len(lines) == 2, lines
    return lines


def _readme_test_command() -> str:
    return _quick_start()[1]


def _commands(script: str) -> list[list[str]]:
    """The simple commands of a run: script, as words (split at newlines, &&, || and ;)."""
    joined = script.replace("\\\n", " ")
    return [
        shlex.split(part)
        for part in re.split(r"&&|\|\||;|\n", joined)
        if part.strip() and not part.strip().startswith("#")
    ]


def _tool(words: list[str]) -> str:
    """The program a command runs: ``python -m X`` and ``.venv/bin/X`` count as X."""
    if len(words) >= 3 and Path(words[0]).name.startswith("python") and words[1] == "-m":
        return words[2]
    return Path(words[0]).name if words else ""


def _args(words: list[str]) -> list[str]:
    """A command's arguments after the program (and after ``python -m X``)."""
    return words[3:] if _tool(words) != Path(words[0]).name else words[1:]


def job_commands(job: dict[str, Any]) -> Iterator[tuple[dict[str, Any], list[str]]]:
    for step in job.get("steps", []):
        if "run" in step:
            for words in _commands(step["run"]):
                yield step, words


def unconstrained_installs(doc: dict[str, Any]) -> list[str]:
    """Every ``pip install`` that does not pin its versions with ``-c constraints.txt``."""
    out = []
    for job_name, job in doc["jobs"].items():
        for _, words in job_commands(job):
            if _tool(words) == "pip" and "install" in words:
                args = _args(words)
                pinned = any(
                    (a in ("-c", "--constraint") and args[i + 1 : i + 2] == ["constraints.txt"])
                    or a == "--constraint=constraints.txt"
                    for i, a in enumerate(args)
                )
                if not pinned:
                    out.append(f"{job_name}: {' '.join(words)}")
    return out


def project_installs(job: dict[str, Any]) -> list[tuple[set[str], bool]]:
    """(extras, editable) of each install of this project in a job (``[-e] '.[a,b]'``)."""
    found = []
    for _, words in job_commands(job):
        if _tool(words) == "pip" and "install" in words:
            for word in _args(words):
                extras = re.fullmatch(r"\.(?:\[([\w,-]*)\])?", word)
                if extras:
                    names = set(filter(None, (extras.group(1) or "").split(",")))
                    found.append((names, "-e" in words or "--editable" in words))
    return found


def installed_extras(job: dict[str, Any]) -> list[set[str]]:
    return [extras for extras, _ in project_installs(job)]


def _step_runs_on(step: dict[str, Any], runner_os: str) -> bool:
    """Does a step run on this runner.os (when the steps before it succeeded)?"""
    cond = str(step.get("if", "")).strip()
    if cond in ("", "${{ !cancelled() && steps.install.outcome == 'success' }}"):
        return True
    found = re.fullmatch(r"runner\.os (==|!=) '(\w+)'", cond)
    assert found, f"{step.get('name')}: a condition this check cannot read: {cond}"
    return (found.group(2) == runner_os) == (found.group(1) == "==")


def pytest_runs(job: dict[str, Any], runner_os: str) -> list[tuple[list[str], str | None]]:
    """(paths, -m expression) of each pytest a job runs on this runner.os."""
    out = []
    for step, words in job_commands(job):
        if _tool(words) == "pytest" and _step_runs_on(step, runner_os):
            args, paths, marks = _args(words), [], None
            i = 0
            while i < len(args):
                if args[i] in ("-m", "-k", "-n", "-p", "--tier"):
                    marks = args[i + 1] if args[i] == "-m" else marks
                    i += 2
                    continue
                if not args[i].startswith("-"):
                    paths.append(args[i])
                i += 1
            out.append((paths, marks))
    return out


def core_plan(job: dict[str, Any]) -> dict[str, list[tuple[list[str], str | None]]]:
    """What pytest runs in each OS of the core matrix."""
    return {
        os_label: pytest_runs(job, RUNNER_OS[os_label.split("-")[0]])
        for os_label in job["strategy"]["matrix"]["os"]
    }


def ci_env_problems(doc: dict[str, Any]) -> list[str]:
    """Each pytest must run under CI=1, where a skipped test is a failure."""
    out = []
    for name, job in doc["jobs"].items():
        for step, words in job_commands(job):
            env = {**job.get("env", {}), **step.get("env", {})}
            if _tool(words) == "pytest" and env.get("CI") != "1":
                out.append(f"{name}: {' '.join(words)}")
    return out


def test_ci_has_the_three_jobs_it_promises() -> None:
    doc = ci()
    assert list(doc["jobs"]) == ["lint", "core", "full"]
    assert doc["on"]["pull_request"] is None and doc["on"]["push"] == {"branches": ["main"]}
    assert doc["concurrency"]["group"] == "ci-${{ github.ref }}"
    for name, job in doc["jobs"].items():
        assert job["permissions"] == {"contents": "read"}, name
        assert 0 < job["timeout-minutes"] <= 60, name


def test_every_ci_install_is_pinned_by_the_constraints() -> None:
    doc = ci()
    assert (ROOT / "constraints.txt").is_file()
    # Every job installs (so the check has something to see) and every install is pinned.
    assert all(installed_extras(job) for job in doc["jobs"].values())
    assert unconstrained_installs(doc) == []
    # Controls: an install without the constraints, hidden in a longer script, is caught.
    broken = copy.deepcopy(doc)
    broken["jobs"]["core"]["steps"].append({"run": "echo hi\npython -m pip install -q ruff"})
    assert unconstrained_installs(broken) == ["core: python -m pip install -q ruff"]
    full = broken["jobs"]["full"]["steps"][-1]
    full["run"] = full["run"].replace(" -c constraints.txt", "")
    assert len(unconstrained_installs(broken)) == 2
    assert unconstrained_installs(
        {"jobs": {"j": {"steps": [{"run": "pip install -c other.txt ."}]}}}
    ) == ["j: pip install -c other.txt ."]


def test_lint_runs_ruff_format_and_mypy_strict_once() -> None:
    jobs = ci()["jobs"]
    lint = jobs["lint"]
    assert lint["runs-on"] == "ubuntu-24.04"
    setup = [s for s in lint["steps"] if "setup-python" in str(s.get("uses"))]
    assert [s["with"]["python-version"] for s in setup] == ["3.11"]
    # mypy reads the torch stack's sources for qnn_passes: the lint job needs [passes].
    assert project_installs(lint) == [({"bot", "passes", "test"}, True)]
    checks = [words for _, words in job_commands(lint) if _tool(words) in ("ruff", "mypy")]
    assert [(_tool(w), _args(w)[0]) for w in checks] == [
        ("ruff", "check"),
        ("ruff", "format"),
        ("mypy", "--strict"),
    ]
    assert "--check" in checks[1]  # ruff format only checks, never rewrites
    # They run after the install, each even if another fails, and nowhere else in the
    # workflow (pytest in `full` repeats them through tests/test_project.py, by design).
    others = [
        (name, _tool(w))
        for name, job in jobs.items()
        if name != "lint"
        for _, w in job_commands(job)
        if _tool(w) in ("ruff", "mypy")
    ]
    assert others == []
    install = next(i for i, s in enumerate(lint["steps"]) if s.get("id") == "install")
    for step in lint["steps"][install + 1 :]:
        assert "!cancelled()" in step["if"] and "steps.install.outcome" in step["if"]


def test_core_covers_three_oses_and_every_supported_python() -> None:
    core = ci()["jobs"]["core"]
    matrix = core["strategy"]["matrix"]
    assert set(matrix) == {"os", "python"}  # no include/exclude adding or dropping a cell
    assert matrix["os"] == CI_OSES and matrix["python"] == CI_PYTHONS
    assert core["strategy"]["fail-fast"] is False  # every cell reports
    assert core["runs-on"] == "${{ matrix.os }}"
    setup = [s for s in core["steps"] if "setup-python" in str(s.get("uses"))]
    assert [s["with"]["python-version"] for s in setup] == ["${{ matrix.python }}"]
    # The oldest Python in the matrix is the floor pyproject.toml declares.
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["requires-python"] == f">={CI_PYTHONS[0]}"
    # One script language on every OS: bash (Git Bash on Windows), so
    # test_run_scripts_parse_as_bash covers Windows too; and no POSIX venv paths.
    assert core["defaults"]["run"]["shell"] == "bash"
    assert core["env"] == {"CI": "1"}
    assert ".venv" not in repr(core["steps"])
    # The core extras only (no torch), installed plainly: the installed package is what is
    # tested, with pytest as its script (`python -m pytest` puts the checkout on sys.path).
    assert project_installs(core) == [({"bot", "test"}, False)]
    pytests = [w for _, w in job_commands(core) if _tool(w) == "pytest"]
    assert len(pytests) == 3 and all(w[0] == "pytest" for w in pytests)  # Linux, macOS, Windows


def test_core_runs_the_core_suite_on_linux_and_the_rewrite_elsewhere() -> None:
    core = ci()["jobs"]["core"]
    assert core_plan(core) == {
        "ubuntu-24.04": [([], "not passes")],  # testpaths: the whole core suite
        "macos-15": [(REWRITE_TESTS, "not passes")],
        "windows-2025": [(REWRITE_TESTS, "not passes and not posix")],
    }
    # Control: a condition that leaves macOS without its tests is seen.
    broken = copy.deepcopy(core)
    rewrite = next(s for s in broken["steps"] if "tests/codemods" in s.get("run", ""))
    rewrite["if"] = "runner.os == 'Windows'"
    assert core_plan(broken)["macos-15"] == []


def test_the_marker_core_deselects_is_registered() -> None:
    # `-m "not passes"` with a misspelt marker would silently select every test.
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    ini = pyproject["tool"]["pytest"]["ini_options"]
    assert "passes" in [m.split(":", 1)[0].strip() for m in ini["markers"]]
    assert "--strict-markers" in ini["addopts"].split()


def test_every_test_path_ci_names_exists() -> None:
    def missing(doc: dict[str, Any]) -> list[str]:
        """Paths pytest is given that do not exist (pytest would stop with exit code 4)."""
        return sorted(
            {
                path
                for job in doc["jobs"].values()
                for runner_os in RUNNER_OS.values()
                for paths, _ in pytest_runs(job, runner_os)
                for path in paths
                if not (ROOT / path).exists()
            }
        )

    assert missing(ci()) == []
    broken = copy.deepcopy(ci())
    step = next(s for s in broken["jobs"]["core"]["steps"] if "tests/codemods" in s.get("run", ""))
    step["run"] = step["run"].replace("tests/codemods", "tests/codemod")
    assert "tests/codemod" in missing(broken)


def test_every_pytest_in_ci_runs_under_ci_1() -> None:
    doc = ci()
    assert ci_env_problems(doc) == []
    broken = copy.deepcopy(doc)
    del broken["jobs"]["core"]["env"]
    assert len(ci_env_problems(broken)) == 3  # the three pytest steps of core


def test_core_runs_the_quick_starts_rewrite_and_the_matrices() -> None:
    core = ci()["jobs"]["core"]
    # Step 1 ends in the rewrite on the bundled examples; core runs it (the installed
    # script, not .venv/bin: setup-python puts its scripts on PATH on every OS).
    step_one = _quick_start()[0].split("&&")[-1].strip()
    rewrite = step_one.replace(".venv/bin/", "")
    assert rewrite == "qnn-migrate rewrite --diff examples/"
    commands = [(step, " ".join(w)) for step, w in job_commands(core) if w[0] == "qnn-migrate"]
    assert [c for _, c in commands] == [rewrite, "qnn-migrate matrix list"]
    for step, _ in commands:
        assert all(_step_runs_on(step, os_name) for os_name in RUNNER_OS.values())


def test_full_runs_the_readme_test_command() -> None:
    full = ci()["jobs"]["full"]
    assert full["runs-on"] == "ubuntu-24.04"
    setup = [s for s in full["steps"] if "setup-python" in str(s.get("uses"))]
    assert [s["with"]["python-version"] for s in setup] == ["3.11"]
    run_steps = [s for s in full["steps"] if "run" in s]
    assert [s["run"].strip() for s in run_steps] == [_readme_test_command()]
    assert run_steps[0]["env"] == {"CI": "1"}
    # Everything: the real-QNN tier's harness imports come with test-qnn.
    assert installed_extras(full) == [{"bot", "passes", "test", "test-qnn"}]


def test_the_hosted_runner_check_reads_the_matrix() -> None:
    doc = copy.deepcopy(ci())
    assert lockdown_problems("ci.yml", doc) == []
    core = doc["jobs"]["core"]
    assert hosted_runner_labels(core) == CI_OSES
    core["strategy"]["matrix"]["os"].append("qnn-lab-box")
    assert lockdown_problems("ci.yml", doc) == [
        "ci.yml:core: non-device jobs run on GitHub-hosted runners"
    ]
    core["strategy"]["matrix"]["os"] = CI_OSES
    core["strategy"]["matrix"]["include"] = [{"os": "ubuntu-latest", "python": "3.14"}]
    assert len(lockdown_problems("ci.yml", doc)) == 1  # -latest moves: pin the image
    core["runs-on"] = "${{ matrix.runner }}"  # a key the matrix does not have
    assert len(lockdown_problems("ci.yml", doc)) == 1


def test_the_nightly_docs_describe_what_the_report_workflow_runs() -> None:
    """docs/runners.md's nightly section once described a clone and a git push; the
    workflow writes the branch through the API (``bot nightly publish``)."""
    docs = (ROOT / "docs" / "runners.md").read_text(encoding="utf-8")
    section = docs.split("## Nightly baselines", 1)[1].split("\n## ", 1)[0]
    runs = [
        s["run"]
        for s in workflows()["qnn-bot-report.yml"]["jobs"]["nightly"]["steps"]
        if "bot nightly" in s.get("run", "")
    ]
    assert runs and all("qnn-migrate bot nightly publish" in r for r in runs)
    assert "`qnn-migrate bot nightly publish`" in section
    for gone in ("git push", "pushes one commit", "clones the branch", '"Push\n  the baselines"'):
        assert gone not in section, gone


def test_the_device_job_template_points_at_the_host_model() -> None:
    """It said the job had "nothing to lose": the host it runs on is what PR code reaches."""
    text = (ADOPT / "qnn-device-tests.yml").read_text(encoding="utf-8")
    assert "nothing to lose" not in text
    assert '"A clean host' in text
