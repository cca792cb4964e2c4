"""`qnn-migrate matrix list|show|check|registry` (bot/cli/matrix.py), offline."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from qnn_migrate_tests.bot.support import delegate_tests

from qnn_migrate.bot.cli.matrix import matrix


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
    assert runner.invoke(matrix, ["check"]).output.startswith("ok: 3 matrices")
    other = runner.invoke(matrix, ["show", "other_backends"])
    assert "runs on: the simulator tier only" in other.output
    assert "executorch.backends.xnnpack.test.ops.test_abs" in other.output
    assert "other_backends.py --module" in other.output and "--device" not in other.output


def test_matrix_check_reports_a_broken_data_file(tmp_path: Path) -> None:
    src = Path(__file__).resolve().parents[3] / "qnn_migrate" / "bot"
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


@pytest.mark.passes  # reads the installed ExecuTorch's harness
def test_matrix_registry_regenerates_and_checks(tmp_path: Path) -> None:
    out = tmp_path / "registry.json"
    runner = CliRunner()
    wrote = runner.invoke(
        matrix,
        ["registry", "--from", str(delegate_tests()), "--version", "1.5.1", "--out", str(out)],
    )
    assert wrote.exit_code == 0 and "564 tests in 12 classes" in wrote.output
    default = (
        Path(__file__).resolve().parents[3] / "qnn_migrate" / "bot" / "data" / "test_registry.json"
    )
    assert out.read_text() == default.read_text()
    checked = runner.invoke(
        matrix,
        [
            "registry",
            "--from",
            str(delegate_tests()),
            "--version",
            "1.5.2",
            "--out",
            str(out),
            "--check",
        ],
    )
    assert checked.exit_code == 1 and "out of date" in checked.output
