"""What a try of run-shard on ExecuTorch's real harness found, and what a review found (D10).

Each test here failed before its fix: relative --out, the runner's own faults, host
capabilities, symlinks out of the results, a command line the harness rejects. The rest
live with the module they test: the watchdogs, unbounded output lines and processes left
behind (test_process.py), host kinds, backends, compile-only, the SDK version and an
executorch imported from elsewhere (test_preflight.py), the simulator path
(test_targets.py), the host config's kinds (test_host_config.py), the wrapper's exit code
4 (test_junit_wrapper.py) and a crash of the runner itself (cli/test_lab.py).
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from qnn_migrate_tests.bot.lab.support import ABS, ADD, Lab, sim_settings, statuses

from qnn_migrate.bot.lab import attempt, quarantine
from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.model import RunsOn, ShardResult, Status


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
    monkeypatch.setattr(attempt, "WRAPPER", stub)
    result = Runner(lab.settings(devices=lab.host().devices[:1])).run(lab.shard(ABS, ADD))
    assert statuses(result) == [Status.INFRA, Status.INFRA]
    assert "JUnit wrapper failed" in result.results[0].message
    assert "disk full" in result.results[0].message


def test_tests_the_host_cannot_run_are_skipped_with_the_hosts_reason(lab: Lab) -> None:
    settings = sim_settings(lab, unsupported_tests={ADD: "no etdump in this runner build"})
    result = Runner(settings).run(lab.shard(ABS, ADD, runs_on=RunsOn.SIMULATOR))
    assert statuses(result) == [Status.PASS, Status.SKIP]
    assert result.results[1].message == "not run on this host: no etdump in this runner build"
    assert [r.test_id for r in result.results] == [ABS, ADD]
    assert ADD not in lab.argv_log()[-1]


def test_symlinks_out_of_the_results_are_never_uploaded(lab: Lab) -> None:
    lab.scenario(tests={ABS: "symlink_out"})
    settings = lab.settings(devices=lab.host().devices[:1])
    Runner(settings).run(lab.shard(ABS))
    artifacts = settings.out_dir / "attempt-1" / "artifacts"
    assert not os.path.lexists(artifacts / "leak")
    assert os.path.islink(artifacts / "fine")  # points inside: kept
    assert any("removed attempt-1/artifacts/leak" in line for line in lab.logs)


def test_a_command_line_the_harness_rejects_quarantines_no_phone(lab: Lab) -> None:
    # What reached the script before device-matrix checked build_folder.
    result = Runner(lab.settings()).run(lab.shard(ABS, build_folder="--host=evil"))
    assert statuses(result) == [Status.INFRA]
    assert "SetupEnvironmentError" in result.results[0].message
    assert quarantine.get(lab.state_dir, "PHONE_A") is None
    assert quarantine.get(lab.state_dir, "PHONE_B") is None


def test_outputs_the_test_process_turned_into_fifos_never_stall_the_runner(lab: Lab) -> None:
    """PR code can replace junit.xml and the runner's stderr file with FIFOs (or links to
    /dev/zero) on its way out; the runner read them with a plain open, which waits for a
    writer for ever. Now they are refused: the run ends, its tests are not PASS.

    One process for the shard (``fork_per_test = false``): the double registers its poison
    with ``atexit`` inside the test, which a test's own child never runs (it leaves with
    ``os._exit``), so the default mode would not be poisoned this way."""
    lab.scenario(tests={ABS: "poison_outputs"})
    settings = lab.settings(devices=lab.host().devices[:1], fork_per_test=False)
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(Runner(settings).run(lab.shard(ABS))))
    worker.start()
    worker.join(timeout=120)
    if worker.is_alive():  # release the reader, so that the test fails instead of hanging
        for name in ("junit.xml", "stderr.txt"):
            for fifo in settings.out_dir.glob(f"attempt-*/{name}"):
                with contextlib.suppress(OSError):
                    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(timeout=30)
        pytest.fail("the runner waited on a FIFO the test process left")
    (result,) = done
    assert isinstance(result, ShardResult)
    assert statuses(result) != [Status.PASS]
    assert stat.S_ISFIFO(os.lstat(settings.out_dir / "attempt-1" / "junit.xml").st_mode)
