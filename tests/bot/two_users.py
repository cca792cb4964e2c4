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
from qnn_migrate_tests.bot.lab.support import DOUBLES, Lab, build_lab, command_builder

from qnn_migrate.bot.lab.host_config import EPHEMERAL, JOB_USER, HostConfig, JobUsers
from qnn_migrate.bot.lab.settings import RunSettings

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
            kill_grace_s=10,
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


# ------------------------------------------------------------------ the attack scenarios

NOTES = "notes"  # a folder every user may write: what hostile code tried, for the test


def notes(t: TwoUserLab) -> Path:
    """Where hostile code writes what it tried (as PR code could send it anywhere)."""
    folder = t.root / NOTES
    if not folder.exists():
        folder.mkdir()
        folder.chmod(0o1777)
    return folder


def read_note(t: TwoUserLab, name: str) -> str:
    path = notes(t) / name
    return path.read_text() if path.exists() else ""


def toml_of(config: HostConfig) -> str:
    """A host config as the TOML file ``bot run-shard --host-config`` reads."""
    import json

    lines: list[str] = []
    tables: list[str] = []
    for key in (
        "kind", "executorch_dir", "python", "adb", "state_dir", "lock_wait_s", "lifetime",
        "isolation", "integrity_manifest", "trusted_paths", "fork_per_test", "github_runners",
    ):  # fmt: skip
        value = getattr(config, key)
        if value is None:
            continue
        lines.append(f"{key} = {json.dumps(list(value) if isinstance(value, tuple) else value)}")
    if config.env:
        tables.append(
            "[env]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in config.env.items())
        )
    if config.job_users is not None:
        u = config.job_users
        tables.append(
            f"[job_users]\nnames = {json.dumps(list(u.names))}\nhome = {json.dumps(u.home)}\n"
            f"switch = {json.dumps(u.switch)}\npython = {json.dumps(u.python)}\n"
        )
    if config.job_env is not None:
        e = config.job_env
        tables.append(
            f"[job_env]\nrequirements = {json.dumps(e.requirements)}\n"
            f"base_python = {json.dumps(e.base_python)}\n"
            + (f"find_links = {json.dumps(e.find_links)}\n" if e.find_links else "")
        )
    for device in config.devices:
        tables.append(f'[[devices]]\nserial = "{device.serial}"\nsoc = "{device.soc}"\n')
    return "\n".join(lines) + "\n\n" + "\n".join(tables)


def write_host(t: TwoUserLab, config: HostConfig, name: str = "host.toml") -> Path:
    path = t.root / "etc" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(toml_of(config))
    path.chmod(0o644)
    return path


def start_run_shard(
    t: TwoUserLab, shard: Any, config: Path, out: str, python: str = sys.executable
) -> subprocess.Popen[str]:
    """``bot run-shard`` of ``shard`` in its own process (it can be killed, or run beside
    another), with the lab's environment."""
    import json

    shard_file = t.root / f"{out}.shard.json"
    shard_file.write_text(json.dumps(shard.to_dict()))
    argv = [python, "-m", "qnn_migrate", "bot", "run-shard", "--shard", str(shard_file)]
    argv += ["--host-config", str(config), "--out", str(t.root / out)]
    return subprocess.Popen(
        argv,
        env={**t.lab.env(), **t.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def commit(lab: Lab, init: str, message: str) -> str:
    """A commit of the lab's checkout whose ``executorch/__init__.py`` (imported by the
    runner's import check before any test) is ``init``."""
    from qnn_migrate_tests.bot.lab.support import git

    (lab.checkout / "executorch" / "__init__.py").write_text(init)
    git(lab.checkout, "commit", "-qam", message)
    return git(lab.checkout, "rev-parse", "HEAD")


def kill_tagged(tag: str) -> None:
    """End every process whose command line holds ``tag`` (a test's own hostile daemons)."""
    import signal as signal_mod

    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if tag.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                os.kill(int(name), signal_mod.SIGKILL)


def tagged_alive(tag: str) -> bool:
    """Whether a process whose command line holds ``tag`` lives (not a zombie)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{name}/stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                continue
            if tag.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                return True
    return False


def long_lived(
    t: TwoUserLab, config: HostConfig, name: str = "host.toml"
) -> tuple[Path, HostConfig]:
    """``config`` made a sealed long-lived host: a runner install, a wheelhouse and its
    hash-pinned requirements (the per-job environment), the host config, all root's; the
    TOML written and sealed. The config file and the settings' host."""
    from qnn_migrate_tests.bot.lab.support import hashed_requirements, make_wheel

    from qnn_migrate.bot.lab.host_config import LONG_LIVED, JobEnv

    runner_install = t.root / "actions-runner"
    (runner_install / "bin").mkdir(parents=True, exist_ok=True)
    (runner_install / "run.sh").write_text("#!/bin/sh\nexec ./bin/Runner.Listener run\n")
    wheelhouse = t.root / "wheelhouse"
    requirements = hashed_requirements(make_wheel(wheelhouse), t.root / "requirements.txt")
    config = replace(
        config,
        lifetime=LONG_LIVED,
        integrity_manifest=str(t.root / "sealed" / "manifest.json"),
        trusted_paths=(str(runner_install), str(wheelhouse), str(requirements)),
        job_env=JobEnv(str(requirements), SYSTEM_PYTHON, str(wheelhouse)),
    )
    path = write_host(t, config, name)
    seal(path)
    return path, config


def seal(config_path: Path) -> None:
    from click.testing import CliRunner

    from qnn_migrate.bot.cli.main import bot

    sealed = CliRunner().invoke(bot, ["host", "seal", "--host-config", str(config_path)])
    assert sealed.exit_code == 0, sealed.output
