"""rules/lower_to_qnn/command.py: the rule as a libcst ``CodemodCommand`` gives our output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from qnn_migrate.codemods.engine import rewrite_code

ROOT = Path(__file__).resolve().parents[4]


def test_libcst_tool_runs_the_same_rule(tmp_path: Path) -> None:
    """The rule is a libcst CodemodCommand: `python -m libcst.tool codemod` gives our output."""
    source = (ROOT / "examples" / "lowering_utils.py").read_text()
    path = tmp_path / "lowering_utils.py"
    path.write_text(source)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "libcst.tool",
            "codemod",
            "-x",
            "qnn_migrate.codemods.rules.lower_to_qnn.RewriteLowerToQnn",
            "--no-format",
            "--hide-progress",
            str(path),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert path.read_text() == rewrite_code(source).code
