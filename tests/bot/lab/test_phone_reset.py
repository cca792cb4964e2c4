"""lab/phone_reset.py through the real runner and FakeAdb, whose phones keep processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from qnn_migrate_tests.bot.lab.support import ABS, ADD, Lab, statuses

from qnn_migrate.bot.lab import quarantine
from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.model import Status

ONE_PHONE: dict[str, Any] = {"PHONE_A": {"soc": "SM8650"}}


def phone(lab: Lab) -> dict[str, Any]:
    path = Path(f"{lab.scenario_path}.state") / "device-PHONE_A.json"
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def run(lab: Lab, out: str, *tests: str, **host: Any):  # type: ignore[no-untyped-def]
    settings = lab.settings(out, devices=lab.host().devices[:1], **host)
    result = Runner(settings).run(lab.shard(*tests))
    reset = json.loads((settings.out_dir / "attempt-1" / "phone-reset.json").read_text())
    return result, reset


def test_a_process_a_job_left_on_the_phone_is_killed_before_the_next_job(lab: Lab) -> None:
    """Job 1 leaves a shell-user process that rewrites the next run's outputs with the
    expected ones; job 2's failing test must read FAIL."""
    lab.scenario(ONE_PHONE, tests={ADD: "phone_daemon", ABS: "fail"})
    job1, reset1 = run(lab, "job1", ADD)
    assert statuses(job1) == [Status.PASS]
    killed = [n for n in reset1["after"]["notes"] if n.startswith("killed 1 shell process")]
    assert killed and "'sh'" in killed[0], reset1
    assert [p["name"] for p in phone(lab)["procs"]] == []

    job2, _ = run(lab, "job2", ABS)
    assert statuses(job2) == [Status.FAIL]
    assert "output mismatch" in job2.results[0].message


def test_control_a_phone_process_the_host_keeps_rewrites_the_next_jobs_outputs(lab: Lab) -> None:
    """The control: when the reset spares the process (the host keeps processes named `sh`,
    as the old reset kept every process), job 2's failing test reads PASS."""
    lab.scenario(ONE_PHONE, tests={ADD: "phone_daemon", ABS: "fail"})
    run(lab, "job1", ADD, keep_processes=("sh",))
    assert [p["name"] for p in phone(lab)["procs"]] == ["sh"]
    job2, _ = run(lab, "job2", ABS, keep_processes=("sh",))
    assert statuses(job2) == [Status.PASS]


def test_every_entry_a_job_left_in_tmp_is_removed_dot_files_and_odd_names_included(
    lab: Lab,
) -> None:
    lab.scenario(
        {
            "PHONE_A": {
                "soc": "SM8650",
                "packages": ["com.lab.keep", "com.evil.persist"],
                "tmp": ["keep.txt", "backdoor", ".hidden", "x;reboot", "..dots"],
                "processes": [{"user": "shell", "name": "logwatch"}],
            }
        }
    )
    result, reset = run(
        lab,
        "out",
        ABS,
        keep_packages=("com.lab.keep",),
        keep_tmp=("keep.txt",),
        keep_processes=("logwatch",),
    )
    assert statuses(result) == [Status.PASS]
    state = phone(lab)
    assert state["packages"] == ["com.lab.keep"]
    assert state["tmp"] == ["keep.txt"]
    assert [p["name"] for p in state["procs"]] == ["logwatch"], "a kept process was killed"
    before = " ".join(reset["before"]["notes"])
    assert "uninstalled com.evil.persist" in before
    for name in ("'backdoor'", "'.hidden'", "'x;reboot'", "'..dots'"):
        assert name in before, name
    assert reset["before"]["left"] == [] and reset["after"]["left"] == []
    # No name from the phone was ever handed back to its shell.
    shells = [call[1] for call in lab.calls() if call[0] == "shell"]
    assert not any("reboot" in c or "backdoor" in c or "hidden" in c for c in shells)


def test_a_phone_that_cannot_be_reset_runs_nothing_and_is_quarantined(lab: Lab) -> None:
    lab.scenario(
        {"PHONE_A": {"soc": "SM8650", "processes": [{"name": "stuck", "unkillable": True}]}}
    )
    settings = lab.settings("out", devices=lab.host().devices[:1])
    result = Runner(settings).run(lab.shard(ABS))
    assert statuses(result) == [Status.INFRA]
    assert "is not in its known state" in (result.infra_reason or "")
    assert "'stuck'" in (result.infra_reason or "")
    assert quarantine.get(lab.state_dir, "PHONE_A") is not None
    assert lab.runs_log() == [], "a test ran on a phone that was not reset"


def test_reboot_mode_reboots_after_the_run(lab: Lab) -> None:
    lab.scenario(ONE_PHONE, tests={ADD: "phone_daemon"})
    _, reset = run(lab, "out", ADD, phone_reset="reboot")
    assert "rebooted the phone" in reset["after"]["notes"]
    assert ["reboot"] in lab.calls("PHONE_A") and ["wait-for-device"] in lab.calls("PHONE_A")
    assert phone(lab)["procs"] == []
