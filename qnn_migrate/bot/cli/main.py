"""Click entry points ``qnn-migrate bot ...``.

The PR-side commands live here; the runner-side ones (``run-shard``, ``device``,
``device-matrix``) in ``lab``, the scheduled ones in ``nightly`` and the adopter's in
``adopt``, all added to the one ``bot`` group below; ``qnn-migrate matrix`` is ``matrix``.
Exit codes, the error printer and the settings -> gateway -> links wiring are in
``common``. Everything these commands call is pure over the injected gateway.

``pr/`` needs the [bot] extra (markdown-it-py), so each command imports what it uses from
there when it runs: ``--help`` works without the extra (see ``common``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from qnn_migrate.bot import artifacts
from qnn_migrate.bot.artifacts import ArtifactError, parse_shards
from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.cli import adopt, campaign, lab, nightly
from qnn_migrate.bot.cli.common import (
    CATALOG_OPTION,
    EXIT_FAILED,
    EXIT_HEAD_MOVED,
    EXIT_INPUT,
    MAX_EVENT_BYTES,
    GitHubSession,
    collect_results,
    environment,
    fail,
    github_session,
    load_catalog,
    read_shards,
    warn,
)
from qnn_migrate.bot.github.gateway import GatewayError
from qnn_migrate.bot.model import SHA_RE, Baseline, ModelError, RunsOn
from qnn_migrate.bot.nightly import baseline as baseline_mod

if TYPE_CHECKING:
    from qnn_migrate.bot.pr.context import BotContext, Outcome


@click.group()
def bot() -> None:
    """PR-comment commands and device runs of the QNN test matrices.

    \b
    qnn-migrate bot parse < comment.txt        try a comment offline
    qnn-migrate bot on-event --event-name issue_comment --event-path F   handle a webhook event
    qnn-migrate bot check-head --pr N --sha S  refuse a run whose PR head moved
    qnn-migrate bot report --shards-file F --results-dir D   write the results comment
    """


@bot.command("parse")
@CATALOG_OPTION
def parse_cmd(catalog_path: Path | None) -> None:
    """Read a comment body on stdin; print the command as JSON (exit 0) or the error (exit 2).

    A comment with no /qnn line prints `null`.
    """
    from qnn_migrate.bot.pr.commands import parse
    from qnn_migrate.bot.pr.grammar import CommandError

    catalog = load_catalog(catalog_path)
    body = sys.stdin.read()
    try:
        command = parse(body, catalog)
    except CommandError as exc:
        click.echo(str(exc))
        sys.exit(EXIT_INPUT)
    if command is None:
        click.echo("null")
        return
    doc = command.to_dict() | {"canonical": command.canonical()}
    click.echo(json.dumps(doc, indent=1))


def _context(session: GitHubSession, catalog: Catalog) -> BotContext:
    from qnn_migrate.bot.pr.context import BotContext

    return BotContext(
        catalog=catalog,
        bot_login=session.settings.bot_login,
        links=session.links,
        dispatch_ref=session.settings.dispatch_ref,
    )


def _read_event(path: Path) -> dict[str, object]:
    """The webhook payload GitHub wrote for this job (trusted: written by the runner)."""
    try:
        doc = artifacts.read_json(path, "the event payload", MAX_EVENT_BYTES)
    except ArtifactError as exc:
        fail(str(exc), EXIT_INPUT)
    if not isinstance(doc, dict):
        fail(f"{path}: the event payload is not a JSON object", EXIT_INPUT)
    return dict(doc)


def _echo_outcome(outcome: Outcome) -> None:
    doc: dict[str, object] = {
        "action": outcome.action,
        "reason": outcome.reason,
        "sha": outcome.sha,
    }
    if outcome.plan is not None:
        doc["shards"] = len(outcome.plan.shards)
        doc["expected"] = outcome.plan.expected
    if outcome.run is not None:
        doc["run_id"] = outcome.run.run_id
    click.echo(json.dumps(doc))


@bot.command("on-event")
@click.option(
    "--event-name",
    envvar="GITHUB_EVENT_NAME",
    required=True,
    help="The webhook event, one the bot handles (default: $GITHUB_EVENT_NAME).",
)
@click.option(
    "--event-path",
    envvar="GITHUB_EVENT_PATH",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The event payload JSON (default: $GITHUB_EVENT_PATH).",
)
@CATALOG_OPTION
def on_event(event_name: str, event_path: Path, catalog_path: Path | None) -> None:
    """Handle one webhook event: a /qnn comment, or a push/close that makes a run stale.

    Prints what was done as one JSON line. Needs GITHUB_TOKEN (or the QNN_BOT_APP_*
    variables) and GITHUB_REPOSITORY in the environment.
    """
    from qnn_migrate.bot.pr.router import EVENTS

    handler = EVENTS.get(event_name)
    if handler is None:
        fail(
            f"--event-name {event_name!r}: the bot handles {', '.join(EVENTS)}; run it on "
            "those events only (the workflow's `on:`)",
            EXIT_INPUT,
        )
    catalog = load_catalog(catalog_path)
    event = _read_event(event_path)
    session = github_session()
    ctx = _context(session, catalog)
    try:
        outcome = handler(event, session.gateway, ctx)
    except GatewayError as exc:
        fail(str(exc), EXIT_FAILED)
    _echo_outcome(outcome)
    if outcome.action == "interrupted":
        sys.exit(EXIT_FAILED)  # the job fails, so that re-running it is the retry


@bot.command("check-head")
@click.option("--pr", type=int, required=True, help="The PR number (dispatch input `pr`).")
@click.option("--sha", required=True, help="The pinned SHA (dispatch input `sha`).")
@click.option("--comment-id", type=int, default=None, help="Dispatch input `comment_id`.")
@CATALOG_OPTION
def check_head_cmd(pr: int, sha: str, comment_id: int | None, catalog_path: Path | None) -> None:
    """Exit 0 if the PR head is still SHA; else say so on the PR and exit 3."""
    from qnn_migrate.bot.pr.head import check_head

    if not SHA_RE.match(sha):
        fail(f"--sha {sha!r} is not 40 lowercase hex digits", EXIT_INPUT)
    catalog = load_catalog(catalog_path)
    session = github_session()
    try:
        result = check_head(
            session.gateway,
            pr=pr,
            sha=sha,
            comment_id=comment_id,
            catalog=catalog,
            bot_login=session.settings.bot_login,
            links=session.links,
        )
    except GatewayError as exc:
        fail(str(exc), EXIT_FAILED)
    click.echo(result.message)
    if not result.ok:
        sys.exit(EXIT_HEAD_MOVED)


def load_baseline(directory: Path | None) -> Baseline:
    """The nightly baseline (``<SOC>.json`` files); unreadable files are named and left out."""
    if directory is None:
        return Baseline()
    loaded, warnings = baseline_mod.load_model(directory)
    for warning in warnings:
        warn(warning)
    return loaded


@bot.command("report")
@click.option(
    "--shards-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The dispatch input `shards` saved to a file (default: read $QNN_SHARDS).",
)
@click.option(
    "--results-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    required=True,
    help="Downloaded shard artifacts: result.json files, or junit.xml under <shard-id>/.",
)
@click.option(
    "--baseline-dir",
    "baseline_path",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The nightly baselines (<SOC>.json, bot.baseline format); none: all UNCLASSIFIED.",
)
@click.option("--comment-id", type=int, default=None, help="Dispatch input `comment_id`.")
@click.option(
    "--dry-run", is_flag=True, help="Render the comment without GitHub (to stdout or --body-out)."
)
@click.option(
    "--body-out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --dry-run: write the comment body here.",
)
@CATALOG_OPTION
def report_cmd(
    shards_file: Path | None,
    results_dir: Path,
    baseline_path: Path | None,
    comment_id: int | None,
    dry_run: bool,
    body_out: Path | None,
    catalog_path: Path | None,
) -> None:
    """Write the run's results to its PR comment and set the commit status on the pinned SHA.

    With --dry-run nothing is read from or written to GitHub: the comment is rendered as a
    first report of the run would be, and the summary printed as JSON on stderr.
    """
    from qnn_migrate.bot.pr import report as report_mod

    if body_out is not None and not body_out.parent.is_dir():
        fail(f"{body_out}: the folder {body_out.parent} does not exist; create it first")
    catalog = load_catalog(catalog_path)
    text = environment().get("QNN_SHARDS", "")
    if shards_file is None and not text:
        fail("no shards: pass --shards-file or set QNN_SHARDS", EXIT_INPUT)
    try:
        every = read_shards(shards_file) if shards_file else parse_shards(text, "$QNN_SHARDS")
        run = report_mod.RunShards.of(every, str(shards_file or "$QNN_SHARDS"))
    except (ArtifactError, report_mod.ReportInputError) as exc:
        fail(str(exc), EXIT_INPUT)
    baseline = load_baseline(baseline_path)
    collected = collect_results(results_dir, run.every)
    gathered = report_mod.gather(run, collected, results_dir, baseline_path)
    for warning in gathered.warnings:
        click.echo(f"warning: {warning}", err=True)
    if dry_run:
        env = environment()
        repo_url = f"{env.get('GITHUB_SERVER_URL', 'https://github.com')}/" + env.get(
            "GITHUB_REPOSITORY", "OWNER/REPO"
        )
        summary, body = report_mod.render_run_offline(run, gathered, baseline, catalog, repo_url)
        if body_out is not None:
            try:
                body_out.write_text(body, encoding="utf-8")
            except OSError as exc:
                fail(f"{body_out}: cannot write the comment body: {exc.strerror or exc}")
        else:
            click.echo(body, nl=False)
        click.echo(
            json.dumps({"state": summary.state, "ran": summary.ran, "expected": summary.expected}),
            err=True,
        )
        return
    session = github_session()
    try:
        outcome = report_mod.report_run(
            session.gateway,
            run,
            gathered,
            baseline=baseline,
            catalog=catalog,
            bot_login=session.settings.bot_login,
            links=session.links,
            comment_id=comment_id,
        )
    except GatewayError as exc:
        fail(str(exc), EXIT_FAILED)
    click.echo(
        json.dumps(
            {
                "state": outcome.summary.state,
                "ran": outcome.summary.ran,
                "expected": outcome.summary.expected,
                "comment_id": outcome.comment_id,
                "edited": outcome.edited,
                "created": outcome.created,
                "superseded": outcome.superseded,
            }
        )
    )


@bot.command("plan")
@click.option("--matrix", "matrices", multiple=True, help="A matrix name (repeatable).")
@click.option("--soc", "socs", multiple=True, help="A SoC (repeatable; default: [defaults]).")
@click.option("--nightly", is_flag=True, help="The [nightly] matrices on the [nightly] SoCs.")
@click.option("--sha", required=True, help="The commit to test (40 hex digits).")
@click.option("--pr", type=int, default=None)
@click.option("--backend", default=None)
@click.option("--seed", type=int, default=None)
@click.option("--sim", is_flag=True, help="Shards for the x86 simulator tier, not phones.")
@CATALOG_OPTION
def plan_cmd(
    matrices: tuple[str, ...],
    socs: tuple[str, ...],
    nightly: bool,
    sha: str,
    pr: int | None,
    backend: str | None,
    seed: int | None,
    sim: bool,
    catalog_path: Path | None,
) -> None:
    """Print the shard list JSON (the `shards` input) for matrices x SoCs, e.g. the nightly run.

    No comment caps apply; names are still checked against the catalog.
    """
    from qnn_migrate.bot.pr.plan import PlanError, PlanRequest, Selection, plan

    catalog = load_catalog(catalog_path)
    names = list(catalog.nightly_matrices if nightly else matrices)
    chosen = list(catalog.nightly_socs if nightly else socs) or list(catalog.defaults.socs)
    unknown = [m for m in names if m not in catalog.matrices]
    unknown += [s for s in chosen if s not in catalog.socs]
    if unknown or not names:
        fail(f"unknown or missing names: {', '.join(unknown) or 'no --matrix'}", EXIT_INPUT)
    selections = [Selection(m, catalog.matrices[m].tests) for m in names]
    try:
        request = PlanRequest(
            {s: selections for s in chosen},
            backend=backend or catalog.defaults.backend,
            seed=catalog.defaults.seed if seed is None else seed,
            sha=sha,
            pr=pr,
            runs_on=RunsOn.SIMULATOR if sim else RunsOn.PHONE,
        )
        the_plan = plan(request, catalog=catalog)
    except (ModelError, PlanError) as exc:
        fail(str(exc), EXIT_INPUT)
    click.echo(the_plan.to_json())


bot.add_command(lab.run_shard)
bot.add_command(lab.device)
bot.add_command(lab.host)
bot.add_command(lab.device_matrix)
bot.add_command(nightly.nightly_group)
bot.add_command(adopt.gate)
bot.add_command(adopt.doctor)
bot.add_command(campaign.campaign_group)
