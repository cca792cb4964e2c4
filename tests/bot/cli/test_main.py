"""The offline CLI: `bot parse`, `bot plan`, and `matrix list|show|check|registry`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from qnn_migrate import cli as qnn_migrate
from qnn_migrate.bot.cli.main import bot, matrix

DELEGATE = (
    Path(__file__).resolve().parents[2]
    / ".venv/lib/python3.11/site-packages/executorch/backends/qualcomm/tests/test_qnn_delegate.py"
)


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
    assert "on-comment" in listed.output and "report" in listed.output


def test_matrix_list_and_show() -> None:
    runner = CliRunner()
    listed = runner.invoke(matrix, ["list"])
    assert listed.exit_code == 0
    assert "canonicalize_conv" in listed.output and " 16 tests" in listed.output
    assert "SM8850" in listed.output and "htp,gpu,lpai" in listed.output
    assert "no phone in the lab" in listed.output
    shown = runner.invoke(matrix, ["show", "convert_linear_to_conv2d"])
    assert shown.exit_code == 0 and "tests (11):" in shown.output
    assert "TestQNNQuantizedOperator.test_qnn_backend_linear_qat" in shown.output
    assert "--seed 1126 --backend htp" in shown.output
    soc = runner.invoke(matrix, ["show", "sm8850"])
    assert "lpai" in soc.output
    missing = runner.invoke(matrix, ["show", "canonicalize"])
    assert missing.exit_code == 2 and "did you mean canonicalize_conv" in missing.output
    assert runner.invoke(matrix, ["check"]).output.startswith("ok: 2 matrices")


def test_matrix_check_reports_a_broken_data_file(tmp_path: Path) -> None:
    src = Path(__file__).resolve().parents[2] / "bot"
    text = (
        (src / "matrices.toml")
        .read_text()
        .replace(
            "TestQNNQuantizedOperator.test_qnn_backend_linear_qat",
            "TestQNNQuantizedOperator.test_qnn_backend_linear_qta",
        )
    )
    (tmp_path / "matrices.toml").write_text(text)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test_registry.json").write_text(
        (src / "data" / "test_registry.json").read_text()
    )
    result = CliRunner().invoke(matrix, ["check", "--catalog", str(tmp_path / "matrices.toml")])
    assert result.exit_code == 2
    assert "linear_qta is not in the registry" in result.output and "did you mean" in result.output


def test_matrix_registry_regenerates_and_checks(tmp_path: Path) -> None:
    out = tmp_path / "registry.json"
    runner = CliRunner()
    wrote = runner.invoke(
        matrix, ["registry", "--from", str(DELEGATE), "--version", "1.5.1", "--out", str(out)]
    )
    assert wrote.exit_code == 0 and "564 tests in 12 classes" in wrote.output
    default = Path(__file__).resolve().parents[2] / "bot" / "data" / "test_registry.json"
    assert out.read_text() == default.read_text()
    checked = runner.invoke(
        matrix,
        ["registry", "--from", str(DELEGATE), "--version", "1.5.2", "--out", str(out), "--check"],
    )
    assert checked.exit_code == 1 and "out of date" in checked.output


def test_plan_prints_the_nightly_shards() -> None:
    result = CliRunner().invoke(bot, ["plan", "--nightly", "--sha", "f" * 40])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert {d["shard"]["soc"] for d in doc} == {"SM8550", "SM8650", "SM8750", "SM8850"}
    assert sum(len(d["shard"]["tests"]) for d in doc) == 4 * 27
    bad = CliRunner().invoke(bot, ["plan", "--matrix", "nope", "--sha", "f" * 40])
    assert bad.exit_code == 2 and "nope" in bad.output
