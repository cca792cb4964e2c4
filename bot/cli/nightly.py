"""The scheduled run's commands: ``qnn-migrate bot nightly record`` (files only).

Tonight's results are added to each SoC's baseline and the nightly issue is decided;
the results come from each planned shard's own artifact folder (``common.collect_results``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from qnn_migrate.bot.artifacts import ArtifactError, read_json
from qnn_migrate.bot.cli.common import collect_results, fail, read_shards, shards_file_option, warn
from qnn_migrate.bot.model import reconcile
from qnn_migrate.bot.nightly import baseline as baseline_mod
from qnn_migrate.bot.nightly import issue as nightly


@click.group("nightly")
def nightly_group() -> None:
    """The scheduled run: update the per-SoC baselines and the nightly issue."""


@nightly_group.command("record")
@shards_file_option("The planned shard list of tonight's run.")
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
    planned = read_shards(shards_file)
    if not all(s.sha == sha for s in planned):
        fail(f"the planned shards are not all at {sha[:12]}; pass the SHA the run tested")
    tonight = reconcile(planned, collect_results(results_dir, planned))
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
                before = baseline_mod.read(path)
            except ArtifactError as exc:
                # Starting the history again is better than failing every night after.
                warn(f"{exc}; starting {soc}'s history again")
        befores[soc] = before.before(run) if before else None
        after = baseline_mod.record(before, soc, tonight, run, window)
        afters.append(after)
        baselines_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(after.to_json(), encoding="utf-8")

    the_diff = nightly.diff(befores, afters, tonight, run)
    existing: list[nightly.ExistingIssue] = []
    if issues_file is not None:
        try:
            doc: Any = read_json(issues_file, "the issue list")
            existing = [nightly.ExistingIssue.from_gh(d) for d in doc]
        except (ValueError, TypeError, KeyError) as exc:
            fail(f"{issues_file}: not a gh issue list: {exc}")
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
