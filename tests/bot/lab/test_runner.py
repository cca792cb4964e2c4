"""runner.py and the phone target against fake phones: health, classification, retry, quarantine, locks, artifacts."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from qnn_migrate_tests.bot.lab.support import FP, QM, QO, Lab, make_checkout

from qnn_migrate.bot.lab import locks, quarantine
from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.lab.targets import DEVICE_WORKSPACE
from qnn_migrate.bot.model import RunsOn, Status


def statuses(result) -> dict[str, Status]:  # type: ignore[no-untyped-def]
    return {r.test_id: r.status for r in result.results}


def test_green_shard_records_command_artifacts_and_cleans_the_phone(lab: Lab) -> None:
    sdk = lab.root / "qairt" / "2.37.0.250724"
    sdk.mkdir(parents=True)
    (sdk / "sdk.yaml").write_text("name: qairt\nversion: 2.37.0.250724\n")
    settings = lab.settings(qnn_sdk_root=str(sdk))
    tests = (
        f"{FP}.test_qnn_backend_abs",
        f"{FP}.test_qnn_backend_add",
        f"{QO}.test_qnn_backend_abs",
    )
    result = Runner(settings).run(lab.shard(*tests))

    assert result.ok and result.ran == 3 and result.attempts == 1
    assert result.device == "PHONE_A"
    assert result.sdk_version == "2.37.0.250724"
    assert result.device_fingerprint and "PHONE_A" in result.device_fingerprint
    out = settings.out_dir
    art = out / "attempt-1" / "artifacts"
    assert list(result.command) == [
        settings.host.python,
        "backends/qualcomm/tests/test_qnn_delegate.py",
        *tests,
        "--build_folder",
        "build-android/",
        "--host",
        "localhost",
        "--device",
        "PHONE_A",
        "--soc_model",
        "SM8650",
        "--seed",
        "1126",
        "--backend",
        "htp",
        "--executorch_root",
        str(lab.checkout),
        "--artifact_dir",
        str(art),
    ]
    # The stand-in saw exactly that command line (through the wrapper).
    assert lab.argv_log()[-1][1:] == list(result.command)[2:]
    for name in (
        "junit.xml",
        "stdout.txt",
        "stderr.txt",
        "command.txt",
        "logcat.txt",
        "health.json",
    ):
        assert (out / "attempt-1" / name).is_file(), name
    assert "FakeAdb: logcat of PHONE_A" in (out / "attempt-1" / "logcat.txt").read_text()
    saved = json.loads((out / "result.json").read_text())
    assert [r["status"] for r in saved["results"]] == ["PASS"] * 3
    assert (out / "summary.txt").read_text().startswith("ran 3 of 3 expected tests, 3 passed")

    calls = lab.calls("PHONE_A")
    assert calls[0] == ["get-state"]
    assert ["shell", "getprop ro.soc.model"] in calls
    assert ["shell", "df -k /data/local/tmp"] in calls
    assert calls[-1] == ["shell", f"rm -rf {DEVICE_WORKSPACE}"]
    assert lab.calls("PHONE_B") == []
    # The lock is released: the phone can be locked again right away.
    fd = locks.try_lock(lab.state_dir, "PHONE_A")
    assert fd is not None
    locks.release(fd)


def test_fail_error_skip_and_typo_are_classified_and_never_retried(lab: Lab) -> None:
    lab.scenario(
        tests={
            f"{FP}.test_qnn_backend_add": "fail",
            f"{FP}.test_qnn_backend_conv2d": "error",
            f"{FP}.test_qnn_backend_relu": "skip",
        },
        class_errors={QM: "error"},
    )
    settings = lab.settings()
    shard = lab.shard(
        f"{FP}.test_qnn_backend_abs",
        f"{FP}.test_qnn_backend_add",
        f"{FP}.test_qnn_backend_conv2d",
        f"{FP}.test_qnn_backend_relu",
        f"{FP}.test_qnn_backend_typo",
        f"{QM}.test_qnn_backend_conv_relu",
    )
    result = Runner(settings).run(shard)
    assert statuses(result) == {
        f"{FP}.test_qnn_backend_abs": Status.PASS,
        f"{FP}.test_qnn_backend_add": Status.FAIL,
        f"{FP}.test_qnn_backend_conv2d": Status.ERROR,
        f"{FP}.test_qnn_backend_relu": Status.SKIP,
        f"{FP}.test_qnn_backend_typo": Status.MISSING,
        f"{QM}.test_qnn_backend_conv_relu": Status.MISSING,
    }
    by_id = {r.test_id: r for r in result.results}
    assert "output mismatch" in by_id[f"{FP}.test_qnn_backend_add"].message
    assert (
        "has no attribute 'test_qnn_backend_typo'" in by_id[f"{FP}.test_qnn_backend_typo"].message
    )
    assert (
        "setUpClass of TestQNNQuantizedModel failed"
        in by_id[f"{QM}.test_qnn_backend_conv_relu"].message
    )
    assert result.attempts == 1 and not (settings.out_dir / "attempt-2").exists()
    assert lab.calls("PHONE_B") == []
    assert quarantine.get(lab.state_dir, "PHONE_A") is None
    assert result.ran == 4 and result.expected == 6


def test_phone_dying_mid_run_is_infra_retried_once_on_another_phone(lab: Lab) -> None:
    lab.scenario(
        devices={
            "PHONE_A": {"soc": "SM8650", "dies_after_runs": 1},
            "PHONE_B": {"soc": "SM8650"},
        },
        tests={f"{FP}.test_qnn_backend_add": "fail"},
    )
    settings = lab.settings()
    tests = (
        f"{FP}.test_qnn_backend_abs",
        f"{FP}.test_qnn_backend_add",
        f"{FP}.test_qnn_backend_conv2d",
    )
    result = Runner(settings).run(lab.shard(*tests))

    # abs ran on A; A died on add (adb failed: INFRA), conv2d too; both retried on B,
    # where add fails for real. The FAIL comes from the retry, never from a silent rerun
    # of a FAIL: abs (PASS on A) was not rerun.
    assert statuses(result) == {
        f"{FP}.test_qnn_backend_abs": Status.PASS,
        f"{FP}.test_qnn_backend_add": Status.FAIL,
        f"{FP}.test_qnn_backend_conv2d": Status.PASS,
    }
    assert result.attempts == 2 and result.device == "PHONE_B" and result.infra_reason is None
    assert lab.argv_log()[-1][1:4] == [
        f"{FP}.test_qnn_backend_add",
        f"{FP}.test_qnn_backend_conv2d",
        "--build_folder",
    ]
    entry = quarantine.get(lab.state_dir, "PHONE_A")
    assert entry is not None and "adb command failed" in entry.reason
    assert quarantine.get(lab.state_dir, "PHONE_B") is None
    attempts = json.loads((settings.out_dir / "attempts.json").read_text())
    assert [(a["device"], a["infra"]) for a in attempts] == [("PHONE_A", 2), ("PHONE_B", 0)]


@pytest.mark.parametrize(
    ("device", "reason"),
    [
        ({"state": "offline"}, "PHONE_A is offline"),
        ({"state": "unauthorized"}, "PHONE_A is unauthorized: unlock the phone"),
        ({"state": "missing"}, "PHONE_A is missing"),
        ({"soc": "SM8550"}, "PHONE_A is a SM8550, but the shard is for SM8650"),
        (
            {"soc": "SM8650", "free_kb": 1024 * 100},
            "has 100 MB free on /data/local/tmp, needs 2048 MB",
        ),
        ({"soc": "", "props": {"ro.board.platform": "pineapple"}}, None),
    ],
    ids=["offline", "unauthorized", "missing", "wrong-soc", "low-space", "platform-fallback"],
)
def test_health_check_failures_are_infra_for_every_test(
    lab: Lab, device: dict[str, object], reason: str | None
) -> None:
    lab.scenario(devices={"PHONE_A": {"soc": "SM8650", **device}})
    settings = lab.settings(devices=lab.host().devices[:1])
    result = Runner(settings).run(
        lab.shard(f"{FP}.test_qnn_backend_abs", f"{FP}.test_qnn_backend_add")
    )
    if reason is None:
        assert result.ok
        return
    assert [r.status for r in result.results] == [Status.INFRA, Status.INFRA]
    assert result.infra_reason is not None and reason in result.infra_reason
    assert all(reason in r.message for r in result.results)
    assert not any(a and a[0] == "shell" and "qnn_executor_runner" in a[1] for a in lab.calls())
    assert lab.argv_log() == []  # no test ran
    entry = quarantine.get(lab.state_dir, "PHONE_A")
    assert entry is not None and reason in entry.reason
    assert any("no other SM8650 phone" in line for line in lab.logs)


def test_failed_health_check_retries_on_the_next_phone(lab: Lab) -> None:
    lab.scenario(devices={"PHONE_A": {"state": "offline"}, "PHONE_B": {"soc": "SM8650"}})
    result = Runner(lab.settings()).run(lab.shard(f"{FP}.test_qnn_backend_abs"))
    assert result.ok and result.device == "PHONE_B" and result.attempts == 2
    assert quarantine.get(lab.state_dir, "PHONE_A") is not None


def test_quarantined_phone_is_tried_last_and_released_by_a_passing_check(lab: Lab) -> None:
    quarantine.put(lab.state_dir, "PHONE_A", "adb command failed earlier")
    result = Runner(lab.settings()).run(lab.shard(f"{FP}.test_qnn_backend_abs"))
    assert result.device == "PHONE_B"
    assert quarantine.get(lab.state_dir, "PHONE_A") is not None  # untouched: not checked

    settings = lab.settings(out="out2", devices=lab.host().devices[:1])
    again = Runner(settings).run(lab.shard(f"{FP}.test_qnn_backend_abs"))
    assert again.ok and again.device == "PHONE_A"
    assert quarantine.get(lab.state_dir, "PHONE_A") is None
    assert any("back in rotation" in line for line in lab.logs)


def test_one_job_per_phone(lab: Lab) -> None:
    held = locks.try_lock(lab.state_dir, "PHONE_A")
    assert held is not None
    try:
        result = Runner(lab.settings()).run(lab.shard(f"{FP}.test_qnn_backend_abs"))
        assert result.ok and result.device == "PHONE_B"
        assert lab.calls("PHONE_A") == []

        settings = lab.settings(out="out2", devices=lab.host().devices[:1])
        busy = Runner(settings).run(lab.shard(f"{FP}.test_qnn_backend_abs"))
        assert [r.status for r in busy.results] == [Status.INFRA]
        assert busy.infra_reason is not None and "stayed busy for 60 s" in busy.infra_reason
        assert lab.clock.slept >= 60  # the wait passed on the lab's clock
    finally:
        locks.release(held)


def test_checkout_not_at_the_pinned_sha_is_refused(lab: Lab) -> None:
    result = Runner(lab.settings()).run(lab.shard(f"{FP}.test_qnn_backend_abs", sha="b" * 40))
    assert [r.status for r in result.results] == [Status.INFRA]
    assert result.attempts == 0
    assert result.infra_reason is not None
    assert f"is at {lab.sha[:12]}, but the shard is pinned to bbbbbbbbbbbb" in result.infra_reason
    assert lab.calls() == []


def test_hang_hits_the_per_test_budget_and_the_run_goes_on(lab: Lab) -> None:
    lab.scenario(tests={f"{FP}.test_qnn_backend_add": "hang"})
    settings = lab.settings(devices=lab.host().devices[:1])
    tests = (
        f"{FP}.test_qnn_backend_abs",
        f"{FP}.test_qnn_backend_add",
        f"{FP}.test_qnn_backend_conv2d",
    )
    result = Runner(settings).run(lab.shard(*tests))
    assert statuses(result) == {
        tests[0]: Status.PASS,
        tests[1]: Status.INFRA,
        tests[2]: Status.PASS,
    }
    assert "per-test budget of 60 s" in result.results[1].message
    assert quarantine.get(lab.state_dir, "PHONE_A") is not None


def test_a_slow_phone_times_out_and_the_tests_pass_on_a_fast_one(lab: Lab) -> None:
    # 70 s a model run: over the per-test budget (60 s), within the runner's (75 s).
    lab.scenario(devices={"PHONE_A": {"soc": "SM8650", "slow_s": 70}, "PHONE_B": {"soc": "SM8650"}})
    tests = (f"{FP}.test_qnn_backend_abs", f"{FP}.test_qnn_backend_add")
    result = Runner(lab.settings()).run(lab.shard(*tests))
    assert [r.status for r in result.results] == [Status.PASS, Status.PASS]
    assert (result.attempts, result.device) == (2, "PHONE_B")
    entry = quarantine.get(lab.state_dir, "PHONE_A")
    assert entry is not None and "per-test budget of 60 s" in entry.reason


def test_shard_timeout_stops_the_run_and_the_rest_is_infra(lab: Lab) -> None:
    lab.scenario(duration_s=30)
    settings = lab.settings(devices=lab.host().devices[:1])
    names = ("abs", "add", "conv2d", "linear", "relu", "cos", "sin", "tan")
    tests = tuple(f"{FP}.test_qnn_backend_{n}" for n in names)
    result = Runner(settings).run(lab.shard(*tests, timeout_s=100))
    got = [r.status for r in result.results]
    # 30 s a test: three finished in 100 s and passed; the fourth was running, and it and
    # every later one are INFRA.
    assert got == [Status.PASS] * 3 + [Status.INFRA] * 5
    infra = [r.message for r in result.results if r.status is Status.INFRA]
    assert all("timed out after the shard budget of 100 s" in m for m in infra)


def test_crash_of_a_test_is_missing_and_the_shard_goes_on(lab: Lab) -> None:
    """Each test in its own process (the default): a crash is that test's, not the shard's."""
    lab.scenario(tests={f"{FP}.test_qnn_backend_add": "crash"})
    settings = lab.settings(devices=lab.host().devices[:1])
    tests = (
        f"{FP}.test_qnn_backend_abs",
        f"{FP}.test_qnn_backend_add",
        f"{FP}.test_qnn_backend_conv2d",
    )
    result = Runner(settings).run(lab.shard(*tests))
    assert statuses(result) == {
        tests[0]: Status.PASS,
        tests[1]: Status.MISSING,
        tests[2]: Status.PASS,
    }
    assert (
        "TestProcessDied: the test's process was killed by signal 6 (SIGABRT)"
        in result.results[1].message
    )
    assert result.attempts == 1


def test_crash_of_the_test_process_is_missing_not_green(lab: Lab) -> None:
    """With ``fork_per_test = false`` (one process for the shard) the crash ends the run."""
    lab.scenario(tests={f"{FP}.test_qnn_backend_add": "crash"})
    settings = lab.settings(devices=lab.host().devices[:1], fork_per_test=False)
    tests = (
        f"{FP}.test_qnn_backend_abs",
        f"{FP}.test_qnn_backend_add",
        f"{FP}.test_qnn_backend_conv2d",
    )
    result = Runner(settings).run(lab.shard(*tests))
    assert statuses(result) == {
        tests[0]: Status.PASS,
        tests[1]: Status.MISSING,
        tests[2]: Status.MISSING,
    }
    assert "was running when the test process died: killed by SIGABRT" in result.results[1].message
    assert result.attempts == 1


def test_without_the_wrapper_the_verbose_text_is_parsed(lab: Lab) -> None:
    lab.scenario(
        tests={f"{FP}.test_qnn_backend_add": "fail", f"{FP}.test_qnn_backend_relu": "hang"}
    )
    settings = lab.settings(use_wrapper=False, devices=lab.host().devices[:1])
    tests = (
        f"{FP}.test_qnn_backend_abs",
        f"{FP}.test_qnn_backend_add",
        f"{FP}.test_qnn_backend_relu",
    )
    result = Runner(settings).run(lab.shard(*tests))
    assert statuses(result) == {
        tests[0]: Status.PASS,
        tests[1]: Status.FAIL,
        tests[2]: Status.INFRA,
    }
    # No wrapper, no per-test alarm: the runner's own budget (60 s plus 15 of grace) ends it.
    assert "no test started or finished for 75 s" in result.results[2].message
    assert not (settings.out_dir / "attempt-1" / "junit.xml").exists()
    assert result.command[-1] != "-v"  # the recorded command is the test's own


def test_falls_back_to_verbose_text_when_the_wrapper_cannot_drive_the_script(
    lab: Lab, tmp_path: Path
) -> None:
    text = (Path(__file__).parents[2] / "doubles" / "fake_test_qnn_delegate.py").read_text()
    text = text.replace("def setup_environment(", "def setup_env_renamed(").replace(
        "ut_args = setup_environment()", "ut_args = setup_env_renamed()"
    )
    checkout, sha = make_checkout(tmp_path / "other", text)
    settings = lab.settings(
        executorch_dir=str(checkout),
        devices=lab.host().devices[:1],
        env={"PYTHONPATH": str(checkout)},
    )
    result = Runner(settings).run(lab.shard(f"{FP}.test_qnn_backend_abs", sha=sha))
    assert result.ok
    assert (settings.out_dir / "attempt-1" / "fallback.txt").read_text().rstrip().endswith(" -v")
    assert any("cannot drive this script" in line for line in lab.logs)


def test_simulator_shard_needs_no_phone(lab: Lab) -> None:
    settings = replace(lab.settings(), host=lab.simulator_host())
    result = Runner(settings).run(lab.shard(f"{FP}.test_qnn_backend_abs", runs_on=RunsOn.SIMULATOR))
    assert result.ok and result.device is None
    assert "--enable_x86_64" in result.command
    assert "--device" not in result.command and "--host" not in result.command
    assert lab.calls() == []
    # The wrapper seeds each test with the seed the script gets (junit_wrapper --seed).
    (line,) = [ln for ln in lab.logs if "/junit_wrapper " in ln]
    wrapper_args = line.split("/junit_wrapper", 1)[1].split(" backends/", 1)[0]
    assert f" --seed {result.shard.seed} " in wrapper_args + " ", line


def test_a_test_process_that_cannot_start_is_infra_and_does_not_blame_the_phone(lab: Lab) -> None:
    settings = lab.settings(python=str(lab.root / "no-such-python"), devices=lab.host().devices[:1])
    result = Runner(settings).run(lab.shard(f"{FP}.test_qnn_backend_abs"))
    assert [r.status for r in result.results] == [Status.INFRA]
    assert "no-such-python" in result.results[0].message
    assert quarantine.get(lab.state_dir, "PHONE_A") is None


def test_no_phone_configured_is_refused_with_the_fix(lab: Lab) -> None:
    result = Runner(lab.settings(devices=())).run(lab.shard(f"{FP}.test_qnn_backend_abs"))
    assert result.attempts == 0 and result.infra_reason is not None
    assert "list it under [[devices]] in the host config" in result.infra_reason
