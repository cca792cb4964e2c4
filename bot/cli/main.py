"""Click entry points ``qnn-migrate bot ...`` and ``qnn-migrate matrix ...``: the bot's only I/O.

This is the one module that reads ``os.environ`` (through ``Settings.from_env``), builds
the real PyGithub client, reads event and result files, and prints. Everything it calls
is pure over the injected gateway. Exit codes: 0 done (including "nothing to do"),
1 GitHub or settings failure, 2 bad input (a command that does not parse, a malformed
file), 3 the PR head moved (``check-head``).

Runner-side commands (``run-shard`` and friends, in ``bot/device_cli.py``) are added to
the ``bot`` group lazily through ``EXTERNAL_COMMANDS`` at the bottom of this file.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import click

from qnn_migrate.bot import catalog as catalog_mod
from qnn_migrate.bot.catalog import Catalog, CatalogError
from qnn_migrate.bot.model import Baseline, ModelError, Shard, ShardResult
from qnn_migrate.bot.pr.commands import CommandError, parse

EXIT_FAILED = 1
EXIT_INPUT = 2
EXIT_HEAD_MOVED = 3

# The hook for other parts of bot/ (the runner side, issue 5): name -> "module:attribute"
# of a click command. Add one line per command; it is imported only when run, and listed
# only if its module exists, so `qnn-migrate bot parse` never imports the runner.
EXTERNAL_COMMANDS: dict[str, str] = {
    "run-shard": "qnn_migrate.bot.cli.lab:run_shard",
}


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def _catalog(path: Path | None) -> Catalog:
    try:
        return catalog_mod.load(path)
    except CatalogError as exc:
        _fail(str(exc), EXIT_INPUT)


class _BotGroup(click.Group):
    """The ``bot`` group: its own commands plus EXTERNAL_COMMANDS, imported on first use."""

    def _external(self) -> dict[str, str]:
        out = {}
        for name, target in EXTERNAL_COMMANDS.items():
            module = target.split(":")[0]
            if importlib.util.find_spec(module) is not None:
                out[name] = target
        return out

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._external()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        own = super().get_command(ctx, cmd_name)
        if own is not None:
            return own
        target = self._external().get(cmd_name)
        if target is None:
            return None
        module, attr = target.split(":")
        command = getattr(importlib.import_module(module), attr, None)
        return command if isinstance(command, click.Command) else None


CATALOG_OPTION = click.option(
    "--catalog",
    "catalog_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The matrices data file (default: bot/matrices.toml).",
)


@click.group(cls=_BotGroup)
def bot() -> None:
    """PR-comment commands and device runs of the QNN test matrices.

    \b
    qnn-migrate bot parse < comment.txt        try a comment offline
    qnn-migrate bot on-comment --event-path F  handle an issue_comment event (workflow)
    qnn-migrate bot check-head --pr N --sha S  refuse a run whose PR head moved
    qnn-migrate bot report --shards-file F --results-dir D   write the results comment
    """


@bot.command("parse")
@CATALOG_OPTION
def parse_cmd(catalog_path: Path | None) -> None:
    """Read a comment body on stdin; print the command as JSON (exit 0) or the error (exit 2).

    A comment with no /qnn line prints `null`.
    """
    catalog = _catalog(catalog_path)
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


def _settings() -> Any:
    from qnn_migrate.bot.github.settings import Settings, SettingsError

    try:
        return Settings.from_env(os.environ)
    except SettingsError as exc:
        _fail(str(exc), EXIT_FAILED)


def _gateway(settings: Any) -> Any:
    from qnn_migrate.bot.github.client import PyGithubGateway, make_client

    return PyGithubGateway(make_client(settings), settings.repository)


def _context(settings: Any, catalog: Catalog) -> Any:
    from qnn_migrate.bot.pr.dispatch import BotContext
    from qnn_migrate.bot.pr.render import Links

    return BotContext(
        catalog=catalog,
        bot_login=settings.bot_login,
        links=Links(settings.repo_url, settings.run_url),
        dispatch_ref=settings.dispatch_ref,
    )


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        _fail(f"{path}: cannot read {what}: {exc}", EXIT_INPUT)


def _echo_outcome(outcome: Any) -> None:
    doc = {"action": outcome.action, "reason": outcome.reason, "sha": outcome.sha}
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
    type=click.Choice(["issue_comment", "pull_request", "pull_request_target"]),
    help="The webhook event (default: $GITHUB_EVENT_NAME).",
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
    from qnn_migrate.bot.github.gateway import GatewayError
    from qnn_migrate.bot.pr.dispatch import handle_comment_event
    from qnn_migrate.bot.pr.events import handle_pull_request_event

    catalog = _catalog(catalog_path)
    event = _read_json(event_path, "the event payload")
    settings = _settings()
    gw = _gateway(settings)
    ctx = _context(settings, catalog)
    try:
        if event_name == "issue_comment":
            outcome = handle_comment_event(event, gw, ctx)
        else:
            outcome = handle_pull_request_event(event, gw, ctx)
    except GatewayError as exc:
        _fail(str(exc), EXIT_FAILED)
    _echo_outcome(outcome)


@bot.command("on-comment")
@click.option(
    "--event-path",
    envvar="GITHUB_EVENT_PATH",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The issue_comment payload JSON (default: $GITHUB_EVENT_PATH).",
)
@CATALOG_OPTION
@click.pass_context
def on_comment(ctx: click.Context, event_path: Path, catalog_path: Path | None) -> None:
    """Handle an issue_comment event: parse, authorize, pin the head SHA, dispatch."""
    ctx.invoke(
        on_event, event_name="issue_comment", event_path=event_path, catalog_path=catalog_path
    )


@bot.command("check-head")
@click.option("--pr", type=int, required=True, help="The PR number (dispatch input `pr`).")
@click.option("--sha", required=True, help="The pinned SHA (dispatch input `sha`).")
@click.option("--comment-id", type=int, default=None, help="Dispatch input `comment_id`.")
@CATALOG_OPTION
def check_head_cmd(pr: int, sha: str, comment_id: int | None, catalog_path: Path | None) -> None:
    """Exit 0 if the PR head is still SHA; else say so on the PR and exit 3."""
    from qnn_migrate.bot.github.gateway import GatewayError
    from qnn_migrate.bot.model import SHA_RE
    from qnn_migrate.bot.pr.head import check_head
    from qnn_migrate.bot.pr.render import Links

    if not SHA_RE.match(sha):
        _fail(f"--sha {sha!r} is not 40 lowercase hex digits", EXIT_INPUT)
    catalog = _catalog(catalog_path)
    settings = _settings()
    try:
        result = check_head(
            _gateway(settings),
            pr=pr,
            sha=sha,
            comment_id=comment_id,
            catalog=catalog,
            bot_login=settings.bot_login,
            links=Links(settings.repo_url, settings.run_url),
        )
    except GatewayError as exc:
        _fail(str(exc), EXIT_FAILED)
    click.echo(result.message)
    if not result.ok:
        sys.exit(EXIT_HEAD_MOVED)


def load_planned(text: str) -> list[Shard]:
    """Shards from the dispatch input: ``[{"shard": ..., "runs_on": [...]}]`` or bare shards."""
    from qnn_migrate.bot.pr.plan import Plan

    doc = json.loads(text)
    if isinstance(doc, list) and doc and isinstance(doc[0], Mapping) and "runs_on" in doc[0]:
        return [p.shard for p in Plan.from_json(text).shards]
    if not isinstance(doc, list):
        raise ModelError("shards must be a JSON list")
    return [Shard.from_dict(d) for d in doc]


def load_results(results_dir: Path, planned: list[Shard]) -> list[ShardResult]:
    """Every ``result.json`` (a ShardResult) under ``results_dir``; for a planned shard with
    none, its ``junit.xml`` (under a directory named after the shard id) read by
    ``bot.results``. Unreadable files are skipped with a warning: the shard then counts
    as INFRA in the report, never as passed.
    """
    found: dict[str, ShardResult] = {}
    for path in sorted(results_dir.rglob("*.json")):
        try:
            doc = json.loads(path.read_text("utf-8"))
            if isinstance(doc, dict) and "shard" in doc and "results" in doc:
                result = ShardResult.from_dict(doc)
                found.setdefault(result.shard.id, result)
        except (OSError, ValueError) as exc:
            click.echo(f"warning: {path}: ignored: {exc}", err=True)
    missing = [s for s in planned if s.id not in found]
    if missing:
        from qnn_migrate.bot.lab import results as junit

        for shard in missing:
            for xml in sorted(results_dir.rglob("junit.xml")):
                if shard.id not in xml.relative_to(results_dir).parts[:-1]:
                    continue
                try:
                    found[shard.id] = junit.build(shard, junit.parse_junit(xml.read_bytes()))
                    break
                except (OSError, ValueError) as exc:
                    click.echo(f"warning: {xml}: ignored: {exc}", err=True)
    return list(found.values())


def load_baseline(directory: Path | None) -> Baseline:
    """The nightly baseline (``<SOC>.json`` files), read by the runner side's ``bot.baseline``."""
    if directory is None:
        return Baseline()
    baseline_mod: Any = importlib.import_module("qnn_migrate.bot.nightly.baseline")
    loaded, warnings = baseline_mod.load_model(directory)
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    if not isinstance(loaded, Baseline):
        raise ModelError(f"{directory}: bot.baseline.load_model did not return a Baseline")
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
@CATALOG_OPTION
def report_cmd(
    shards_file: Path | None,
    results_dir: Path,
    baseline_path: Path | None,
    comment_id: int | None,
    catalog_path: Path | None,
) -> None:
    """Write the run's results to its PR comment and set the commit status on the pinned SHA."""
    from qnn_migrate.bot.github.gateway import GatewayError
    from qnn_migrate.bot.pr.render import Links
    from qnn_migrate.bot.pr.report import report

    catalog = _catalog(catalog_path)
    text = shards_file.read_text("utf-8") if shards_file else os.environ.get("QNN_SHARDS", "")
    if not text:
        _fail("no shards: pass --shards-file or set QNN_SHARDS", EXIT_INPUT)
    try:
        planned = load_planned(text)
        baseline = load_baseline(baseline_path)
    except (ValueError, OSError) as exc:
        _fail(str(exc), EXIT_INPUT)
    results = load_results(results_dir, planned)
    settings = _settings()
    try:
        outcome = report(
            _gateway(settings),
            planned=planned,
            results=results,
            baseline=baseline,
            catalog=catalog,
            bot_login=settings.bot_login,
            links=Links(settings.repo_url, settings.run_url),
            comment_id=comment_id,
        )
    except GatewayError as exc:
        _fail(str(exc), EXIT_FAILED)
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
@CATALOG_OPTION
def plan_cmd(
    matrices: tuple[str, ...],
    socs: tuple[str, ...],
    nightly: bool,
    sha: str,
    pr: int | None,
    backend: str | None,
    seed: int | None,
    catalog_path: Path | None,
) -> None:
    """Print the shard list JSON (the `shards` input) for matrices x SoCs, e.g. the nightly run.

    No comment caps apply; names are still checked against the catalog.
    """
    from qnn_migrate.bot.pr.plan import Selection, plan

    catalog = _catalog(catalog_path)
    names = list(catalog.nightly_matrices if nightly else matrices)
    chosen = list(catalog.nightly_socs if nightly else socs) or list(catalog.defaults.socs)
    unknown = [m for m in names if m not in catalog.matrices]
    unknown += [s for s in chosen if s not in catalog.socs]
    if unknown or not names:
        _fail(f"unknown or missing names: {', '.join(unknown) or 'no --matrix'}", EXIT_INPUT)
    selections = [Selection(m, catalog.matrices[m].tests) for m in names]
    try:
        the_plan = plan(
            {s: selections for s in chosen},
            catalog=catalog,
            backend=backend or catalog.defaults.backend,
            seed=catalog.defaults.seed if seed is None else seed,
            sha=sha,
            pr=pr,
        )
    except ModelError as exc:
        _fail(str(exc), EXIT_INPUT)
    click.echo(the_plan.to_json())


# ----------------------------------------------------------------------------- matrix


@click.group()
def matrix() -> None:
    """List and show the QNN test matrices, SoCs and backends (bot/matrices.toml)."""


@matrix.command("list")
@CATALOG_OPTION
def matrix_list(catalog_path: Path | None) -> None:
    """Every matrix, SoC and backend, and the defaults of /qnn test."""
    c = _catalog(catalog_path)
    reg = c.registry
    click.echo(
        f"Matrices ({c.source}; registry: {reg.package} {reg.version}, {len(c.test_ids)} tests):"
    )
    width = max(len(m) for m in c.matrices)
    for m in c.matrices.values():
        click.echo(f"  {m.name:<{width}}  {len(m.tests):>3} tests  {m.description}")
    click.echo("\nSoCs (backends; runner labels):")
    for soc in c.socs.values():
        labels = ", ".join(soc.runner_labels) if soc.in_lab else "no phone in the lab"
        click.echo(f"  {soc.name:<9} {','.join(soc.backends):<13} {labels}")
    click.echo("\nBackends: " + ", ".join(f"{b} ({d})" for b, d in c.backends.items()))
    d = c.defaults
    click.echo(f"Defaults: --soc {','.join(d.socs)} --backend {d.backend} --seed {d.seed}")


@matrix.command("show")
@click.argument("name")
@CATALOG_OPTION
def matrix_show(name: str, catalog_path: Path | None) -> None:
    """One matrix: its tests, guarded paths and the device command line (or one SoC)."""
    c = _catalog(catalog_path)
    if name.upper() in c.socs:
        soc = c.socs[name.upper()]
        click.echo(f"{soc.name}: backends {', '.join(soc.backends)}")
        click.echo("runner labels: " + (", ".join(soc.runner_labels) or "none (no phone)"))
        return
    if name not in c.matrices:
        hints = catalog_mod.close_matches(name, list(c.matrices) + list(c.socs))
        hint = f"; did you mean {', '.join(hints)}?" if hints else ""
        _fail(f"no matrix or SoC named {name!r}{hint} (see `qnn-migrate matrix list`)", EXIT_INPUT)
    m = c.matrices[name]
    click.echo(f"{m.name}: {m.description}")
    if m.origin:
        click.echo(f"origin: {m.origin}")
    click.echo("guards: " + (", ".join(m.guards) or "(none)"))
    click.echo(f"tests ({len(m.tests)}):")
    for t in m.tests:
        click.echo(f"  {t}")
    argv = c.command_argv(
        ["${TEST_MATRIX}"],
        soc="${SOC_ID}",
        backend=c.defaults.backend,
        seed=c.defaults.seed,
        host="${HOST_NAME}",
        device="${DEVICE_ID}",
    )
    click.echo("command: " + " ".join(argv))


@matrix.command("check")
@CATALOG_OPTION
def matrix_check(catalog_path: Path | None) -> None:
    """Validate the data file against the registry; exit 2 naming every problem."""
    c = _catalog(catalog_path)
    click.echo(
        f"ok: {len(c.matrices)} matrices, {len(c.socs)} SoCs ({len(c.lab_socs)} in the lab), "
        f"{len(c.backends)} backends, registry {c.registry.package} {c.registry.version}"
    )


@matrix.command("registry")
@click.option(
    "--from",
    "source",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="ExecuTorch's backends/qualcomm/tests/test_qnn_delegate.py.",
)
@click.option("--version", "version", required=True, help="The executorch version or commit.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path(__file__).parents[1] / "data" / "test_registry.json",
    show_default=True,
)
@click.option("--check", is_flag=True, help="Exit 1 if the file would change; write nothing.")
def matrix_registry(source: Path, version: str, out: Path, check: bool) -> None:
    """Regenerate the test registry from the test file's syntax tree (no import)."""
    from qnn_migrate.bot.registry import RegistryError, extract

    try:
        reg = extract(source.read_text("utf-8"), version=version)
    except RegistryError as exc:
        _fail(str(exc), EXIT_INPUT)
    text = reg.to_json()
    current = out.read_text("utf-8") if out.exists() else ""
    if check:
        if current != text:
            _fail(f"{out} is out of date; run without --check to regenerate", EXIT_FAILED)
        click.echo(f"{out}: up to date ({len(reg.ids())} tests)")
        return
    out.write_text(text, "utf-8")
    click.echo(f"wrote {out}: {len(reg.ids())} tests in {len(reg.classes)} classes, {version}")


# Runner side (issue 5): the other commands of bot/device_cli.py, registered through the hook above.
EXTERNAL_COMMANDS.update(
    {
        "device": "qnn_migrate.bot.cli.lab:device",
        "device-matrix": "qnn_migrate.bot.cli.lab:device_matrix",
        "nightly": "qnn_migrate.bot.cli.lab:nightly_group",
    }
)
