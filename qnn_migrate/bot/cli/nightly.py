"""The scheduled run's commands: ``qnn-migrate bot nightly publish|record``.

Both add tonight's results (each planned shard's own artifact, ``common.collect_results``)
to each SoC's baseline and decide the nightly issue. ``publish`` does it on GitHub
through the gateway (the baselines branch by the Git Data API, the issue and its label);
``record`` does it on a local directory and leaves the writes to the caller.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import click

from qnn_migrate.bot import artifacts
from qnn_migrate.bot.artifacts import ArtifactError
from qnn_migrate.bot.cli.common import (
    EXIT_FAILED,
    GitHubSession,
    collect_results,
    fail,
    github_session,
    read_shards,
    results_dir_option,
    shards_file_option,
    warn,
)
from qnn_migrate.bot.github.gateway import GatewayError
from qnn_migrate.bot.model import SHA_RE, Shard, ShardResult, reconcile
from qnn_migrate.bot.nightly import baseline as baseline_mod
from qnn_migrate.bot.nightly import issue as nightly
from qnn_migrate.bot.nightly import program_baseline
from qnn_migrate.bot.nightly.publish import publish, record_night


@click.group("nightly")
def nightly_group() -> None:
    """The scheduled run: update the per-SoC baselines and the nightly issue."""


@nightly_group.command("record")
@shards_file_option("The planned shard list of tonight's run.")
@results_dir_option("Downloaded shard artifacts (result.json files).")
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
    if not issue_out.parent.is_dir():  # before anything is written to the baselines
        fail(f"{issue_out}: the folder {issue_out.parent} does not exist; create it first")
    planned, tonight = _tonight(shards_file, results_dir, sha)
    run = _run_info(sha, date, run_url)
    current: dict[str, bytes] = {}
    for soc in dict.fromkeys(s.soc for s in planned):
        path = baseline_mod.path_for(baselines_dir, soc)
        if path.exists():
            try:
                current[path.name] = artifacts.read_bytes(path, "a baseline")
            except ArtifactError as exc:
                warn(f"{exc}; starting {soc}'s history again")
    night = record_night(
        current, [s.soc for s in planned], tonight, run, window, str(baselines_dir)
    )
    for warning in night.warnings:
        warn(warning)
    try:
        baselines_dir.mkdir(parents=True, exist_ok=True)
        for name, text in night.files.items():
            _replace(baselines_dir / name, text)
    except OSError as exc:
        fail(f"{baselines_dir}: cannot write the baselines: {exc.strerror or exc}")
    for warning in program_baseline.record_night(baselines_dir, planned, results_dir, sha):
        warn(warning)

    the_diff = night.diff(tonight, run)
    existing: list[nightly.ExistingIssue] = []
    if issues_file is not None:
        try:
            doc: Any = artifacts.read_json(issues_file, "the issue list")
            existing = nightly.parse_issue_list(doc)
        except ValueError as exc:
            fail(f"{issues_file}: not a gh issue list: {exc}")
    action = nightly.plan_issue(the_diff, existing, bot_login)
    if action.kind != "none":
        try:
            issue_out.write_text(action.body, encoding="utf-8")
        except OSError as exc:
            fail(f"{issue_out}: cannot write the issue body: {exc.strerror or exc}")
    _echo(action, the_diff)


def _replace(path: Path, text: str) -> None:
    """Write ``path`` whole by renaming a new file over it: whatever stood there (a FIFO
    that would block the write, a link that would send it elsewhere) is replaced."""
    tmp = path.with_name(f".{path.name}.new")
    tmp.unlink(missing_ok=True)
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _tonight(
    shards_file: Path, results_dir: Path, sha: str
) -> tuple[list[Shard], list[ShardResult]]:
    planned = read_shards(shards_file)
    if not all(s.sha == sha for s in planned):
        fail(f"the planned shards are not all at {sha[:12]}; pass the SHA the run tested")
    return planned, reconcile(planned, collect_results(results_dir, planned))


def _run_date(session: GitHubSession, run_id: int) -> str | None:
    """The run's creation time, or None (then: now) when the token may not read it.

    The history is ordered by run id first, so the fallback only costs the date's accuracy
    on a re-run; give the job ``actions: read`` to avoid it.
    """
    try:
        return session.gateway.run_created_at(run_id)
    except GatewayError as exc:
        warn(f"{exc}; recording the run with the current time")
        return None


def _run_info(sha: str, date: str | None, run_url: str | None) -> baseline_mod.RunInfo:
    when = date or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return baseline_mod.RunInfo(sha, when, run_url or "")


def _echo(action: nightly.IssueAction, the_diff: nightly.NightlyDiff, **extra: object) -> None:
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
                **extra,
            }
        )
    )


@nightly_group.command("publish")
@shards_file_option("The planned shard list of tonight's run.")
@results_dir_option("Downloaded shard artifacts (qnn-result-<id>/ folders).")
@click.option("--sha", required=True, help="The commit tonight's run tested.")
@click.option(
    "--date", default=None, help="UTC time of the run (default: when $GITHUB_RUN_ID was created)."
)
@click.option(
    "--window", type=int, default=None, help="Runs kept per SoC (default: the file's, or 14)."
)
@click.option("--branch", default=baseline_mod.BRANCH, show_default=True)
def nightly_publish(
    shards_file: Path,
    results_dir: Path,
    sha: str,
    date: str | None,
    window: int | None,
    branch: str,
) -> None:
    """Record tonight on the baselines branch and open or update the nightly issue (GitHub API).

    Needs GITHUB_TOKEN (contents: write, issues: write), GITHUB_REPOSITORY and GITHUB_RUN_ID.
    Prints one JSON line like `record`, plus the baselines commit and the push attempts.
    """
    if not SHA_RE.match(sha):
        fail(f"--sha {sha!r} is not 40 lowercase hex digits")
    planned, tonight = _tonight(shards_file, results_dir, sha)
    programs, program_warnings = program_baseline.tonight(planned, results_dir)
    session = github_session()
    try:
        # The run's own creation time, which a re-run of its jobs keeps: re-running an
        # old night records that night again, not a new one.
        run_id = session.settings.run_id
        if date is None and run_id is not None:
            date = _run_date(session, run_id)
        run = _run_info(sha, date, session.settings.run_url)
        done = publish(
            session.gateway,
            socs=[s.soc for s in planned],
            results=tonight,
            run=run,
            bot_login=session.settings.bot_login,
            window=window,
            branch=branch,
            programs=programs,
        )
    except GatewayError as exc:
        fail(str(exc), EXIT_FAILED)
    for warning in [*done.night.warnings, *program_warnings, *done.program_warnings]:
        warn(warning)
    the_diff = done.night.diff(tonight, run)
    _echo(
        done.action,
        the_diff,
        issue=done.issue,
        commit=done.commit,
        attempts=done.attempts,
        programs=list(done.program_files),
    )
