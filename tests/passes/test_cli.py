"""`qnn-migrate passes order`: the solved pass order on the command line."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from qnn_migrate.cli import main
from qnn_passes import pipeline


@pytest.mark.parametrize("backend", ["htp", "gpu", "lpai"])
def test_order_prints_the_solved_active_passes(backend: str) -> None:
    result = CliRunner().invoke(main, ["passes", "order", "--backend", backend])
    assert result.exit_code == 0, result.output
    # stdout alone: the first import of the torch stack may log to stderr (torchao does).
    lines = result.stdout.splitlines()
    solved = pipeline.plan(backend)
    listed = [line.split(". ", 1)[1].split()[0] for line in lines[1:-1]]
    assert listed == [p.name for p in solved.active]
    assert lines[-1].split()[1] == "LiftQnnConstants"
    assert (
        "replaces executorch.backends.qualcomm._passes.canonicalize_conv.CanonicalizeConv"
        in result.output
    )


def test_order_all_lists_inactive_passes_too() -> None:
    result = CliRunner().invoke(main, ["passes", "order", "--all", "--convert-linear-to-conv2d"])
    assert result.exit_code == 0, result.output
    assert "TagQuantIO  [off]" in result.output
    assert "ConvertLinearToConv2d  [qnn_passes" in result.output
    assert "ConvertBmmToMatmul  [off]" in result.output
