"""targets.py: the simulator target's host check, retry and environment (the phone target's
are in test_runner.py, through the runner against fake phones)."""

from __future__ import annotations

import json

from qnn_migrate.bot.lab import settings as settings_mod
from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.model import Status

from .support import ABS, ADD, Lab, sim_settings, statuses


def test_simulator_infra_is_counted_and_retried_once(lab: Lab) -> None:
    lab.scenario(tests={ADD: "hang"})
    settings = sim_settings(lab)
    result = Runner(settings).run(lab.shard(ABS, ADD, enable_x86_64=True, per_test_timeout_s=1))
    assert statuses(result) == [Status.PASS, Status.INFRA]
    assert result.infra_reason and "per-test budget" in result.infra_reason
    assert result.attempts == 2
    attempts = json.loads((settings.out_dir / "attempts.json").read_text())
    assert [a["infra"] for a in attempts] == [1, 1]
    assert attempts[1]["tests"] == [ADD]
    assert (settings.out_dir / "attempt-2" / "junit.xml").is_file()


def test_simulator_host_check_failures_are_infra_with_the_fix(lab: Lab) -> None:
    settings = sim_settings(lab, qnn_executor_runner=str(lab.root / "not-built"))
    result = Runner(settings).run(lab.shard(ABS, enable_x86_64=True))
    assert statuses(result) == [Status.INFRA]
    assert "backends/qualcomm/scripts/build.sh" in result.results[0].message
    assert lab.runs_log() == []  # no test process was started
    no_sdk = sim_settings(lab, qnn_sdk_root=str(lab.root / "empty"))
    result = Runner(no_sdk).run(lab.shard(ABS, enable_x86_64=True))
    assert "libQnnHtp.so is missing" in result.results[0].message


def test_the_simulator_runner_path_reaches_the_harness(lab: Lab) -> None:
    settings = sim_settings(lab)
    Runner(settings).run(lab.shard(ABS, enable_x86_64=True))
    assert lab.runs_log()  # ran; the environment is checked through the runner's own builder
    env = settings_mod.child_env(settings)
    assert env["QNN_EXECUTOR_RUNNER"] == settings.host.qnn_executor_runner
    assert env["QNN_SDK_ROOT"] == settings.host.qnn_sdk_root
