"""Runs one shard on one phone of a runner host and returns an honest ``ShardResult``.

The order of work, each step able to end the shard with a reason:

1. merge the host config into the shard; refuse if the checkout is not at the pinned SHA;
2. pick a phone of the shard's SoC (quarantined ones last), lock it (one job per phone);
3. health check (online, shell answers, right SoC, free space); failing it is INFRA for
   every test, and quarantines the phone;
4. run ExecuTorch's test script through ``junit_wrapper`` (argument list, no shell; a
   shard timeout and a per-test budget), collect JUnit XML, stdout/stderr, the exact
   command, the QNN SDK version, the phone's fingerprint and a logcat excerpt;
5. clean the phone's workspace, release the lock;
6. tests that ended INFRA are run once more on another healthy phone of the same SoC;
   FAIL and ERROR are never retried. A phone that produced INFRA stays quarantined until
   a health check passes.

A simulator shard (``enable_x86_64``) runs on an ``x86-simulator`` host instead: the host
check is the SDK, the x86 ``qnn_executor_runner`` and free disk (no adb), and INFRA tests
are run once more on the same host. ``compile_only`` is refused: ExecuTorch 1.5.1's
``verify_output`` ignores it and asks for a device, so every test would ERROR.

Every path handed to the test process is absolute (it runs in the checkout, not here).
When a run ends, everything it started is killed: its process group, anything carrying
the run's token in its environment, and (the runner is a child subreaper on Linux)
orphans it left behind. Symlinks in the results that point outside them are removed
before the workflow uploads them.

This module and ``adb`` are the only ones that start processes. Nothing here reads
``os.environ``: the environment for child processes is passed in by ``device_cli``.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from qnn_migrate.bot.lab import health, locks, quarantine, results
from qnn_migrate.bot.lab.adb import Adb, AdbConfigError
from qnn_migrate.bot.lab.host_config import HostConfig
from qnn_migrate.bot.lab.junit_wrapper import EXIT_UNUSABLE, EXIT_WRAPPER_FAULT
from qnn_migrate.bot.model import Shard, ShardResult, Status, TestResult

DEVICE_WORKSPACE = "/data/local/tmp/qnn_executorch_test"
TEST_SCRIPT = "backends/qualcomm/tests/test_qnn_delegate.py"
WRAPPER = Path(__file__).with_name("junit_wrapper.py")
PROGRAMS_FILE = "programs.json"
MAX_LOG_BYTES = 64 * 1024 * 1024
# A child's output is read in pieces of at most this size: a line with no newline
# (hundreds of MB of it) must not be held in memory whole.
READ_CHUNK = 64 * 1024
STDERR_TAIL_LINES = 30
TOKEN_VAR = "QNN_SHARD_RUN_ID"
COMPILE_ONLY_REASON = (
    "refused: --compile_only is not run: in ExecuTorch 1.5.1 every test then ERRORs in "
    "verify_output, which ignores compile_only and asks for a device serial (an upstream "
    "bug); use the simulator (--sim) instead"
)

# argv template -> argv: the catalog's command_argv, injected so the runner does not
# need matrices.toml to be importable in tests of its own.
CommandBuilder = Callable[..., list[str]]


class RefusedError(RuntimeError):
    """The shard cannot run on this host at all (wrong checkout, no phone configured)."""


@dataclass(frozen=True)
class ProcessOutcome:
    """How a watched child process ended."""

    code: int | None
    stdout_path: Path
    stderr_path: Path
    end: results.RunEnd
    detail: str = ""


@dataclass
class RunSettings:
    """What the runner needs besides the shard: host facts, where to write, how to act."""

    host: HostConfig
    out_dir: Path
    command: CommandBuilder
    env: Mapping[str, str] = field(default_factory=dict)
    log: Callable[[str], None] = lambda _msg: None
    kill_grace_s: float = 2.0

    @property
    def state_dir(self) -> Path:
        return Path(self.host.state_dir)


# ----------------------------------------------------------------------- small helpers

_SECRET_HINTS = ("TOKEN", "SECRET", "PASSWORD", "PRIVATE_KEY", "CREDENTIAL")


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment minus anything that looks like a credential or the runner's own.

    The test process runs the PR's code; it gets no token even if a host has one set.
    """
    return {
        k: v
        for k, v in env.items()
        if not k.startswith("ACTIONS_") and not any(h in k.upper() for h in _SECRET_HINTS)
    }


def git_head(checkout: Path, env: Mapping[str, str]) -> str:
    proc = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    if proc.returncode != 0:
        raise RefusedError(
            f"{checkout} is not a git checkout ({proc.stderr.strip()[:200]}); set "
            "executorch_dir in the host config or pass --executorch-dir"
        )
    return proc.stdout.strip()


_LIB_VERSION_RE = re.compile(rb"v(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{6,16})(?![\d.])")
_VERSION_SCAN_BYTES = 256 * 1024 * 1024


def library_version(library: Path) -> str | None:
    """The build version libQnnHtp.so carries in its own bytes (``v2.51.0.260929181845``)."""
    overlap = 64
    tail = b""
    read = 0
    try:
        with open(library, "rb") as handle:
            while read < _VERSION_SCAN_BYTES:
                block = handle.read(4 * 1024 * 1024)
                if not block:
                    return None
                read += len(block)
                match = _LIB_VERSION_RE.search(tail + block)
                if match:
                    return match.group(1).decode()
                tail = block[-overlap:]
    except OSError:
        return None
    return None


def sdk_version(qnn_sdk_root: str | None) -> str:
    """The QNN SDK version: ``sdk.yaml``, else libQnnHtp.so's own, else "unknown (why)"."""
    if not qnn_sdk_root:
        return "unknown (qnn_sdk_root is not set in the host config)"
    root = Path(qnn_sdk_root)
    try:
        for line in (root / "sdk.yaml").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("version:"):
                found = line.split(":", 1)[1].strip().strip("'\"")[:64]
                if found:
                    return found
    except OSError:
        pass
    library = root / "lib" / "x86_64-linux-clang" / "libQnnHtp.so"
    from_library = library_version(library)
    if from_library:
        return f"{from_library} (from libQnnHtp.so; no sdk.yaml)"
    if re.match(r"^v?\d+\.\d+\.\d+(\.\d+)?$", root.name):
        return f"{root.name.lstrip('v')} (from the directory name; no sdk.yaml)"
    return f"unknown (no sdk.yaml in {root} and no version string in {library.name})"


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
) -> ProcessOutcome:
    """Run ``argv`` in its own process group; stop it on the shard timeout or when no
    test starts or finishes within ``progress_budget_s`` (a hang the wrapper's own
    per-test alarm could not interrupt). Until the first test starts, the budget is
    ``startup_budget_s`` instead: importing a harness is not a test.

    When it ends, whatever it started is killed too (``reap_leftovers``)."""
    stdout_path = out_dir / f"stdout{name}.txt"
    stderr_path = out_dir / f"stderr{name}.txt"
    last_progress = [time.monotonic()]
    started_tests = [False]
    startup = progress_budget_s if startup_budget_s is None else startup_budget_s

    def on_line(line: str) -> None:
        if results.is_progress_line(line):
            last_progress[0] = time.monotonic()
            started_tests[0] = True

    token = env.get(TOKEN_VAR) or secrets.token_hex(8)
    env = {**env, TOKEN_VAR: token}
    become_subreaper()
    before = _children_of(os.getpid())
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
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

    started = time.monotonic()
    stopped: str | None = None
    poll = min(0.2, max(0.02, progress_budget_s / 20))
    while proc.poll() is None:
        now = time.monotonic()
        if now - started > timeout_s:
            stopped = f"timed out after the shard budget of {timeout_s:g} s"
        elif not started_tests[0] and now - started > startup:
            stopped = (
                f"was stopped: no test started within {startup:g} s of starting the test "
                "process (the start-up budget: importing the harness took too long)"
            )
        elif started_tests[0] and now - last_progress[0] > progress_budget_s:
            stopped = (
                f"was stopped: no test started or finished for {progress_budget_s:g} s "
                "(the per-test budget plus grace)"
            )
        if stopped:
            _kill_group(proc, kill_grace_s)
            break
        time.sleep(poll)
    code = proc.wait()
    leftovers = reap_leftovers(proc.pid, token, before)
    for pump in pumps:
        pump.join(timeout=10)
    if leftovers:
        with open(stderr_path, "a", encoding="utf-8") as handle:
            handle.write(f"\n[runner: killed {len(leftovers)} process(es) left behind]\n")

    if stopped:
        return ProcessOutcome(code, stdout_path, stderr_path, results.RunEnd.TIMEOUT, stopped)
    if code < 0:
        try:
            sig = signal.Signals(-code).name
        except ValueError:
            sig = f"signal {-code}"
        return ProcessOutcome(
            code, stdout_path, stderr_path, results.RunEnd.CRASHED, f"killed by {sig}"
        )
    return ProcessOutcome(code, stdout_path, stderr_path, results.RunEnd.EXITED, "")


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
    ``reap_leftovers`` finds it as a child. Done once per process; False where unsupported.
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


def _children_of(parent: int) -> set[int]:
    out = set()
    for pid in _pids():
        stat = _proc_stat(pid)
        if stat and stat[0] == parent and stat[1] != "Z":
            out.add(pid)
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


def reap_leftovers(group: int, token: str, before: set[int]) -> list[int]:
    """Kill what a finished test process left: its group, processes with its token, and
    orphans re-parented to this (subreaper) process that were not our children before."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
    me = os.getpid()
    killed: list[int] = []
    for _ in range(5):
        victims = (_carrying(token) | (_children_of(me) - before)) - {me}
        if not victims:
            break
        for pid in victims:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        time.sleep(0.05)
        for pid in victims:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
    return sorted(set(killed))


def drop_escaping_links(root: Path) -> list[str]:
    """Remove symlinks under ``root`` that point outside it (the upload would follow them)."""
    base = root.resolve()
    dropped: list[str] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            if not path.is_symlink():
                continue
            target = path.resolve()
            if target != base and base not in target.parents:
                path.unlink()
                dropped.append(str(path.relative_to(root)))
    return dropped


def _tail(path: Path, lines: int = STDERR_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


# ---------------------------------------------------------------------------- the run


def script_argv(
    shard: Shard, settings: RunSettings, serial: str | None, artifact_dir: Path
) -> list[str]:
    """The test script's command, from the catalog's template, as an argument list."""
    simulator = shard.enable_x86_64 or shard.compile_only
    argv = settings.command(
        list(shard.tests),
        soc=shard.soc,
        backend=shard.backend,
        seed=shard.seed,
        host=shard.adb_host or "localhost",
        device=serial or "",
        build_folder=shard.build_folder,
    )
    if argv and Path(argv[0]).name in ("python", "python3"):
        argv[0] = settings.host.python
    if simulator:
        # No phone: drop the adb flags rather than pass a made-up serial.
        out: list[str] = []
        skip = False
        for word in argv:
            if skip:
                skip = False
                continue
            if word in ("--host", "--device"):
                skip = True
                continue
            out.append(word)
        argv = out
        argv += ["--enable_x86_64"] if shard.enable_x86_64 else []
        argv += ["--compile_only"] if shard.compile_only else []
    if shard.executorch_dir:
        argv += ["--executorch_root", shard.executorch_dir]
    argv += ["--artifact_dir", str(artifact_dir)]
    return argv


def _child_env(settings: RunSettings) -> dict[str, str]:
    env = scrub_env(settings.env)
    env.update(settings.host.env)
    if settings.host.qnn_sdk_root:
        env["QNN_SDK_ROOT"] = settings.host.qnn_sdk_root
    if settings.host.qnn_executor_runner:
        # ExecuTorch's harness reads it on the --enable_x86_64 path instead of the build.
        env["QNN_EXECUTOR_RUNNER"] = settings.host.qnn_executor_runner
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _read_reported(xml_path: Path, stderr_path: Path, notes: list[str]) -> results.Reported:
    text_report = results.Reported()
    try:
        raw = stderr_path.read_bytes()
        text_report = results.parse_verbose(
            raw[: results.MAX_TEXT_CHARS].decode("utf-8", "replace")
        )
    except OSError:
        pass
    if not xml_path.exists():
        return text_report
    try:
        with open(xml_path, "rb") as handle:
            data = handle.read(results.MAX_XML_BYTES + 1)
        return results.parse_junit(data).merged_with(text_report)
    except results.ArtifactError as exc:
        notes.append(f"junit.xml ignored: {exc}")
        return text_report


def run_tests(
    shard: Shard,
    settings: RunSettings,
    attempt_dir: Path,
    *,
    serial: str | None,
    adb: Adb | None,
    fingerprint: str | None,
) -> tuple[ShardResult, results.RunEnd]:
    """Run the shard's tests once on ``serial`` (or the simulator) and read the results."""
    attempt_dir.mkdir(parents=True, exist_ok=True)
    artifact_dir = attempt_dir / "artifacts"
    artifact_dir.mkdir(exist_ok=True)
    checkout = Path(shard.executorch_dir or ".")
    command = script_argv(shard, settings, serial, artifact_dir)
    env = _child_env(settings)
    xml_path = attempt_dir / "junit.xml"
    per_test = float(shard.per_test_timeout_s)
    grace = min(30.0, max(1.0, per_test * 0.25))

    if adb is not None:
        adb.clear_logcat()
    use_wrapper = settings.host.use_wrapper
    if use_wrapper:
        argv = [
            command[0],
            str(WRAPPER),
            "--junit-xml",
            str(xml_path),
            "--per-test-timeout",
            f"{per_test:g}",
            # What the harness lowers, per test (bot/lab/program_recorder.py, issue 21).
            "--programs",
            str(attempt_dir / PROGRAMS_FILE),
            *command[1:],
        ]
    else:
        argv = [*command, "-v"]
    (attempt_dir / "command.txt").write_text(shlex.join(command) + "\n")
    settings.log(f"[{shard.id}] {shlex.join(argv)}")

    def watch(argv: list[str], name: str = "") -> ProcessOutcome:
        return run_watched(
            argv,
            cwd=checkout,
            env=env,
            out_dir=attempt_dir,
            timeout_s=float(shard.timeout_s),
            progress_budget_s=per_test + grace,
            kill_grace_s=settings.kill_grace_s,
            name=name,
            startup_budget_s=max(settings.host.startup_timeout_s, per_test + grace),
        )

    outcome = watch(argv)
    if use_wrapper and outcome.code == EXIT_UNUSABLE and not xml_path.exists():
        settings.log(f"[{shard.id}] the wrapper cannot drive this script; running it with -v")
        argv = [*command, "-v"]
        (attempt_dir / "fallback.txt").write_text(shlex.join(argv) + "\n")
        outcome = watch(argv, name="-fallback")

    notes: list[str] = []
    reported = _read_reported(xml_path, outcome.stderr_path, notes)
    detail = outcome.detail
    if outcome.end is results.RunEnd.EXITED and not reported.results and outcome.code:
        tail = _tail(outcome.stderr_path, 3).replace("\n", " | ")
        detail = f"the test process exited with code {outcome.code}: {tail}"
    end = outcome.end
    if use_wrapper and outcome.code == EXIT_WRAPPER_FAULT:
        # The runner's own wrapper failed: what it could not account for is INFRA.
        end = results.RunEnd.NOT_STARTED
        tail = _tail(outcome.stderr_path, 200)
        fault = next(
            (ln for ln in reversed(tail.splitlines()) if ln.startswith("junit_wrapper:")), ""
        )
        detail = f"the runner's JUnit wrapper failed ({fault or 'exit 4'})"
    run_outcome = results.RunOutcome(end, detail)

    if adb is not None:
        logcat = adb.logcat(settings.host.logcat_lines)
        (attempt_dir / "logcat.txt").write_text(
            logcat.out if logcat.ok else f"logcat failed: {logcat.reason()}\n"
        )
        cleaned = adb.shell(f"rm -rf {DEVICE_WORKSPACE}")
        if not cleaned.ok:
            notes.append(f"could not clean {DEVICE_WORKSPACE}: {cleaned.reason()}")
    for note in notes:
        settings.log(f"[{shard.id}] {note}")

    result = results.build(
        shard,
        reported,
        run_outcome,
        device=serial,
        sdk_version=sdk_version(settings.host.qnn_sdk_root),
        device_fingerprint=fingerprint,
        command=tuple(command),
    )
    return result, end


@dataclass
class Attempt:
    """One try of (part of) a shard, for the attempts log."""

    device: str | None
    tests: tuple[str, ...]
    infra: int
    reason: str | None
    health: dict[str, object] | None = None


class Runner:
    """Runs shards on this host's phones; holds the per-host settings."""

    def __init__(self, settings: RunSettings, log_url: str | None = None) -> None:
        self.settings = settings
        self.log_url = log_url
        self.attempts: list[Attempt] = []

    def _adb(self, shard: Shard, serial: str) -> Adb:
        return Adb(
            serial,
            host=shard.adb_host,
            adb=self.settings.host.adb,
            env=_child_env(self.settings),
            timeout_s=60.0,
        )

    def _one_attempt(
        self, shard: Shard, candidates: Sequence[str], attempt_dir: Path
    ) -> ShardResult:
        """Lock a phone among ``candidates``, check it, run, clean up."""
        state_dir = self.settings.state_dir
        ordered = quarantine.order(state_dir, candidates)
        if not ordered:
            reason = (
                f"no other phone of SoC {shard.soc} on this host to run on; add one under "
                "[[devices]] in the host config"
            )
            return ShardResult.all_infra(shard, reason)
        try:
            with locks.first_free(state_dir, ordered, self.settings.host.lock_wait_s) as serial:
                return self._on_device(shard, serial, attempt_dir)
        except locks.DeviceBusy as exc:
            return ShardResult.all_infra(shard, str(exc))

    def _on_device(self, shard: Shard, serial: str, attempt_dir: Path) -> ShardResult:
        state_dir = self.settings.state_dir
        try:
            adb = self._adb(shard, serial)
        except AdbConfigError as exc:
            return ShardResult.all_infra(shard, str(exc), device=serial)
        was = quarantine.get(state_dir, serial)
        platforms = {**health.load_platforms(), **self.settings.host.board_platforms}
        verdict = health.check(
            adb,
            serial=serial,
            expected_soc=shard.soc,
            min_free_mb=self.settings.host.min_free_mb,
            platforms=platforms,
        )
        attempt_dir.mkdir(parents=True, exist_ok=True)
        (attempt_dir / "health.json").write_text(json.dumps(verdict.to_dict(), indent=1) + "\n")
        if not verdict.ok:
            quarantine.put(state_dir, serial, verdict.reason, shard.id)
            self.settings.log(f"[{shard.id}] health check failed: {verdict.reason}")
            self.attempts.append(
                Attempt(serial, shard.tests, len(shard.tests), verdict.reason, verdict.to_dict())
            )
            return ShardResult.all_infra(
                shard,
                f"health check failed: {verdict.reason}",
                device=serial,
                device_fingerprint=verdict.fingerprint,
                sdk_version=sdk_version(self.settings.host.qnn_sdk_root),
            )
        if was is not None:
            quarantine.lift(state_dir, serial)
            self.settings.log(f"[{shard.id}] {serial} passed its health check; back in rotation")
        result, end = run_tests(
            shard,
            self.settings,
            attempt_dir,
            serial=serial,
            adb=adb,
            fingerprint=verdict.fingerprint,
        )
        infra = [r for r in result.results if r.status is Status.INFRA]
        if infra:
            result = replace(result, infra_reason=infra[0].message)
        # A test process that never started, or one that rejected its command line before
        # any test touched the phone, is this host's or the plan's problem, not the phone's.
        rejected = all(results.SETUP_EXCEPTION in r.message for r in infra)
        if infra and end is not results.RunEnd.NOT_STARTED and not rejected:
            reason = f"{len(infra)} INFRA result(s) in shard {shard.id}: {infra[0].message}"
            quarantine.put(state_dir, serial, reason, shard.id)
            self.settings.log(f"[{shard.id}] {serial} quarantined: {reason}")
        self.attempts.append(
            Attempt(
                serial,
                shard.tests,
                len(infra),
                infra[0].message if infra else None,
                verdict.to_dict(),
            )
        )
        return result

    def run(self, shard: Shard) -> ShardResult:
        """The whole shard: checks, first attempt, at most one retry of INFRA tests."""
        settings = self.settings
        # The test process runs in the checkout: a relative --out would land there.
        self.settings = settings = replace(settings, out_dir=settings.out_dir.resolve())
        shard = settings.host.apply(shard)
        out = settings.out_dir
        out.mkdir(parents=True, exist_ok=True)
        (out / "shard.json").write_text(json.dumps(shard.to_dict(), indent=1) + "\n")

        try:
            self._check_checkout(shard)
            self._check_host_can_run(shard)
            self._check_import(shard)
        except RefusedError as exc:
            result = ShardResult.all_infra(
                shard,
                str(exc) if str(exc).startswith("refused") else f"refused: {exc}",
                attempts=0,
                sdk_version=sdk_version(settings.host.qnn_sdk_root),
            )
            return self._finish(result)

        # Tests this host cannot run are not run; they read SKIP with the host's reason.
        skipped = {t: r for t in shard.tests if (r := settings.host.unsupported(t)) is not None}
        runnable = tuple(t for t in shard.tests if t not in skipped)
        skips = [
            TestResult(t, Status.SKIP, None, f"not run on this host: {reason}")
            for t, reason in skipped.items()
        ]
        if not runnable:
            return self._finish(ShardResult.complete(shard, skips, attempts=0))
        inner = replace(shard, tests=runnable) if skipped else shard
        result = self._simulate(inner) if inner.enable_x86_64 else self._on_phones(inner)
        if skipped:
            result = replace(
                result,
                shard=shard,
                results=ShardResult.complete(shard, [*result.results, *skips]).results,
            )
        return self._finish(result)

    def _on_phones(self, shard: Shard) -> ShardResult:
        settings = self.settings
        out = settings.out_dir
        candidates = list(
            dict.fromkeys([*([shard.device] if shard.device else []), *shard.device_pool])
        )
        if not candidates:
            return ShardResult.all_infra(
                shard,
                f"refused: no phone of SoC {shard.soc} is configured on this host; list it under "
                "[[devices]] in the host config, or pass --device",
                attempts=0,
            )

        first = self._one_attempt(shard, candidates, out / "attempt-1")
        retry_ids = tuple(r.test_id for r in first.results if r.status is Status.INFRA)
        if not retry_ids:
            return first
        others = [c for c in candidates if c != first.device]
        if not others:
            settings.log(
                f"[{shard.id}] INFRA on {first.device}; no other {shard.soc} phone here to retry on"
            )
            return first
        settings.log(
            f"[{shard.id}] retrying {len(retry_ids)} INFRA test(s) once on another {shard.soc} phone"
        )
        sub = replace(shard, tests=retry_ids, device=None, device_pool=tuple(others))
        second = self._one_attempt(sub, others, out / "attempt-2")
        return results.merge_retry(first, second, retry_ids)

    def _simulator_health(self, shard: Shard) -> health.Health:
        host = self.settings.host
        env = _child_env(self.settings)
        runner = health.simulator_runner_path(
            host.qnn_executor_runner, shard.build_folder, shard.executorch_dir or "."
        )

        def probe(argv: list[str]) -> tuple[int | None, str]:
            try:
                proc = subprocess.run(
                    argv,
                    capture_output=True,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    timeout=30,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                return None, str(exc)
            text = (proc.stderr + proc.stdout)[:4096].decode("utf-8", "replace")
            return proc.returncode, text

        def free_mb(path: str) -> int | None:
            try:
                return shutil.disk_usage(path).free // (1024 * 1024)
            except OSError:
                return None

        return health.check_simulator(
            qnn_sdk_root=host.qnn_sdk_root,
            runner=runner,
            work_dir=str(self.settings.out_dir),
            min_free_mb=host.min_free_mb,
            is_file=os.path.isfile,
            is_executable=lambda p: os.access(p, os.X_OK),
            probe=probe,
            free_mb=free_mb,
        )

    def _simulate(self, shard: Shard) -> ShardResult:
        """A simulator shard: host check, one run, one more run of the INFRA tests."""
        out = self.settings.out_dir
        version = sdk_version(self.settings.host.qnn_sdk_root)
        verdict = self._simulator_health(shard)
        (out / "attempt-1").mkdir(parents=True, exist_ok=True)
        (out / "attempt-1" / "health.json").write_text(
            json.dumps(verdict.to_dict(), indent=1) + "\n"
        )
        if not verdict.ok:
            self.settings.log(f"[{shard.id}] simulator host check failed: {verdict.reason}")
            self.attempts.append(
                Attempt(None, shard.tests, len(shard.tests), verdict.reason, verdict.to_dict())
            )
            return ShardResult.all_infra(
                shard, f"simulator host check failed: {verdict.reason}", sdk_version=version
            )
        first = self._simulator_attempt(shard, out / "attempt-1", verdict)
        retry_ids = tuple(r.test_id for r in first.results if r.status is Status.INFRA)
        if not retry_ids:
            return first
        self.settings.log(f"[{shard.id}] retrying {len(retry_ids)} INFRA test(s) once")
        second = self._simulator_attempt(
            replace(shard, tests=retry_ids), out / "attempt-2", verdict
        )
        return results.merge_retry(first, second, retry_ids)

    def _simulator_attempt(
        self, shard: Shard, attempt_dir: Path, verdict: health.Health
    ) -> ShardResult:
        result, _ = run_tests(
            shard, self.settings, attempt_dir, serial=None, adb=None, fingerprint=None
        )
        infra = [r for r in result.results if r.status is Status.INFRA]
        if infra:
            result = replace(result, infra_reason=infra[0].message)
        self.attempts.append(
            Attempt(
                None,
                shard.tests,
                len(infra),
                infra[0].message if infra else None,
                verdict.to_dict(),
            )
        )
        return result

    def _check_host_can_run(self, shard: Shard) -> None:
        host = self.settings.host
        if shard.compile_only:
            raise RefusedError(COMPILE_ONLY_REASON)
        if shard.enable_x86_64 and not host.simulator:
            raise RefusedError(
                "refused: this is a phone host; simulator shards run on hosts with "
                'kind = "x86-simulator" (the workflow routes them by runner label)'
            )
        if host.simulator and not shard.enable_x86_64:
            raise RefusedError(
                "refused: this x86-simulator host has no phones; the shard was routed to the "
                "wrong runner labels"
            )
        if shard.backend not in host.runnable_backends:
            raise RefusedError(
                f"refused: this {host.kind} host runs backend(s) "
                f"{', '.join(host.runnable_backends)}, not {shard.backend}"
                + (
                    " (QNN's GPU backend does not run on x86-64)"
                    if host.simulator and shard.backend == "gpu"
                    else ""
                )
                + "; this is the lab's limit, not the change's"
            )

    def _check_import(self, shard: Shard) -> None:
        """The ``executorch`` the harness imports must be the checkout's, not another copy."""
        checkout = Path(shard.executorch_dir or ".").resolve()
        script_dir = checkout / Path(TEST_SCRIPT).parent
        code = (
            "import sys; sys.path[0] = sys.argv[1]; import executorch; "
            "print('\\n'.join([getattr(executorch, '__file__', None) or '', "
            "*getattr(executorch, '__path__', [])]))"
        )
        try:
            proc = subprocess.run(
                [self.settings.host.python, "-c", code, str(script_dir)],
                cwd=checkout,
                capture_output=True,
                text=True,
                env=_child_env(self.settings),
                stdin=subprocess.DEVNULL,
                timeout=120,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RefusedError(f"cannot run {self.settings.host.python}: {exc}") from exc
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]
            raise RefusedError(
                f"{self.settings.host.python} cannot import executorch from {checkout} ({last}); "
                "install the checkout editable or set [env] PYTHONPATH in the host config"
            )
        # The module file, else the first portion of a namespace package: the one whose
        # submodules are imported first.
        places = [Path(p).resolve() for p in proc.stdout.splitlines() if p.strip()][:1]
        outside = [p for p in places if p != checkout and checkout not in p.parents]
        if not places or outside:
            where = outside[0] if outside else "nowhere"
            raise RefusedError(
                f"the tests would import executorch from {where}, not from the checkout at "
                f"{checkout} (pinned to {shard.sha[:12]}); install the checkout editable in "
                "the host's venv or set [env] PYTHONPATH so it comes first"
            )

    def _check_checkout(self, shard: Shard) -> None:
        if not shard.executorch_dir:
            raise RefusedError(
                "no ExecuTorch checkout: set executorch_dir in the host config or pass --executorch-dir"
            )
        checkout = Path(shard.executorch_dir)
        if not (checkout / TEST_SCRIPT).is_file():
            raise RefusedError(
                f"{checkout} has no {TEST_SCRIPT}; is executorch_dir an ExecuTorch checkout?"
            )
        head = git_head(checkout, self.settings.env)
        if head != shard.sha:
            raise RefusedError(
                f"{checkout} is at {head[:12]}, but the shard is pinned to {shard.sha[:12]}: the "
                "checkout is wrong or the PR head moved; check out the pinned SHA and run again"
            )

    def _finish(self, result: ShardResult) -> ShardResult:
        """Add the log link, write result.json, attempts.json and summary.txt."""
        if self.log_url:
            result = replace(result, log_url=self.log_url)
        if result.sdk_version is None:
            result = replace(result, sdk_version=sdk_version(self.settings.host.qnn_sdk_root))
        out = self.settings.out_dir
        for link in drop_escaping_links(out):
            self.settings.log(f"[{result.shard.id}] removed {link}: a symlink out of the results")
        (out / "result.json").write_text(json.dumps(result.to_dict(), indent=1) + "\n")
        (out / "attempts.json").write_text(
            json.dumps([vars(a) | {"tests": list(a.tests)} for a in self.attempts], indent=1) + "\n"
        )
        summary = results.ran_line(result)
        if result.infra_reason:
            summary += f"\nINFRA: {result.infra_reason}"
        (out / "summary.txt").write_text(summary + "\n")
        return result
