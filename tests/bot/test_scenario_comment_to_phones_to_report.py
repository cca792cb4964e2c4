"""End to end, as the workflows run it: a /qnn comment -> dispatch -> device-matrix -> two
device jobs on two fake phones (one dies mid-run; its shard is retried on the other) ->
JUnit via the real wrapper -> report -> the one results comment on the GitHub stand-in,
compared with tests/bot/golden/e2e-phones-report.md.

Test doubles: FakeAdb and the test_qnn_delegate stand-in (tests/doubles), the GitHub
REST stand-in (tests/github_standin). Everything else is the real code, through the same
CLI commands the workflow steps call; the device jobs run as two concurrent processes.
Regenerate the golden file with
``QNN_REGEN_GOLDEN=1 pytest -n 0 tests/bot/test_scenario_comment_to_phones_to_report.py``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from qnn_migrate_tests.bot.lab.support import Lab
from qnn_migrate_tests.github_standin.fixtures import BOT_LOGIN, REPO, TOKEN, github_standin  # noqa: F401
from qnn_migrate_tests.github_standin.payloads import comment_event
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot.cli.main import bot
from qnn_migrate.bot.lab import quarantine
from qnn_migrate.bot.model import Shard, ShardResult, Status, TestResult
from qnn_migrate.bot.nightly import baseline
from qnn_migrate.bot.nightly.baseline import RunInfo

GOLDEN = Path(__file__).parent / "golden" / "e2e-phones-report.md"
FP, QO = "TestQNNFloatingPointOperator", "TestQNNQuantizedOperator"
# Shard 1 (PHONE_A, which dies after two tests): conv1d passes, conv2d fails (it passed
# last night: NEW); the rest hit the dead phone (INFRA) and are retried on PHONE_B, except
# the ERROR, raised before the test touches the phone, which stays an ERROR.
NEW_FAIL = f"{FP}.test_qnn_backend_conv2d"
ERRORS = f"{QO}.test_qnn_backend_conv_transpose1d"  # no history: UNCLASSIFIED
# Shard 2 (PHONE_B): one failure that failed last night too (PRE-EXISTING), one skip.
OLD_FAIL = f"{QO}.test_qnn_backend_conv3d_sequential"
SKIPPED = f"{FP}.test_qnn_backend_conv_transpose2d"


def standin_env(gh: GitHubStandIn) -> dict[str, str]:
    return {
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_API_URL": gh.base_url,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "4242",
        "QNN_BOT_RETRIES": "2",
        "QNN_BOT_BACKOFF": "0",
        "QNN_BOT_SECONDARY_RATE_WAIT": "0",
        "QNN_BOT_WRITE_INTERVAL": "0",
        "QNN_BOT_TIMEOUT": "10",
    }


def invoke(gh: GitHubStandIn, args: list[str]) -> str:
    result = CliRunner().invoke(bot, args, env=standin_env(gh), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def normalise(body: str, sha: str) -> str:
    """Run times differ run to run, and the checkout's SHA follows the test double's bytes;
    everything else in the comment must not."""
    assert sha in body
    return (
        re.sub(r"\| \d+\.\ds \|", "| 0.0s |", body)
        .replace(sha, "<head>")
        .replace(sha[:12], "<head>")
    )


def test_comment_to_phones_to_report(github_standin: GitHubStandIn, lab: Lab) -> None:  # noqa: F811
    gh = github_standin
    gh.add_user("maint", role="maintain", repo=REPO)
    gh.add_pull(
        7,
        author="maint",
        head_sha=lab.sha,
        files=["backends/qualcomm/_passes/canonicalize_conv.py"],
    )

    # 1. The comment: qnn-command.yml runs `bot on-event` on it.
    body = "/qnn test canonicalize_conv --soc SM8650"
    comment = gh.add_comment(7, "maint", body)
    event = lab.root / "event.json"
    event.write_text(
        json.dumps(
            comment_event(repo=REPO, number=7, body=body, login="maint", comment_id=comment.id)
        )
    )
    assert (
        json.loads(
            invoke(gh, ["on-event", "--event-name", "issue_comment", "--event-path", str(event)])
        )["action"]
        == "dispatched"
    )
    (run,) = gh.runs()
    assert run.inputs["sha"] == lab.sha

    # 2. The plan job: check the dispatched shards, build the device matrix.
    dispatched = lab.root / "dispatched.json"
    dispatched.write_text(run.inputs["shards"])
    out = invoke(
        gh, ["device-matrix", "--shards-file", str(dispatched), "--sha", lab.sha, "--pr", "7"]
    )
    outputs = dict(line.split("=", 1) for line in out.splitlines())
    matrix = json.loads(outputs["matrix"])["include"]
    assert [m["soc"] for m in matrix] == ["sm8650", "sm8650"]
    ids = [m["id"] for m in matrix]

    # 3. Two device jobs at once, one per phone; PHONE_A dies after two tests.
    tests = [t for m in matrix for t in m["shard"]["tests"]]
    lab.scenario(
        devices={"PHONE_A": {"soc": "SM8650", "dies_after_runs": 2}, "PHONE_B": {"soc": "SM8650"}},
        tests={t: "pass" for t in tests}
        | {NEW_FAIL: "fail", OLD_FAIL: "fail", ERRORS: "error", SKIPPED: "skip"},
    )
    config = lab.root / "host.toml"
    config.write_text(
        f'python = "{sys.executable}"\nstate_dir = "{lab.state_dir}"\nlock_wait_s = 60\n'
        'lifetime = "ephemeral"\n'
        'isolation = "none"\n'
        '[[devices]]\nserial = "PHONE_A"\nsoc = "SM8650"\n[[devices]]\nserial = "PHONE_B"\nsoc = "SM8650"\n'
    )
    results = lab.root / "results"
    jobs = []
    for entry, phone in zip(matrix, ("PHONE_A", "PHONE_B"), strict=True):
        shard_file = lab.root / f"{entry['id']}.json"
        shard_file.write_text(json.dumps(entry["shard"]))
        argv = [sys.executable, "-m", "qnn_migrate", "bot", "run-shard", "--shard", str(shard_file)]
        argv += ["--executorch-dir", str(lab.checkout), "--device", phone]
        argv += ["--out", str(results / f"qnn-result-{entry['id']}")]
        # As the workflow passes it: the run's page, where each job's log is.
        argv += ["--log-url", f"https://github.com/{REPO}/actions/runs/4242"]
        env = {**os.environ, **lab.env(), "QNN_RUNNER_CONFIG": str(config)}
        jobs.append(
            subprocess.Popen(
                argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
        )
    logs = [job.communicate(timeout=120)[0] for job in jobs]
    assert [job.returncode for job in jobs] == [1, 1], logs  # both shards hold a failing test

    first = ShardResult.from_dict(
        json.loads((results / f"qnn-result-{ids[0]}" / "result.json").read_text())
    )
    second = ShardResult.from_dict(
        json.loads((results / f"qnn-result-{ids[1]}" / "result.json").read_text())
    )
    assert (first.attempts, first.device) == (2, "PHONE_B"), logs[0]
    assert (second.attempts, second.device) == (1, "PHONE_B"), logs[1]
    assert not any(r.status is Status.INFRA for r in first.results + second.results)
    assert quarantine.get(lab.state_dir, "PHONE_A") is not None
    assert "retrying" in logs[0] and "quarantined" in logs[0]
    for shard_id in ids:
        assert (results / f"qnn-result-{shard_id}" / "attempt-1" / "junit.xml").is_file()

    # 4. The report job: last night's baseline says which failures are new.
    bdir = lab.root / "baselines"
    bdir.mkdir()
    last_night = Shard(
        "n", "canonicalize_conv", "SM8650", "htp", 1126, (NEW_FAIL, OLD_FAIL), "e" * 40
    )
    history = baseline.record(
        None,
        "SM8650",
        [
            ShardResult.complete(
                last_night, [TestResult(NEW_FAIL, Status.PASS), TestResult(OLD_FAIL, Status.FAIL)]
            )
        ],
        RunInfo("e" * 40, "2026-11-28T02:00:00Z"),
    )
    (bdir / "SM8650.json").write_text(history.to_json())
    shards_out = lab.root / "shards.json"
    shards_out.write_text(outputs["shards"])
    summary = json.loads(
        invoke(
            gh,
            [
                *("report", "--shards-file", str(shards_out), "--results-dir", str(results)),
                *("--baseline-dir", str(bdir), "--comment-id", run.inputs["comment_id"]),
            ],
        )
    )
    assert (summary["state"], summary["ran"], summary["expected"]) == ("failure", 16, 16)

    ours = [c for c in gh.comments(7) if c.author == BOT_LOGIN and "qnn-bot:results" in c.body]
    assert len(ours) == 1
    text = normalise(ours[0].body, lab.sha)
    if os.environ.get("QNN_REGEN_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()
    assert "**NEW**" in text and "**PRE-EXISTING**" in text
    assert gh.statuses(lab.sha)[-1]["state"] == "failure"
