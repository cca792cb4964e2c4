"""``--fork-per-test``: each test in its own child of this process, watched to a deadline.

Each test runs in a child forked from this process after the script is imported and its
class fixtures ran (``setUpClass`` stays here, once per class, as unittest runs it: on the
phone path it pushes the libraries to the device). Nothing a test does reaches the next
one: QNN's compiler keeps process-wide counters (tensor ids, the ``PICKLE/<n>`` graph names)
that end up in every context binary, so without it one extra node in one test changes the
payload of every later test in the shard, and a test's payload depends on which tests ran
before it. With it, a test's program depends on its own code and the seed alone.

The child (``ChildResult``) runs the test's hooks and sends its outcome (and the recorder's
fingerprints) back over a pipe; this process (``ParentResult``) writes the XML and prints the
``-v`` lines. A child that dies (a crash in native code) is that test's error,
``TestProcessDied`` with the signal, and the shard goes on with the next test; a child still
running past the per-test budget plus a grace (``hard_deadline_s``) is killed
(``PerTestTimeout``). The deadline is read from a clock the caller may give (a monotonic
time in seconds): tests give one that passes the deadline when a test says it is stuck.
Without ``os.fork`` (Windows) the flag is said and ignored (``main``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import select
import signal
import sys
import time
import traceback
import unittest
from collections.abc import Callable
from typing import Any

from . import hooks
from .xml_result import Case, XmlTestResult

Clock = Callable[[], float]  # seconds, monotonic
# A child still running this long past its budget (stuck in native code, where the timer's
# exception cannot reach) is killed. Under the runner's own watchdog, which allows the
# budget plus at least 1 s of grace.
HARD_GRACE_S = (0.8, 10.0)  # at least, at most
HARD_GRACE_SHARE = 0.02  # of the budget
DIED_EXCEPTION = "TestProcessDied"
# What a test's child may send back (its outcome and the recorder's fingerprints, whose file
# is capped at 4 MiB): more is not read into memory, and reads as no report at all.
MAX_CHILD_MESSAGE_BYTES = 64 * 1024 * 1024
CHILD_FAILED = 70  # the child's exit code when running the test itself raised


def hard_deadline_s(budget: float) -> float:
    """How long the parent lets a test's child run: its budget and a grace, or for ever."""
    if budget <= 0:
        return math.inf
    low, high = HARD_GRACE_S
    return budget + min(high, max(low, budget * HARD_GRACE_SHARE))


def describe_exit(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "an unknown signal"
        return f"was killed by signal {number} ({name})"
    return f"exited with status {os.WEXITSTATUS(status)} before reporting"


def read_child(
    pid: int, fd: int, deadline: float, clock: Clock = time.monotonic
) -> tuple[bytes, int | None, bool]:
    """What the child wrote to ``fd`` until it ended; its wait status (None if it had to be
    killed) and whether it was killed for overrunning ``deadline`` (a time of ``clock``)."""
    chunks: list[bytes] = []
    size = 0
    status: int | None = None
    killed = False
    try:
        while True:
            wait = min(0.5, max(0.0, deadline - clock()))
            ready, _, _ = select.select([fd], [], [], wait)
            if ready:
                data = os.read(fd, 1 << 16)
                if data:
                    size += len(data)
                    if size <= MAX_CHILD_MESSAGE_BYTES:
                        chunks.append(data)
                    else:  # read on (the child must not block), keep nothing
                        chunks = []
                    continue
                break  # end of file: the child closed its end (it should exit next)
            done, found = os.waitpid(pid, os.WNOHANG)
            if done:  # it ended but something it started keeps the pipe open
                status = found
                break
            if clock() >= deadline:
                os.kill(pid, signal.SIGKILL)
                killed = True
                break
    finally:
        os.close(fd)
    # A child that closed its end and then hangs (in native code, or a test that closed
    # every descriptor) is held to the same deadline as one still writing.
    while status is None and not killed:
        done, found = os.waitpid(pid, os.WNOHANG)
        if done:
            status = found
        elif clock() >= deadline:
            os.kill(pid, signal.SIGKILL)
            killed = True
        else:
            time.sleep(min(0.05, max(0.0, deadline - clock())))
    if killed:
        os.waitpid(pid, 0)  # SIGKILL cannot be caught: this returns at once
    return b"".join(chunks), None if killed else status, killed


def child_message(data: bytes) -> dict[str, Any] | None:
    """The child's report, or None when it is not one (a test's code shares the process
    that writes it: only the shape ``ChildResult.send`` writes is taken)."""
    try:
        message = json.loads(data.decode()) if data else None
    except (ValueError, RecursionError):  # nested past the recursion limit: not a report
        return None
    if not isinstance(message, dict):
        return None
    outcome, skipped = message.get("outcome"), message.get("skipped")
    if outcome is not None and not (
        isinstance(outcome, list) and len(outcome) == 4 and all(isinstance(x, str) for x in outcome)
    ):
        return None
    if skipped is not None and not isinstance(skipped, str):
        return None
    if not isinstance(message.get("programs"), dict | None):
        return None
    return message


class ChildResult(XmlTestResult):
    """The result in a test's own process: the hooks run here, the outcome goes to ``sink``."""

    def __init__(self, stream: Any, descriptions: bool, verbosity: int, sink: int) -> None:
        super().__init__(stream, descriptions, verbosity)
        self.sink = sink
        self.xml_path = ""  # the parent writes the file

    def stopTest(self, test: unittest.TestCase) -> None:
        if self.per_test_timeout > 0:
            hooks.disarm_alarm()
        self.send(test, self.stop_case(test))

    def send(self, test: Any, case: Case) -> None:
        """The outcome of ``test``, as one JSON document to the parent."""
        message = {
            "outcome": case.outcome,
            "skipped": case.skipped,
            "expected_failure": any(t is test for t, _ in self.expectedFailures),
            "programs": self.recorder.take() if self.recorder is not None else None,
        }
        view = memoryview(json.dumps(message).encode())
        while view:
            view = view[os.write(self.sink, view) :]


class ParentResult(XmlTestResult):
    """The result in the wrapper's process: the record and the files; no test runs here."""

    def startTest(self, test: unittest.TestCase) -> None:
        self.start_case(test)  # the hooks run in the test's own process

    def stopTest(self, test: unittest.TestCase) -> None:
        self.stop_case(test)
        self.write()

    def _say(self, long: str, short: str) -> None:
        if self.showAll:
            self.stream.writeln(long)
        elif self.dots:
            self.stream.write(short)
        self.stream.flush()

    def apply(self, test: Any, message: dict[str, Any]) -> None:
        """Record what the child of ``test`` sent (or the parent found), as unittest would."""
        case = self.case_for(test)
        outcome = message.get("outcome")
        if outcome:
            tag, exc_type, text = str(outcome[0]), str(outcome[1]), str(outcome[3])
            case.outcome = (tag, exc_type, str(outcome[2]), text)
            if exc_type == "UnexpectedSuccess":
                self.unexpectedSuccesses.append(test)
                self._say("unexpected success", "u")
            elif tag == "failure":
                self.failures.append((test, text))
                self._say("FAIL", "F")
            else:
                self.errors.append((test, text))
                self._say("ERROR", "E")
        elif message.get("skipped") is not None:
            case.skipped = str(message["skipped"])
            self.skipped.append((test, case.skipped))
            self._say(f"skipped {case.skipped!r}", "s")
        elif message.get("expected_failure"):
            self.expectedFailures.append((test, ""))
            self._say("expected failure", "x")
        else:
            self._say("ok", ".")
        if self.recorder is not None and message.get("programs"):
            self.recorder.put(message["programs"])


def run_forked(test: unittest.TestCase, result: ParentResult, clock: Clock) -> None:
    """Run ``test`` in a child forked from this process, and record its outcome here."""
    result.startTest(test)
    for stream in (sys.stdout, sys.stderr, result.stream):
        stream.flush()
    read_end, write_end = os.pipe()
    started = clock()
    pid = os.fork()
    if pid == 0:  # the child: run the test as unittest would, report, and leave at once
        code = 0
        try:
            os.close(read_end)
            child = ChildResult(open(os.devnull, "w"), False, 0, write_end)  # noqa: SIM115
            type(test).run(test, child)
        except BaseException:
            traceback.print_exc()
            code = CHILD_FAILED
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os._exit(code)
    os.close(write_end)
    budget = result.per_test_timeout
    data, status, killed = read_child(pid, read_end, started + hard_deadline_s(budget), clock)
    message = child_message(data)
    if killed:
        ran = clock() - started
        text = f"killed after {ran:.1f} s: still running past the per-test budget of {budget:g} s"
        message = {"outcome": ["error", hooks.PerTestTimeout.__name__, text, ""]}
    elif message is None:
        assert status is not None
        text = f"the test's process {describe_exit(status)}"
        message = {"outcome": ["error", DIED_EXCEPTION, text, ""]}
    result.apply(test, message)
    result.stopTest(test)
    if result.recorder is not None:
        result.recorder.write_quietly()


class ForkingRunner(unittest.TextTestRunner):
    """A TextTestRunner whose every test runs in its own child (``run_forked``); its
    ``resultclass`` must be ``ParentResult``, or the tests run in this process."""

    def __init__(self, *args: Any, clock: Clock = time.monotonic, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.clock = clock

    def run(self, test: unittest.TestSuite | unittest.TestCase) -> Any:
        for case in _cases(test):
            case.run = functools.partial(_run_case, case, clock=self.clock)  # type: ignore[method-assign]
        return super().run(test)


def _run_case(
    case: unittest.TestCase, result: unittest.TestResult | None = None, *, clock: Clock
) -> None:
    if isinstance(result, ParentResult):
        run_forked(case, result, clock)
    else:  # not our result (a harness calling run() itself): in this process
        type(case).run(case, result)


def _cases(test: Any) -> list[unittest.TestCase]:
    if isinstance(test, unittest.TestCase):
        return [test]
    return (
        [case for sub in test for case in _cases(sub)]
        if isinstance(test, unittest.TestSuite)
        else []
    )
