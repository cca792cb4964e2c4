"""process.py: the watched run's budgets, bounded output, and nothing left behind.

Through the runner where the claim is about a shard (budgets), directly where it is about
the supervisor (memory, reaping). Each test here failed before its fix."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

from qnn_migrate_tests.bot.lab.support import ABS, ADD, CONV, Hopper, Lab, git, statuses

from qnn_migrate.bot.lab.process import run_watched
from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.lab.settings import TEST_SCRIPT
from qnn_migrate.bot.model import Status


def test_harness_import_time_does_not_count_against_the_per_test_budget(lab: Lab) -> None:
    # 100 s: over the per-test budget and its grace (75 s), within the start-up budget (600 s).
    lab.scenario(import_delay_s=100)
    settings = lab.settings(devices=lab.host().devices[:1])
    result = Runner(settings).run(lab.shard(ABS, ADD))
    assert statuses(result) == [Status.PASS, Status.PASS]
    assert lab.clock.passed() == 100  # the import's time passed on the lab's clock


def test_a_slow_import_is_bounded_by_the_start_up_budget(lab: Lab) -> None:
    lab.scenario(import_delay_s=120)
    settings = lab.settings(devices=lab.host().devices[:1], startup_timeout_s=100)
    result = Runner(settings).run(lab.shard(ABS))
    assert statuses(result) == [Status.INFRA]
    assert "no test started within 100 s" in result.results[0].message


def test_each_hanging_subtest_is_interrupted_and_the_next_test_runs(lab: Lab) -> None:
    lab.scenario(tests={ADD: "hang_subtests"})
    settings = lab.settings(devices=lab.host().devices[:1])
    result = Runner(settings).run(lab.shard(ABS, ADD, CONV))
    assert statuses(result) == [Status.PASS, Status.INFRA, Status.PASS]
    assert "per-test budget of 60 s" in result.results[1].message
    # Each subtest was interrupted: the first after the budget, the others after the
    # alarm's refire; the runner's own budget (75 s) never ran out.
    assert 60 <= lab.clock.passed() < 75


def test_output_with_no_newline_is_read_in_bounded_pieces(lab: Lab) -> None:
    # The runner in a fresh process, so its peak memory is its own: 64 MiB with no newline.
    lab.scenario(tests={ABS: "megaline"})
    code = f"""
import resource, sys
from pathlib import Path
from qnn_migrate.bot.lab.process import run_watched
out = Path({str(lab.root / "mem")!r}); out.mkdir()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
argv = [sys.executable, {str(lab.checkout / TEST_SCRIPT)!r}, {ABS!r}, "--enable_x86_64"]
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


# ------------------------------------------------------------- what escapes the reaper


def test_a_process_that_re_execs_without_the_marker_and_keeps_forking_is_caught(
    lab: Lab, hopper: Hopper
) -> None:
    # Each generation of the hopper drops the run's marker, leaves the session and forks
    # its successor before exiting; it holds a lock as a PR's daemon holding a phone would.
    lock = lab.root / "phone.lock"
    out = lab.root / "hop"
    out.mkdir()
    outcome = run_watched(
        hopper.argv(lock),
        cwd=lab.root,
        env=lab.env(),
        out_dir=out,
        timeout_s=60,
        progress_budget_s=60,
    )
    assert hopper.started(), "the control: the hopper never ran"
    assert not hopper.alive(), "the hopper outlived the run"
    assert outcome.leftovers, "the reaper reported nothing it killed"
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if the hopper still holds it
    finally:
        os.close(fd)


def test_a_daemon_started_by_importing_executorch_is_reaped(lab: Lab, hopper: Hopper) -> None:
    # The import check runs the PR's executorch/__init__.py before any test: it is a
    # watched run too.
    init = lab.checkout / "executorch" / "__init__.py"
    init.write_text(
        "import subprocess\n"
        f"subprocess.Popen({hopper.argv()!r}, stdin=subprocess.DEVNULL,\n"
        "                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "import os, time\n"
        "for _ in range(1000):  # at most 10 s: then it hops, out of this process group\n"
        f"    if os.path.exists({str(hopper.heartbeat) + '.started'!r}):\n"
        "        break\n"
        "    time.sleep(0.01)\n"
    )
    git(lab.checkout, "commit", "-qam", "a daemon in executorch/__init__.py")
    shard = lab.shard(ABS, sha=git(lab.checkout, "rev-parse", "HEAD"))
    # The stand-in harness never imports executorch: only the import check runs the daemon.
    settings = lab.settings(devices=lab.host().devices[:1])
    result = Runner(settings).run(shard)
    assert statuses(result) == [Status.PASS]
    assert hopper.started(), "the control: the daemon never ran"
    assert not hopper.alive(), "a daemon started by the import check outlived the shard"
    assert "killed" in (settings.out_dir / "import-check" / "stderr.txt").read_text()
