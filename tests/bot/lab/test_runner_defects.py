"""What a try of run-shard on ExecuTorch's real harness found, and what a review found (D10).

Each test here failed before its fix: relative --out, the runner's own faults, the
watchdog and start-up time, subtests and a one-shot alarm, the simulator path (infra_reason,
retry, host checks), host capabilities, compile-only, the SDK version, unbounded output
lines, processes left behind, symlinks out of the results, and an executorch imported
from somewhere other than the checkout. Three more live with the module they test: the host
config's kinds (test_host_config.py), the wrapper's exit code 4 when it cannot write the XML
(test_junit_wrapper.py) and a crash of the runner itself (cli/test_lab.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from qnn_migrate.bot.lab import quarantine, runner
from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.model import Status

from .support import FP, QO, Lab

ABS = f"{FP}.test_qnn_backend_abs"
ADD = f"{FP}.test_qnn_backend_add"
CONV = f"{FP}.test_qnn_backend_conv2d"


def statuses(result) -> list[Status]:  # type: ignore[no-untyped-def]
    return [r.status for r in result.results]


def sim_settings(lab: Lab, **host: object):  # type: ignore[no-untyped-def]
    return replace(lab.settings(), host=lab.simulator_host(**host))


# ------------------------------------------------------------------ paths and faults


def test_a_relative_out_dir_is_made_absolute_for_the_child(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = lab.root / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    settings = replace(lab.settings(), out_dir=Path("qnn-shard-out"))
    result = Runner(settings).run(lab.shard(ABS, ADD))
    assert statuses(result) == [Status.PASS, Status.PASS]
    command = list(result.command)
    artifact_dir = command[command.index("--artifact_dir") + 1]
    assert Path(artifact_dir).is_absolute()
    assert (elsewhere / "qnn-shard-out" / "attempt-1" / "junit.xml").is_file()


def test_a_fault_of_the_runners_own_wrapper_is_infra_never_missing(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    stub = lab.root / "StubFaultyWrapper.py"  # a double of a wrapper that breaks at once
    stub.write_text(
        "import sys\nprint('junit_wrapper: could not write junit.xml: disk full', "
        "file=sys.stderr)\nsys.exit(4)\n"
    )
    monkeypatch.setattr(runner, "WRAPPER", stub)
    result = Runner(lab.settings(devices=lab.host().devices[:1])).run(lab.shard(ABS, ADD))
    assert statuses(result) == [Status.INFRA, Status.INFRA]
    assert "JUnit wrapper failed" in result.results[0].message
    assert "disk full" in result.results[0].message


# ------------------------------------------------------------------------- watchdogs


def test_harness_import_time_does_not_count_against_the_per_test_budget(lab: Lab) -> None:
    lab.scenario(import_delay_s=3.0)
    settings = lab.settings(devices=lab.host().devices[:1])
    result = Runner(settings).run(lab.shard(ABS, ADD, per_test_timeout_s=1))
    assert statuses(result) == [Status.PASS, Status.PASS]


def test_a_slow_import_is_bounded_by_the_start_up_budget(lab: Lab) -> None:
    lab.scenario(import_delay_s=30.0)
    settings = lab.settings(devices=lab.host().devices[:1], startup_timeout_s=1.0)
    started = time.monotonic()
    result = Runner(settings).run(lab.shard(ABS, per_test_timeout_s=1))
    assert time.monotonic() - started < 20
    assert statuses(result) == [Status.INFRA]
    assert "no test started within" in result.results[0].message


def test_each_hanging_subtest_is_interrupted_and_the_next_test_runs(lab: Lab) -> None:
    lab.scenario(tests={ADD: "hang_subtests"})
    settings = lab.settings(devices=lab.host().devices[:1])
    started = time.monotonic()
    result = Runner(settings).run(lab.shard(ABS, ADD, CONV, per_test_timeout_s=1))
    assert statuses(result) == [Status.PASS, Status.INFRA, Status.PASS]
    assert "per-test budget of 1 s" in result.results[1].message
    assert time.monotonic() - started < 30


# ---------------------------------------------------------------------- the simulator


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
    env = runner._child_env(settings)
    assert env["QNN_EXECUTOR_RUNNER"] == settings.host.qnn_executor_runner
    assert env["QNN_SDK_ROOT"] == settings.host.qnn_sdk_root


def test_shards_go_only_to_hosts_of_their_kind(lab: Lab) -> None:
    on_phones = Runner(lab.settings()).run(lab.shard(ABS, enable_x86_64=True))
    assert statuses(on_phones) == [Status.INFRA] and on_phones.attempts == 0
    assert "simulator shards run on hosts with kind" in (on_phones.infra_reason or "")
    on_sim = Runner(sim_settings(lab)).run(lab.shard(ABS))
    assert statuses(on_sim) == [Status.INFRA] and on_sim.attempts == 0
    assert "has no phones" in (on_sim.infra_reason or "")
    assert lab.runs_log() == [] and lab.calls() == []


def test_a_backend_the_host_cannot_run_is_infra_not_the_prs_fault(lab: Lab) -> None:
    result = Runner(sim_settings(lab)).run(lab.shard(ABS, enable_x86_64=True, backend="gpu"))
    assert statuses(result) == [Status.INFRA]
    assert "does not run on x86-64" in result.results[0].message
    assert "not the change's" in result.results[0].message


def test_tests_the_host_cannot_run_are_skipped_with_the_hosts_reason(lab: Lab) -> None:
    settings = sim_settings(lab, unsupported_tests={ADD: "no etdump in this runner build"})
    result = Runner(settings).run(lab.shard(ABS, ADD, enable_x86_64=True))
    assert statuses(result) == [Status.PASS, Status.SKIP]
    assert result.results[1].message == "not run on this host: no etdump in this runner build"
    assert [r.test_id for r in result.results] == [ABS, ADD]
    assert ADD not in lab.argv_log()[-1]


def test_compile_only_is_refused_with_the_upstream_reason(lab: Lab) -> None:
    result = Runner(sim_settings(lab)).run(lab.shard(ABS, compile_only=True, enable_x86_64=True))
    assert statuses(result) == [Status.INFRA] and result.attempts == 0
    assert "verify_output" in (result.infra_reason or "")
    assert lab.runs_log() == []


def test_sdk_version_comes_from_the_library_or_says_unknown_and_why(lab: Lab) -> None:
    result = Runner(sim_settings(lab)).run(lab.shard(ABS, enable_x86_64=True))
    assert result.sdk_version == "2.51.0.260929181845 (from libQnnHtp.so; no sdk.yaml)"
    assert runner.sdk_version(None).startswith("unknown (qnn_sdk_root is not set")
    empty = lab.root / "empty-sdk"
    empty.mkdir()
    assert runner.sdk_version(str(empty)).startswith(f"unknown (no sdk.yaml in {empty}")


# ------------------------------------------------------------------------------- D10


def test_output_with_no_newline_is_read_in_bounded_pieces(lab: Lab) -> None:
    # The runner in a fresh process, so its peak memory is its own: 64 MiB with no newline.
    lab.scenario(tests={ABS: "megaline"})
    code = f"""
import resource, sys
from pathlib import Path
from qnn_migrate.bot.lab.runner import run_watched
out = Path({str(lab.root / "mem")!r}); out.mkdir()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
argv = [sys.executable, {str(lab.checkout / runner.TEST_SCRIPT)!r}, {ABS!r}, "--enable_x86_64"]
env = {lab.env()!r}
outcome = run_watched(argv, cwd=Path({str(lab.checkout)!r}), env=env, out_dir=out,
                      timeout_s=60, progress_budget_s=60)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) // 1024, (out / "stdout.txt").stat().st_size)
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    grown_mb, logged = map(int, proc.stdout.split())
    assert logged >= 64 * 1024 * 1024
    assert grown_mb < 32, f"the runner grew by {grown_mb} MB reading one 64 MiB line"


def test_a_daemon_left_by_the_tests_is_killed_when_the_shard_ends(lab: Lab) -> None:
    pid_file = lab.root / "daemon.pid"
    lab.scenario(tests={ABS: "daemon"}, daemon_pid_file=str(pid_file))
    result = Runner(lab.settings(devices=lab.host().devices[:1])).run(lab.shard(ABS))
    assert statuses(result) == [Status.PASS]
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    assert not _alive(pid), f"daemon {pid} outlived its shard"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_symlinks_out_of_the_results_are_never_uploaded(lab: Lab) -> None:
    lab.scenario(tests={ABS: "symlink_out"})
    settings = lab.settings(devices=lab.host().devices[:1])
    Runner(settings).run(lab.shard(ABS))
    artifacts = settings.out_dir / "attempt-1" / "artifacts"
    assert not os.path.lexists(artifacts / "leak")
    assert os.path.islink(artifacts / "fine")  # points inside: kept
    assert any("removed attempt-1/artifacts/leak" in line for line in lab.logs)


def test_an_executorch_imported_from_outside_the_checkout_is_refused(lab: Lab) -> None:
    other = lab.root / "another-jobs-checkout"
    (other / "executorch").mkdir(parents=True)
    (other / "executorch" / "__init__.py").write_text("")
    settings = lab.settings(env={"PYTHONPATH": str(other)})
    result = Runner(settings).run(lab.shard(ABS, f"{QO}.test_qnn_backend_abs"))
    assert statuses(result) == [Status.INFRA, Status.INFRA] and result.attempts == 0
    assert f"import executorch from {other.resolve()}" in (result.infra_reason or "")
    assert lab.runs_log() == []


def test_a_namespace_executorch_counts_where_its_first_portion_is(lab: Lab) -> None:
    # The wheel's executorch is a namespace package: its submodules come from the first
    # portion on sys.path, so that portion must be the checkout's.
    (lab.checkout / "executorch" / "__init__.py").unlink()
    other = lab.root / "site-packages"
    (other / "executorch").mkdir(parents=True)
    first = lab.settings(env={"PYTHONPATH": f"{lab.checkout}{os.pathsep}{other}"})
    assert Runner(first).run(lab.shard(ABS)).ok
    last = lab.settings(env={"PYTHONPATH": f"{other}{os.pathsep}{lab.checkout}"})
    refused = Runner(last).run(lab.shard(ABS))
    assert refused.attempts == 0 and "import executorch from" in (refused.infra_reason or "")


def test_a_command_line_the_harness_rejects_quarantines_no_phone(lab: Lab) -> None:
    # What reached the script before device-matrix checked build_folder.
    result = Runner(lab.settings()).run(lab.shard(ABS, build_folder="--host=evil"))
    assert statuses(result) == [Status.INFRA]
    assert "SetupEnvironmentError" in result.results[0].message
    assert quarantine.get(lab.state_dir, "PHONE_A") is None
    assert quarantine.get(lab.state_dir, "PHONE_B") is None
