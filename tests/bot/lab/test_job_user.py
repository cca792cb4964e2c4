"""lab/job_user.py and hoststate's job-user half, with real users (tests/bot/two_users.py)."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from qnn_migrate_tests.bot.lab.support import ABS, ADD, statuses
from qnn_migrate_tests.bot.two_users import TwoUserLab

from qnn_migrate.bot.lab import job_user, preflight, process
from qnn_migrate.bot.lab.preflight import RefusedError
from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.model import HostShard, Status


def test_pr_code_runs_as_the_job_user_in_a_fresh_checkout(two_user_lab: TwoUserLab) -> None:
    t = two_user_lab
    t.lab.scenario(tests={ABS: "fail", ADD: "pass"})
    settings = t.settings()
    result = Runner(settings).run(t.lab.shard(ABS, ADD))
    assert statuses(result) == [Status.FAIL, Status.PASS], t.lab.logs
    user = t.users[0]
    (run,) = t.lab.runs_log()
    assert run["uid"] == t.uid(user) != os.getuid()
    assert run["cwd"] == str(t.jobs_home / user / "executorch")
    report = json.loads((settings.out_dir / "host-check.json").read_text())
    assert report["job_user"] == user and report["isolation"] == "job-user"
    # What the job wrote came back into the supervisor's folder; the job's folder is empty.
    assert (settings.out_dir / "attempt-1" / "junit.xml").is_file()
    assert os.listdir(t.jobs_home / user) == []


def test_a_checkout_with_hooks_or_changed_files_is_refused(two_user_lab: TwoUserLab) -> None:
    """Preflight checks the whole tree of a job user's checkout, not only HEAD."""
    t = two_user_lab
    settings = t.settings()
    spec = settings.host.job_users
    assert spec is not None
    user = job_user.resolve(
        spec, t.users[0], path_env=os.environ["PATH"], staged=job_user.stage(t.lab.state_dir)
    )
    settings.job_user = user
    user.prepare(("home", "tmp"))
    job_user.fresh_checkout(user, str(t.lab.checkout), t.lab.sha, {"PATH": "/usr/bin:/bin"})
    shard = HostShard.of(t.lab.shard(ABS), executorch_dir=str(user.checkout))
    preflight.check_checkout(shard, settings)  # the control: a fresh checkout passes
    assert not (user.checkout / ".git" / "hooks").exists(), "git's sample hooks were copied"

    plant = (
        "mkdir -p .git/hooks && printf '#!/bin/sh\\n' > .git/hooks/post-checkout && "
        "echo '# edited' >> backends/qualcomm/tests/test_qnn_delegate.py && "
        "touch sitecustomize.py && git config core.fsmonitor /tmp/x"
    )
    argv, env = user.command(["sh", "-c", plant], {"PATH": "/usr/bin:/bin"}, user.checkout)
    assert process.run_captured(argv, env=env, cwd=Path("/")).code == 0
    with pytest.raises(RefusedError) as refused:
        preflight.check_checkout(shard, settings)
    said = str(refused.value)
    assert "is not exactly the pinned commit" in said
    assert "2 path(s) differ from the commit" in said and "sitecustomize.py" in said
    assert "it has git hooks: post-checkout" in said
    assert "core.fsmonitor" in said


def test_the_sudo_switch_runs_pr_code_as_the_job_user_too(two_user_lab: TwoUserLab) -> None:
    """``switch = "sudo"``: ``sudo -n -u USER /usr/bin/env -i ...`` (the supervisor here is
    root, which sudo lets become anyone; a runner's user needs the sudoers rule in
    docs/runners.md). sudo drops the caller's environment: the job's is passed to env."""
    if shutil.which("sudo") is None:
        pytest.skip("sudo is not installed (CI installs it: .ci/run)")
    t = two_user_lab
    t.lab.scenario(tests={ABS: "fail", ADD: "pass"})
    settings = t.settings()
    assert settings.host.job_users is not None
    spec = replace(settings.host.job_users, switch="sudo")
    settings.host = replace(settings.host, job_users=spec)
    result = Runner(settings).run(t.lab.shard(ABS, ADD))
    assert statuses(result) == [Status.FAIL, Status.PASS], result.infra_reason
    (run,) = t.lab.runs_log()
    assert run["uid"] == t.uid(t.users[0]) and run["cwd"].endswith("/executorch")


def test_lock_files_are_the_supervisors_alone(tmp_path: Path) -> None:
    """flock needs only a read: a lock file others could open is one a job user could hold.
    A link planted where a lock belongs is replaced, never written through."""
    from qnn_migrate.bot.lab import locks

    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    planted = locks.lock_path(tmp_path, "PHONE_A")
    planted.parent.mkdir(parents=True)
    planted.symlink_to(victim)
    fd = locks.try_lock(tmp_path, "PHONE_A")
    assert fd is not None
    locks.release(fd)
    assert victim.read_text() == "keep me\n" and not planted.is_symlink()
    assert planted.stat().st_mode & 0o777 == 0o600


def test_a_forking_daemon_of_the_job_user_is_ended_by_uid_when_the_run_ends(
    two_user_lab: TwoUserLab,
) -> None:
    """ForkHopper (a double of a hostile daemon: re-execs without the run's marker, then
    forks and leaves its session in a loop) started by a test, as the job user: after the
    run no process of the uid is left, and the hopper's heartbeat lock is free."""
    import fcntl

    from qnn_migrate_tests.bot.two_users import SYSTEM_PYTHON, notes

    t = two_user_lab
    folder = notes(t)
    heartbeat = folder / "hopper-heartbeat"
    hopper = folder / "fork_hopper.py"  # where the job user can read it
    shutil.copy(Path(__file__).parents[2] / "doubles" / "fork_hopper.py", hopper)
    start = (
        "import subprocess, time, os\n"
        f"subprocess.Popen([{SYSTEM_PYTHON!r}, {str(hopper)!r}, {str(heartbeat)!r}, "
        f"str(time.time() + 30)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, "
        "stderr=subprocess.DEVNULL)\n"
        "for _ in range(400):\n"
        f"    if os.path.exists({str(heartbeat)!r} + '.started'):\n"
        "        break\n"
        "    time.sleep(0.025)\n"
    )
    t.lab.scenario(tests={ADD: "hostile"}, hostile={ADD: start})
    result = Runner(t.settings()).run(t.lab.shard(ADD))
    assert statuses(result) == [Status.PASS]
    assert Path(f"{heartbeat}.started").exists(), "the control: the hopper never ran"
    assert job_user.processes_of(t.uid(t.users[0])) == []
    fd = os.open(heartbeat, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # no generation holds it any more
    finally:
        os.close(fd)
