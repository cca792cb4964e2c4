"""Commands for a repository that adopts the bot: ``qnn-migrate bot gate`` and ``bot doctor``.

``gate`` routes an ``issue_comment`` to a concurrency lane of the command workflow
(``bot.pr.lanes``: those who may start runs, the PR's author, the unsure, everyone else),
so that no one can drop a pending command that may matter by commenting. It only routes:
on any doubt it picks a kept lane, it never fails, and the bot authorizes again.

``doctor`` checks the adoption files in the working directory and, with a token, the
repository's and organization's settings through the REST API; it prints what must be
checked by hand. Exit 1 when a check failed.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import click

from qnn_migrate.bot import artifacts
from qnn_migrate.bot import doctor as doctor_mod
from qnn_migrate.bot.artifacts import ArtifactError
from qnn_migrate.bot.cli.common import (
    EXIT_FAILED,
    MAX_EVENT_BYTES,
    environment,
    github_session,
    load_catalog,
)


@click.command("gate")
@click.option(
    "--event-path",
    type=click.Path(path_type=Path),  # any path: what cannot be read is routed, not refused
    envvar="GITHUB_EVENT_PATH",
    required=True,
    help="The issue_comment event payload (default: $GITHUB_EVENT_PATH).",
)
@click.option("--catalog", "catalog_path", type=click.Path(dir_okay=False, path_type=Path))
def gate(event_path: Path, catalog_path: Path | None) -> None:
    """Print `lane=runs|author|unsure|others`: the command workflow's lane (never fails).

    Only `others` is a lane where a later comment can drop a pending command; see
    `qnn_migrate.bot.pr.lanes`.
    """
    from qnn_migrate.bot.pr import lanes

    event: object = None
    try:
        event = artifacts.read_json(event_path, "the event payload", MAX_EVENT_BYTES)
    except ArtifactError as exc:
        click.echo(f"gate: {exc}; the command goes to a kept lane", err=True)
    gw, policy = None, None
    if lanes.commenter_and_author(event)[0] is not None:
        try:
            policy = load_catalog(catalog_path).policy
            gw = github_session().gateway
        except (SystemExit, OSError, ValueError) as exc:
            click.echo(f"gate: cannot ask the permission API ({exc})", err=True)
    routed = lanes.route(event, gw, policy)
    click.echo(f"gate: {routed.why}", err=True)
    click.echo(f"lane={routed.lane.value}")


class HttpReader:
    """GET on GitHub's REST API with a token (read-only; the doctor changes nothing).

    The standard library's urllib: a handful of GETs in a command run by hand need no
    retries, and the gateway (bot/github) offers no read of arbitrary settings paths.
    """

    MAX_BYTES = 4 * 1024 * 1024

    def __init__(self, api_url: str, token: str | None) -> None:
        self.api_url = api_url.rstrip("/")
        self.headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "qnn-migrate-doctor",
        }
        if token:
            self.headers["Authorization"] = f"Bearer {token}"

    def get(self, path: str) -> tuple[int, Any]:
        request = urllib.request.Request(self.api_url + path, headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                status, data = reply.status, reply.read(self.MAX_BYTES)
        except urllib.error.HTTPError as exc:
            status, data = exc.code, exc.read(self.MAX_BYTES)
        except (urllib.error.URLError, OSError) as exc:
            return 0, {"message": str(exc)}
        try:
            return status, json.loads(data)
        except ValueError:
            return status, None


@click.command("doctor")
@click.option(
    "--repo",
    default=None,
    help="owner/name to check through the API (default: $GITHUB_REPOSITORY; none: files only).",
)
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The adopting repository's checkout.",
)
@click.option(
    "--bot-repo",
    default=doctor_mod.BOT_REPO,
    show_default=True,
    help="owner/name of the qnn-migrate repository your workflows may call.",
)
@click.option(
    "--host-config",
    "host_config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="On a runner host: its host config; the host's job users and seal are checked, and "
    "its long-lived runners (github_runners) pass only if they hold.",
)
def doctor(repo: str | None, root: Path, bot_repo: str, host_config_path: Path | None) -> None:
    """Check this repository's adoption of the bot; list what must be checked by hand.

    Uses $GITHUB_TOKEN (or $GH_TOKEN) for the API checks; an admin token sees the most.
    """
    env = environment()
    checks, catalog = doctor_mod.local_checks(root, bot_repo)
    sealed: dict[str, bool] = {}
    if host_config_path is not None:
        from qnn_migrate.bot.lab import host_config

        try:
            config = host_config.loads(
                artifacts.read_text(host_config_path, "the host config"), str(host_config_path)
            )
        except (ArtifactError, host_config.HostConfigError) as exc:
            raise click.ClickException(str(exc)) from None
        found, sealed = doctor_mod.host_checks(config, host_config_path)
        checks += found
    repo = repo or env.get("GITHUB_REPOSITORY")
    if repo and catalog is not None:
        labels = [soc.runner_labels[-1] for soc in catalog.socs.values() if soc.in_lab]
        if catalog.simulator is not None and catalog.simulator.runner_labels:
            labels.append(catalog.simulator.runner_labels[-1])
        reader = HttpReader(
            env.get("GITHUB_API_URL", "https://api.github.com"),
            env.get("GITHUB_TOKEN") or env.get("GH_TOKEN"),
        )
        checks += doctor_mod.remote_checks(
            reader,
            repo,
            device_workflow=catalog.policy.device_workflow,
            lab_labels=labels,
            sealed=sealed,
        )
    elif not repo:
        checks.append(
            doctor_mod.Check("settings", None, "no --repo: the repository settings were not read")
        )
    text, ok = doctor_mod.report(checks)
    click.echo(text)
    if not ok:
        raise SystemExit(EXIT_FAILED)
