"""The campaign's workflows: permissions and triggers, checked structurally, by zizmor and the schema.

Three files: the reusable ``.github/workflows/qnn-bot-campaign.yml``, and the templates an
adopter copies from ``.github/adopt/campaign/`` (one repository; an organization's many).
The rules of tests/workflows/lockdown.py apply to them (``lockdown_problems``), and
these on top, each with a control that shows it can fail:

* the job that writes code (``bot campaign run``) holds contents and pull-requests writes
  and nothing else; the job that starts runs (``bot campaign prove``) holds exactly what
  the command workflow's job holds (it runs the same dispatch) and never contents: write;
* the campaign runs on a schedule or by hand only, and from the default branch;
* the organization's tokens are minted per repository with those same two sets.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from qnn_migrate_tests.workflows.lockdown import load, lockdown_problems, steps
from qnn_migrate_tests.workflows.templates import filled
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[3]
REUSABLE = ROOT / ".github" / "workflows" / "qnn-bot-campaign.yml"
TEMPLATES = ROOT / ".github" / "adopt" / "campaign"
CALLER = TEMPLATES / "qnn-campaign.yml"
ORG = TEMPLATES / "qnn-campaign-org.yml"
BIN = Path(sys.executable).parent
WRITES_CODE = {"contents": "write", "pull-requests": "write"}
APP_TOKEN = "actions/create-github-app-token@"


def load_template(path: Path) -> dict[str, Any]:
    """An adoption template as an adopter fills it in (the README's placeholders replaced)."""
    doc = YAML(typ="safe").load(filled(path.read_text(encoding="utf-8")))
    assert isinstance(doc, dict), path
    return doc


def filled_copies(tmp: Path, *paths: Path) -> list[Path]:
    """Each template filled in, written under ``tmp`` with its own name (workflows as they are)."""
    out = []
    for path in paths:
        if path.parent != TEMPLATES:
            out.append(path)
            continue
        out.append(tmp / path.name)
        out[-1].write_text(filled(path.read_text(encoding="utf-8")), encoding="utf-8")
    return out


def command_job_permissions() -> dict[str, str]:
    """What a maintainer's /qnn test job holds (qnn-bot-command.yml's kept lane)."""
    perms = load(ROOT / ".github" / "workflows" / "qnn-bot-command.yml")["jobs"]["command"]
    return dict(perms["permissions"])


def runs(job: dict[str, Any]) -> str:
    return "\n".join(str(s.get("run", "")) for s in job.get("steps", []))


def split_problems(doc: dict[str, Any]) -> list[str]:
    """The least-privilege split of the reusable workflow's jobs."""
    out = []
    for name, job in doc["jobs"].items():
        perms = job.get("permissions", {})
        text = runs(job)
        if "bot campaign run" in text and perms != WRITES_CODE:
            out.append(f"{name}: the campaign job holds {perms}, not {WRITES_CODE}")
        if "bot campaign prove" in text:
            if perms != command_job_permissions():
                out.append(f"{name}: the proof job holds {perms}, not the command job's")
            if perms.get("contents") == "write":
                out.append(f"{name}: the proof job may write code")
        if "bot campaign run" in text and "bot campaign prove" in text:
            out.append(f"{name}: one job both writes code and starts runs")
    return out


def test_the_reusable_workflow_splits_writing_code_from_starting_runs() -> None:
    doc = load(REUSABLE)
    assert list(doc["on"]) == ["workflow_call"]
    assert lockdown_problems(REUSABLE.name, doc) == []
    assert split_problems(doc) == []
    jobs = doc["jobs"]
    assert jobs["prove"]["needs"] == "campaign"
    assert jobs["prove"]["if"] == "needs.campaign.outputs.prove == 'true'"
    # The campaign job reads only the default branch, and refuses any other ref.
    for job in jobs.values():
        checkouts = [
            s for _, _, s in steps({"jobs": {"j": job}}) if "checkout@" in str(s.get("uses"))
        ]
        assert [c["with"] for c in checkouts] == [{"persist-credentials": False}]
    run = runs(jobs["campaign"])
    assert '--ref "$GITHUB_REF"' in run and '--base-sha "$GITHUB_SHA"' in run
    assert "git push" not in run and "gh " not in run
    # Controls: each breach of the split is seen.
    for breach in (
        lambda d: d["jobs"]["campaign"]["permissions"].update(actions="write"),
        lambda d: d["jobs"]["prove"]["permissions"].update(contents="write"),
        lambda d: d["jobs"]["prove"]["permissions"].pop("statuses"),
        lambda d: d["jobs"]["campaign"]["steps"].append({"run": "qnn-migrate bot campaign prove"}),
    ):
        broken = copy.deepcopy(doc)
        breach(broken)
        assert split_problems(broken), breach


def test_the_callers_template_runs_on_a_schedule_or_by_hand_at_the_pinned_commit() -> None:
    doc = load_template(CALLER)
    assert lockdown_problems(CALLER.name, doc) == []
    assert set(doc["on"]) == {"schedule", "workflow_dispatch"}
    (call,) = doc["jobs"].values()
    assert call["uses"].startswith("qnn-lab/qnn-migrate/.github/workflows/qnn-bot-campaign.yml@")
    assert call["with"]["bot-ref"] == call["uses"].rsplit("@", 1)[1]
    # The ceiling it grants is exactly what the called jobs use, together.
    union: dict[str, str] = {}
    for job in load(REUSABLE)["jobs"].values():
        for key, value in job["permissions"].items():
            union[key] = "write" if "write" in (value, union.get(key)) else value
    assert call["permissions"] == union


def _token_permissions(step: dict[str, Any]) -> dict[str, str]:
    return {
        k.removeprefix("permission-"): str(v)
        for k, v in step.get("with", {}).items()
        if k.startswith("permission-")
    }


def test_the_organizations_template_mints_one_narrow_token_per_repository_and_step() -> None:
    doc = load_template(ORG)
    assert lockdown_problems(ORG.name, doc) == []
    assert set(doc["on"]) == {"schedule", "workflow_dispatch"}
    campaign, summary = doc["jobs"]["campaign"], doc["jobs"]["summary"]
    assert campaign["permissions"] == {} and summary["permissions"] == {}
    assert campaign["strategy"]["fail-fast"] is False
    assert campaign["environment"] == "qnn-campaign"  # the key's secret, default branch only
    assert summary["needs"] == "campaign" and "!cancelled()" in summary["if"]
    tokens = [s for s in campaign["steps"] if str(s.get("uses", "")).startswith(APP_TOKEN)]
    assert [_token_permissions(t) for t in tokens] == [WRITES_CODE, command_job_permissions()]
    for token in tokens:
        assert token["with"]["repositories"] == "${{ steps.repo.outputs.name }}"
    ordered = [s.get("id") or s.get("name") for s in campaign["steps"]]
    assert ordered.index("token") < ordered.index("run") < ordered.index("proof-token")
    by_id = {s.get("id"): s for s in campaign["steps"]}
    assert by_id["run"]["env"]["GITHUB_TOKEN"] == "${{ steps.token.outputs.token }}"
    prove = next(s for s in campaign["steps"] if "bot campaign prove" in str(s.get("run")))
    assert prove["env"]["GITHUB_TOKEN"] == "${{ steps.proof-token.outputs.token }}"
    assert '--repo "$REPOSITORY"' in by_id["run"]["run"] and '--repo "$REPOSITORY"' in prove["run"]
    # Control: the proof's token given to the campaign step is seen.
    broken = copy.deepcopy(tokens)
    broken[0]["with"]["permission-actions"] = "write"
    assert _token_permissions(broken[0]) != WRITES_CODE


def test_zizmor_and_githubs_schema_accept_them(tmp_path: Path) -> None:
    files = filled_copies(tmp_path, REUSABLE, CALLER, ORG)
    schema = [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows"]
    proc = subprocess.run([*schema, *map(str, files)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for persona in ("pedantic", "auditor"):
        zizmor = [str(BIN / "zizmor"), "--offline", "--persona", persona, "--no-progress"]
        proc = subprocess.run(
            [*zizmor, *map(str, files)], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "No findings" in proc.stdout + proc.stderr
    assert not any("zizmor: ignore" in f.read_text() for f in files)
    # Controls: the findings these files would have without their care.
    bad = tmp_path / "bad.yml"
    text = REUSABLE.read_text()
    bad.write_text(text.replace("for p in $PATHS; do", "for p in ${{ inputs.paths }}; do"))
    pedantic = [str(BIN / "zizmor"), "--offline", "--persona", "pedantic", "--no-progress"]
    proc = subprocess.run([*pedantic, str(bad)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "template-injection" in proc.stdout + proc.stderr
    bad.write_text(filled(ORG.read_text()).replace("    environment: qnn-campaign\n", ""))
    auditor = [str(BIN / "zizmor"), "--offline", "--persona", "auditor", "--no-progress"]
    proc = subprocess.run([*auditor, str(bad)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "secrets-outside-env" in proc.stdout + proc.stderr


@pytest.mark.parametrize("path", [REUSABLE, CALLER, ORG], ids=lambda p: p.name)
def test_their_scripts_parse_as_bash(path: Path) -> None:
    bash = shutil.which("bash")
    assert bash
    for _, _, step in steps(load_template(path) if path.parent == TEMPLATES else load(path)):
        if "run" in step:
            proc = subprocess.run([bash, "-n", "-c", step["run"]], capture_output=True, text=True)
            assert proc.returncode == 0, f"{path.name}:{step.get('name')}: {proc.stderr}"
