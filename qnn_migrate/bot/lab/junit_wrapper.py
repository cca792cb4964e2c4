"""Run ExecuTorch's QNN test script under unittest and write JUnit XML as it goes.

This file runs on the device host, inside the ExecuTorch checkout, with ExecuTorch's own
Python: it uses the standard library only and imports nothing from qnn-migrate.

    python junit_wrapper.py --junit-xml OUT.xml [--per-test-timeout S] [--seed N] \\
        [--programs P.json] [--fork-per-test] \\
        backends/qualcomm/tests/test_qnn_delegate.py <the script's own arguments>

It loads the script as a module, calls its ``setup_environment()`` exactly as the
script's ``__main__`` block does (so every ``--soc_model``/``--device``/... flag means the
same), then ``unittest.main`` with a runner that prints the usual ``-v`` lines to stderr
and rewrites the XML after every test, so a crash still leaves what ran before it. The
XML records the test that is running (``running`` property) and, at the end,
``complete="true"``.

With ``--seed N`` (the runner passes the seed it gave the script's own ``--seed``) the
random generators the harness draws from (Python's ``random``, NumPy's and torch's, those
already imported) are seeded with N as each test starts, after its class's ``setUpClass``.
ExecuTorch 1.5.1's ``test_qnn_delegate.py`` applies its ``--seed`` only on the phone path
and only once per class (``QnnConfig`` in ``setUpClass``); on the x86 and compile-only paths
it never does, so every run drew new weights and inputs. Seeding each test makes what a
test draws depend on the seed alone, not on the path or on which tests ran before it in
its shard (a PR's shards and the nightly's group tests differently). What the tests check
is unchanged.

With ``--fork-per-test`` each test runs in its own child, forked from this process after
the script is imported and its class fixtures ran (``setUpClass`` stays here, once per
class, as unittest runs it: on the phone path it pushes the libraries to the device).
Nothing a test does reaches the next one: QNN's compiler keeps process-wide counters
(tensor ids, the ``PICKLE/<n>`` graph names) that end up in every context binary, so
without it one extra node in one test changes the payload of every later test in the
shard, and a test's payload depends on which tests ran before it. With it, a test's
program depends on its own code and the seed alone. The child sends its outcome (and
the recorder's fingerprints) back over a pipe; this process writes the XML and prints
the ``-v`` lines. A child that dies (a crash in native code) is that test's error,
``TestProcessDied`` with the signal, and the shard goes on with the next test; a child
still running past the per-test budget plus ``HARD_GRACE`` is killed (``PerTestTimeout``).
Without ``os.fork`` (Windows) the flag is said and ignored.

The per-test budget is an interval timer armed when a test starts (so importing the
harness, about 10 s for ExecuTorch's, never counts) and re-fired every
``REFIRE_S`` after the budget is spent: unittest's ``subTest`` records an exception raised
inside it and goes on with the next subtest, so a one-shot alarm would bound only the first.

Exit codes: 0 all passed, 1 some did not, 3 the wrapper cannot drive this script (no
``setup_environment``): the caller then runs the script directly with ``-v``; 4 the
wrapper itself failed (it could not write the XML, say): the caller reports the tests it
could not account for as INFRA, never as the change's fault.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import functools
import importlib.util
import json
import math
import os
import random
import re
import select
import signal
import sys
import tempfile
import time
import traceback
import types
import unittest
import xml.etree.ElementTree as ET
from typing import Any, TextIO

EXIT_UNUSABLE = 3
EXIT_WRAPPER_FAULT = 4
REFIRE_S = 0.5
# --fork-per-test: a child still running this long past its budget (stuck in native code,
# where the timer's exception cannot reach) is killed. Under the runner's own watchdog,
# which allows the budget plus at least 1 s of grace.
HARD_GRACE_S = (0.8, 10.0)  # at least, at most
HARD_GRACE_SHARE = 0.02  # of the budget
DIED_EXCEPTION = "TestProcessDied"
# What a test's child may send back (its outcome and the recorder's fingerprints, whose file
# is capped at 4 MiB): more is not read into memory, and reads as no report at all.
MAX_CHILD_MESSAGE_BYTES = 64 * 1024 * 1024
_ExcInfo = tuple[type[BaseException], BaseException, types.TracebackType | None]
_FIXTURE_RE = re.compile(r"^(?P<name>\w+) \((?P<qual>[\w.]+)\)")
# Characters XML 1.0 cannot carry at all (ANSI colour codes in an exception message are
# common); ElementTree would write them and produce a file no parser accepts.
_NOT_XML_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_safe(text: str) -> str:
    return _NOT_XML_RE.sub("\ufffd", text)


class PerTestTimeout(Exception):
    """Raised inside a test that ran past its budget (results.py classifies it INFRA)."""


class SetupEnvironmentError(Exception):
    """The script rejected the command line it was given (a runner/checkout mismatch)."""


class _Case:
    """One <testcase> being recorded."""

    def __init__(self, classname: str, name: str) -> None:
        self.classname = classname
        self.name = name
        self.started = time.perf_counter()
        self.duration: float | None = None
        self.outcome: tuple[str, str, str, str] | None = None  # tag, type, message, text
        self.skipped: str | None = None


def _describe(err: _ExcInfo, text: str) -> tuple[str, str, str]:
    exc_type, exc, _ = err
    message = str(exc).splitlines()[0] if str(exc) else ""
    return exc_type.__name__, _xml_safe(message), _xml_safe(text)


class XmlTestResult(unittest.TextTestResult):
    """TextTestResult that also keeps every outcome and rewrites the XML file on each event."""

    xml_path = ""
    suite_name = "tests"
    per_test_timeout = 0.0
    recorder: Any = None  # program_recorder.Recorder when --programs is given
    seed: int | None = None  # --seed: applied as each test starts
    # "alone": the test runs in this process. With --fork-per-test, "parent" keeps the
    # record and the files, and "child" (the test's own process) runs the hooks (seed,
    # recorder, timer) and sends its outcome to the parent through ``sink``.
    role = "alone"
    sink: int | None = None

    def __init__(self, stream: Any, descriptions: bool, verbosity: int) -> None:
        super().__init__(stream, descriptions, verbosity)
        self.cases: list[_Case] = []
        self.by_id: dict[str, _Case] = {}
        self.running: _Case | None = None
        self.run_started = time.perf_counter()
        self.complete = False
        self.fault: str | None = None

    # -- the recording --------------------------------------------------------------

    def _case_for(self, test: Any) -> _Case:
        test_id = test.id()
        case = self.by_id.get(test_id)
        if case is None:
            classname, _, name = test_id.rpartition(".")
            if not isinstance(test, unittest.TestCase):  # a class/module fixture holder
                match = _FIXTURE_RE.match(str(test.description))
                if match:
                    name, classname = match["name"], match["qual"]
            case = _Case(classname, name)
            self.cases.append(case)
            self.by_id[test_id] = case
        return case

    def _problem(self, test: Any, tag: str, err: _ExcInfo) -> None:
        case = self._case_for(test)
        if case.outcome is None or (case.outcome[0] == "failure" and tag == "error"):
            case.outcome = (tag, *_describe(err, self._format(err, test)))
        if not isinstance(test, unittest.TestCase):
            case.duration = 0.0  # a fixture never starts or stops like a test
            self.write()

    def _format(self, err: _ExcInfo, test: Any) -> str:
        # unittest's own formatting drops its internal frames; it is private, so fall back.
        formatter = getattr(self, "_exc_info_to_string", None)
        if callable(formatter):
            return str(formatter(err, test))
        return "".join(traceback.format_exception(*err))

    def startTest(self, test: unittest.TestCase) -> None:
        super().startTest(test)
        case = self._case_for(test)
        case.started = time.perf_counter()
        self.running = case
        self.write()
        if self.role == "parent":
            return  # the hooks run in the test's own process
        if self.seed is not None:
            seed_generators(self.seed)
        if self.recorder is not None:
            self.recorder.start(f"{case.classname.rsplit('.', 1)[-1]}.{case.name}", test)
        if self.per_test_timeout > 0:
            signal.setitimer(signal.ITIMER_REAL, self.per_test_timeout, REFIRE_S)

    def stopTest(self, test: unittest.TestCase) -> None:
        if self.per_test_timeout > 0 and self.role != "parent":
            signal.setitimer(signal.ITIMER_REAL, 0)
        case = self._case_for(test)
        case.duration = time.perf_counter() - case.started
        self.running = None
        super().stopTest(test)
        if self.role == "child":
            self._send(test, case)
            return
        self.write()
        if self.recorder is not None and self.role == "alone":
            self.recorder.stop()

    # -- --fork-per-test ------------------------------------------------------------

    def _send(self, test: Any, case: _Case) -> None:
        """The child's outcome of ``test``, as one JSON document to the parent."""
        message = {
            "outcome": case.outcome,
            "skipped": case.skipped,
            "expected_failure": any(t is test for t, _ in self.expectedFailures),
            "programs": self.recorder.take() if self.recorder is not None else None,
        }
        data = json.dumps(message).encode()
        assert self.sink is not None
        view = memoryview(data)
        while view:
            view = view[os.write(self.sink, view) :]

    def _say(self, long: str, short: str) -> None:
        if self.showAll:
            self.stream.writeln(long)
        elif self.dots:
            self.stream.write(short)
        self.stream.flush()

    def apply(self, test: Any, message: dict[str, Any]) -> None:
        """Record what the child of ``test`` sent (or the parent found), as unittest would."""
        case = self._case_for(test)
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

    def addError(self, test: Any, err: Any) -> None:
        super().addError(test, err)
        self._problem(test, "error", err)

    def addFailure(self, test: Any, err: Any) -> None:
        super().addFailure(test, err)
        self._problem(test, "failure", err)

    def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:
        super().addSubTest(test, subtest, err)
        if err is not None:
            tag = "failure" if issubclass(err[0], test.failureException) else "error"
            self._problem(test, tag, err)

    def addSkip(self, test: Any, reason: str) -> None:
        super().addSkip(test, reason)
        self._case_for(test).skipped = reason

    def addUnexpectedSuccess(self, test: Any) -> None:
        super().addUnexpectedSuccess(test)
        case = self._case_for(test)
        case.outcome = ("failure", "UnexpectedSuccess", "unexpected success", "")

    def stopTestRun(self) -> None:
        super().stopTestRun()
        self.complete = True
        self.write()

    # -- the file ---------------------------------------------------------------------

    def to_xml(self) -> ET.Element:
        counts = {"failure": 0, "error": 0}
        skipped = 0
        suite = ET.Element("testsuite", name=self.suite_name)
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="python", value=sys.version.split()[0])
        if self.running is not None:
            running = f"{self.running.classname.rsplit('.', 1)[-1]}.{self.running.name}"
            ET.SubElement(props, "property", name="running", value=running)
        for case in self.cases:
            if case.duration is None:
                continue  # still running: the "running" property says which
            element = ET.SubElement(suite, "testcase", classname=case.classname, name=case.name)
            if case.duration is not None:
                element.set("time", f"{case.duration:.3f}")
            if case.outcome is not None:
                tag, exc_type, message, text = case.outcome
                counts[tag] += 1
                child = ET.SubElement(element, tag, type=exc_type, message=message)
                child.text = text
            elif case.skipped is not None:
                skipped += 1
                ET.SubElement(element, "skipped", message=_xml_safe(case.skipped))
        tests = sum(1 for c in self.cases if c.duration is not None)
        totals = {
            "tests": str(tests),
            "failures": str(counts["failure"]),
            "errors": str(counts["error"]),
            "skipped": str(skipped),
            "time": f"{time.perf_counter() - self.run_started:.3f}",
        }
        for key, value in totals.items():
            suite.set(key, value)
        root = ET.Element("testsuites", {"name": self.suite_name, **totals})
        if self.complete:
            root.set("complete", "true")
        root.append(suite)
        return root

    def write(self) -> None:
        """Rewrite the XML; a failure is the wrapper's own fault, kept for the exit code.

        The run goes on (the ``-v`` text on stderr still names every outcome), so one
        unwritable file does not turn every later test into a crash of unittest.
        """
        if not self.xml_path or self.fault is not None:
            return
        try:
            directory = os.path.dirname(os.path.abspath(self.xml_path))
            fd, tmp = tempfile.mkstemp(prefix=".junit-", suffix=".xml", dir=directory)
            with os.fdopen(fd, "wb") as handle:
                ET.ElementTree(self.to_xml()).write(handle, encoding="utf-8", xml_declaration=True)
            os.replace(tmp, self.xml_path)
        except PerTestTimeout:
            raise
        except Exception as exc:
            # Said at the end of the run: a line printed now would split a -v status line.
            self.fault = f"could not write {self.xml_path}: {exc}"


def hard_deadline_s(budget: float) -> float:
    """How long the parent lets a test's child run: its budget and a grace, or for ever."""
    if budget <= 0:
        return math.inf
    low, high = HARD_GRACE_S
    return budget + min(high, max(low, budget * HARD_GRACE_SHARE))


def _describe_exit(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "an unknown signal"
        return f"was killed by signal {number} ({name})"
    return f"exited with status {os.WEXITSTATUS(status)} before reporting"


def _read_child(pid: int, fd: int, deadline: float) -> tuple[bytes, int | None, bool]:
    """What the child wrote to ``fd`` until it ended; its wait status (None if it had to be
    killed) and whether it was killed for overrunning ``deadline`` (a monotonic time)."""
    chunks: list[bytes] = []
    size = 0
    status: int | None = None
    killed = False
    try:
        while True:
            wait = min(0.5, max(0.0, deadline - time.monotonic()))
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
            if time.monotonic() >= deadline:
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
        elif time.monotonic() >= deadline:
            os.kill(pid, signal.SIGKILL)
            killed = True
        else:
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
    if killed:
        os.waitpid(pid, 0)  # SIGKILL cannot be caught: this returns at once
    return b"".join(chunks), None if killed else status, killed


def _child_message(data: bytes) -> dict[str, Any] | None:
    """The child's report, or None when it is not one (a test's code shares the process
    that writes it: only the shape ``_send`` writes is taken)."""
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


def run_forked(test: unittest.TestCase, result: XmlTestResult) -> None:
    """Run ``test`` in a child forked from this process, and record its outcome here."""
    result.startTest(test)
    for stream in (sys.stdout, sys.stderr, result.stream):
        stream.flush()
    read_end, write_end = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: run the test as unittest would, report, and leave at once
        code = 0
        try:
            os.close(read_end)
            child = type(result)(open(os.devnull, "w"), False, 0)  # noqa: SIM115
            child.role, child.sink, child.xml_path = "child", write_end, ""
            type(test).run(test, child)
        except BaseException:
            traceback.print_exc()
            code = 70
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os._exit(code)
    os.close(write_end)
    budget = result.per_test_timeout
    data, status, killed = _read_child(pid, read_end, started + hard_deadline_s(budget))
    message = _child_message(data)
    if killed:
        ran = time.monotonic() - started
        text = f"killed after {ran:.1f} s: still running past the per-test budget of {budget:g} s"
        message = {"outcome": ["error", PerTestTimeout.__name__, text, ""]}
    elif message is None:
        assert status is not None
        text = f"the test's process {_describe_exit(status)}"
        message = {"outcome": ["error", DIED_EXCEPTION, text, ""]}
    result.apply(test, message)
    result.stopTest(test)
    if result.recorder is not None:
        result.recorder.write_quietly()


class ForkingRunner(unittest.TextTestRunner):
    """A TextTestRunner whose every test runs in its own child (``run_forked``)."""

    def run(self, test: unittest.TestSuite | unittest.TestCase) -> Any:
        for case in _cases(test):
            case.run = functools.partial(_run_case, case)  # type: ignore[method-assign]
        return super().run(test)


def _run_case(case: unittest.TestCase, result: unittest.TestResult | None = None) -> None:
    if isinstance(result, XmlTestResult) and result.role == "parent":
        run_forked(case, result)
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


def seed_generators(seed: int) -> list[str]:
    """Seed the random generators a harness draws from; the names of those seeded.

    Only modules already imported are seeded (importing torch here would cost a harness
    that does not use it seconds per run). NumPy's legacy generator takes 32 bits.
    """
    random.seed(seed)
    seeded = ["random"]
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed % 2**32)
        seeded.append("numpy")
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)
        seeded.append("torch")
    return seeded


def _write_module_error(xml_path: str, suite: str, exc_type: str, message: str, text: str) -> None:
    """A run that never reached unittest: one module-level error, so nothing looks green."""
    result = XmlTestResult(open(os.devnull, "w"), False, 0)  # noqa: SIM115
    result.xml_path, result.suite_name = xml_path, suite
    case = _Case(suite, "setUpModule")
    case.duration = 0.0
    case.outcome = ("error", exc_type, message, text)
    result.cases.append(case)
    result.complete = True
    result.write()
    result.stream.close()


def _program_recorder(path: str, script_module: types.ModuleType) -> Any:
    """program_recorder.py (beside this file, loaded by path like this one), hooked in."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "program_recorder.py")
    spec = importlib.util.spec_from_file_location("qnn_program_recorder", here)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {here}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    recorder = module.Recorder(path)
    recorder.install(script_module)
    recorder.write()
    return recorder


def _write_recorder_failure(path: str, reason: str) -> None:
    import json

    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({"schema": 1, "tests": {}, "failed": reason[:300]}, handle)
    except OSError:
        pass


def _on_alarm(signum: int, frame: types.FrameType | None) -> None:
    raise PerTestTimeout(f"exceeded the per-test budget of {XmlTestResult.per_test_timeout:g} s")


def main(argv: list[str] | None = None, stream: TextIO | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--junit-xml", required=True, help="where to write the JUnit XML")
    parser.add_argument("--per-test-timeout", type=float, default=0.0, help="seconds; 0 = none")
    parser.add_argument("--programs", help="record a fingerprint of every lowered program here")
    parser.add_argument(
        "--seed", type=int, help="seed random, NumPy and torch with this as each test starts"
    )
    parser.add_argument(
        "--fork-per-test",
        action="store_true",
        help="run each test in its own child of this process (nothing it does reaches the next)",
    )
    parser.add_argument("script", help="the test script, e.g. backends/.../test_qnn_delegate.py")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    stream = stream or sys.stderr
    faulthandler.enable()

    script = os.path.abspath(args.script)
    suite = os.path.splitext(os.path.basename(script))[0]
    XmlTestResult.xml_path = args.junit_xml
    XmlTestResult.suite_name = suite
    XmlTestResult.per_test_timeout = args.per_test_timeout
    XmlTestResult.seed = args.seed

    # The script's directory comes first on sys.path, as when it runs as a program.
    sys.path.insert(0, os.path.dirname(script))
    try:
        spec = importlib.util.spec_from_file_location(suite, script)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {script}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[suite] = module
        spec.loader.exec_module(module)
    except Exception as exc:  # the script itself is broken: report it, never look green
        _write_module_error(
            args.junit_xml, suite, type(exc).__name__, str(exc), traceback.format_exc()
        )
        print(f"junit_wrapper: importing {script} failed:\n{traceback.format_exc()}", file=stream)
        return 1

    if args.programs:
        try:
            XmlTestResult.recorder = _program_recorder(args.programs, module)
        except Exception as exc:  # the tests still run; the report says why nothing was recorded
            _write_recorder_failure(args.programs, f"{type(exc).__name__}: {exc}")
            print(f"junit_wrapper: cannot record programs: {exc}", file=stream)

    setup = getattr(module, "setup_environment", None)
    if not callable(setup):
        print(
            f"junit_wrapper: {script} has no setup_environment(); run it directly with -v",
            file=stream,
        )
        return EXIT_UNUSABLE

    sys.argv = [script, *args.script_args]
    try:
        ut_argv = list(setup())
    except SystemExit as exc:
        message = f"setup_environment() rejected the command line (exit {exc.code})"
        _write_module_error(args.junit_xml, suite, SetupEnvironmentError.__name__, message, "")
        print(f"junit_wrapper: {message}", file=stream)
        return 1
    except Exception as exc:
        _write_module_error(
            args.junit_xml, suite, type(exc).__name__, str(exc), traceback.format_exc()
        )
        print(f"junit_wrapper: setup_environment() failed:\n{traceback.format_exc()}", file=stream)
        return 1

    if args.per_test_timeout > 0:
        signal.signal(signal.SIGALRM, _on_alarm)
    runner_class = unittest.TextTestRunner
    if args.fork_per_test and hasattr(os, "fork"):
        XmlTestResult.role = "parent"
        runner_class = ForkingRunner
    elif args.fork_per_test:
        print("junit_wrapper: no os.fork here: the tests run in this process", file=stream)
    runner = runner_class(stream=stream, verbosity=2, resultclass=XmlTestResult)
    program = unittest.main(module=module, argv=ut_argv, testRunner=runner, exit=False)
    result = program.result
    fault = getattr(result, "fault", None)
    if fault:
        print(f"junit_wrapper: {fault}", file=stream)
        return EXIT_WRAPPER_FAULT
    return 0 if result.wasSuccessful() and result.testsRun > 0 else 1


def _main_guarded() -> int:
    try:
        return main()
    except SystemExit:
        raise
    except BaseException:  # a bug here must read as the runner's fault, not the PR's
        print(f"junit_wrapper: internal error:\n{traceback.format_exc()}", file=sys.stderr)
        return EXIT_WRAPPER_FAULT


if __name__ == "__main__":
    sys.exit(_main_guarded())
