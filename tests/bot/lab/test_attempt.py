"""The test doubles and the runner against the real ExecuTorch sources (read, never imported).

The stand-in test script must accept exactly the flags of ExecuTorch's
``setup_environment()`` (``export_utils.setup_common_args_and_variables`` plus its own),
and every flag the runner passes must be one ExecuTorch knows; otherwise the doubles
would prove nothing about real runs. The installed executorch package is located with
``importlib.util.find_spec``, which does not execute it.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest
from qnn_migrate_tests.bot.lab.support import DOUBLES, command_builder

from qnn_migrate.bot.lab.attempt import script_argv
from qnn_migrate.bot.lab.host_config import HostConfig
from qnn_migrate.bot.lab.settings import TEST_SCRIPT, RunSettings
from qnn_migrate.bot.model import HostShard, RunsOn

pytestmark = pytest.mark.passes  # reads the installed ExecuTorch's sources


def executorch_root() -> Path:
    spec = importlib.util.find_spec("executorch")
    assert spec is not None and spec.submodule_search_locations, "executorch is not installed"
    return Path(next(iter(spec.submodule_search_locations)))


def flags(path: Path, function: str) -> set[str]:
    """Option strings passed to ``parser.add_argument`` inside ``function``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    (fn,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function]
    out = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            out |= {
                a.value
                for a in node.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            }
    return out


def real_flags() -> set[str]:
    root = executorch_root()
    return flags(
        root / "backends/qualcomm/export_utils.py", "setup_common_args_and_variables"
    ) | flags(root / TEST_SCRIPT, "setup_environment")


def test_the_stand_in_has_test_qnn_delegates_command_line() -> None:
    stand_in = DOUBLES / "fake_test_qnn_delegate.py"
    ours = flags(stand_in, "setup_common_args_and_variables") | flags(stand_in, "setup_environment")
    assert ours == real_flags()


def test_every_flag_the_runner_passes_is_one_executorch_knows() -> None:
    settings = RunSettings(
        host=HostConfig(), out_dir=Path("/nonexistent"), command=command_builder()
    )
    passed: set[str] = set()
    for where in RunsOn:
        shard = HostShard(
            "s",
            "m",
            "SM8650",
            "htp",
            1126,
            ("TestQNNFloatingPointOperator.test_qnn_backend_abs",),
            "a" * 40,
            runs_on=where,
            executorch_dir="/srv/executorch",
        )
        serial = "SERIAL" if where is RunsOn.PHONE else None
        argv = script_argv(shard, settings, serial, Path("/tmp/artifacts"))
        assert argv[1] == TEST_SCRIPT
        passed |= {w for w in argv if w.startswith("-")}
    assert passed <= real_flags(), passed - real_flags()
    assert {
        "--seed",
        "--soc_model",
        "--device",
        "--host",
        "--enable_x86_64",
        "--compile_only",
    } <= passed


def test_the_stand_in_has_the_real_test_classes() -> None:
    tree = ast.parse((executorch_root() / TEST_SCRIPT).read_text(encoding="utf-8"))
    real = {n.name for n in tree.body if isinstance(n, ast.ClassDef) and n.name.startswith("Test")}
    src = (DOUBLES / "fake_test_qnn_delegate.py").read_text(encoding="utf-8")
    stand_in = ast.literal_eval(
        src.split("CLASSES: dict[str, list[str]] = ", 1)[1].split("\n}\n", 1)[0] + "\n}"
    )
    assert set(stand_in) <= real
    # The adb failure the stand-in raises is the one SimpleADB raises.
    export_utils = (executorch_root() / "backends/qualcomm/export_utils.py").read_text(
        encoding="utf-8"
    )
    assert 'raise RuntimeError(f"adb command failed: {cmds}")' in export_utils
    assert 'raise RuntimeError(f"adb command failed: {cmds}")' in src
