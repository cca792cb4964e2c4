"""`qnn-migrate passes check` reports torch and torchao against qnn-passes' ranges too."""

from __future__ import annotations

from importlib import metadata

from click.testing import CliRunner

from qnn_migrate.cli import main
from qnn_migrate.passes_cli import stack_rows


def test_check_prints_torch_and_torchao_against_the_declared_ranges() -> None:
    result = CliRunner().invoke(main, ["passes", "check", "--backend", "htp"])
    assert result.exit_code == 0, result.output
    torch = metadata.version("torch")
    assert (
        f"torch {torch}: in the range qnn-passes is tested with (<2.14,>=2.13.0)" in result.stdout
    )
    assert (
        "torchao 0.18.0: in the range qnn-passes is tested with (<0.19,>=0.18.0)" in result.stdout
    )


def test_a_torch_outside_the_range_is_not_compatible() -> None:
    requires = ["torch<2.14,>=2.13.0", "executorch>=1.5.1", "torchao<0.19,>=0.18.0"]
    rows = stack_rows(requires, {"torch": "2.15.0", "torchao": "0.18.0"})
    assert [(name, ok) for name, _, _, ok in rows] == [("torch", False), ("torchao", True)]
    # Control: a local CPU build of a version in the range is in it.
    rows = stack_rows(requires, {"torch": "2.13.0+cpu", "torchao": "0.18.0"})
    assert all(ok for *_, ok in rows)
