"""Process supervision on the runner host: the one place (with ``adb``) that starts processes.

Everything that runs PR code runs through ``run_watched``: its own process group, output
read in bounded pieces into files, a shard timeout, a start-up and a progress budget, and
when it ends, everything it started is killed (``reap_leftovers``): its process group,
anything carrying the run's marker in its environment, and every process descended from
this one that was not there before the run. The runner is a child subreaper on Linux, so
a daemon that leaves the run's session is re-parented here instead of to init and stays
findable. A run of PR code is started as its job user (``RunAs``: ``job_user.JobUser``),
and after it every process of that uid is ended, whatever it did to escape the rest.
(``job_helper.py`` and the ``junit_wrapper`` package are scripts of the bot that run in the job
user's processes; what they start is theirs.) The runner's own short commands (``git rev-parse``, the simulator's ``--help``
probe) go through ``run_captured``: a timeout, no shell, bounded output.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from qnn_migrate.bot.lab import results

MAX_LOG_BYTES = 64 * 1024 * 1024
# A child's output is read in pieces of at most this size: a line with no newline
# (hundreds of MB of it) must not be held in memory whole.
READ_CHUNK = 64 * 1024
TOKEN_VAR = "QNN_SHARD_RUN_ID"
# How long the reaper keeps looking for what a run left behind. A process that re-execs
# without the marker and forks in a loop is stopped (SIGSTOP) before it is killed, so it
# cannot fork past the reaper; the budget only bounds a host so busy that /proc scans lag.
REAP_BUDGET_S = 10.0
# A scan that finds nothing this many times in a row ends the reaping.
REAP_QUIET_SCANS = 3


@dataclass(frozen=True)
class ProcessOutcome:
    """How a watched child process ended."""

    code: int | None
    stdout_path: Path
    stderr_path: Path
    end: results.RunEnd
    detail: str = ""
    leftovers: tuple[int, ...] = ()


class RunAs(Protocol):
    """Another user a watched run runs as (``job_user.JobUser``): how to start a command
    as it, and how to end every process it has."""

    def command(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: Path | str
    ) -> tuple[list[str], dict[str, str]]: ...

    def end_all(self, budget_s: float = ...) -> tuple[list[str], list[str]]: ...


@dataclass(frozen=True)
class Captured:
    """What a short runner-side command printed and how it ended (code None: did not run)."""

    code: int | None
    stdout: str
    stderr: str


def run_captured(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None = None,
    timeout_s: float = 60.0,
    limit: int = 64 * 1024,
) -> Captured:
    """Run one of the runner's own short commands; never raises for a missing program,
    a timeout or odd bytes (they become a ``Captured`` with code None and the reason)."""
    try:
        proc = subprocess.run(
            list(argv),
            capture_output=True,
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Captured(None, "", str(exc))
    return Captured(
        proc.returncode,
        proc.stdout[:limit].decode("utf-8", "replace"),
        proc.stderr[:limit].decode("utf-8", "replace"),
    )


def run_bytes(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None = None,
    timeout_s: float = 60.0,
    limit: int = 64 * 1024,
) -> tuple[int | None, bytes, str]:
    """``run_captured`` for a command whose output is bytes: (code, at most ``limit`` bytes
    of stdout, stderr as text); code None when it could not run or timed out."""
    try:
        proc = subprocess.run(
            list(argv),
            capture_output=True,
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, b"", str(exc)
    return proc.returncode, proc.stdout[:limit], proc.stderr[:65536].decode("utf-8", "replace")


def _pump(
    source: IO[bytes],
    target: Path,
    on_line: Callable[[str], None] | None,
) -> None:
    """Copy a child's stream to a file (capped), calling ``on_line`` for each line."""
    written = 0
    with open(target, "wb") as sink:
        for raw in iter(lambda: source.readline(READ_CHUNK), b""):
            if written < MAX_LOG_BYTES:
                sink.write(raw[: MAX_LOG_BYTES - written])
                written += len(raw)
                if written >= MAX_LOG_BYTES:
                    sink.write(b"\n[log truncated at the size cap]\n")
                sink.flush()
            if on_line is not None:
                on_line(raw.decode("utf-8", errors="replace"))
    source.close()


def run_watched(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    out_dir: Path,
    timeout_s: float,
    progress_budget_s: float,
    kill_grace_s: float = 2.0,
    name: str = "",
    startup_budget_s: float | None = None,
    as_user: RunAs | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> ProcessOutcome:
    """Run ``argv`` in its own process group; stop it on the shard timeout or when no
    test starts or finishes within ``progress_budget_s`` (a hang the wrapper's own
    per-test alarm could not interrupt). Until the first test starts, the budget is
    ``startup_budget_s`` instead: importing a harness is not a test.

    When it ends, whatever it started is killed too (``reap_leftovers``), and with
    ``as_user`` (the run is that user's: PR code) every process of that user is
    (``RunAs.end_all``), whatever marker or parent it has.

    The budgets are read on ``clock``; the process is polled in real time whatever the
    clock (it runs in real time)."""
    stdout_path = out_dir / f"stdout{name}.txt"
    stderr_path = out_dir / f"stderr{name}.txt"
    last_progress = [clock()]
    started_tests = [False]
    startup = progress_budget_s if startup_budget_s is None else startup_budget_s

    def on_line(line: str) -> None:
        if results.is_progress_line(line):
            last_progress[0] = clock()
            started_tests[0] = True

    token = env.get(TOKEN_VAR) or secrets.token_hex(8)
    env = {**env, TOKEN_VAR: token}
    become_subreaper()
    before = _descendants(os.getpid(), set())
    start_argv, start_env, start_cwd = list(argv), dict(env), cwd
    if as_user is not None:
        # The switch enters ``cwd`` as the job user: the supervisor may not be able to.
        start_argv, start_env = as_user.command(argv, env, cwd)
        start_cwd = Path("/")
    try:
        proc = subprocess.Popen(
            start_argv,
            cwd=start_cwd,
            env=start_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        stdout_path.write_text("")
        stderr_path.write_text(f"could not start {argv[0]}: {exc}\n")
        return ProcessOutcome(
            None,
            stdout_path,
            stderr_path,
            results.RunEnd.NOT_STARTED,
            f"could not start {argv[0]}: {exc}",
        )
    assert proc.stdout is not None and proc.stderr is not None
    pumps = [
        threading.Thread(target=_pump, args=(proc.stdout, stdout_path, None), daemon=True),
        threading.Thread(target=_pump, args=(proc.stderr, stderr_path, on_line), daemon=True),
    ]
    for pump in pumps:
        pump.start()

    started = clock()
    stopped: str | None = None
    poll = min(0.2, max(0.02, progress_budget_s / 20))
    shard_budget = f"timed out after the shard budget of {timeout_s:g} s"
    startup_budget = (
        f"was stopped: no test started within {startup:g} s of starting the test "
        "process (the start-up budget: importing the harness took too long)"
    )
    progress_budget = (
        f"was stopped: no test started or finished for {progress_budget_s:g} s "
        "(the per-test budget plus grace)"
    )
    while proc.poll() is None:
        now = clock()
        # Each budget's deadline; where more than one has passed since the last look, the
        # reason is the one that ran out first.
        deadlines = [
            (started + timeout_s, shard_budget),
            (last_progress[0] + progress_budget_s, progress_budget)
            if started_tests[0]
            else (started + startup, startup_budget),
        ]
        passed = [deadline for deadline in deadlines if now > deadline[0]]
        if passed:
            stopped = min(passed)[1]
        if stopped:
            _kill_group(proc, kill_grace_s)
            break
        _wait_for_zombies(skip=proc.pid)
        time.sleep(poll)
    code = proc.wait()
    leftovers = reap_leftovers(proc.pid, token, before)
    by_uid: list[str] = []
    if as_user is not None:
        by_uid, _ = as_user.end_all()
    _wait_for_zombies(skip=proc.pid)
    for pump in pumps:
        pump.join(timeout=10)
    if leftovers or by_uid:
        with open(stderr_path, "a", encoding="utf-8") as handle:
            handle.write(
                f"\n[runner: killed {len(leftovers) + len(by_uid)} process(es) left behind]\n"
            )
    kept = tuple(leftovers)

    if stopped:
        return ProcessOutcome(code, stdout_path, stderr_path, results.RunEnd.TIMEOUT, stopped, kept)
    if code < 0:
        try:
            sig = signal.Signals(-code).name
        except ValueError:
            sig = f"signal {-code}"
        return ProcessOutcome(
            code, stdout_path, stderr_path, results.RunEnd.CRASHED, f"killed by {sig}", kept
        )
    return ProcessOutcome(code, stdout_path, stderr_path, results.RunEnd.EXITED, "", kept)


def _kill_group(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


_PR_SET_CHILD_SUBREAPER = 36
_subreaper: list[bool] = []


def become_subreaper() -> bool:
    """Make this process adopt orphans of its descendants (Linux), so none can escape.

    A daemon that leaves the test's session is re-parented here instead of to init, and
    ``reap_leftovers`` finds it as a descendant. Done once per process; False where
    unsupported.
    """
    if not _subreaper:
        ok = False
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                ok = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
            except (OSError, AttributeError):
                ok = False
        _subreaper.append(ok)
    return _subreaper[0]


def _proc_stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state) of a live process, or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    return (int(fields[1]), fields[0]) if len(fields) > 1 else None


def _pids() -> list[int]:
    try:
        return [int(d) for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return []


def _children(pid: int, table: dict[int, list[int]] | None) -> list[int]:
    """The children of ``pid``: from ``/proc/PID/task/*/children`` (a few small reads, fast
    enough to catch a process that forks and exits in a loop), else from ``table``."""
    if table is None:
        out: list[int] = []
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return []
        for tid in tids:
            with (
                contextlib.suppress(OSError),
                open(f"/proc/{pid}/task/{tid}/children", "rb") as handle,
            ):
                out.extend(int(x) for x in handle.read().split())
        return out
    return table.get(pid, [])


def _parent_table() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for pid in _pids():
        stat = _proc_stat(pid)
        if stat:
            children.setdefault(stat[0], []).append(pid)
    return children


_children_files: list[bool] = []


def _children_table() -> dict[int, list[int]] | None:
    """None where ``/proc/PID/task/*/children`` exists (``_children`` reads it), else a parent
    table of every process, read once for one walk."""
    if not _children_files:
        _children_files.append(os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"))
    return None if _children_files[0] else _parent_table()


def _wait_for_zombies(skip: int) -> None:
    """Wait for the children of this process that have exited, except ``skip`` (the run's
    own process, which its Popen waits for).

    As a subreaper this process adopts what the run orphans, and each adopted process that
    exits stays a zombie until it is waited for: a daemon that forks and exits in a loop
    leaves hundreds a second, which would use up the host's process ids (32,768 by default)
    during the run, and hand them to init after it. The runner starts one process at a time
    (``adb`` and the run itself, never side by side), so a zombie child here is the run's
    or one it left."""
    table = _children_table()
    for pid in _children(os.getpid(), table):
        stat = _proc_stat(pid)
        if pid != skip and stat is not None and stat[1] == "Z":
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)


def reap_zombies() -> None:
    """Wait for this process's children that have exited (adopted ones included)."""
    _wait_for_zombies(skip=-1)


def _descendants(root: int, spared: set[int]) -> set[int]:
    """Processes below ``root`` that are not zombies, leaving out ``spared`` and what is
    below them: the runner's own children from before the run are not the run's."""
    table = _children_table()
    out: set[int] = set()
    todo = [c for c in _children(root, table) if c not in spared]
    while todo:
        pid = todo.pop()
        if pid in out:
            continue
        stat = _proc_stat(pid)
        if stat is None or stat[1] == "Z":
            continue
        out.add(pid)
        todo.extend(c for c in _children(pid, table) if c not in spared)
    return out


def _carrying(token: str) -> set[int]:
    marker = f"{TOKEN_VAR}={token}".encode()
    out = set()
    for pid in _pids():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            out.add(pid)
    return out


def _signal_all(pids: set[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def reap_leftovers(
    group: int, token: str, before: set[int], *, budget_s: float = REAP_BUDGET_S
) -> list[int]:
    """Kill what a finished run left: its group, processes with its marker, and every
    process below this (subreaper) one that was not there before the run.

    What is found is stopped before it is killed: a stopped process forks no more, and
    what it forked just before is below it (or, its parent gone, re-parented here), so
    the next look finds it. Stopping goes on until a look finds nothing new; rounds go on
    until several in a row find nothing (or the budget ends), not for a fixed count a
    fast forker can outrun."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
    me = os.getpid()
    killed: set[int] = set()
    quiet = 0
    deadline = time.monotonic() + budget_s
    while quiet < REAP_QUIET_SCANS and time.monotonic() < deadline:
        found = _carrying(token) - {me}
        for pid in list(found):
            found |= _descendants(pid, before)
        stopped: set[int] = set()
        while time.monotonic() < deadline:
            # The kernel's children lists are read a page at a time and can skip an entry
            # when the list changes under the read; thousands of zombies of a fork loop make
            # that likely, so they are waited for first (the run's own process already was).
            _wait_for_zombies(skip=group)
            found |= _descendants(me, before)
            for pid in list(stopped):
                found |= _descendants(pid, before)
            fresh = found - stopped - {me}
            if not fresh:
                break
            _signal_all(fresh, signal.SIGSTOP)
            stopped |= fresh
        if not stopped:
            quiet += 1
            time.sleep(0.02)
            continue
        quiet = 0
        _signal_all(stopped, signal.SIGKILL)
        killed |= stopped
        time.sleep(0.02)
        for pid in stopped:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
    return sorted(killed)
