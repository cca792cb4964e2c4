"""One attempt: the test script's command, its watched run, and the results read back.

The command is built from the catalog's template as an argument list (never a shell
string) and run through ``junit_wrapper`` (or, when the wrapper cannot drive the script,
with ``-v`` and its text parsed). The phone's own bookkeeping around it (logcat, reset)
is the phone target's. Every path handed to the test process is absolute: it runs in the
checkout, not here.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from qnn_migrate.bot import artifacts
from qnn_migrate.bot.artifacts import PROGRAMS_FILE, ArtifactError
from qnn_migrate.bot.lab import job_user, preflight, process, results
from qnn_migrate.bot.lab.junit_wrapper.main import EXIT_UNUSABLE, EXIT_WRAPPER_FAULT
from qnn_migrate.bot.lab.settings import RunSettings, child_env
from qnn_migrate.bot.model import HostShard, RunsOn, ShardResult

# The wrapper is a folder that Python runs by path (its __main__.py loads the rest).
WRAPPER = Path(__file__).with_name("junit_wrapper")
STDERR_TAIL_LINES = 30


@dataclass
class Attempt:
    """One try of (part of) a shard, for the attempts log."""

    device: str | None
    tests: tuple[str, ...]
    infra: int
    reason: str | None
    health: dict[str, object] | None = None


def script_argv(
    shard: HostShard, settings: RunSettings, serial: str | None, artifact_dir: Path
) -> list[str]:
    """The test script's command, from the catalog's template, as an argument list."""
    simulator = shard.runs_on is not RunsOn.PHONE
    argv = settings.command(
        list(shard.tests),
        soc=shard.soc,
        backend=shard.backend,
        seed=shard.seed,
        host=shard.adb_host or "localhost",
        device=serial or "",
        build_folder=shard.build_folder,
        matrix=shard.matrix,
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
        argv += ["--enable_x86_64"] if shard.runs_on is RunsOn.SIMULATOR else []
        argv += ["--compile_only"] if shard.runs_on is RunsOn.COMPILE_ONLY else []
    if shard.executorch_dir:
        argv += ["--executorch_root", shard.executorch_dir]
    argv += ["--artifact_dir", str(artifact_dir)]
    return argv


# The test process can replace the files it writes, and the runner's stderr file, with a
# FIFO (a read that waits for ever) or a link to /dev/zero (a read that never ends): they
# are read through the capped reader, a regular file only, and never more than a cap.
TAIL_BYTES = 1024 * 1024


def _tail(path: Path, lines: int = STDERR_TAIL_LINES) -> str:
    try:
        data = artifacts.read_part(path, "the test's output", TAIL_BYTES, tail=True)
    except ArtifactError:
        return ""
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])


def _read_reported(xml_path: Path, stderr_path: Path, notes: list[str]) -> results.Reported:
    text_report = results.Reported()
    try:
        raw = artifacts.read_part(stderr_path, "the test's output", results.MAX_TEXT_CHARS)
        text_report = results.parse_verbose(raw.decode("utf-8", "replace"))
    except ArtifactError as exc:
        if stderr_path.exists() or stderr_path.is_symlink():
            notes.append(f"the test output ignored: {exc}")
    if not xml_path.exists() and not xml_path.is_symlink():
        return text_report
    try:
        data = artifacts.read_part(xml_path, "junit.xml", results.MAX_XML_BYTES + 1)
        return results.parse_junit(data).merged_with(text_report)
    except (ArtifactError, results.ArtifactError) as exc:
        notes.append(f"junit.xml ignored: {exc}")
        return text_report


def run_tests(
    shard: HostShard,
    settings: RunSettings,
    attempt_dir: Path,
    *,
    serial: str | None,
    fingerprint: str | None,
) -> tuple[ShardResult, results.RunEnd]:
    """Run the shard's tests once on ``serial`` (or the simulator) and read the results."""
    attempt_dir.mkdir(parents=True, exist_ok=True)
    user = settings.job_user
    # Where the test process writes: its own folder with a job user (read back into the
    # attempt's folder, the supervisor's, after the run), else the attempt's folder.
    job_dir = attempt_dir if user is None else user.out / attempt_dir.name
    artifact_dir = job_dir / "artifacts"
    if user is None:
        artifact_dir.mkdir(exist_ok=True)
    checkout = Path(shard.executorch_dir or ".")
    command = script_argv(shard, settings, serial, artifact_dir)
    env = child_env(settings, str(checkout))
    xml_path = attempt_dir / "junit.xml"
    per_test = float(shard.per_test_timeout_s)
    grace = min(30.0, max(1.0, per_test * 0.25))

    use_wrapper = settings.host.use_wrapper
    if use_wrapper:
        argv = [
            command[0],
            str(WRAPPER),
            "--junit-xml",
            str(job_dir / "junit.xml"),
            "--per-test-timeout",
            f"{per_test:g}",
            # What the harness lowers, per test (bot/lab/program_recorder.py).
            "--programs",
            str(job_dir / PROGRAMS_FILE),
            # The seed the script is given, applied before each test on every path (the
            # harness applies it on none but the phone's; docs/bot.md, "Program fingerprints").
            "--seed",
            str(shard.seed),
            # Each test in its own process: QNN's process-wide counters end up in the
            # context binary, so a program must not depend on the tests before it.
            *(["--fork-per-test"] if settings.host.fork_per_test else []),
            *command[1:],
        ]
    else:
        argv = [*command, "-v"]
    if user is not None:
        argv = job_user.staged_argv(argv, user.staged)
    (attempt_dir / "command.txt").write_text(shlex.join(command) + "\n")
    settings.log(f"[{shard.id}] {shlex.join(argv)}")

    def watch(argv: list[str], name: str = "") -> process.ProcessOutcome:
        outcome = process.run_watched(
            argv,
            cwd=checkout,
            env=env,
            out_dir=attempt_dir,
            timeout_s=float(shard.timeout_s),
            progress_budget_s=per_test + grace,
            kill_grace_s=settings.kill_grace_s,
            name=name,
            startup_budget_s=max(settings.host.startup_timeout_s, per_test + grace),
            as_user=user,
            clock=settings.clock,
        )
        if user is not None:
            for note in user.collect(job_dir, attempt_dir):
                settings.log(f"[{shard.id}] {note}")
        return outcome

    outcome = watch(argv)
    if use_wrapper and outcome.code == EXIT_UNUSABLE and not xml_path.exists():
        settings.log(f"[{shard.id}] the wrapper cannot drive this script; running it with -v")
        argv = [*command, "-v"]
        if user is not None:
            argv = job_user.staged_argv(argv, user.staged)
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

    for note in notes:
        settings.log(f"[{shard.id}] {note}")

    result = results.build(
        shard,
        reported,
        run_outcome,
        device=serial,
        sdk_version=preflight.sdk_version(settings.host.qnn_sdk_root),
        device_fingerprint=fingerprint,
        command=tuple(command),
    )
    return result, end
