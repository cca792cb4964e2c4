"""Real job users for the two-user tests, and a fake lab they can reach.

The two-user model is about uids, so its tests use real ones: the test session creates
unprivileged users (CI runs as root; without root, or without ``setpriv``/``useradd``, the
tests skip, which CI counts as a failure) and removes them when it ends.

Several pytest processes create users at the same time (xdist's workers; CI runs the core
suite on two Pythons side by side): every ``useradd``/``userdel`` holds one lock file, each
user has a random name, and its comment names the process that made it, so a later session
removes the users of a process that died before removing its own. A process of a test user
is never another session's: kill-all by uid only ever reaches the session's own.

``TwoUserLab`` is the fake lab of ``lab/support.py`` laid out where a job user can reach it
(pytest's own temporary folder is root's, mode 0700): FakeAdb and the test script run with
``/usr/bin/python3`` (this venv's interpreter lives under /root), the phones' state is
everyone's (one adb server serves all local users), and each job user has its folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from qnn_migrate.bot.lab.host_config import EPHEMERAL, JOB_USER, HostConfig, JobUsers
from qnn_migrate.bot.lab.settings import RunSettings

from .lab.support import DOUBLES, Lab, build_lab, command_builder

LOCK = Path("/tmp/qnn-migrate-test-users.lock")
COMMENT = "qnn-migrate test job user"
PREFIX = "qnt"
SYSTEM_PYTHON = "/usr/bin/python3"
USERS_PER_SESSION = 3
KILL_ALL = "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\n"


def require_two_users() -> None:
    """Skip (a failure under CI) where job users cannot be made."""
    missing = [t for t in ("setpriv", "useradd", "userdel") if shutil.which(t) is None]
    if os.geteuid() != 0 or missing or not Path(SYSTEM_PYTHON).exists():
        pytest.skip(
            "the two-user tests need root (they create users), setpriv, useradd, userdel and "
            f"{SYSTEM_PYTHON}; missing: {', '.join(missing) or 'root'}"
        )


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    fd = os.open(LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_all(name: str) -> None:
    """End every process of the test user ``name`` (as that user: ``kill(-1)``)."""
    entry = pwd.getpwnam(name)
    subprocess.run(
        [
            "setpriv",
            f"--reuid={entry.pw_uid}",
            f"--regid={entry.pw_gid}",
            "--clear-groups",
            SYSTEM_PYTHON,
            "-I",
            "-S",
            "-c",
            KILL_ALL,
        ],
        check=False,
        capture_output=True,
    )


def _remove(name: str) -> None:
    kill_all(name)
    subprocess.run(["userdel", name], check=False, capture_output=True)


def _remove_stale() -> None:
    """Users made by a test process that is gone (a session that crashed)."""
    for entry in pwd.getpwall():
        if not entry.pw_gecos.startswith(COMMENT) or not entry.pw_name.startswith(PREFIX):
            continue
        pid = entry.pw_gecos.rpartition("pid=")[2]
        if pid.isdigit() and not _alive(int(pid)):
            _remove(entry.pw_name)


def create_users(count: int) -> list[str]:
    names = [f"{PREFIX}{secrets.token_hex(4)}" for _ in range(count)]
    with _locked():
        _remove_stale()
        for name in names:
            subprocess.run(
                [
                    "useradd",
                    "--system",
                    "--user-group",
                    "--no-create-home",
                    "--home-dir",
                    "/nonexistent",
                    "--shell",
                    "/usr/sbin/nologin",
                    "--comment",
                    f"{COMMENT} pid={os.getpid()}",
                    name,
                ],
                check=True,
                capture_output=True,
            )
    return names


def remove_users(names: list[str]) -> None:
    with _locked():
        for name in names:
            _remove(name)


@pytest.fixture(scope="session")
def job_user_names() -> Iterator[list[str]]:
    """This session's job users (made on first use, removed at the end)."""
    require_two_users()
    names = create_users(USERS_PER_SESSION)
    try:
        yield names
    finally:
        remove_users(names)


@dataclass
class TwoUserLab:
    """The fake lab, laid out for job users, with one folder per job user."""

    lab: Lab
    users: list[str]
    jobs_home: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.lab.root

    def host(self, users: list[str] | None = None, **overrides: Any) -> HostConfig:
        """A phone host whose PR code runs as ``users`` (default: the first job user)."""
        spec = JobUsers(tuple(users or self.users[:1]), str(self.jobs_home), python=SYSTEM_PYTHON)
        fields: dict[str, Any] = {
            "python": SYSTEM_PYTHON,
            "isolation": JOB_USER,
            "job_users": spec,
            "lifetime": EPHEMERAL,
            # The stand-in package is at the root of the checkout: `import executorch` finds
            # it when the job's fresh checkout is on the path.
            "env": {"PYTHONPATH": "${checkout}"},
        }
        fields.update(overrides)
        return self.lab.host(**fields)

    def settings(self, out: str = "out", **overrides: Any) -> RunSettings:
        users = overrides.pop("users", None)
        return RunSettings(
            host=self.host(users, **overrides),
            out_dir=self.root / out,
            command=command_builder(),
            env={**self.lab.env(), **self.env},
            log=self.lab.logs.append,
            kill_grace_s=0.5,
        )

    def uid(self, name: str) -> int:
        return pwd.getpwnam(name).pw_uid


def make_two_user_lab(users: list[str]) -> TwoUserLab:
    root = Path(tempfile.mkdtemp(prefix="qnn-two-users-", dir="/tmp"))
    root.chmod(0o755)
    fake_adb = root / "fake_adb.py"
    shutil.copy(DOUBLES / "fake_adb", fake_adb)
    lab = build_lab(root, python=SYSTEM_PYTHON, fake_adb=fake_adb)
    # One adb server for every local user: its state is everyone's (FakeAdb's umask is 0).
    state = Path(f"{lab.scenario_path}.state")
    state.mkdir(mode=0o777)
    state.chmod(0o777)
    log = root / "argv.jsonl"
    log.touch()
    log.chmod(0o666)
    jobs_home = root / "jobs"
    jobs_home.mkdir()
    for name in users:
        folder = jobs_home / name
        folder.mkdir(mode=0o700)
        entry = pwd.getpwnam(name)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    return TwoUserLab(lab, users, jobs_home)


@pytest.fixture
def two_user_lab(job_user_names: list[str]) -> Iterator[TwoUserLab]:
    """A fresh two-user lab; every process of its users is ended and its files removed after."""
    the_lab = make_two_user_lab(job_user_names)
    try:
        yield the_lab
    finally:
        for name in job_user_names:
            kill_all(name)
        shutil.rmtree(the_lab.root, ignore_errors=True)


def single_user(lab: Lab, **overrides: Any) -> RunSettings:
    """The control's arrangement: the same lab, PR code as the supervisor (isolation none)."""
    settings = lab.settings(**overrides)
    return replace(settings, host=replace(settings.host, python=sys.executable))
