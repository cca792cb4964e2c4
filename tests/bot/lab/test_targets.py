"""targets.py: the simulator target's host check, retry and environment (the phone target's
are in test_runner.py, through the runner against fake phones)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from qnn_migrate_tests.bot.lab.support import ABS, ADD, Lab, sim_settings, statuses

from qnn_migrate.bot.lab import attempt
from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.lab.settings import RunSettings
from qnn_migrate.bot.model import RunsOn, Status


def test_simulator_infra_is_counted_and_retried_once(lab: Lab) -> None:
    lab.scenario(tests={ADD: "hang"})
    settings = sim_settings(lab)
    result = Runner(settings).run(lab.shard(ABS, ADD, runs_on=RunsOn.SIMULATOR))
    assert statuses(result) == [Status.PASS, Status.INFRA]
    assert result.infra_reason and "per-test budget" in result.infra_reason
    assert result.attempts == 2
    attempts = json.loads((settings.out_dir / "attempts.json").read_text())
    assert [a["infra"] for a in attempts] == [1, 1]
    assert attempts[1]["tests"] == [ADD]
    assert (settings.out_dir / "attempt-2" / "junit.xml").is_file()


def test_simulator_host_check_failures_are_infra_with_the_fix(lab: Lab) -> None:
    settings = sim_settings(lab, qnn_executor_runner=str(lab.root / "not-built"))
    result = Runner(settings).run(lab.shard(ABS, runs_on=RunsOn.SIMULATOR))
    assert statuses(result) == [Status.INFRA]
    assert "backends/qualcomm/scripts/build.sh" in result.results[0].message
    assert lab.runs_log() == []  # no test process was started
    no_sdk = sim_settings(lab, qnn_sdk_root=str(lab.root / "empty"))
    result = Runner(no_sdk).run(lab.shard(ABS, runs_on=RunsOn.SIMULATOR))
    assert "libQnnHtp.so is missing" in result.results[0].message


def _simulator_run_as_the_harness_saw_it(lab: Lab) -> tuple[RunSettings, list[dict[str, str]]]:
    """A simulator shard's run, and the QNN_* variables the harness (the stand-in test script)
    was started with, one entry per run."""
    log = lab.root / "harness-env.jsonl"
    settings = sim_settings(lab)
    settings = replace(settings, env={**settings.env, "FAKE_QNN_ENV_LOG": str(log)})
    Runner(settings).run(lab.shard(ABS, runs_on=RunsOn.SIMULATOR))
    return settings, [json.loads(line) for line in log.read_text().splitlines()]


def _not_as_configured(settings: RunSettings, seen: dict[str, str]) -> list[str]:
    expected = {
        "QNN_EXECUTOR_RUNNER": settings.host.qnn_executor_runner,
        "QNN_SDK_ROOT": settings.host.qnn_sdk_root,
    }
    return [name for name, value in expected.items() if seen.get(name) != value]


def test_the_simulator_runner_path_reaches_the_harness(lab: Lab) -> None:
    settings, runs = _simulator_run_as_the_harness_saw_it(lab)
    assert len(runs) == 1
    assert settings.host.qnn_executor_runner and settings.host.qnn_sdk_root
    assert _not_as_configured(settings, runs[0]) == []


def test_control_a_runner_that_passes_another_path_is_caught(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = attempt.child_env

    def elsewhere(*args: Any, **kwargs: Any) -> dict[str, str]:
        return {**real(*args, **kwargs), "QNN_EXECUTOR_RUNNER": "/elsewhere/qnn_executor_runner"}

    monkeypatch.setattr(attempt, "child_env", elsewhere)
    settings, runs = _simulator_run_as_the_harness_saw_it(lab)
    assert len(runs) == 1
    assert _not_as_configured(settings, runs[0]) == ["QNN_EXECUTOR_RUNNER"]
