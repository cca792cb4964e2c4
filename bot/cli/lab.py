"""Runner-side commands under ``qnn-migrate bot``: ``run-shard``, ``device ...``, ``nightly ...``.

The only runner-side module that reads the environment (through click ``envvar``s) and
files given on the command line; it builds the real ``Runner`` and hands it what it needs.
Exit codes: 0 every expected test passed (or was skipped) / nothing to do, 1 some test did
not pass, 2 bad input or a refused shard (wrong checkout, no phone configured).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import click

from qnn_migrate.bot.lab import host_config, quarantine, results
from qnn_migrate.bot.model import ModelError, Shard, ShardResult, reconcile
from qnn_migrate.bot.nightly import baseline as baseline_mod
from qnn_migrate.bot.nightly import issue as nightly

EXIT_FAILED = 1
EXIT_INPUT = 2
MAX_INPUT_BYTES = 8 * 1024 * 1024


def _fail(message: str, code: int = EXIT_INPUT) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def _read(path: Path, what: str) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        _fail(f"{path}: cannot read {what}: {exc}")
    if len(data) > MAX_INPUT_BYTES:
        _fail(f"{path}: {what} is over {MAX_INPUT_BYTES} bytes")
    return data.decode("utf-8", errors="replace")


def parse_shards(text: str, where: str) -> list[Shard]:
    """A shard, a planned shard ``{"shard":..., "runs_on":[...]}``, or a list of either."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelError(f"{where}: not JSON: {exc}") from exc
    items = doc if isinstance(doc, list) else [doc]
    shards = []
    for item in items:
        if isinstance(item, Mapping) and "shard" in item and "runs_on" in item:
            item = item["shard"]
        shards.append(Shard.from_dict(item))
    if not shards:
        raise ModelError(f"{where}: no shards")
    return shards


def _host(path: Path | None) -> host_config.HostConfig:
    if path is None:
        return host_config.HostConfig()
    try:
        return host_config.loads(_read(path, "the host config"), str(path))
    except host_config.HostConfigError as exc:
        _fail(str(exc))


HOST_CONFIG_OPTION = click.option(
    "--host-config",
    "host_config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="QNN_RUNNER_CONFIG",
    default=None,
    help="This runner host's TOML config (default: $QNN_RUNNER_CONFIG); see docs/runners.md.",
)


# --------------------------------------------------------------------------- device-matrix

SHARD_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,99}$")
HOST_LOCAL_FIELDS = ("executorch_dir", "adb_host", "device", "device_pool")


def github_matrix(
    shards: Sequence[Shard],
    runner_labels: Mapping[str, Sequence[str]],
    *,
    sha: str | None = None,
    pr: int | None = None,
) -> dict[str, Any]:
    """The device job's ``strategy.matrix`` for ``shards``, or ValueError naming every problem.

    The shard list crossed a ``workflow_dispatch``; this is where the device workflow stops
    trusting it: one commit, one PR, known SoCs whose runners carry exactly the labels
    ``[self-hosted, qnn, <soc>]``, ids usable as artifact names, and no host-local field
    (paths, serials) chosen by the dispatcher.
    """
    problems: list[str] = []
    ids = [s.id for s in shards]
    if len(set(ids)) != len(ids):
        problems.append("shard ids must be unique")
    for s in shards:
        where = f"shard {s.id[:100]!r}"
        if not SHARD_ID_RE.match(s.id):
            problems.append(f"{where}: ids are lower-case letters, digits, '.', '_' and '-'")
        if sha is not None and s.sha != sha:
            problems.append(f"{where}: pinned to {s.sha[:12]}, not the run's {sha[:12]}")
        if pr is not None and s.pr != pr:
            problems.append(f"{where}: for PR {s.pr}, not {pr}")
        labels = runner_labels.get(s.soc)
        if labels is None:
            problems.append(f"{where}: SoC {s.soc} is not in the catalog")
        elif tuple(labels) != ("self-hosted", "qnn", s.soc.lower()):
            problems.append(
                f"{where}: SoC {s.soc} has runner_labels {list(labels)}; the device workflow "
                f"runs on [self-hosted, qnn, {s.soc.lower()}]"
            )
        chosen = [f for f in HOST_LOCAL_FIELDS if getattr(s, f)]
        if chosen:
            problems.append(f"{where}: {', '.join(chosen)} belong to the runner host, not the plan")
    if not shards:
        problems.append("no shards")
    if problems:
        raise ValueError("; ".join(problems))
    return {"include": [{"id": s.id, "soc": s.soc.lower(), "shard": s.to_dict()} for s in shards]}


@click.command("device-matrix")
@click.option(
    "--shards-file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The planned shard list (dispatch input `shards`, or `bot plan` output).",
)
@click.option("--sha", default=None, help="Every shard must be pinned to this commit.")
@click.option("--pr", type=int, default=None, help="Every shard must be for this PR.")
@click.option("--catalog", "catalog_path", type=click.Path(dir_okay=False, path_type=Path))
def device_matrix(
    shards_file: Path, sha: str | None, pr: int | None, catalog_path: Path | None
) -> None:
    """Check a shard list and print `matrix=...`, `shards=...`, `count=...` for $GITHUB_OUTPUT."""
    from qnn_migrate.bot import catalog as catalog_mod

    try:
        catalog = catalog_mod.load(catalog_path)
        shards = parse_shards(_read(shards_file, "the shard list"), str(shards_file))
        matrix = github_matrix(
            shards,
            {name: soc.runner_labels for name, soc in catalog.socs.items()},
            sha=sha,
            pr=pr,
        )
    except (ValueError, catalog_mod.CatalogError) as exc:
        _fail(str(exc))
    # One line each: $GITHUB_OUTPUT takes name=value lines.
    click.echo("matrix=" + json.dumps(matrix, separators=(",", ":")))
    click.echo("shards=" + json.dumps([s.to_dict() for s in shards], separators=(",", ":")))
    click.echo(f"count={len(shards)}")


# ----------------------------------------------------------------------------- run-shard


@click.command("run-shard")
@click.option(
    "--shard",
    "shard_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The shard JSON (a model.Shard, or one entry of the dispatched shard list).",
)
@HOST_CONFIG_OPTION
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("qnn-shard-out"),
    show_default=True,
    help="Where result.json, junit.xml, logs and the logcat excerpt go (upload it).",
)
@click.option("--executorch-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--device", "serial", default=None, help="Run on this serial first.")
@click.option("--log-url", default=None, help="Where the job's logs are (the workflow run).")
@click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option(
    "--catalog",
    "catalog_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The matrices data file with the command template (default: bot/matrices.toml).",
)
def run_shard(
    shard_path: Path,
    host_config_path: Path | None,
    out_dir: Path,
    executorch_dir: Path | None,
    serial: str | None,
    log_url: str | None,
    state_dir: Path | None,
    catalog_path: Path | None,
) -> None:
    """Run one shard on a phone of this host: health check, tests, JUnit, retry, cleanup.

    Writes OUT/result.json (the ShardResult) and prints "ran N of M expected tests".
    """
    from dataclasses import replace

    from qnn_migrate.bot import catalog as catalog_mod
    from qnn_migrate.bot.lab.runner import Runner, RunSettings, scrub_env

    try:
        shards = parse_shards(_read(shard_path, "the shard"), str(shard_path))
    except ModelError as exc:
        _fail(str(exc))
    if len(shards) != 1:
        _fail(f"{shard_path}: holds {len(shards)} shards; run-shard takes one")
    shard = shards[0]
    host = _host(host_config_path)
    if state_dir is not None:
        host = replace(host, state_dir=str(state_dir))
    if executorch_dir is not None:
        shard = replace(shard, executorch_dir=str(executorch_dir.resolve()))
    if serial is not None:
        shard = replace(shard, device=serial)
    try:
        catalog = catalog_mod.load(catalog_path)
    except catalog_mod.CatalogError as exc:
        _fail(str(exc))

    settings = RunSettings(
        host=host,
        out_dir=out_dir,
        command=catalog.command_argv,
        env=scrub_env(os.environ),
        log=lambda msg: click.echo(msg, err=True),
    )
    result = Runner(settings, log_url=log_url).run(shard)
    click.echo(f"{shard.id}: {results.ran_line(result)}")
    if result.infra_reason:
        click.echo(f"{shard.id}: INFRA: {result.infra_reason}")
    if result.attempts == 0:
        sys.exit(EXIT_INPUT)
    if not result.ok:
        sys.exit(EXIT_FAILED)


# -------------------------------------------------------------------------------- device


@click.group("device")
def device() -> None:
    """This host's phones: health checks and quarantine."""


@device.command("check")
@click.option("--serial", required=True)
@click.option("--soc", default=None, help="Expected SoC (default: from the host config).")
@HOST_CONFIG_OPTION
def device_check(serial: str, soc: str | None, host_config_path: Path | None) -> None:
    """Health-check one phone; a pass lifts its quarantine. Prints the verdict as JSON."""
    from qnn_migrate.bot.lab import health
    from qnn_migrate.bot.lab.adb import Adb, AdbConfigError

    host = _host(host_config_path)
    expected = soc or next((d.soc for d in host.devices if d.serial == serial), None)
    if expected is None:
        _fail(f"{serial} is not in the host config's [[devices]]; pass --soc")
    try:
        adb = Adb(serial, host=host.adb_host, adb=host.adb, env=dict(os.environ))
    except AdbConfigError as exc:
        _fail(str(exc))
    verdict = health.check(
        adb,
        serial=serial,
        expected_soc=expected,
        min_free_mb=host.min_free_mb,
        platforms={**health.load_platforms(), **host.board_platforms},
    )
    state = Path(host.state_dir)
    if verdict.ok:
        lifted = quarantine.lift(state, serial)
        click.echo(json.dumps(verdict.to_dict() | {"quarantine_lifted": lifted}))
        return
    quarantine.put(state, serial, verdict.reason, "device check")
    click.echo(json.dumps(verdict.to_dict()))
    sys.exit(EXIT_FAILED)


@device.command("list")
@HOST_CONFIG_OPTION
def device_list(host_config_path: Path | None) -> None:
    """The configured phones, whether each is quarantined (and why), as JSON lines."""
    host = _host(host_config_path)
    state = Path(host.state_dir)
    for entry in host.devices:
        q = quarantine.get(state, entry.serial)
        click.echo(
            json.dumps(
                {
                    "serial": entry.serial,
                    "soc": entry.soc,
                    "quarantined": q is not None,
                    "reason": q.reason if q else None,
                    "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(q.since))
                    if q
                    else None,
                }
            )
        )


# ------------------------------------------------------------------------------- nightly


def load_result_files(results_dir: Path) -> tuple[list[ShardResult], list[str]]:
    """Every ``result.json`` below ``results_dir`` (downloaded artifacts: untrusted)."""
    found: list[ShardResult] = []
    warnings: list[str] = []
    for path in sorted(results_dir.rglob("result.json")):
        try:
            if path.stat().st_size > MAX_INPUT_BYTES:
                raise ValueError(f"over {MAX_INPUT_BYTES} bytes")
            found.append(ShardResult.from_dict(json.loads(path.read_text("utf-8"))))
        except (OSError, ValueError, TypeError, KeyError) as exc:
            warnings.append(f"{path}: ignored: {exc}")
    return found, warnings


@click.group("nightly")
def nightly_group() -> None:
    """The scheduled run: update the per-SoC baselines and the nightly issue."""


@nightly_group.command("record")
@click.option(
    "--shards-file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The planned shard list of tonight's run.",
)
@click.option(
    "--results-dir",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Downloaded shard artifacts (result.json files).",
)
@click.option(
    "--baselines-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The baselines/ directory of the qnn-baselines branch; updated in place.",
)
@click.option("--sha", required=True, help="The commit tonight's run tested.")
@click.option("--run-url", default="", help="Link to tonight's workflow run.")
@click.option("--date", default=None, help="UTC time of the run (default: now).")
@click.option(
    "--window", type=int, default=None, help="Runs kept per SoC (default: the file's, or 14)."
)
@click.option(
    "--issues-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="`gh issue list --label qnn-nightly --state open --json number,author,body` output.",
)
@click.option("--bot-login", default="github-actions[bot]", show_default=True)
@click.option(
    "--issue-out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("nightly-issue.md"),
    show_default=True,
    help="Where to write the issue body when there is one to write.",
)
def nightly_record(
    shards_file: Path,
    results_dir: Path,
    baselines_dir: Path,
    sha: str,
    run_url: str,
    date: str | None,
    window: int | None,
    issues_file: Path | None,
    bot_login: str,
    issue_out: Path,
) -> None:
    """Add tonight's results to each SoC's baseline and decide what to do with the issue.

    Prints one JSON line: {"action": "none"|"create"|"update", "issue": N|null, ...}.
    """
    try:
        planned = parse_shards(_read(shards_file, "the shard list"), str(shards_file))
    except ModelError as exc:
        _fail(str(exc))
    if not all(s.sha == sha for s in planned):
        _fail(f"the planned shards are not all at {sha[:12]}; pass the SHA the run tested")
    found, warnings = load_result_files(results_dir)
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    tonight = reconcile(planned, found)
    run = baseline_mod.RunInfo(
        sha, date or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), run_url
    )

    befores: dict[str, baseline_mod.SocBaseline | None] = {}
    afters = []
    for soc in dict.fromkeys(s.soc for s in planned):
        path = baseline_mod.path_for(baselines_dir, soc)
        before = None
        if path.exists():
            try:
                before = baseline_mod.loads(_read(path, "a baseline"), str(path))
            except baseline_mod.BaselineError as exc:
                # Starting the history again is better than failing every night after.
                click.echo(f"warning: {exc}; starting {soc}'s history again", err=True)
        befores[soc] = before.without(run) if before else None
        after = baseline_mod.record(before, soc, tonight, run, window)
        afters.append(after)
        baselines_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(after.to_json(), encoding="utf-8")

    the_diff = nightly.diff(befores, afters, tonight, run)
    existing: list[nightly.ExistingIssue] = []
    if issues_file is not None:
        try:
            doc: Any = json.loads(_read(issues_file, "the issue list"))
            existing = [nightly.ExistingIssue.from_gh(d) for d in doc]
        except (ValueError, TypeError, KeyError) as exc:
            _fail(f"{issues_file}: not a gh issue list: {exc}")
    action = nightly.plan_issue(the_diff, existing, bot_login)
    if action.kind != "none":
        issue_out.write_text(action.body, encoding="utf-8")
    click.echo(
        json.dumps(
            {
                "action": action.kind,
                "issue": action.number,
                "title": action.title,
                "new_failures": len(the_diff.new_failures),
                "fixes": len(the_diff.fixes),
                "flaky": len(the_diff.flaky),
                "socs": sorted(the_diff.ran),
            }
        )
    )
