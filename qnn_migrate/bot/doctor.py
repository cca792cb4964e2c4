"""``qnn-migrate bot doctor``: is this repository's adoption of the bot safe and complete? (pure)

Runner labels are not a trust boundary: any workflow in the repository, including one a
pull request adds, can ask for ``runs-on: [self-hosted, qnn, sm8650]``. What keeps PR code
off the phones is the repository's and organization's settings, so the doctor checks
what the REST API shows and lists what only a person can check:

* the adoption files (``.github/qnn-bot.toml`` loads; the caller workflows pin
  qnn-migrate to one full commit, the same one they install);
* "Require approval for all outside collaborators" for fork pull requests;
* the runner group holding the QNN runners: restricted to the repository, and its
  "selected workflows" to the device workflow on the default branch;
* ephemeral runners where the API says.

Reads go through a ``RestReader`` (``get(path) -> (status, json)``); the local checks read
the adopter's checkout. Each ``Check`` is ok, failed (with the fix) or manual (``None``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from qnn_migrate.bot import catalog as catalog_mod

QNN_WORKFLOWS = ("qnn-bot-command.yml", "qnn-bot-plan.yml", "qnn-bot-report.yml")
QNN_ACTION = ".github/actions/run-shard"
FULL_SHA_RE = re.compile(r"^[0-9a-f]{40}$")
# Workflow lines read without a YAML parser (the [bot] extra has none): `uses:` and
# `bot-ref:` values, comments and quotes stripped.
USES_RE = re.compile(r"^\s*(?:-\s+)?uses:\s*['\"]?([^\s'\"#]+)", re.M)
BOT_REF_RE = re.compile(r"^\s*bot-ref:\s*['\"]?([^\s'\"#]+)", re.M)
PLACEHOLDER = "0" * 40
APPROVE_ALL = "all_external_contributors"


class RestReader(Protocol):
    """A read-only GET on GitHub's REST API: (HTTP status, decoded JSON or None)."""

    def get(self, path: str) -> tuple[int, Any]: ...


@dataclass(frozen=True)
class Check:
    """One finding: ``ok`` True/False, or None when a person has to look."""

    name: str
    ok: bool | None
    detail: str

    def line(self) -> str:
        mark = {True: "ok    ", False: "FAIL  ", None: "CHECK "}[self.ok]
        return f"{mark}{self.name}: {self.detail}"


MANUAL = (
    Check(
        "runner hosts",
        None,
        "each host keeps no credentials (device jobs run PR code), wipes its work directory "
        "after each job, and limits its network egress; prefer --ephemeral or JIT runners",
    ),
    Check(
        "adb servers",
        None,
        "no adb server is reachable from outside the lab network",
    ),
    Check(
        "qnn-baselines branch",
        None,
        "only people with write access and github-actions[bot] may push it",
    ),
)


# ------------------------------------------------------------------------ local files


def local_checks(repo_root: Path) -> tuple[list[Check], catalog_mod.Catalog | None]:
    """The adoption files in a checkout of the adopting repository."""
    out: list[Check] = []
    config = repo_root / catalog_mod.ADOPTER_CONFIG
    catalog: catalog_mod.Catalog | None = None
    if not config.is_file():
        out.append(
            Check("bot config", False, f"no {catalog_mod.ADOPTER_CONFIG}; see docs/adopting.md")
        )
    else:
        try:
            catalog = catalog_mod.load(config)
            out.append(
                Check(
                    "bot config",
                    True,
                    f"{catalog_mod.ADOPTER_CONFIG} loads: {len(catalog.matrices)} matrices, "
                    f"{len(catalog.lab_socs)} lab SoCs, registry {catalog.registry.version}",
                )
            )
        except catalog_mod.CatalogError as exc:
            out.append(Check("bot config", False, str(exc).splitlines()[0]))

    pins: dict[str, set[str]] = {}
    bot_refs: set[str] = set()
    for path in sorted((repo_root / ".github" / "workflows").glob("*.y*ml")):
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            out.append(Check(f"workflow {path.name}", False, f"cannot be read: {exc}"))
            continue
        calls = False
        for uses in USES_RE.findall(text):
            target, _, ref = uses.partition("@")
            if target.endswith(QNN_WORKFLOWS) or target.endswith(QNN_ACTION):
                pins.setdefault(ref, set()).add(path.name)
                calls = True
        if calls:
            bot_refs.update(BOT_REF_RE.findall(text))
    if not pins:
        out.append(
            Check("caller workflows", False, "no workflow calls qnn-migrate's workflows or action")
        )
    else:
        refs = sorted(pins)
        if len(refs) > 1:
            out.append(Check("pinned version", False, f"more than one qnn-migrate ref: {refs}"))
        elif not FULL_SHA_RE.match(refs[0]) or refs[0] == PLACEHOLDER:
            out.append(
                Check(
                    "pinned version",
                    False,
                    f"qnn-migrate is called at {refs[0]!r}; pin one full 40-hex release commit",
                )
            )
        elif bot_refs != {refs[0]}:
            out.append(
                Check(
                    "pinned version",
                    False,
                    f"bot-ref {sorted(bot_refs)} differs from the pinned {refs[0][:12]}: the "
                    "installed bot must be the called one",
                )
            )
        else:
            out.append(Check("pinned version", True, f"qnn-migrate at {refs[0]}"))
        if catalog is not None:
            device = catalog.policy.device_workflow
            if not (repo_root / ".github" / "workflows" / device).is_file():
                out.append(
                    Check("device workflow", False, f".github/workflows/{device} is missing")
                )
    return out, catalog


# ------------------------------------------------------------------------- REST checks


def _labels(runner: Mapping[str, Any]) -> set[str]:
    return {
        str(label.get("name", "")).lower()
        for label in runner.get("labels", []) or []
        if isinstance(label, Mapping)
    }


def remote_checks(
    reader: RestReader,
    repo: str,
    *,
    device_workflow: str,
    lab_labels: Sequence[str],
) -> list[Check]:
    """What the REST API shows about the settings that keep PR code off the phones."""
    out: list[Check] = []
    status, info = reader.get(f"/repos/{repo}")
    if status != 200 or not isinstance(info, Mapping):
        return [Check("repository", False, f"GET /repos/{repo} answered {status}")]
    default = str(info.get("default_branch", "main"))
    raw_owner = info.get("owner")
    owner: Mapping[str, Any] = raw_owner if isinstance(raw_owner, Mapping) else {}
    is_org = owner.get("type") == "Organization"
    selected = f"{repo}/.github/workflows/{device_workflow}@refs/heads/{default}"

    status, approval = reader.get(f"/repos/{repo}/actions/permissions/fork-pr-contributor-approval")
    if status == 200 and isinstance(approval, Mapping):
        policy = approval.get("approval_policy")
        out.append(
            Check(
                "fork PR approval",
                policy == APPROVE_ALL,
                f"approval_policy is {policy!r}"
                + (
                    ""
                    if policy == APPROVE_ALL
                    else "; set Settings > Actions > General > 'Require approval for all "
                    "outside collaborators'"
                ),
            )
        )
    else:
        out.append(
            Check(
                "fork PR approval",
                None,
                f"cannot read it ({status}; needs an admin token): Settings > Actions > General "
                "must say 'Require approval for all outside collaborators'",
            )
        )

    wanted = {label.lower() for label in lab_labels}
    status, listing = reader.get(f"/repos/{repo}/actions/runners?per_page=100")
    runners = listing.get("runners", []) if status == 200 and isinstance(listing, Mapping) else []
    ours = [r for r in runners if isinstance(r, Mapping) and "qnn" in _labels(r)]
    if status != 200:
        out.append(Check("runners", None, f"cannot list repository runners ({status})"))
    for runner in ours:
        name = str(runner.get("name", "?"))
        ephemeral = runner.get("ephemeral")
        if ephemeral is None:
            out.append(Check(f"runner {name}", None, "the API does not say if it is ephemeral"))
        else:
            out.append(
                Check(
                    f"runner {name}",
                    bool(ephemeral),
                    "ephemeral" if ephemeral else "not ephemeral: register with --ephemeral or JIT",
                )
            )
        if not _labels(runner) & wanted:
            out.append(
                Check(f"runner {name}", False, f"labels {sorted(_labels(runner))} match no SoC")
            )
    if ours:
        out.append(
            Check(
                "repository runners",
                False,
                f"{len(ours)} QNN runner(s) registered on the repository itself: repository "
                "runners cannot be restricted to one workflow; move them to an organization "
                "runner group",
            )
        )

    if not is_org:
        out.append(
            Check(
                "runner group",
                False,
                "a personal repository has no runner groups, so nothing restricts which "
                "workflow reaches its self-hosted runners; move the repository to an organization",
            )
        )
        return out
    org = str(owner.get("login", repo.split("/")[0]))
    status, groups_doc = reader.get(f"/orgs/{org}/actions/runner-groups?per_page=100")
    if status != 200 or not isinstance(groups_doc, Mapping):
        out.append(
            Check(
                "runner group",
                None,
                f"cannot read runner groups ({status}; needs an org admin token): the group "
                f"with the QNN runners must allow only {repo} and, under Workflow access, only "
                f"{selected}",
            )
        )
        return out
    found = False
    for group in groups_doc.get("runner_groups", []) or []:
        if not isinstance(group, Mapping):
            continue
        gid = group.get("id")
        status, members = reader.get(
            f"/orgs/{org}/actions/runner-groups/{gid}/runners?per_page=100"
        )
        listed = (
            members.get("runners", []) if status == 200 and isinstance(members, Mapping) else []
        )
        if not any(isinstance(r, Mapping) and "qnn" in _labels(r) for r in listed):
            continue
        found = True
        name = f"runner group {group.get('name', gid)}"
        workflows = list(group.get("selected_workflows", []) or [])
        restricted = bool(group.get("restricted_to_workflows"))
        good = restricted and workflows == [selected]
        out.append(
            Check(
                name,
                good,
                f"selected workflows {workflows}"
                if good
                else f"restrict 'Workflow access' to exactly {selected} (now "
                f"restricted={restricted}, {workflows})",
            )
        )
        if group.get("visibility") != "selected" or group.get("allows_public_repositories"):
            out.append(
                Check(
                    name,
                    False if group.get("visibility") != "selected" else None,
                    f"repository access must be 'Selected repositories' with only {repo}"
                    + (
                        "; public repositories are allowed (needed for a public fork: keep the "
                        "workflow restriction above)"
                        if group.get("allows_public_repositories")
                        else ""
                    ),
                )
            )
    if not found:
        out.append(Check("runner group", None, "no organization runner group holds a QNN runner"))
    return out


def report(checks: Sequence[Check]) -> tuple[str, bool]:
    """The printed report and whether nothing failed."""
    lines = [c.line() for c in checks] + [c.line() for c in MANUAL]
    return "\n".join(lines), not any(c.ok is False for c in checks)
