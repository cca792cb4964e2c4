"""The project's workflow rules (HOUSE_STYLE habit 10), as a check that lists every breach of a workflow.

Read by tests/workflows/test_workflows.py (this repository's workflows and the adopter's) and
tests/bot/campaign/test_workflows.py (the campaign's).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

DEVICE_RUNS_ON = ["self-hosted", "qnn", "${{ matrix.label }}"]


PINNED_RE = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")


EXPR_RE = re.compile(r"\$\{\{(.*?)\}\}", re.S)


# GitHub-hosted images, pinned to a version (never *-latest, which moves under us).
HOSTED_RE = re.compile(r"^(ubuntu|macos|windows)-\d[\w.-]*$")


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


def steps(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    for name, job in doc.get("jobs", {}).items():
        for step in job.get("steps", []):
            yield name, job, step
    if "runs" in doc:  # a composite action
        for step in doc["runs"].get("steps", []):
            yield "action", {}, step


def is_device_job(job: dict[str, Any]) -> bool:
    runs_on = job.get("runs-on")
    labels = runs_on if isinstance(runs_on, list) else [runs_on]
    return "self-hosted" in labels


def hosted_runner_labels(job: dict[str, Any]) -> list[str]:
    """The runner labels a non-device job may get: its ``runs-on``, a matrix key expanded.

    ``runs-on: ${{ matrix.os }}`` stands for every ``os`` of the job's matrix (its
    ``include`` entries too); a matrix built at run time (``fromJSON``) cannot be checked
    here and comes back as itself, which no hosted label matches.
    """
    runs_on = job.get("runs-on")
    if not isinstance(runs_on, str):
        return [repr(runs_on)]  # a label list or group: not one GitHub-hosted image
    found = re.fullmatch(r"\$\{\{\s*matrix\.([\w-]+)\s*\}\}", runs_on)
    if not found:
        return [runs_on]
    matrix = job.get("strategy", {}).get("matrix")
    key = found.group(1)
    if not isinstance(matrix, dict):
        return [runs_on]
    values = matrix.get(key, [])
    labels = [str(v) for v in values] if isinstance(values, list) else [str(values)]
    labels += [str(inc[key]) for inc in matrix.get("include", []) if key in inc]
    return labels or [runs_on]


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
        if "uses" in job:  # a call of a reusable workflow
            uses = str(job["uses"])
            if not uses.startswith("./") and not PINNED_RE.match(uses):
                out.append(f"{where}: {uses} is not pinned to a commit SHA")
            if "secrets" in job:
                out.append(f"{where}: a called workflow gets no secrets")
        elif is_device_job(job):
            text = repr(job)
            if perms != {}:
                out.append(f"{where}: a device job gets permissions {{}}")
            if "secrets." in text or "github.token" in text or "GITHUB_TOKEN" in text:
                out.append(f"{where}: a device job gets no secrets and no token")
            if job.get("strategy", {}).get("fail-fast") is not False:
                out.append(f"{where}: a device matrix needs fail-fast: false")
            if job.get("runs-on") != DEVICE_RUNS_ON:
                out.append(f"{where}: runs-on must be [self-hosted, qnn, <label>]")
        elif not all(HOSTED_RE.match(label) for label in hosted_runner_labels(job)):
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
