"""End to end through the CLI the workflows call, against the GitHub stand-in over HTTP.

payload -> `bot on-event --event-name issue_comment` (the command the workflow runs: parse, authorize, pin, dispatch) -> the dispatched shards ->
`bot check-head` -> JUnit files as the device jobs upload them (tests/bot/e2e) ->
`bot report` -> the results comment on the stand-in, compared with golden markdown.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from qnn_migrate_tests.bot.support import check_golden, standin_env
from qnn_migrate_tests.github_standin.fixtures import BOT_LOGIN, REPO
from qnn_migrate_tests.github_standin.payloads import comment_event
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot.cli.main import bot
from qnn_migrate.bot.pr.plan import Plan
from qnn_migrate.bot.pr.state import MARKER

E2E = Path(__file__).resolve().parent / "e2e"
HEAD = "a" * 40
CONV_FILE = "backends/qualcomm/_passes/canonicalize_conv.py"


def _invoke(
    gh: GitHubStandIn, args: list[str], env: dict[str, str] | None = None
) -> tuple[int, str]:
    result = CliRunner().invoke(
        bot, args, env=standin_env(gh) | (env or {}), catch_exceptions=False
    )
    return result.exit_code, result.output


@pytest.fixture
def gh(github_standin: GitHubStandIn) -> GitHubStandIn:
    github_standin.add_user("maint", role="maintain", repo=REPO)
    github_standin.add_pull(7, author="maint", head_sha=HEAD, files=[CONV_FILE, "README.md"])
    return github_standin


def _comment(gh: GitHubStandIn, tmp_path: Path, body: str) -> tuple[Path, int]:
    c = gh.add_comment(7, "maint", body)
    path = tmp_path / f"event-{c.id}.json"
    path.write_text(
        json.dumps(comment_event(repo=REPO, number=7, body=body, login="maint", comment_id=c.id))
    )
    return path, c.id


def test_comment_to_dispatch_to_report(gh: GitHubStandIn, tmp_path: Path) -> None:
    event, cid = _comment(
        gh, tmp_path, "Looks right.\n\n/qnn test canonicalize_conv --soc SM8650,SM8750\n"
    )
    code, out = _invoke(
        gh, ["on-event", "--event-name", "issue_comment", "--event-path", str(event)]
    )
    assert code == 0, out
    assert json.loads(out)["action"] == "dispatched"

    (run,) = gh.runs()
    shards_file = tmp_path / "shards.json"
    shards_file.write_text(run.inputs["shards"])
    assert [p.shard.id for p in Plan.from_json(run.inputs["shards"]).shards] == [
        "sm8650-canonicalize_conv-1",
        "sm8650-canonicalize_conv-2",
        "sm8750-canonicalize_conv-1",
        "sm8750-canonicalize_conv-2",
    ]

    code, out = _invoke(
        gh, ["check-head", "--pr", "7", "--sha", run.inputs["sha"], "--comment-id", str(cid)]
    )
    assert code == 0, out

    code, out = _invoke(
        gh,
        [
            "report",
            "--shards-file",
            str(shards_file),
            "--results-dir",
            str(E2E),
            "--baseline-dir",
            str(E2E / "baselines"),
            "--comment-id",
            run.inputs["comment_id"],
        ],
    )
    assert code == 0, out
    summary = json.loads(out)
    assert (summary["state"], summary["ran"], summary["expected"]) == ("failure", 22, 32)
    assert summary["edited"] and not summary["created"]

    results = [c for c in gh.comments(7) if c.author == BOT_LOGIN and MARKER in c.body]
    assert len(results) == 1
    check_golden("e2e-report.md", results[0].body)
    final = gh.statuses(HEAD)[-1]
    assert (final["state"], final["context"]) == ("failure", "qnn / device tests")
    assert final["description"].startswith("ran 22 of 32")

    # Reporting the same results again edits nothing.
    before = len(gh.requests_to("PATCH", r"/issues/comments/"))
    code, out = _invoke(
        gh,
        [
            "report",
            "--results-dir",
            str(E2E),
            "--comment-id",
            run.inputs["comment_id"],
            "--baseline-dir",
            str(E2E / "baselines"),
        ],
        env={"QNN_SHARDS": run.inputs["shards"]},
    )
    assert code == 0 and not json.loads(out)["edited"]
    assert len(gh.requests_to("PATCH", r"/issues/comments/")) == before

    # `/qnn retry failed` runs exactly the failed (SoC, test) pairs at the current head.
    gh.push(7, "b" * 40)
    event, _ = _comment(gh, tmp_path, "/qnn retry failed")
    code, out = _invoke(
        gh, ["on-event", "--event-name", "issue_comment", "--event-path", str(event)]
    )
    assert json.loads(out)["action"] == "dispatched", out
    retry = Plan.from_json(gh.runs()[-1].inputs["shards"])
    assert gh.runs()[-1].inputs["sha"] == "b" * 40
    pairs = sorted((p.shard.soc, t) for p in retry.shards for t in p.shard.tests)
    assert len(pairs) == 12 and all(p.shard.sha == "b" * 40 for p in retry.shards)


def test_a_moved_head_refuses_the_run(gh: GitHubStandIn, tmp_path: Path) -> None:
    event, cid = _comment(gh, tmp_path, "/qnn test canonicalize_conv")
    assert (
        _invoke(gh, ["on-event", "--event-name", "issue_comment", "--event-path", str(event)])[0]
        == 0
    )
    gh.push(7, "b" * 40)
    code, out = _invoke(gh, ["check-head", "--pr", "7", "--sha", HEAD, "--comment-id", str(cid)])
    assert code == 3 and "moved from" in out
    body = next(c.body for c in gh.comments(7) if MARKER in c.body)
    assert "refused to start" in body and "b" * 40 in body


def test_cli_errors(gh: GitHubStandIn, tmp_path: Path) -> None:
    code, out = _invoke(gh, ["check-head", "--pr", "7", "--sha", "main"])
    assert code == 2 and "40 lowercase hex" in out
    result = CliRunner().invoke(
        bot, ["check-head", "--pr", "7", "--sha", HEAD], env={"GITHUB_TOKEN": ""}
    )
    assert result.exit_code == 1 and "GITHUB_REPOSITORY" in result.output
    code, out = _invoke(gh, ["report", "--results-dir", str(tmp_path)], env={"QNN_SHARDS": ""})
    assert code == 2 and "no shards" in out


def test_a_superseded_run_leaves_the_status_to_the_newer_command(
    gh: GitHubStandIn, tmp_path: Path
) -> None:
    """A newer command at the same SHA owns the comment and the status: the older run, if it
    still reports (its cancel raced it), must not set the status the comment contradicts
    (5aad75f set it: "failure: ran 22 of 32" while the comment said running)."""
    first, first_id = _comment(gh, tmp_path, "/qnn test canonicalize_conv --soc SM8650,SM8750")
    code, out = _invoke(
        gh, ["on-event", "--event-name", "issue_comment", "--event-path", str(first)]
    )
    assert code == 0 and json.loads(out)["action"] == "dispatched", out
    old_shards = gh.runs()[0].inputs["shards"]
    newer, _ = _comment(gh, tmp_path, "/qnn test canonicalize_conv --soc SM8650")
    code, out = _invoke(
        gh, ["on-event", "--event-name", "issue_comment", "--event-path", str(newer)]
    )
    assert code == 0 and json.loads(out)["action"] == "dispatched", out
    pending = gh.statuses(HEAD)[-1]
    assert pending["state"] == "pending"

    code, out = _invoke(
        gh,
        ["report", "--results-dir", str(E2E), "--comment-id", str(first_id)],
        env={"QNN_SHARDS": old_shards},
    )
    assert code == 0, out
    assert json.loads(out)["superseded"]
    assert gh.statuses(HEAD)[-1] == pending  # the newer command's, as its comment says
    (results,) = [c for c in gh.comments(7) if c.author == BOT_LOGIN and MARKER in c.body]
    assert "running" in results.body.lower() or "pending" in results.body.lower()


def test_a_job_whose_command_was_interrupted_fails_and_its_rerun_handles_it(
    gh: GitHubStandIn, tmp_path: Path
) -> None:
    """A 502 after the 👀 claim: the job fails (re-running it is the retry), and the re-run
    dispatches instead of calling the comment a duplicate."""
    event, _ = _comment(gh, tmp_path, "/qnn test canonicalize_conv")
    gh.fail_next("GET", r"/collaborators/maint/permission$", 502, count=20)
    args = ["on-event", "--event-name", "issue_comment", "--event-path", str(event)]
    code, out = _invoke(gh, args)
    assert code == 1 and json.loads(out.splitlines()[0])["action"] == "interrupted"
    gh.faults.clear()
    code, out = _invoke(gh, args)
    assert code == 0 and json.loads(out)["action"] == "dispatched"
    assert len(gh.runs()) == 1
