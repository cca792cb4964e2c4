"""`bot nightly publish`: the baselines branch and the nightly issue, through the gateway.

Against the GitHub stand-in (every request checked against the REST description): the
branch is written with the Git Data API, a push that loses a race is redone on the new
tip, a re-run of a recorded night writes nothing, and the one issue is created, then
edited.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from qnn_migrate_tests.bot.support import standin_env
from qnn_migrate_tests.github_standin.fixtures import REPO
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot.cli.main import bot
from qnn_migrate.bot.model import Shard, ShardResult, Status, TestResult
from qnn_migrate.bot.nightly import baseline
from qnn_migrate.bot.nightly.baseline import BRANCH, RunInfo
from qnn_migrate.bot.nightly.issue import LABEL, MARKER

SHA = "d" * 40
ABS = "TestQNNFloatingPointOperator.test_qnn_backend_abs"
ADD = "TestQNNFloatingPointOperator.test_qnn_backend_add"
SHARD = Shard("sm8650-m-1", "m", "SM8650", "htp", 1126, (ABS, ADD), SHA)
FILE = "baselines/SM8650.json"


def _night(tmp_path: Path, name: str, abs_status: Status) -> tuple[Path, Path]:
    """The shard list and the downloaded artifacts of one nightly run."""
    root = tmp_path / name
    (root / "results" / f"qnn-result-{SHARD.id}").mkdir(parents=True)
    shards = root / "shards.json"
    shards.write_text(json.dumps([SHARD.to_dict()]))
    result = ShardResult.complete(
        SHARD, [TestResult(ABS, abs_status, 1.0, "mismatch"), TestResult(ADD, Status.PASS)]
    )
    (root / "results" / f"qnn-result-{SHARD.id}" / "result.json").write_text(
        json.dumps(result.to_dict())
    )
    return shards, root / "results"


def _publish(gh: GitHubStandIn, shards: Path, results: Path, run_id: int, date: str) -> Any:
    """Publish as scheduled run ``run_id``, created at ``date`` (a re-run keeps both)."""
    if run_id not in gh.repos[REPO].runs:
        gh.add_run(run_id, "qnn-device-tests.yml", date)
    args = [
        *("nightly", "publish", "--shards-file", str(shards), "--results-dir", str(results)),
        *("--sha", SHA),
    ]
    env = standin_env(gh) | {"GITHUB_RUN_ID": str(run_id)}
    result = CliRunner().invoke(bot, args, env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output.splitlines()[-1])


def _history(gh: GitHubStandIn) -> baseline.SocBaseline:
    return baseline.loads(gh.branch_files(BRANCH)[FILE], FILE)


@pytest.fixture
def gh(github_standin: GitHubStandIn) -> GitHubStandIn:
    return github_standin


def test_nights_go_to_the_branch_and_the_one_issue(gh: GitHubStandIn, tmp_path: Path) -> None:
    first = _publish(gh, *_night(tmp_path, "n1", Status.PASS), 101, "2026-11-01T02:00:00Z")
    # A first night has nothing to compare with: a new branch, no issue.
    assert first["commit"] is not None and first["attempts"] == 1
    assert first["action"] == "none" and gh.issues_made() == []
    assert gh.branch_log(BRANCH) == [f"nightly baselines at {SHA[:12]} (2026-11-01T02:00:00Z)"]

    second = _publish(gh, *_night(tmp_path, "n2", Status.FAIL), 102, "2026-11-02T02:00:00Z")
    assert second["action"] == "create" and second["new_failures"] == 1
    (issue,) = gh.issues_made()
    assert issue.number == second["issue"] and issue.labels == [LABEL]
    assert MARKER in issue.body and "test_qnn_backend_abs` | FAIL | PASS" in issue.body
    assert _history(gh).tests[ABS] == (Status.PASS, Status.FAIL)

    # The job re-run for night 2 (a day later) writes nothing new and edits the issue in place.
    again = _publish(gh, *_night(tmp_path, "n2b", Status.FAIL), 102, "2026-11-03T09:00:00Z")
    assert _history(gh).runs[-1].date == "2026-11-02T02:00:00Z"
    assert again["commit"] is None and len(gh.branch_log(BRANCH)) == 2
    assert again["action"] == "update" and again["issue"] == issue.number
    assert len(gh.issues_made()) == 1

    third = _publish(gh, *_night(tmp_path, "n3", Status.PASS), 103, "2026-11-04T02:00:00Z")
    assert third["action"] == "update" and third["flaky"] == 1  # PASS, FAIL, PASS
    assert len(gh.issues_made()) == 1 and gh.issues_made()[0].body.count("<!-- night ") == 2
    assert not gh.violations


def test_a_push_that_loses_the_race_is_redone_on_the_new_tip(
    gh: GitHubStandIn, tmp_path: Path
) -> None:
    _publish(gh, *_night(tmp_path, "n1", Status.PASS), 101, "2026-11-01T02:00:00Z")
    # Another nightly job records night 102 between our read of the tip and our push.
    other = ShardResult.complete(
        SHARD, [TestResult(ABS, Status.PASS), TestResult(ADD, Status.FAIL)]
    )
    before = _history(gh)
    theirs = baseline.record(
        before, "SM8650", [other], RunInfo(SHA, "2026-11-02T02:00:00Z", _run_url(102))
    )
    gh.before_next(
        "PATCH",
        r"/git/refs/heads/",
        lambda: gh.commit_on_branch(BRANCH, {FILE: theirs.to_json().encode()}, "their night"),
    )
    ours = _publish(gh, *_night(tmp_path, "n3", Status.FAIL), 103, "2026-11-03T02:00:00Z")
    assert ours["attempts"] == 2 and ours["commit"] is not None
    assert len(gh.branch_log(BRANCH)) == 3 and gh.branch_log(BRANCH)[1] == "their night"
    history = _history(gh)
    assert [r.run_url for r in history.runs] == [_run_url(n) for n in (101, 102, 103)]
    assert history.tests[ADD] == (Status.PASS, Status.FAIL, Status.PASS)
    assert not gh.violations


def test_a_branch_that_never_stops_moving_fails_loudly(gh: GitHubStandIn, tmp_path: Path) -> None:
    shards, results = _night(tmp_path, "n1", Status.PASS)
    gh.fail_next("POST", r"/git/refs$", 422, count=10, message="Reference already exists")
    args = [
        *("nightly", "publish", "--shards-file", str(shards), "--results-dir", str(results)),
        *("--sha", SHA, "--date", "2026-11-01T02:00:00Z"),
    ]
    result = CliRunner().invoke(bot, args, env=standin_env(gh))
    assert result.exit_code == 1
    assert "moved under every one of 5 pushes; tonight is not recorded" in result.output


def _run_url(run_id: int) -> str:
    return f"https://github.com/qnn-lab/executorch/actions/runs/{run_id}"


def test_a_token_that_may_not_read_the_run_still_records_the_night(
    gh: GitHubStandIn, tmp_path: Path
) -> None:
    shards, results = _night(tmp_path, "n1", Status.PASS)
    gh.add_run(101, "qnn-device-tests.yml", "2026-11-01T02:00:00Z")
    gh.fail_next(
        "GET", r"/actions/runs/101$", 403, message="Resource not accessible by integration"
    )
    args = [
        *("nightly", "publish", "--shards-file", str(shards), "--results-dir", str(results)),
        *("--sha", SHA),
    ]
    env = standin_env(gh) | {"GITHUB_RUN_ID": "101"}
    result = CliRunner().invoke(bot, args, env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "recording the run with the current time" in result.output
    assert _history(gh).runs[0].run_url == _run_url(101)
