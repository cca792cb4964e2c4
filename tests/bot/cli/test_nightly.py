"""`qnn-migrate bot nightly record` (bot/cli/nightly.py): the baselines and the issue body, offline."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from qnn_migrate.bot.cli import nightly as nightly_cli
from qnn_migrate.bot.model import Shard, ShardResult, Status, TestResult
from qnn_migrate.bot.nightly import baseline
from qnn_migrate.bot.nightly.baseline import RunInfo

FP = "TestQNNFloatingPointOperator"


def test_nightly_record_updates_baselines_and_plans_the_issue(tmp_path: Path) -> None:
    sha = "d" * 40
    abs_id, add_id = f"{FP}.test_qnn_backend_abs", f"{FP}.test_qnn_backend_add"
    s1 = Shard("sm8650-m-1", "m", "SM8650", "htp", 1126, (abs_id,), sha)
    s2 = Shard("sm8650-m-2", "m", "SM8650", "htp", 1126, (add_id,), sha)
    shards = tmp_path / "shards.json"
    shards.write_text(
        json.dumps(
            [{"shard": s.to_dict(), "runs_on": ["self-hosted", "qnn", "sm8650"]} for s in (s1, s2)]
        )
    )
    res = tmp_path / "results" / "qnn-result-sm8650-m-1"
    res.mkdir(parents=True)
    (res / "result.json").write_text(
        json.dumps(
            ShardResult.complete(s1, [TestResult(abs_id, Status.FAIL, 1.0, "mismatch")]).to_dict()
        )
    )
    (tmp_path / "results" / "junk").mkdir()
    (tmp_path / "results" / "junk" / "result.json").write_text("{not json")
    bdir = tmp_path / "baselines"
    bdir.mkdir()
    before = baseline.record(
        None,
        "SM8650",
        [
            ShardResult.complete(
                Shard("x", "m", "SM8650", "htp", 1, (abs_id, add_id), "e" * 40),
                [TestResult(abs_id, Status.PASS), TestResult(add_id, Status.PASS)],
            )
        ],
        RunInfo("e" * 40, "2026-11-01T02:00:00Z"),
    )
    (bdir / "SM8650.json").write_text(before.to_json())
    issues = tmp_path / "issues.json"
    issues.write_text(
        json.dumps(
            [
                {
                    "number": 12,
                    "author": {"login": "app/github-actions", "is_bot": True},
                    "body": "<!-- qnn-nightly-issue -->\nold",
                }
            ]
        )
    )
    body = tmp_path / "issue.md"
    args = [
        "record",
        "--shards-file",
        str(shards),
        "--results-dir",
        str(tmp_path / "results"),
        "--baselines-dir",
        str(bdir),
        "--sha",
        sha,
        "--date",
        "2026-11-02T02:00:00Z",
        "--run-url",
        "https://github.com/o/r/actions/runs/2",
        "--issues-file",
        str(issues),
        "--issue-out",
        str(body),
    ]
    result = CliRunner().invoke(nightly_cli.nightly_group, args)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output.splitlines()[-1])
    assert out["action"] == "update" and out["issue"] == 12 and out["new_failures"] == 1
    assert "junk/result.json: ignored" in result.output
    after = baseline.loads((bdir / "SM8650.json").read_text())
    # The shard with no result file counts as INFRA, which is not a failure of the code.
    assert after.tests[abs_id] == (Status.PASS, Status.FAIL)
    assert after.tests[add_id] == (Status.PASS, Status.INFRA)
    text = body.read_text()
    assert (
        "test_qnn_backend_abs` | FAIL | PASS | mismatch" in text
        and "test_qnn_backend_add" not in text
    )

    # The report job re-run for the same night compares with the night before, not with
    # itself, and does not count the night twice.
    rerun = [a for a in args[:-1] if a not in ("--date", "2026-11-02T02:00:00Z")]
    again = CliRunner().invoke(nightly_cli.nightly_group, [*rerun, str(tmp_path / "again.md")])
    assert json.loads(again.output.splitlines()[-1])["action"] == "update"
    again_text = (tmp_path / "again.md").read_text()
    assert again_text.count("<!-- night https://github.com/o/r/actions/runs/2 -->") == 1
    assert again_text.count("test_qnn_backend_abs` | FAIL | PASS") == 1
    assert len(baseline.loads((bdir / "SM8650.json").read_text()).runs) == 2


def test_nightly_record_refuses_an_issue_list_that_is_not_a_list(tmp_path: Path) -> None:
    """A JSON object was iterated as its keys and ended in an AttributeError traceback."""
    sha = "d" * 40
    shard = Shard("sm8650-m-1", "m", "SM8650", "htp", 1126, (f"{FP}.test_qnn_backend_abs",), sha)
    shards = tmp_path / "shards.json"
    shards.write_text(json.dumps([shard.to_dict()]))
    (tmp_path / "r").mkdir()
    issues = tmp_path / "issues.json"
    args = ["record", "--shards-file", str(shards), "--results-dir", str(tmp_path / "r")]
    args += ["--baselines-dir", str(tmp_path / "b"), "--sha", sha]
    args += ["--issues-file", str(issues), "--issue-out", str(tmp_path / "issue.md")]
    for doc, needle in (
        ({"number": 12, "body": "x"}, "must be a JSON list of issues"),
        ([12], "entry 0 must be an object with a number"),
        ([{"number": "twelve"}], "entry 0: invalid literal"),
    ):
        issues.write_text(json.dumps(doc))
        result = CliRunner().invoke(nightly_cli.nightly_group, args)
        assert result.exit_code == 2, result.output
        assert f"{issues}: not a gh issue list: " in result.output and needle in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
    # The control: the list gh prints is read.
    issues.write_text(json.dumps([{"number": 12, "author": {"login": "x"}, "body": ""}]))
    assert CliRunner().invoke(nightly_cli.nightly_group, args).exit_code == 0
