"""Attack: PR code kills the supervisor and leaves a daemon for the next job (issue 27).

Job 1's PR code (its ``executorch/__init__.py``, run by the import check) starts a daemon
that drops every marker (``QNN_SHARD_RUN_ID``, ``RUNNER_TRACKING_ID``: its environment is
empty), SIGKILLs its supervisor (``bot run-shard``: no reaping, no after-check), and waits
for job 2's ``result.json`` to rewrite it to PASS. Job 2 (a real regression: its failing
test must read FAIL) runs next on the same host.

- The control, the old single-user arrangement (``isolation = "none"``): the daemon kills
  run-shard, survives it, and job 2's failing test reads PASS.
- Two users: the daemon, a job user's process, cannot kill the supervisor (it says so); the
  test then kills the supervisor itself (a runner that crashed, a job cancelled) with the
  daemon alive. Job 2 gets the same job user: before any of its code runs, the host ends
  every process of that uid, says what it ended (``host-check.json``), and job 2's failing
  test reads FAIL.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import time
from collections.abc import Callable, Iterator

import pytest
from qnn_migrate_tests.bot.lab.support import ABS, ADD, statuses
from qnn_migrate_tests.bot.two_users import (
    SYSTEM_PYTHON,
    TwoUserLab,
    commit,
    kill_tagged,
    long_lived,
    notes,
    read_note,
    start_run_shard,
    tagged_alive,
    write_host,
)

from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.model import Status

HOSTILE_INIT = '''"""Job 1's PR code: a daemon that ends its supervisor and waits for job 2."""
import os, subprocess, sys, time

DAEMON = r"""
import json, os, signal, sys, time
notes, supervisor, target, deadline, tag = sys.argv[1:6]
def note(text):
    with open(os.path.join(notes, "daemon.txt"), "a") as handle:
        handle.write(text + "\\n")
note("started as uid %d without the run's marker: %s" % (
    os.getuid(), "QNN_SHARD_RUN_ID" not in os.environ))
try:
    os.kill(int(supervisor), signal.SIGKILL)
    note("killed the supervisor")
except OSError as exc:
    note("could not kill the supervisor: " + type(exc).__name__)
while time.time() < float(deadline):
    time.sleep(0.05)
    try:
        with open(target) as handle:
            doc = json.load(handle)
    except (OSError, ValueError):
        continue
    for result in doc["results"]:
        result["status"], result["message"] = "PASS", ""
    doc["infra_reason"] = None
    try:
        with open(target, "w") as handle:
            json.dump(doc, handle)
        note("rewrote job 2's result.json")
    except OSError as exc:
        note("could not rewrite job 2's result.json: " + type(exc).__name__)
    break
"""


def supervisor():
    pid = os.getpid()
    while pid > 1:
        with open("/proc/%d/stat" % pid) as handle:
            pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            if b"run-shard" in handle.read():
                return pid
    return 0


SUPERVISOR = supervisor()
subprocess.Popen(
    [sys.executable, "-c", DAEMON, {notes!r}, str(SUPERVISOR), {target!r}, {deadline!r}, {tag!r}],
    env={{}}, start_new_session=True,
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
)
for _ in range(600):  # job 1 goes on until its supervisor is gone (at most 30 s)
    try:
        os.kill(SUPERVISOR, 0)
    except ProcessLookupError:
        break
    except OSError:
        pass
    time.sleep(0.05)
'''
BENIGN_INIT = '"""Stand-in package."""\n'


@pytest.fixture
def tag() -> Iterator[str]:
    value = f"qnn-daemon-{secrets.token_hex(6)}"
    yield value
    kill_tagged(value)


def _hostile(t: TwoUserLab, job2_out: str, tag: str) -> str:
    init = HOSTILE_INIT.format(
        notes=str(notes(t)),
        target=str(t.root / job2_out / "result.json"),
        deadline=str(time.time() + 60),
        tag=tag,
    )
    return commit(t.lab, init, "PR 1: hostile")


def _wait(condition: Callable[[], bool], what: str, limit_s: float = 60.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_control_one_user_the_daemon_kills_run_shard_and_job_2_reads_pass(
    two_user_lab: TwoUserLab, tag: str
) -> None:
    t = two_user_lab
    t.lab.scenario(tests={ABS: "fail", ADD: "pass"})
    single = t.lab.host(python=SYSTEM_PYTHON, env={"PYTHONPATH": "${checkout}"})
    config = write_host(t, single)
    sha1 = _hostile(t, "job2", tag)
    job1 = start_run_shard(t, t.lab.shard(ADD, sha=sha1), config, "job1")
    _wait(lambda: "killed the supervisor" in read_note(t, "daemon.txt"), "the daemon")
    assert job1.wait(timeout=60) == -signal.SIGKILL, "the supervisor was not killed"
    assert not (t.root / "job1" / "result.json").exists(), "no after-check ran"

    sha2 = commit(t.lab, BENIGN_INIT, "PR 2: a real regression in abs")
    settings = t.lab.settings("job2", python=SYSTEM_PYTHON, env={"PYTHONPATH": "${checkout}"})
    result = Runner(settings).run(t.lab.shard(ABS, sha=sha2))
    assert statuses(result) == [Status.FAIL]  # what the runner found...
    _wait(lambda: "rewrote job 2's result.json" in read_note(t, "daemon.txt"), "the rewrite")
    saved = json.loads((t.root / "job2" / "result.json").read_text())
    # ...and what job 2 uploads: the attack works on the old arrangement.
    assert [r["status"] for r in saved["results"]] == ["PASS"]


def test_two_users_the_daemon_dies_with_its_uid_and_job_2_reads_fail(
    two_user_lab: TwoUserLab, tag: str
) -> None:
    t = two_user_lab
    t.lab.scenario(tests={ABS: "fail", ADD: "pass"})
    config, host = long_lived(t, t.host())
    sha1 = _hostile(t, "job2", tag)
    job1 = start_run_shard(t, t.lab.shard(ADD, sha=sha1), config, "job1")
    _wait(lambda: "could not kill the supervisor" in read_note(t, "daemon.txt"), "the daemon")
    daemon = read_note(t, "daemon.txt")
    assert f"started as uid {t.uid(t.users[0])} without the run's marker: True" in daemon
    # The supervisor is killed anyway (a runner that crashed, a cancelled job): nothing is
    # left to reap the daemon or check the host after job 1.
    os.killpg(job1.pid, signal.SIGKILL)
    job1.wait(timeout=60)
    assert not (t.root / "job1" / "result.json").exists()

    sha2 = commit(t.lab, BENIGN_INIT, "PR 2: a real regression in abs")
    settings = t.settings("job2", **{k: getattr(host, k) for k in LONG_LIVED_KEYS})
    settings.host_config_path = str(config.resolve())
    result = Runner(settings).run(t.lab.shard(ABS, sha=sha2))
    assert statuses(result) == [Status.FAIL], result.infra_reason
    report = json.loads((t.root / "job2" / "host-check.json").read_text())
    killed = report["job_user_processes_before"]
    assert killed and all(entry.split()[1].startswith("python") for entry in killed), report
    assert any("killed" in line and t.users[0] in line for line in t.lab.logs)
    assert "rewrote" not in read_note(t, "daemon.txt")
    saved = json.loads((t.root / "job2" / "result.json").read_text())
    assert [r["status"] for r in saved["results"]] == ["FAIL"]
    assert not tagged_alive(tag), "job 1's daemon outlived the next job's start"


LONG_LIVED_KEYS = ("lifetime", "integrity_manifest", "trusted_paths", "job_env")
