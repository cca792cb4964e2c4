"""``qnn-migrate bot campaign``: the migration campaign's commands (``run``, ``prove``, ``summary``).

``run`` rewrites a checkout of the default branch in memory and opens, updates, stops or
closes the campaign's one PR through the API (``bot/campaign/run.py``); ``--dry-run``
prints every REST call instead of writing. ``prove`` dispatches the matrices the PR's
files select with ``--compare base`` (``bot/campaign/proof.py``). ``summary`` merges the
results of an organization's run over many repositories into one table. Each prints its
result as one JSON line on stdout; ``run`` and ``prove`` exit 1 when GitHub failed or the
proof could not be dispatched, 2 on bad input.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, NoReturn

import click

from qnn_migrate.bot import artifacts
from qnn_migrate.bot.artifacts import ArtifactError
from qnn_migrate.bot.campaign.run import DEFAULT_BRANCH, TIERS
from qnn_migrate.bot.cli.common import (
    CATALOG_OPTION,
    EXIT_FAILED,
    EXIT_INPUT,
    GitHubSession,
    environment,
    fail,
    load_catalog,
)
from qnn_migrate.bot.github.settings import Settings, SettingsError
from qnn_migrate.bot.model import SHA_RE
from qnn_migrate.codemods.deprecations import DEFAULT_FLOW, FLOWS, target_names

MAX_RESULT_BYTES = 64 * 1024  # a result file of one repository


def _emit(doc: dict[str, Any], json_out: Path | None) -> None:
    text = json.dumps(doc, sort_keys=True)
    click.echo(text)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(text + "\n", encoding="utf-8")


def _session(repo: str | None) -> GitHubSession:
    """``common.github_session`` for ``repo`` (default $GITHUB_REPOSITORY).

    An organization's workflow runs the campaign on other repositories than its own, and
    Actions does not let a step override $GITHUB_REPOSITORY: ``--repo`` names the one to
    work on, while the links to this workflow run keep naming the repository it runs in."""
    from qnn_migrate.bot.github.client import gateway_for
    from qnn_migrate.bot.pr.render import Links

    env = environment()
    home = env.get("GITHUB_REPOSITORY", "")
    try:
        settings = Settings.from_env(env | ({"GITHUB_REPOSITORY": repo} if repo else {}))
    except SettingsError as exc:
        fail(str(exc), EXIT_FAILED)
    if repo and settings.run_id is not None and home:
        run_url = f"{settings.server_url}/{home}/actions/runs/{settings.run_id}"
        settings = dataclasses.replace(settings, run_url=run_url)
    return GitHubSession(
        settings, gateway_for(settings), Links(settings.repo_url, settings.run_url)
    )


REPO_OPTION = click.option(
    "--repo",
    default=None,
    metavar="OWNER/NAME",
    help="The repository to work on [default: $GITHUB_REPOSITORY] (an organization's "
    "workflow names each of its repositories).",
)


def _outputs(values: dict[str, str]) -> None:
    """``key=value`` lines for the job's outputs, when the step has a $GITHUB_OUTPUT."""
    path = environment().get("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            for key, value in values.items():
                handle.write(f"{key}={value}\n")


BRANCH_OPTION = click.option(
    "--branch",
    default=DEFAULT_BRANCH,
    show_default=True,
    help="The campaign's branch (its PR's head).",
)
TIER_OPTION = click.option(
    "--tier",
    type=click.Choice(TIERS),
    default="simulator",
    show_default=True,
    help="Where the proof runs: the x86 simulator against the merge base (--compare base), "
    "or the lab's phones against main's nightly.",
)
MATRIX_OPTION = click.option(
    "--matrix",
    "matrices",
    multiple=True,
    metavar="NAME",
    help="A matrix for the proof to run (repeatable); default: auto, the matrices whose "
    "guards the rewritten files match.",
)


@click.group("campaign")
def campaign_group() -> None:
    """The migration campaign: one PR per repository that rewrites its default branch.

    \b
    qnn-migrate bot campaign run --base-sha SHA [--dry-run]   open, update or close the PR
    qnn-migrate bot campaign prove --pr N --sha SHA           the --compare base proof
    qnn-migrate bot campaign summary RESULTS...               the organization's table
    """


@campaign_group.command("run")
@click.option(
    "--checkout",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="A checkout of the default branch at --base-sha (it needs no credentials: the "
    "campaign writes through the API).",
)
@click.option(
    "--base-sha",
    required=True,
    help="The commit the checkout holds (in a workflow: $GITHUB_SHA); the campaign's commit "
    "goes on top of it.",
)
@click.option(
    "--path",
    "paths",
    multiple=True,
    metavar="PATH",
    help="What to rewrite, relative to the checkout (repeatable) [default: .].",
)
@click.option(
    "--target",
    type=click.Choice(target_names()),
    default=None,
    help="How the replacement is written [default: target of [tool.qnn-migrate], else the "
    "default target].",
)
@click.option("--flow", type=click.Choice(FLOWS), default=DEFAULT_FLOW, show_default=True)
@click.option(
    "--jobs",
    type=click.IntRange(min=0),
    default=None,
    help="Worker processes [default: jobs of [tool.qnn-migrate], else one per CPU].",
)
@BRANCH_OPTION
@TIER_OPTION
@MATRIX_OPTION
@click.option(
    "--ref",
    default=None,
    help="The ref the workflow runs on ($GITHUB_REF); refused unless it is the default "
    "branch: the campaign runs from the default branch only.",
)
@REPO_OPTION
@click.option("--dry-run", is_flag=True, help="Print every API call; send no write.")
@click.option(
    "--json-out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the result here (the organization's summary reads it).",
)
def run_cmd(
    checkout: Path,
    base_sha: str,
    paths: tuple[str, ...],
    target: str | None,
    flow: str,
    jobs: int | None,
    branch: str,
    tier: str,
    matrices: tuple[str, ...],
    ref: str | None,
    repo: str | None,
    dry_run: bool,
    json_out: Path | None,
) -> None:
    """Rewrite the default branch; open, update, stop on or close the campaign's PR.

    Prints the result as JSON: state (opened, updated, unchanged, merged, nothing to do,
    failed), the PR, and `prove` (true when a new commit wants its proof run).
    """
    from qnn_migrate.bot.campaign.dry_run import DryRunGateway
    from qnn_migrate.bot.campaign.run import (
        CampaignError,
        CampaignSettings,
        run_campaign,
    )
    from qnn_migrate.bot.campaign.tree import TreeError, TreeOptions, rewrite_checkout
    from qnn_migrate.bot.github.gateway import CampaignGateway, GatewayError

    session = _session(repo)
    repository = session.settings.repository

    def failed(reason: str, code: int) -> NoReturn:
        _emit(
            {
                "schema": 1,
                "kind": "campaign",
                "repository": repository,
                "state": "failed",
                "action": "nothing",
                "reason": reason,
                "base": base_sha,
                "pr": None,
                "url": None,
                "commit": None,
                "prove": False,
            },
            json_out,
        )
        fail(reason, code)

    if not SHA_RE.match(base_sha):
        failed(f"--base-sha {base_sha[:60]!r} is not a full 40-hex commit SHA", EXIT_INPUT)
    try:
        settings = CampaignSettings(
            bot_login=session.settings.bot_login,
            repo_url=session.settings.repo_url,
            branch=branch,
            tier=tier,
            matrices=matrices,
        )
        rewrite = rewrite_checkout(checkout, TreeOptions(paths or (".",), target, flow, jobs))
    except (CampaignError, TreeError) as exc:
        failed(str(exc), EXIT_INPUT)
    gateway: CampaignGateway = session.gateway
    if dry_run:
        gateway = DryRunGateway(session.gateway, lambda line: click.echo(line, err=True))
    try:
        if ref is not None:
            default = gateway.default_branch()
            if ref != f"refs/heads/{default}":
                failed(
                    f"the campaign runs from the default branch only ({default}), not {ref}: "
                    "dispatch the workflow on the default branch",
                    EXIT_INPUT,
                )
        result = run_campaign(gateway, rewrite, base=base_sha, settings=settings)
    except (GatewayError, CampaignError) as exc:
        failed(str(exc), EXIT_FAILED)
    finally:
        session.gateway.close()
    _emit(result.to_dict(), json_out)
    if not dry_run:
        _outputs(
            {
                "state": result.state.value,
                "prove": "true" if result.prove else "false",
                "pr": str(result.pr or ""),
                "sha": result.commit or "",
            }
        )


@campaign_group.command("prove")
@click.option("--pr", type=int, required=True, help="The campaign's PR.")
@click.option("--sha", required=True, help="The campaign's commit (`run`'s output).")
@BRANCH_OPTION
@TIER_OPTION
@MATRIX_OPTION
@CATALOG_OPTION
@REPO_OPTION
@click.option("--json-out", type=click.Path(dir_okay=False, path_type=Path), default=None)
def prove_cmd(
    pr: int,
    sha: str,
    branch: str,
    tier: str,
    matrices: tuple[str, ...],
    catalog_path: Path | None,
    repo: str | None,
    json_out: Path | None,
) -> None:
    """Dispatch the proof: the matrices the PR's files select, with --compare base.

    Only on the campaign's own PR at the campaign's own commit; the dispatch is a
    maintainer's `/qnn test ... --sha SHA`, through the same checks. Exit 1 when GitHub
    refused to start the device workflow.
    """
    from qnn_migrate.bot.campaign.proof import ProofResult, context, prove
    from qnn_migrate.bot.campaign.run import CampaignError, CampaignSettings, proof_command
    from qnn_migrate.bot.github.gateway import GatewayError

    if not SHA_RE.match(sha):
        fail(f"--sha {sha[:60]!r} is not a full 40-hex commit SHA", EXIT_INPUT)
    catalog = load_catalog(catalog_path)
    session = _session(repo)
    try:
        settings = CampaignSettings(
            bot_login=session.settings.bot_login,
            repo_url=session.settings.repo_url,
            branch=branch,
            tier=tier,
            matrices=matrices,
        )
    except CampaignError as exc:
        fail(str(exc), EXIT_INPUT)
    ctx = context(catalog, session.settings, session.links)
    command_line = proof_command(settings, sha)
    try:
        result = prove(
            session.gateway, ctx, pr=pr, sha=sha, branch=branch, command_line=command_line
        )
    except GatewayError as exc:
        result = ProofResult(
            session.settings.repository, pr, "failed", f"GitHub's API failed: {exc}", command_line
        )
    finally:
        session.gateway.close()
    _emit(result.to_dict(), json_out)
    if result.action == "failed":
        raise SystemExit(EXIT_FAILED)


@campaign_group.command("summary")
@click.argument(
    "results", nargs=-1, type=click.Path(exists=True, path_type=Path), metavar="RESULT..."
)
@click.option(
    "--expect-json",
    default="[]",
    help='The repositories the run covered, as a JSON list (["owner/a", "owner/b"]): one '
    "with no result is a failed row.",
)
@click.option("--strict", is_flag=True, help="Exit 1 when a repository failed.")
def summary_cmd(results: tuple[Path, ...], expect_json: str, strict: bool) -> None:
    """Merge campaign.json and proof.json files (or folders of them) into one markdown table.

    Print it on stdout, for the job summary ($GITHUB_STEP_SUMMARY).
    """
    from qnn_migrate.bot.campaign import summary

    try:
        expected = json.loads(expect_json)
    except ValueError:
        fail("--expect-json must be a JSON list of owner/name strings", EXIT_INPUT)
    if not isinstance(expected, list) or not all(
        isinstance(r, str) and summary.REPO_RE.match(r) for r in expected
    ):
        fail("--expect-json must be a JSON list of owner/name strings", EXIT_INPUT)
    files: list[Path] = []
    for given in results:
        if given.is_dir():
            files += sorted(
                p for p in given.rglob("*.json") if p.name in ("campaign.json", "proof.json")
            )
        else:
            files.append(given)
    docs = []
    for path in files:
        try:
            docs.append(
                (str(path), artifacts.read_json(path, "a campaign result", MAX_RESULT_BYTES))
            )
        except ArtifactError as exc:
            fail(str(exc), EXIT_INPUT)
    try:
        rows = summary.merge(docs, expected)
    except summary.SummaryError as exc:
        fail(str(exc), EXIT_INPUT)
    click.echo(summary.render(rows), nl=False)
    if strict and summary.failed(rows):
        raise SystemExit(EXIT_FAILED)
