"""Runner-side commands under ``qnn-migrate bot``: ``run-shard``, ``device ...``, ``device-matrix``.

Builds the real ``Runner`` and hands it what it needs; the environment comes from
``common.environment``. Exit codes (``common``): 0 every expected test passed (or was
skipped) / nothing to do, 1 some test did not pass, 2 bad input or a refused shard
(wrong checkout, no phone configured).
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import click

from qnn_migrate.bot import artifacts
from qnn_migrate.bot.artifacts import ArtifactError
from qnn_migrate.bot.cli.common import (
    EXIT_FAILED,
    EXIT_INPUT,
    environment,
    fail,
    read_shards,
    shards_file_option,
)
from qnn_migrate.bot.lab import host_config, quarantine


def _read(path: Path, what: str) -> str:
    try:
        return artifacts.read_text(path, what)
    except ArtifactError as exc:
        fail(str(exc))


def _host(path: Path | None) -> host_config.HostConfig:
    if path is None:
        return host_config.HostConfig()
    try:
        return host_config.loads(_read(path, "the host config"), str(path))
    except host_config.HostConfigError as exc:
        fail(str(exc))


HOST_CONFIG_OPTION = click.option(
    "--host-config",
    "host_config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="QNN_RUNNER_CONFIG",
    default=None,
    help="This runner host's TOML config (default: $QNN_RUNNER_CONFIG); see docs/runners.md.",
)


# --------------------------------------------------------------------------- device-matrix


@click.command("device-matrix")
@shards_file_option("The planned shard list (dispatch input `shards`, or `bot plan` output).")
@click.option("--sha", default=None, help="Every shard must be pinned to this commit.")
@click.option("--pr", type=int, default=None, help="Every shard must be for this PR.")
@click.option("--catalog", "catalog_path", type=click.Path(dir_okay=False, path_type=Path))
def device_matrix(
    shards_file: Path, sha: str | None, pr: int | None, catalog_path: Path | None
) -> None:
    """Check a shard list and print `matrix=...`, `shards=...`, `count=...` for $GITHUB_OUTPUT.

    Every field is checked against the catalog (``plan.device_matrix``); the catalog is the
    adopter's ``.github/qnn-bot.toml`` when there is one, found without a flag.
    """
    from qnn_migrate.bot import catalog as catalog_mod
    from qnn_migrate.bot.pr import plan as plan_mod

    try:
        catalog = catalog_mod.load(catalog_path)
        shards = artifacts.read_shards(shards_file)
        matrix = plan_mod.device_matrix(shards, catalog, sha=sha, pr=pr)
    except (ValueError, catalog_mod.CatalogError) as exc:
        fail(str(exc))
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
    help="Where the results and logs go (the files are listed above; upload the folder).",
)
@click.option(
    "--executorch-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help='The checkout to test (isolation = "none"), or the local repository the job '
    "user's fresh checkout is fetched from.",
)
@click.option(
    "--repository",
    default=None,
    help="Where the job user's fresh checkout is fetched from (a URL, e.g. "
    "$GITHUB_SERVER_URL/$GITHUB_REPOSITORY); overrides --executorch-dir as the source.",
)
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
    repository: str | None,
    serial: str | None,
    log_url: str | None,
    state_dir: Path | None,
    catalog_path: Path | None,
) -> None:
    """Run one shard on a phone of this host: health check, tests, JUnit, retry, cleanup.

    Prints "ran N of M expected tests" and writes into OUT (upload it whatever the exit
    code; docs/runners.md, "What run-shard does"):

    \b
      result.json      the ShardResult, which `bot report` reads
      summary.txt      its "ran N of M expected tests" line
      host-check.json  what the job user's and the sealed host's checks found
      shard.json       the shard as this host ran it
      attempts.json    each attempt: its phone, tests and INFRA count
      import-check/    the `import executorch` check's stdout.txt and stderr.txt
      attempt-N/       per attempt (attempt-2: the retry of INFRA tests):
        junit.xml        the tests' results, rewritten after each test
        programs.json    a fingerprint of every program the tests lowered
        command.txt      the test script's command (fallback.txt: its -v rerun)
        stdout.txt, stderr.txt   the test process's logs
        artifacts/       what the harness wrote (its --artifact_dir)
        health.json, logcat.txt, phone-reset.json   on a phone: its health check,
                         its logcat excerpt, what its reset removed

    Exit codes: 0 every expected test passed or was skipped, 1 some did not, 2 refused or
    bad input.
    """
    from dataclasses import replace

    from qnn_migrate.bot import catalog as catalog_mod
    from qnn_migrate.bot.lab import results
    from qnn_migrate.bot.lab.runner import Runner
    from qnn_migrate.bot.lab.settings import RunSettings, scrub_env
    from qnn_migrate.bot.model import HostShard

    shards = read_shards(shard_path, "the shard")
    if len(shards) != 1:
        fail(f"{shard_path}: holds {len(shards)} shards; run-shard takes one")
    shard = HostShard.of(shards[0])
    host = _host(host_config_path)
    if state_dir is not None:
        host = replace(host, state_dir=str(state_dir))
    if executorch_dir is not None:
        shard = replace(shard, executorch_dir=str(executorch_dir.resolve()))
    if repository is not None:
        if not re.match(r"^(https://|file://|/)[A-Za-z0-9._~:/@%+-]{1,500}$", repository):
            fail(f"--repository {repository[:100]!r} is not an https:// or file:// URL or a path")
        shard = replace(shard, executorch_dir=repository)
    if serial is not None:
        shard = replace(shard, device=serial)
    try:
        catalog = catalog_mod.load(catalog_path)
    except catalog_mod.CatalogError as exc:
        fail(str(exc))

    settings = RunSettings(
        host=host,
        out_dir=out_dir,
        command=catalog.command_argv,
        env=scrub_env(environment()),
        log=lambda msg: click.echo(msg, err=True),
        host_config_path=str(host_config_path.resolve()) if host_config_path else None,
    )
    try:
        result = Runner(settings, log_url=log_url).run(shard)
    except Exception as exc:  # a bug of the runner itself: INFRA for every test, never MISSING
        import traceback

        from qnn_migrate.bot.model import ShardResult

        click.echo(traceback.format_exc(), err=True)
        result = ShardResult.all_infra(
            shard, f"the runner itself failed: {type(exc).__name__}: {str(exc)[:300]}"
        )
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "result.json").write_text(json.dumps(result.to_dict(), indent=1) + "\n")
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
        fail(f"{serial} is not in the host config's [[devices]]; pass --soc")
    try:
        adb = Adb(serial, host=host.adb_host, adb=host.adb, env=environment())
    except AdbConfigError as exc:
        fail(str(exc))
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


# ---------------------------------------------------------------------------------- host


@click.group("host")
def host() -> None:
    """This runner host's trusted state (long-lived hosts): seal it, check it."""


def _manifest(config: host_config.HostConfig, path: Path | None) -> Path:
    if not config.integrity_manifest:
        fail(
            f"{path or 'the host config'}: no integrity_manifest is set; set it to a path the "
            'job user cannot write (docs/runners.md, "A clean host per job")'
        )
    return Path(config.integrity_manifest)


@host.command("seal")
@HOST_CONFIG_OPTION
def host_seal(host_config_path: Path | None) -> None:
    """Record the trusted paths (and the host config itself) as this host's known state."""
    from qnn_migrate.bot.lab import integrity

    config = _host(host_config_path)
    manifest = _manifest(config, host_config_path)
    roots = config.trusted_roots(str(host_config_path.resolve()) if host_config_path else None)
    inside = [r for r in roots if manifest.resolve().is_relative_to(Path(r).resolve())]
    if inside:
        fail(
            f"the manifest {manifest} is inside the trusted path {inside[0]}: sealing would "
            "change what it seals; put the manifest elsewhere"
        )
    try:
        count = integrity.seal(roots, manifest)
    except integrity.IntegrityError as exc:
        fail(str(exc))
    click.echo(f"sealed {count} entries under {len(roots)} trusted path(s) into {manifest}")


@host.command("check")
@HOST_CONFIG_OPTION
def host_check(host_config_path: Path | None) -> None:
    """Compare the trusted paths with the sealed manifest; exit 1 on any difference, or when
    a job user could change the manifest or the host config."""
    from qnn_migrate.bot.lab import integrity, job_user

    config = _host(host_config_path)
    resolved = str(host_config_path.resolve()) if host_config_path else None
    manifest = _manifest(config, host_config_path)
    findings = integrity.verify(manifest, config.trusted_roots(resolved))
    findings += job_user.writable_by_job_users(
        config.job_users, [manifest, *([Path(resolved)] if resolved else [])]
    )
    for line in findings:
        click.echo(line)
    if findings:
        click.echo(
            f"{len(findings)} difference(s) from the sealed state: reprovision the host, or "
            "review them and seal again (qnn-migrate bot host seal)",
            err=True,
        )
        sys.exit(EXIT_FAILED)
    click.echo("ok: the trusted paths match the sealed manifest")
