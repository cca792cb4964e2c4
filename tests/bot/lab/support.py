"""A fake device lab: FakeAdb first on PATH, a git checkout holding the test_qnn_delegate stand-in.

There are no phones here. ``Lab`` wires the two test doubles (tests/doubles/fake_adb and
tests/doubles/fake_test_qnn_delegate.py) into a temporary directory so the real runner,
the real wrapper and the real unittest machinery run against them. The ``lab`` fixture is
registered for every bot test by tests/bot/conftest.py.

**Time.** The runner of ``Lab.settings()`` reads its budgets on ``LabClock``, a clock double,
and no budget in these settings is under 10 s: the lab's tests wait for no budget to pass.
The doubles do not sleep through a long wait; they say how long it took (``FAKE_LAB_CLOCK``),
and the clock moves on by that much. A test of the wrapper's per-test alarm gets the alarm
the same way: the fake test script lets its armed timer run out (see its docstring).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from qnn_migrate.bot import catalog
from qnn_migrate.bot.lab.host_config import EPHEMERAL, NO_ISOLATION, DeviceEntry, HostConfig
from qnn_migrate.bot.lab.settings import TEST_SCRIPT, RunSettings
from qnn_migrate.bot.model import Shard, ShardResult, Status

ROOT = Path(__file__).resolve().parents[3]
DOUBLES = ROOT / "tests" / "doubles"
FP = "TestQNNFloatingPointOperator"
QO = "TestQNNQuantizedOperator"
QM = "TestQNNQuantizedModel"
ABS = f"{FP}.test_qnn_backend_abs"
ADD = f"{FP}.test_qnn_backend_add"
CONV = f"{FP}.test_qnn_backend_conv2d"


# Fixed identity and dates: the same script text always gives the same commit SHA, so
# golden files can name it.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "lab",
    "GIT_AUTHOR_EMAIL": "lab@example.invalid",
    "GIT_AUTHOR_DATE": "2026-11-01T00:00:00+00:00",
    "GIT_COMMITTER_NAME": "lab",
    "GIT_COMMITTER_EMAIL": "lab@example.invalid",
    "GIT_COMMITTER_DATE": "2026-11-01T00:00:00+00:00",
}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
    ).stdout.strip()


def make_checkout(root: Path, script_text: str | None = None) -> tuple[Path, str]:
    """A git repository laid out like ExecuTorch, with the stand-in as its test script."""
    checkout = root / "executorch"
    target = checkout / TEST_SCRIPT
    target.parent.mkdir(parents=True)
    if script_text is None:
        shutil.copy(DOUBLES / "fake_test_qnn_delegate.py", target)
    else:
        target.write_text(script_text)
    # The runner checks that `import executorch` resolves inside the checkout.
    (checkout / "executorch").mkdir()
    (checkout / "executorch" / "__init__.py").write_text('"""Stand-in package."""\n')
    git(checkout, "init", "-q", "-b", "main")
    git(checkout, "add", ".")
    git(checkout, "commit", "-q", "-m", "stand-in checkout")
    return checkout, git(checkout, "rev-parse", "HEAD")


# Budgets of the lab's settings and shards: bounds, never reached unless a double says so.
PER_TEST_S = 60  # the runner's progress budget is this plus 15 s of grace
SHARD_S = 3600


class LabClock:
    """Test double of the runner's clock (``RunSettings.clock`` and ``sleep``): real
    monotonic time plus the time the lab's doubles say passed, and the time its own
    ``sleep`` passed without waiting.

    The doubles append the seconds that pass to ``path`` (one number a line: the fake test
    script for a hang, a slow import or a test's duration; FakeAdb for a slow phone). Each
    reading writes how much of that it has read to ``path.seen``: the fake script waits for
    it, so the runner has read its clock once while the script was in the state that took
    the time (an import, a test), and its budgets decide there as they would in real time.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.slept = 0.0
        self.seen = 0.0  # what ``path.seen`` says (it is written only when that changes)
        self.lock = threading.Lock()  # read by the runner's loop and its output pumps

    def passed(self) -> float:
        """What the doubles said passed, so far."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return 0.0
        # A line still being appended has no newline yet: it counts at the next reading.
        return sum(float(line) for line in text.split("\n")[:-1])

    def __call__(self) -> float:
        with self.lock:
            passed = self.passed()
            if passed != self.seen:
                draft = self.path.with_name(self.path.name + ".seen.tmp")
                draft.write_text(repr(passed))
                draft.replace(self.path.with_name(self.path.name + ".seen"))
                self.seen = passed
            return time.monotonic() + passed + self.slept

    def sleep(self, seconds: float) -> None:
        """A wait that passes at once (the runner's wait for a busy phone)."""
        with self.lock:
            self.slept += seconds
        time.sleep(0.001)


@dataclass
class Lab:
    """Paths and knobs of one fake lab, plus helpers to build shards and settings."""

    root: Path
    bin: Path
    scenario_path: Path
    checkout: Path
    sha: str
    state_dir: Path
    clock: LabClock
    logs: list[str] = field(default_factory=list)

    def scenario(self, devices: dict[str, dict[str, Any]] | None = None, **doc: Any) -> None:
        doc["devices"] = devices or {"PHONE_A": {"soc": "SM8650"}, "PHONE_B": {"soc": "SM8650"}}
        self.scenario_path.write_text(json.dumps(doc))

    def env(self) -> dict[str, str]:
        return {
            "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(self.root),
            "FAKE_ADB_SCENARIO": str(self.scenario_path),
            "FAKE_QNN_SCENARIO": str(self.scenario_path),
            "FAKE_QNN_ARGV_LOG": str(self.root / "argv.jsonl"),
            "QNN_SDK_ROOT": "",
            "PYTHONPATH": str(self.checkout),
        }

    def host(self, **overrides: Any) -> HostConfig:
        base = HostConfig(
            executorch_dir=str(self.checkout),
            python=sys.executable,
            adb="adb",
            state_dir=str(self.state_dir),
            lock_wait_s=60,
            devices=(DeviceEntry("PHONE_A", "SM8650"), DeviceEntry("PHONE_B", "SM8650")),
            # The lab's tests are about runs, not the host model: each test is a fresh
            # tmp_path, as an ephemeral runner is a fresh machine, and PR code runs as the
            # test's own user (test_scenario_persistence runs the long-lived model; the
            # tests/bot/test_scenario_two_users_*.py files run the job users).
            lifetime=EPHEMERAL,
            isolation=NO_ISOLATION,
        )
        return replace(base, **overrides)

    def simulator_host(self, **overrides: Any) -> HostConfig:
        """An x86-simulator host: an SDK-shaped root and StubQnnExecutorRunner (a double)."""
        sdk = self.root / "sdk"
        lib = sdk / "lib" / "x86_64-linux-clang"
        lib.mkdir(parents=True, exist_ok=True)
        (lib / "libQnnHtp.so").write_bytes(b"\x7fELF stand-in; build v2.51.0.260929181845\0")
        runner = self.root / "stub_qnn_executor_runner"
        runner.write_text("#!/bin/sh\necho 'StubQnnExecutorRunner (test double): usage'\n")
        runner.chmod(0o755)
        fields: dict[str, Any] = {
            "kind": "x86-simulator",
            "devices": (),
            "qnn_sdk_root": str(sdk),
            "qnn_executor_runner": str(runner),
            "min_free_mb": 1,
        }
        fields.update(overrides)
        return self.host(**fields)

    def settings(self, out: str = "out", **overrides: Any) -> RunSettings:
        """Settings on the lab's clock: the doubles the run starts tell it the time they take."""
        return RunSettings(
            host=self.host(**overrides),
            out_dir=self.root / out,
            command=command_builder(),
            env={**self.env(), "FAKE_LAB_CLOCK": str(self.clock.path)},
            log=self.logs.append,
            kill_grace_s=10,
            clock=self.clock,
            sleep=self.clock.sleep,
        )

    def shard(self, *tests: str, **kw: Any) -> Shard:
        fields: dict[str, Any] = {
            "id": "sm8650-m-1",
            "matrix": "m",
            "soc": "SM8650",
            "backend": "htp",
            "seed": 1126,
            "tests": tests,
            "sha": self.sha,
            "pr": 7,
            "timeout_s": SHARD_S,
            "per_test_timeout_s": PER_TEST_S,
        }
        fields.update(kw)
        return Shard(**fields)

    def calls(self, serial: str | None = None) -> list[list[str]]:
        path = Path(f"{self.scenario_path}.state") / "calls.jsonl"
        if not path.exists():
            return []
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        return [r["args"] for r in rows if serial is None or r["serial"] == serial]

    def runs_log(self) -> list[dict[str, Any]]:
        """What the stand-in test script saw, one entry per run: argv, cwd, secret_env."""
        path = self.root / "argv.jsonl"
        return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []

    def argv_log(self) -> list[list[str]]:
        return [entry["argv"] for entry in self.runs_log()]


_BUILDER: list[Callable[..., list[str]]] = []


def command_builder() -> Callable[..., list[str]]:
    """The catalog's command template (qnn_migrate/bot/matrices.toml), loaded once per process."""
    if not _BUILDER:
        _BUILDER.append(catalog.load().command_argv)
    return _BUILDER[0]


def build_lab(
    root: Path, python: str = sys.executable, fake_adb: Path = DOUBLES / "fake_adb"
) -> Lab:
    """A lab in ``root``; FakeAdb is run with ``python`` from ``fake_adb``."""
    bin_dir = root / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "adb"
    # The launcher runs FakeAdb with this interpreter, skipping site: it is called per
    # adb command, so its start-up time is most of a fake phone's latency.
    launcher.write_text(f'#!/bin/sh\nexec "{python}" -S "{fake_adb}" "$@"\n')
    launcher.chmod(0o755)
    checkout, sha = make_checkout(root)
    the_lab = Lab(
        root=root,
        bin=bin_dir,
        scenario_path=root / "scenario.json",
        checkout=checkout,
        sha=sha,
        state_dir=root / "state",
        clock=LabClock(root / "lab-clock"),
    )
    the_lab.scenario()
    return the_lab


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return build_lab(tmp_path)


def statuses(result: ShardResult) -> list[Status]:
    return [r.status for r in result.results]


def sim_settings(lab: Lab, **host: Any) -> RunSettings:
    """The lab's settings on an x86-simulator host."""
    return replace(lab.settings(), host=lab.simulator_host(**host))


# ------------------------------------------------------------------ a hostile daemon

HOPPER = DOUBLES / "fork_hopper.py"


@dataclass
class Hopper:
    """One ForkHopper's heartbeat file and deadline: how to start it, tell whether it
    lives (its heartbeat lock is held) and be sure it is gone."""

    heartbeat: Path
    deadline: float

    def argv(self, *locks: Path | str) -> list[str]:
        return [sys.executable, str(HOPPER), str(self.heartbeat), str(self.deadline)] + [
            str(lock) for lock in locks
        ]

    def started(self) -> bool:
        return Path(f"{self.heartbeat}.started").exists()

    def alive(self) -> bool:
        """Whether any generation lives: one holds the heartbeat's shared lock."""
        fd = os.open(self.heartbeat, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def wait_gone(self) -> None:
        """Kill what is left and wait, at most until the hopper's own deadline (+2 s)."""
        tag = str(self.heartbeat).encode()
        while self.alive() and time.time() < self.deadline + 2:
            for name in os.listdir("/proc"):
                with contextlib.suppress(OSError, ValueError):
                    if name.isdigit() and tag in Path(f"/proc/{name}/cmdline").read_bytes():
                        os.kill(int(name), signal.SIGSTOP)
                        os.kill(int(name), signal.SIGKILL)
            time.sleep(0.01)


@pytest.fixture
def hopper(tmp_path: Path) -> Iterator[Hopper]:
    """A ForkHopper that ends by itself within 30 s, and is gone when the test ends,
    whether it passed or not."""
    one = Hopper(tmp_path / "hopper-heartbeat", time.time() + 30)
    try:
        yield one
    finally:
        one.wait_gone()


# ------------------------------------------------------- a long-lived host's own files


def make_wheel(folder: Path, name: str = "qnn_lab_marker", version: str = "1.0") -> Path:
    """A minimal, valid pure-Python wheel (what a host's wheelhouse holds), built in place."""
    folder.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": b'"""Installed into the job\'s environment from the wheelhouse."""\n',
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: lab\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


def hashed_requirements(wheel: Path, target: Path) -> Path:
    """A requirements file pinning ``wheel`` by version and sha256, as pip --require-hashes
    wants."""
    name, version = wheel.name.split("-")[:2]
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    target.write_text(f"{name}=={version} --hash=sha256:{digest}\n")
    return target
