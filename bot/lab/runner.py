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

This module and ``adb`` are the only ones that start processes. Nothing here reads
``os.environ``: the environment for child processes is passed in by ``device_cli``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from qnn_migrate.bot.lab import health, locks, quarantine, results
from qnn_migrate.bot.lab.adb import Adb, AdbConfigError
from qnn_migrate.bot.lab.host_config import HostConfig
from qnn_migrate.bot.lab.junit_wrapper import EXIT_UNUSABLE
from qnn_migrate.bot.model import Shard, ShardResult, Status

DEVICE_WORKSPACE = "/data/local/tmp/qnn_executorch_test"
TEST_SCRIPT = "backends/qualcomm/tests/test_qnn_delegate.py"
WRAPPER = Path(__file__).with_name("junit_wrapper.py")
MAX_LOG_BYTES = 64 * 1024 * 1024
STDERR_TAIL_LINES = 30

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


def sdk_version(qnn_sdk_root: str | None) -> str | None:
    """The QAIRT/QNN SDK version from ``$QNN_SDK_ROOT/sdk.yaml``, else its directory name."""
    if not qnn_sdk_root:
        return None
    root = Path(qnn_sdk_root)
    try:
        for line in (root / "sdk.yaml").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("version:"):
                return line.split(":", 1)[1].strip().strip("'\"")[:64] or None
    except OSError:
        pass
    if re.match(r"^v?\d+\.\d+\.\d+(\.\d+)?$", root.name):
        return root.name.lstrip("v")
    return None


def _pump(
    source: IO[bytes],
    target: Path,
    on_line: Callable[[str], None] | None,
) -> None:
    """Copy a child's stream to a file (capped), calling ``on_line`` for each line."""
    written = 0
    with open(target, "wb") as sink:
        for raw in iter(source.readline, b""):
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
) -> ProcessOutcome:
    """Run ``argv`` in its own process group; stop it on the shard timeout or when no
    test starts or finishes within ``progress_budget_s`` (a hang the wrapper's own
    per-test alarm could not interrupt)."""
    stdout_path = out_dir / f"stdout{name}.txt"
    stderr_path = out_dir / f"stderr{name}.txt"
    last_progress = [time.monotonic()]

    def on_line(line: str) -> None:
        if results.is_progress_line(line):
            last_progress[0] = time.monotonic()

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
        elif now - last_progress[0] > progress_budget_s:
            stopped = (
                f"was stopped: no test started or finished for {progress_budget_s:g} s "
                "(the per-test budget plus grace)"
            )
        if stopped:
            _kill_group(proc, kill_grace_s)
            break
        time.sleep(poll)
    code = proc.wait()
    for pump in pumps:
        pump.join(timeout=10)

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
    run_outcome = results.RunOutcome(outcome.end, detail)

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
    return result, outcome.end


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
        # A test process that never started is this host's problem, not the phone's.
        if infra and end is not results.RunEnd.NOT_STARTED:
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
        shard = settings.host.apply(shard)
        out = settings.out_dir
        out.mkdir(parents=True, exist_ok=True)
        (out / "shard.json").write_text(json.dumps(shard.to_dict(), indent=1) + "\n")

        try:
            self._check_checkout(shard)
        except RefusedError as exc:
            result = ShardResult.all_infra(shard, f"refused: {exc}", attempts=0)
            return self._finish(result)

        if shard.enable_x86_64 or shard.compile_only:
            result, _ = run_tests(
                shard, settings, out / "attempt-1", serial=None, adb=None, fingerprint=None
            )
            self.attempts.append(Attempt(None, shard.tests, 0, result.infra_reason))
            return self._finish(result)

        candidates = list(
            dict.fromkeys([*([shard.device] if shard.device else []), *shard.device_pool])
        )
        if not candidates:
            result = ShardResult.all_infra(
                shard,
                f"refused: no phone of SoC {shard.soc} is configured on this host; list it under "
                "[[devices]] in the host config, or pass --device",
                attempts=0,
            )
            return self._finish(result)

        first = self._one_attempt(shard, candidates, out / "attempt-1")
        retry_ids = tuple(r.test_id for r in first.results if r.status is Status.INFRA)
        if not retry_ids:
            return self._finish(first)
        others = [c for c in candidates if c != first.device]
        if not others:
            settings.log(
                f"[{shard.id}] INFRA on {first.device}; no other {shard.soc} phone here to retry on"
            )
            return self._finish(first)
        settings.log(
            f"[{shard.id}] retrying {len(retry_ids)} INFRA test(s) once on another {shard.soc} phone"
        )
        sub = replace(shard, tests=retry_ids, device=None, device_pool=tuple(others))
        second = self._one_attempt(sub, others, out / "attempt-2")
        merged = results.merge_retry(first, second, retry_ids)
        return self._finish(merged)

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
        out = self.settings.out_dir
        (out / "result.json").write_text(json.dumps(result.to_dict(), indent=1) + "\n")
        (out / "attempts.json").write_text(
            json.dumps([vars(a) | {"tests": list(a.tests)} for a in self.attempts], indent=1) + "\n"
        )
        summary = results.ran_line(result)
        if result.infra_reason:
            summary += f"\nINFRA: {result.infra_reason}"
        (out / "summary.txt").write_text(summary + "\n")
        return result
