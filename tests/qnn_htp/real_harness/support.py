"""An x86-simulator runner host over ExecuTorch 1.5.1's wheel, and `bot run-shard` on it.

The host of tests/qnn_htp/test_scenario_real_harness.py and test_scenario_other_backends.py: the wheel's
``executorch`` package hard-linked into a git repository (never written to), first on
``PYTHONPATH``; the real-QNN tier's SDK; the host's ``python`` is python_wrapper.py (the
ABI bridge, and the switches that make a run go wrong on purpose); the native runner is
the tier's QnnExecutorRunnerDouble.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from qnn_migrate_tests.bot.lab.support import GIT_ENV
from qnn_migrate_tests.qnn_htp.sdk import QnnSdk, SdkUnavailableError, ensure_sdk

from qnn_migrate.bot.cli.main import bot
from qnn_migrate.bot.model import Shard

TESTS = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def sdk_or_fail(who: str) -> QnnSdk:
    """The real-QNN tier's SDK; without it ``who`` fails (the simulator host runs QNN)."""
    try:
        return ensure_sdk()
    except SdkUnavailableError as exc:
        pytest.fail(f"{who} needs the real-QNN tier's SDK: {exc}")


def make_host(root: Path, sdk: QnnSdk) -> dict[str, Any]:
    """The host's config (TOML fields) and its checkout's commit, under ``root``."""
    import executorch

    package = Path(next(iter(executorch.__path__)))
    parent = root / "checkout"
    checkout = parent / "executorch"
    parent.mkdir()
    subprocess.run(["cp", "-al", str(package), str(checkout)], check=True)
    env = {**os.environ, **GIT_ENV}
    git = ["git", "-C", str(checkout)]
    subprocess.run([*git, "init", "-q"], check=True, env=env)
    # Only the harness is tracked: rev-parse needs a commit, not the 130 MB tree.
    subprocess.run(
        [*git, "add", "backends/qualcomm/tests/test_qnn_delegate.py"], check=True, env=env
    )
    subprocess.run([*git, "commit", "-q", "-m", "executorch 1.5.1"], check=True, env=env)
    sha = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, env=env, capture_output=True, text=True
    ).stdout.strip()
    python = root / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{HERE / "python_wrapper.py"}" "$@"\n')
    python.chmod(0o755)
    runner = root / "qnn_executor_runner"
    target = TESTS / "doubles" / "qnn_executor_runner_double.py"
    runner.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{target}" "$@"\n')
    runner.chmod(0o755)
    qnn_env = sdk.environment()
    pythonpath = os.pathsep.join(
        [str(parent), str(TESTS / "support"), str(TESTS / "doubles" / "import_standins")]
    )
    return {
        "root": root,
        "sha": sha,
        "config": {
            "kind": "x86-simulator",
            "executorch_dir": str(checkout),
            "python": str(python),
            "qnn_sdk_root": qnn_env["QNN_SDK_ROOT"],
            "qnn_executor_runner": str(runner),
            "build_folder": str(root / "build-x86"),
            "state_dir": str(root / "state"),
            "lifetime": "ephemeral",
            "isolation": "none",
            "min_free_mb": 512,
            "startup_timeout_s": 600.0,
            "env": {
                "PYTHONPATH": pythonpath,
                "QNN_STAGING_DIR": qnn_env["QNN_STAGING_DIR"],
                "LD_LIBRARY_PATH": qnn_env["LD_LIBRARY_PATH"],
            },
        },
    }


def toml_of(config: dict[str, Any]) -> str:
    lines, tables = [], []
    for key, value in config.items():
        if isinstance(value, dict):
            tables.append(
                f"[{key}]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in value.items())
            )
        else:
            lines.append(f"{key} = {json.dumps(value)}\n")
    return "".join(lines) + "".join(tables)


def run_shard(
    host: dict[str, Any],
    shard: Shard,
    results: Path,
    env: dict[str, str] | None = None,
    **config_changes: Any,
) -> Path:
    """`bot run-shard` of ``shard`` on the host into ``results`` (``env``: added to the test
    process's; ``config_changes``: host-config keys replaced); the shard's result folder."""
    root = Path(host["root"])
    config = {
        **host["config"],
        **config_changes,
        "env": {**host["config"]["env"], **(env or {})},
    }
    (root / f"{shard.id}.toml").write_text(toml_of(config))
    (root / f"{shard.id}.json").write_text(json.dumps(shard.to_dict()))
    out = results / f"qnn-result-{shard.id}"
    ran = CliRunner().invoke(
        bot,
        [
            "run-shard",
            "--shard",
            str(root / f"{shard.id}.json"),
            "--host-config",
            str(root / f"{shard.id}.toml"),
            "--out",
            str(out),
        ],
        env={"QNN_SDK_ROOT": ""},
        catch_exceptions=False,
    )
    assert ran.exit_code in (0, 1), ran.output
    return out


def statuses(out: Path) -> dict[str, tuple[str, str]]:
    """Each test's status and message in the shard's result.json."""
    doc = json.loads((out / "result.json").read_text())
    return {r["test_id"]: (r["status"], r["message"]) for r in doc["results"]}


# ------------------------------------------------- the harness run as the runner runs it

SEED = 1126


def seed_tests() -> list[str]:
    """The seed's 27 tests (the test ids of ``qnn_migrate/bot/matrices.toml``), in order."""
    import tomllib

    data = tomllib.loads((TESTS.parent / "qnn_migrate" / "bot" / "matrices.toml").read_text())
    # ``modules`` makes a matrix an other-backends one (bot/catalog.py): not QNN's harness.
    return [t for m in data["matrices"].values() if "modules" not in m for t in m["tests"]]


def harness_env(sdk: QnnSdk, **extra: str) -> dict[str, str]:
    """The environment of a harness run: the SDK's, the tests' doubles on the path, ``extra``."""
    env = {
        **os.environ,
        **sdk.environment(),
        "PYTHONPATH": os.pathsep.join(
            [str(TESTS / "support"), str(TESTS / "doubles" / "import_standins")]
        ),
        **extra,
    }
    env.pop("QNN_EXECUTOR_RUNNER", None)  # the build folder's runner, not one from outside
    return env


def x86_build(root: Path) -> Path:
    """A build folder whose native runner is the tier's QnnExecutorRunnerDouble."""
    from qnn_migrate_tests.qnn_htp import harness

    build = root / "build-x86"
    runner = build / harness.RUNNER
    runner.parent.mkdir(parents=True)
    runner.write_text(
        "#!/bin/sh\n# QnnExecutorRunnerDouble: the native x86 qnn_executor_runner's stand-in.\n"
        f'exec "{sys.executable}" "{harness.DOUBLES / "qnn_executor_runner_double.py"}" "$@"\n'
    )
    runner.chmod(0o755)
    (build / "lib").mkdir()
    return build


def wrapper_argv(
    tests: list[str],
    out: Path,
    build: Path,
    *,
    programs: bool = True,
    fork_per_test: bool = True,
    compile_only: bool = True,
) -> list[str]:
    """ExecuTorch 1.5.1's harness under the runner's JUnit wrapper, with the flags `bot
    run-shard` gives it (``--seed``, ``--programs``, ``--fork-per-test``), on the host's
    ``python`` (python_wrapper.py, the ABI bridge). ``compile_only``: lower and fingerprint,
    do not run (`bot run-shard` refuses it: in 1.5.1 every test then errors in
    ``verify_output`` after lowering, so outputs are not fingerprinted)."""
    import executorch

    from qnn_migrate.bot.lab import attempt

    script = Path(next(iter(executorch.__path__))) / "backends/qualcomm/tests/test_qnn_delegate.py"
    return [
        sys.executable,
        str(HERE / "python_wrapper.py"),
        str(attempt.WRAPPER),
        "--junit-xml",
        str(out / "junit.xml"),
        *(["--programs", str(out / "programs.json")] if programs else []),
        "--seed",
        str(SEED),
        *(["--fork-per-test"] if fork_per_test else []),
        str(script),
        *tests,
        *("--soc_model", "SM8650", "--backend", "htp", "--seed", str(SEED)),
        *("--build_folder", str(build), "--artifact_dir", str(out / "artifacts")),
        "--compile_only" if compile_only else "--enable_x86_64",
    ]
