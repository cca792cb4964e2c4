"""``qnn-migrate bot doctor``: is this repository's adoption of the bot safe and complete? (pure)

Runner labels are not a trust boundary: any workflow in the repository, including one a
pull request adds, can ask for ``runs-on: [self-hosted, qnn, sm8650]``. What keeps PR code
off the phones is the repository's and organization's settings, so the doctor checks
what the REST API shows and lists what only a person can check:

* the adoption files (``.github/qnn-bot.toml`` loads; the caller workflows call
  qnn-migrate from the repository the adopter trusts (``--bot-repo``), pinned to one full
  commit, the same one they install; the command workflow is there, without which no
  comment does anything);
* "Require approval for all outside collaborators" for fork pull requests;
* the runner group holding the QNN runners: restricted to the repository, and its
  "selected workflows" to the device workflow on the default branch;
* ephemeral runners where the API says (repository runners and the runner group's); a
  long-lived one passes only when the doctor runs on its host (``--host-config``) and
  ``host_checks`` finds the host sealed and running PR code as job users;
* a runner for every SoC the config offers (a command naming one would queue forever).

An answer the doctor cannot use (offline, 401, 403, 404, a field that is null) is a
finding that says what it means and what to do, never a traceback.

Reads go through a ``RestReader`` (``get(path) -> (status, json)``); the local checks read
the adopter's checkout, and the host checks the runner host's own files. Each ``Check`` is ok, failed (with the fix) or manual (``None``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from qnn_migrate.bot import artifacts
from qnn_migrate.bot import catalog as catalog_mod
from qnn_migrate.bot.artifacts import ArtifactError
from qnn_migrate.bot.lab import host_config

QNN_WORKFLOWS = ("qnn-bot-command.yml", "qnn-bot-plan.yml", "qnn-bot-report.yml")
COMMAND_WORKFLOW = "qnn-bot-command.yml"
BOT_REPO = "qnn-lab/qnn-migrate"  # where the templates call qnn-migrate from
QNN_ACTION = ".github/actions/run-shard"
FULL_SHA_RE = re.compile(r"^[0-9a-f]{40}$")
# Workflow lines read without a YAML parser (the [bot] extra has none): `uses:` and
# `bot-ref:` values, comments and quotes stripped.
USES_RE = re.compile(r"^\s*(?:-\s+)?uses:\s*['\"]?([^\s'\"#]+)", re.M)
BOT_REF_RE = re.compile(r"^\s*bot-ref:\s*['\"]?([^\s'\"#]+)", re.M)
BOT_REPO_RE = re.compile(r"^\s*bot-repo:\s*['\"]?([^\s'\"#]+)", re.M)
PLACEHOLDER = "0" * 40
MAX_WORKFLOW_BYTES = 1024 * 1024
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


def _source(target: str) -> str:
    """``owner/name`` of a ``uses:`` target (``owner/name/path``); ``./...`` is local."""
    parts = target.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 and parts[0] != "." else target


def local_checks(
    repo_root: Path, bot_repo: str = BOT_REPO
) -> tuple[list[Check], catalog_mod.Catalog | None]:
    """The adoption files in a checkout of the adopting repository; ``bot_repo`` is the
    repository the adopter trusts to run qnn-migrate from."""
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
    bot_repos: set[str] = set()
    sources: dict[str, set[str]] = {}  # owner/name called -> workflow files calling it
    called: set[str] = set()  # qnn-migrate workflow file names called
    for path in sorted((repo_root / ".github" / "workflows").glob("*.y*ml")):
        try:
            text = artifacts.read_text(path, "a workflow", MAX_WORKFLOW_BYTES)
        except ArtifactError as exc:
            out.append(Check(f"workflow {path.name}", False, f"cannot be read: {exc}"))
            continue
        calls = False
        for uses in USES_RE.findall(text):
            target, _, ref = uses.partition("@")
            if target.endswith(QNN_WORKFLOWS) or target.endswith(QNN_ACTION):
                pins.setdefault(ref, set()).add(path.name)
                sources.setdefault(_source(target), set()).add(path.name)
                called.add(target.rsplit("/", 1)[-1])
                calls = True
        if calls:
            bot_refs.update(BOT_REF_RE.findall(text))
            bot_repos.update(BOT_REPO_RE.findall(text))
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
        strangers = {source: files for source, files in sources.items() if source != bot_repo} | {
            value: {"bot-repo"} for value in bot_repos if value != bot_repo
        }
        if strangers:
            listed = "; ".join(
                f"{source} (in {', '.join(sorted(files))})"
                for source, files in sorted(strangers.items())
            )
            out.append(
                Check(
                    "qnn-migrate source",
                    False,
                    f"qnn-migrate is called from {listed}, not from {bot_repo}: call it only "
                    f"from the repository you trust (or pass --bot-repo OWNER/NAME)",
                )
            )
        else:
            out.append(Check("qnn-migrate source", True, f"every call is to {bot_repo}"))
        if COMMAND_WORKFLOW not in called:
            out.append(
                Check(
                    "command workflow",
                    False,
                    f"no workflow calls {COMMAND_WORKFLOW}, so /qnn comments do nothing: copy "
                    ".github/adopt/workflows/qnn-command.yml into .github/workflows/ "
                    "(docs/adopting.md)",
                )
            )
        if catalog is not None:
            device = catalog.policy.device_workflow
            if not (repo_root / ".github" / "workflows" / device).is_file():
                out.append(
                    Check("device workflow", False, f".github/workflows/{device} is missing")
                )
    out += campaign_checks(repo_root, bot_repo)
    return out, catalog


CAMPAIGN_WORKFLOW = "qnn-bot-campaign.yml"
# Triggers the campaign's caller must not have: it runs from the default branch, on a
# schedule or by hand, never on an event someone outside can cause.
CAMPAIGN_ON_RE = re.compile(r"^(?:on|\"on\"|'on'):(.*(?:\n(?:[ \t#].*)?)*)", re.M)
CAMPAIGN_TRIGGERS = ("schedule", "workflow_dispatch")
CAMPAIGN_GRANTS = ("contents: write", "pull-requests: write")


def _triggers(text: str) -> list[str]:
    """The events of a workflow's ``on:`` (read without a YAML parser: the block's keys at
    the first indentation, or the words of a one-line ``on: [a, b]`` / ``on: a``)."""
    found = CAMPAIGN_ON_RE.search(text)
    if found is None:
        return []
    block = found.group(1)
    head, _, rest = block.partition("\n")
    if head.split("#")[0].strip():
        return re.findall(r"[a-z_]+", head.split("#")[0])
    indent = min(
        (
            len(line) - len(line.lstrip())
            for line in rest.splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        ),
        default=0,
    )
    return [
        line.strip().split(":")[0].lstrip("- ").strip()
        for line in rest.splitlines()
        if line.strip()
        and not line.lstrip().startswith("#")
        and len(line) - len(line.lstrip()) == indent
    ]


def campaign_checks(repo_root: Path, bot_repo: str = BOT_REPO) -> list[Check]:
    """The migration campaign's setup, when a workflow calls ``qnn-bot-campaign.yml`` (none
    when nothing does: the campaign is optional). Its caller must run on a schedule or by
    hand only, call qnn-migrate from ``bot_repo`` at the same pinned commit as the other
    qnn-migrate workflows and install that same commit, and grant the campaign job its
    contents and pull-requests writes; two settings only a person can see are listed."""
    workflows = repo_root / ".github" / "workflows"
    callers: dict[str, tuple[str, str]] = {}  # file -> (called owner/name, ref)
    others: set[str] = set()  # refs the other qnn-migrate workflows are called at
    texts: dict[str, str] = {}
    for path in sorted(workflows.glob("*.y*ml")):
        try:
            text = artifacts.read_text(path, "a workflow", MAX_WORKFLOW_BYTES)
        except ArtifactError:
            continue  # local_checks reports it
        for uses in USES_RE.findall(text):
            target, _, ref = uses.partition("@")
            if target.endswith("/" + CAMPAIGN_WORKFLOW):
                callers[path.name] = (_source(target), ref)
                texts[path.name] = text
            elif target.endswith(QNN_WORKFLOWS) or target.endswith(QNN_ACTION):
                others.add(ref)
    out: list[Check] = []
    for name, (source, ref) in sorted(callers.items()):
        text = texts[name]
        where = f"campaign ({name})"
        problems = []
        if source != bot_repo:
            problems.append(f"calls qnn-migrate from {source}, not {bot_repo}")
        if not FULL_SHA_RE.match(ref) or ref == PLACEHOLDER:
            problems.append(f"calls {CAMPAIGN_WORKFLOW} at {ref!r}: pin one full release commit")
        elif others and others != {ref}:
            problems.append(
                f"calls {CAMPAIGN_WORKFLOW} at {ref[:12]}, the other qnn-migrate workflows at "
                f"{', '.join(sorted(r[:12] for r in others))}: adopt one commit for all"
            )
        if set(BOT_REF_RE.findall(text)) != {ref}:
            problems.append(f"bot-ref differs from the pinned {ref[:12]}")
        extra = sorted(set(_triggers(text)) - set(CAMPAIGN_TRIGGERS))
        if extra:
            problems.append(
                f"runs on {', '.join(extra)}: the campaign runs from the default branch on a "
                "schedule or by hand (workflow_dispatch) only"
            )
        missing = [
            g for g in CAMPAIGN_GRANTS if not re.search(rf"^\s*{re.escape(g)}\b", text, re.M)
        ]
        if missing:
            problems.append(f"grants no {' or '.join(missing)}: the campaign cannot keep its PR")
        out.append(
            Check(
                where,
                not problems,
                "; ".join(problems)
                if problems
                else f"on schedule or by hand, qnn-migrate at {ref[:12]} from {bot_repo}",
            )
        )
    if callers:
        out.append(
            Check(
                "campaign settings",
                None,
                "Settings > Actions > General > Workflow permissions must allow GitHub Actions "
                "to create and approve pull requests (with GITHUB_TOKEN the campaign opens its "
                "PR as github-actions[bot]), and no rule may keep that account from pushing "
                "the campaign's branch (qnn-migrate/campaign)",
            )
        )
    return out


# ------------------------------------------------------------------------- REST checks


def _labels(runner: Mapping[str, Any]) -> set[str]:
    labels = runner.get("labels")
    return {
        str(label.get("name", "")).lower()
        for label in (labels if isinstance(labels, list) else [])
        if isinstance(label, Mapping)
    }


def _items(doc: Any, key: str) -> list[Mapping[str, Any]]:
    """The objects listed under ``key`` (``null``, a missing key or a non-list: none)."""
    listed = doc.get(key) if isinstance(doc, Mapping) else None
    return (
        [item for item in listed if isinstance(item, Mapping)] if isinstance(listed, list) else []
    )


def explain(status: int, doc: Any, path: str) -> str:
    """What an answer the doctor cannot use means, and what to do about it."""
    message = doc.get("message") if isinstance(doc, Mapping) else None
    said = f" ({str(message)[:200]})" if message else ""
    if status == 0:
        return (
            f"no answer to GET {path}{said}: offline, or GITHUB_API_URL is wrong; run the "
            "doctor where the API is reachable"
        )
    if status == 401:
        return (
            f"GET {path} answered 401{said}: the token was refused; set GITHUB_TOKEN (or "
            "GH_TOKEN) to a valid token"
        )
    if status == 403:
        return (
            f"GET {path} answered 403{said}: the token may not read this (an admin token sees "
            "the most), or the rate limit was hit; retry with an admin token"
        )
    if status == 404:
        return (
            f"GET {path} answered 404{said}: check --repo, and that the token can see the "
            "repository (a private one answers 404 to a token without access)"
        )
    return f"GET {path} answered {status}{said}"


def _ephemeral(
    runner: Mapping[str, Any], where: str, sealed: Mapping[str, bool] | None = None
) -> Check:
    """An ephemeral runner passes; a long-lived one passes only if this host is its host
    and ``host_checks`` found it sealed with job users (``sealed``: name -> verdict)."""
    name = f"runner {runner.get('name', '?')}"
    ephemeral = runner.get("ephemeral")
    if not isinstance(ephemeral, bool):
        return Check(name, None, f"{where}: the API does not say if it is ephemeral")
    if ephemeral:
        return Check(name, True, f"{where}: ephemeral")
    verdict = (sealed or {}).get(str(runner.get("name", "")))
    if verdict is True:
        return Check(
            name, True, f"{where}: long-lived, on this host, which is sealed with job users"
        )
    if verdict is False:
        return Check(
            name,
            False,
            f"{where}: long-lived, on this host, which is not sealed with job users (the host "
            'checks above say what is missing; docs/runners.md, "A clean host per job")',
        )
    return Check(
        name,
        False,
        f"{where}: not ephemeral: register it with --ephemeral or as a JIT runner, or make "
        "its host restore a known state around every job, with job users and a seal, and "
        "run `qnn-migrate bot doctor --host-config FILE` on that host (docs/runners.md)",
    )


# ------------------------------------------------------------------------- host checks


def host_checks(
    config: host_config.HostConfig, config_path: Path | None
) -> tuple[list[Check], dict[str, bool]]:
    """On a runner host: does it run PR code as job users, and is it sealed (long-lived)?

    The second value maps the host config's ``github_runners`` to whether this host
    passed: ``remote_checks`` passes a long-lived runner only on a host that did."""
    from qnn_migrate.bot.lab import integrity, job_user

    out: list[Check] = []
    spec = config.job_users
    if config.isolation == host_config.NO_ISOLATION:
        out.append(
            Check(
                "host isolation",
                False,
                'isolation = "none": the PR\'s code runs as the supervisor that checks it and '
                "writes its results; create job users and list them in [job_users] "
                '(docs/runners.md, "Two users")',
            )
        )
    elif spec is None:
        out.append(
            Check(
                "host isolation",
                False,
                "no [job_users]: run-shard refuses every job here; create job users and list "
                'them (docs/runners.md, "Two users")',
            )
        )
    else:
        staged = Path(config.state_dir) / "bot-files"
        for name in spec.names:
            try:
                user = job_user.resolve(spec, name, path_env=os.defpath, staged=staged)
                out.append(Check(f"job user {name}", True, f"uid {user.uid}, {user.folder}"))
            except job_user.JobUserError as exc:
                out.append(Check(f"job user {name}", False, str(exc)))
    if config.lifetime == host_config.LONG_LIVED:
        if not config.integrity_manifest or not config.job_env:
            out.append(
                Check(
                    "host seal",
                    False,
                    "long-lived without [job_env] and integrity_manifest: run-shard refuses "
                    'every job here (docs/runners.md, "A clean host per job")',
                )
            )
        else:
            manifest = Path(config.integrity_manifest)
            resolved = str(config_path.resolve()) if config_path else None
            findings = integrity.verify(manifest, config.trusted_roots(resolved))
            findings += job_user.writable_by_job_users(
                config.job_users, [manifest, *([Path(resolved)] if resolved else [])]
            )
            out.append(
                Check(
                    "host seal",
                    not findings,
                    f"{manifest} matches the trusted paths and the host config"
                    if not findings
                    else integrity.summary(findings)
                    + "; reprovision, or review and seal again (qnn-migrate bot host seal)",
                )
            )
    else:
        out.append(
            Check(
                "host lifetime",
                True,
                "ephemeral: each job user runs one job here, so a reused host is refused",
            )
        )
    if not config.github_runners:
        out.append(
            Check(
                "host runners",
                None,
                "list this host's GitHub runners in github_runners so the doctor can match "
                "them to the API's",
            )
        )
    sealed = all(c.ok is not False for c in out)
    return out, dict.fromkeys(config.github_runners, sealed)


def remote_checks(
    reader: RestReader,
    repo: str,
    *,
    device_workflow: str,
    lab_labels: Sequence[str],
    sealed: Mapping[str, bool] | None = None,
) -> list[Check]:
    """What the REST API shows about the settings that keep PR code off the phones.

    ``sealed``: the long-lived runners of this host and whether ``host_checks`` passed it."""
    out: list[Check] = []
    path = f"/repos/{repo}"
    status, info = reader.get(path)
    if status != 200 or not isinstance(info, Mapping):
        return [Check("repository", False, explain(status, info, path))]
    default = str(info.get("default_branch") or "main")
    raw_owner = info.get("owner")
    owner: Mapping[str, Any] = raw_owner if isinstance(raw_owner, Mapping) else {}
    is_org = owner.get("type") == "Organization"
    selected = f"{repo}/.github/workflows/{device_workflow}@refs/heads/{default}"

    path = f"/repos/{repo}/actions/permissions/fork-pr-contributor-approval"
    status, approval = reader.get(path)
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
                f"cannot read it: {explain(status, approval, path)}. Settings > Actions > "
                "General must say 'Require approval for all outside collaborators'",
            )
        )

    wanted = {label.lower() for label in lab_labels}
    seen: set[str] = set()  # labels of every QNN runner the API listed
    listed_any = False
    path = f"/repos/{repo}/actions/runners?per_page=100"
    status, listing = reader.get(path)
    ours = [r for r in _items(listing, "runners") if "qnn" in _labels(r)] if status == 200 else []
    if status != 200:
        out.append(
            Check(
                "runners", None, f"cannot list repository runners: {explain(status, listing, path)}"
            )
        )
    else:
        listed_any = True
    for runner in ours:
        seen |= _labels(runner)
        out.append(_ephemeral(runner, "repository runner", sealed))
        if not _labels(runner) & wanted:
            out.append(
                Check(
                    f"runner {runner.get('name', '?')}",
                    False,
                    f"labels {sorted(_labels(runner))} match no SoC",
                )
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
        return out + _coverage(wanted, seen, listed_any)
    org = str(owner.get("login") or repo.split("/")[0])
    path = f"/orgs/{org}/actions/runner-groups?per_page=100"
    status, groups_doc = reader.get(path)
    if status != 200 or not isinstance(groups_doc, Mapping):
        out.append(
            Check(
                "runner group",
                None,
                f"cannot read runner groups: {explain(status, groups_doc, path)}. The group "
                f"with the QNN runners must allow only {repo} and, under Workflow access, only "
                f"{selected}",
            )
        )
        return out + _coverage(wanted, seen, listed_any)
    found = False
    for group in _items(groups_doc, "runner_groups"):
        gid = group.get("id")
        path = f"/orgs/{org}/actions/runner-groups/{gid}/runners?per_page=100"
        status, members = reader.get(path)
        name = f"runner group {group.get('name', gid)}"
        if status != 200:
            out.append(
                Check(name, None, f"cannot list its runners: {explain(status, members, path)}")
            )
            continue
        listed_any = True
        qnn = [r for r in _items(members, "runners") if "qnn" in _labels(r)]
        if not qnn:
            continue
        found = True
        for runner in qnn:
            seen |= _labels(runner)
            out.append(_ephemeral(runner, name, sealed))
        raw_workflows = group.get("selected_workflows")
        workflows = list(raw_workflows) if isinstance(raw_workflows, list) else []
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
    return out + _coverage(wanted, seen, listed_any)


def _coverage(wanted: set[str], seen: set[str], listed_any: bool) -> list[Check]:
    """A runner for every SoC label the config offers: else a command naming it queues a
    job no runner takes."""
    if not listed_any:
        return [
            Check(
                "SoC runners",
                None,
                "no runner list could be read: check by hand that "
                "every SoC in .github/qnn-bot.toml has a runner",
            )
        ]
    missing = sorted(wanted - seen)
    if missing:
        return [
            Check(
                "SoC runners",
                False,
                f"no QNN runner has the label(s) {', '.join(missing)}: remove those SoCs from "
                '.github/qnn-bot.toml (or set replace = ["socs"] so the bundled ones are not '
                "offered), or register a runner for them",
            )
        ]
    return [Check("SoC runners", True, f"a runner for each of {', '.join(sorted(wanted))}")]


def report(checks: Sequence[Check]) -> tuple[str, bool]:
    """The printed report and whether nothing failed."""
    lines = [c.line() for c in checks] + [c.line() for c in MANUAL]
    return "\n".join(lines), not any(c.ok is False for c in checks)
