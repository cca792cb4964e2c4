"""The offline commands of `qnn-migrate bot` (bot/cli/main.py): `bot parse`, `bot plan`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from qnn_migrate import cli as qnn_migrate
from qnn_migrate.bot.cli.main import bot


def test_parse_prints_json_or_the_error() -> None:
    runner = CliRunner()
    ok = runner.invoke(bot, ["parse"], input="/qnn test canonicalize_conv --soc SM8750\n")
    assert ok.exit_code == 0
    doc = json.loads(ok.output)
    assert doc["matrices"] == ["canonicalize_conv"] and doc["socs"] == ["SM8750"]
    assert doc["canonical"] == "/qnn test canonicalize_conv --soc SM8750 --backend htp --seed 1126"
    bad = runner.invoke(bot, ["parse"], input="/qnn test conv;id\n")
    assert bad.exit_code == 2 and "characters other than" in bad.output
    none = runner.invoke(bot, ["parse"], input="just a review comment\n")
    assert none.exit_code == 0 and none.output.strip() == "null"


def test_the_top_level_command_reaches_the_bot_groups() -> None:
    runner = CliRunner()
    result = runner.invoke(qnn_migrate.main, ["bot", "parse"], input="/qnn help")
    assert result.exit_code == 0 and '"action": "help"' in result.output
    listed = runner.invoke(qnn_migrate.main, ["bot", "--help"])
    assert "on-event" in listed.output and "report" in listed.output
    assert "on-comment" not in listed.output  # no alias that no workflow calls


def test_plan_prints_the_nightly_shards() -> None:
    result = CliRunner().invoke(bot, ["plan", "--nightly", "--sha", "f" * 40])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert {d["shard"]["soc"] for d in doc} == {"SM8550", "SM8650", "SM8750", "SM8850"}
    assert sum(len(d["shard"]["tests"]) for d in doc) == 4 * 27
    bad = CliRunner().invoke(bot, ["plan", "--matrix", "nope", "--sha", "f" * 40])
    assert bad.exit_code == 2 and "nope" in bad.output


def test_on_event_takes_the_events_of_the_table_only(tmp_path: Path) -> None:
    from qnn_migrate.bot.pr.router import EVENTS

    event = tmp_path / "event.json"
    event.write_text("{}")
    args = ["on-event", "--event-name", "push", "--event-path", str(event)]
    result = CliRunner().invoke(bot, args, env={"GITHUB_TOKEN": "", "GITHUB_REPOSITORY": ""})
    assert result.exit_code == 2
    assert "'push': the bot handles issue_comment, pull_request, pull_request_target" in (
        result.output
    )
    # Control: a name of the table gets past the name and stops at the next thing missing.
    assert set(EVENTS) == {"issue_comment", "pull_request", "pull_request_target"}
    args[2] = "pull_request"
    result = CliRunner().invoke(bot, args, env={"GITHUB_TOKEN": "", "GITHUB_REPOSITORY": ""})
    assert result.exit_code != 0 and "the bot handles" not in result.output
