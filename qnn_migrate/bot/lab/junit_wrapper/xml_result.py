"""The JUnit XML: a unittest result that keeps every outcome and rewrites the file on each event.

The file is rewritten (to a temporary file, then renamed over it) when a test starts, when it
stops, and when a class or module fixture fails, so a crash still leaves what ran before it.
It records the test that is running (``running`` property) and, once the run ends,
``complete="true"``. Text that XML 1.0 cannot carry (ANSI colour codes, NUL) is replaced,
never written into a file no parser accepts.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
import traceback
import types
import unittest
import xml.etree.ElementTree as ET
from typing import Any

from . import hooks

_ExcInfo = tuple[type[BaseException], BaseException, types.TracebackType | None]
_FIXTURE_RE = re.compile(r"^(?P<name>\w+) \((?P<qual>[\w.]+)\)")
# Characters XML 1.0 cannot carry at all (ANSI colour codes in an exception message are
# common); ElementTree would write them and produce a file no parser accepts.
_NOT_XML_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(text: str) -> str:
    return _NOT_XML_RE.sub("\ufffd", text)


class Case:
    """One <testcase> being recorded."""

    def __init__(self, classname: str, name: str) -> None:
        self.classname = classname
        self.name = name
        self.started = time.perf_counter()
        self.duration: float | None = None
        self.outcome: tuple[str, str, str, str] | None = None  # tag, type, message, text
        self.skipped: str | None = None

    @property
    def short_id(self) -> str:
        """``Class.test``: how the recorder and the ``running`` property name the test."""
        return f"{self.classname.rsplit('.', 1)[-1]}.{self.name}"


def _describe(err: _ExcInfo, text: str) -> tuple[str, str, str]:
    exc_type, exc, _ = err
    message = str(exc).splitlines()[0] if str(exc) else ""
    return exc_type.__name__, xml_safe(message), xml_safe(text)


class XmlTestResult(unittest.TextTestResult):
    """TextTestResult that also keeps every outcome and rewrites the XML file on each event.

    The test runs in this process, which also runs the per-test hooks (``hooks``); with
    ``--fork-per-test`` the two halves are ``fork.ParentResult`` and ``fork.ChildResult``.
    """

    xml_path = ""
    suite_name = "tests"
    per_test_timeout = 0.0
    recorder: Any = None  # program_recorder.Recorder when --programs is given
    seed: int | None = None  # --seed: applied as each test starts

    def __init__(self, stream: Any, descriptions: bool, verbosity: int) -> None:
        super().__init__(stream, descriptions, verbosity)
        self.cases: list[Case] = []
        self.by_id: dict[str, Case] = {}
        self.running: Case | None = None
        self.run_started = time.perf_counter()
        self.complete = False
        self.fault: str | None = None

    # -- the recording --------------------------------------------------------------

    def case_for(self, test: Any) -> Case:
        test_id = test.id()
        case = self.by_id.get(test_id)
        if case is None:
            classname, _, name = test_id.rpartition(".")
            if not isinstance(test, unittest.TestCase):  # a class/module fixture holder
                match = _FIXTURE_RE.match(str(test.description))
                if match:
                    name, classname = match["name"], match["qual"]
            case = Case(classname, name)
            self.cases.append(case)
            self.by_id[test_id] = case
        return case

    def _problem(self, test: Any, tag: str, err: _ExcInfo) -> None:
        case = self.case_for(test)
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

    def start_case(self, test: unittest.TestCase) -> Case:
        """unittest's start of ``test``, recorded as running, and the file rewritten."""
        super().startTest(test)
        case = self.case_for(test)
        case.started = time.perf_counter()
        self.running = case
        self.write()
        return case

    def stop_case(self, test: unittest.TestCase) -> Case:
        """unittest's end of ``test``, with its duration (the file is not rewritten)."""
        case = self.case_for(test)
        case.duration = time.perf_counter() - case.started
        self.running = None
        super().stopTest(test)
        return case

    def begin_hooks(self, case: Case, test: unittest.TestCase) -> None:
        """The hooks of the test's own process, as it starts: seed, recorder, alarm."""
        if self.seed is not None:
            hooks.seed_generators(self.seed)
        if self.recorder is not None:
            self.recorder.start(case.short_id, test)
        if self.per_test_timeout > 0:
            hooks.arm_alarm(self.per_test_timeout)

    def startTest(self, test: unittest.TestCase) -> None:
        self.begin_hooks(self.start_case(test), test)

    def stopTest(self, test: unittest.TestCase) -> None:
        if self.per_test_timeout > 0:
            hooks.disarm_alarm()
        self.stop_case(test)
        self.write()
        if self.recorder is not None:
            self.recorder.stop()

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
        self.case_for(test).skipped = reason

    def addUnexpectedSuccess(self, test: Any) -> None:
        super().addUnexpectedSuccess(test)
        case = self.case_for(test)
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
            ET.SubElement(props, "property", name="running", value=self.running.short_id)
        for case in self.cases:
            if case.duration is None:
                continue  # still running: the "running" property says which
            element = ET.SubElement(suite, "testcase", classname=case.classname, name=case.name)
            element.set("time", f"{case.duration:.3f}")
            if case.outcome is not None:
                tag, exc_type, message, text = case.outcome
                counts[tag] += 1
                child = ET.SubElement(element, tag, type=exc_type, message=message)
                child.text = text
            elif case.skipped is not None:
                skipped += 1
                ET.SubElement(element, "skipped", message=xml_safe(case.skipped))
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
        except hooks.PerTestTimeout:
            raise
        except Exception as exc:
            # Said at the end of the run: a line printed now would split a -v status line.
            self.fault = f"could not write {self.xml_path}: {exc}"


def write_module_error(xml_path: str, suite: str, exc_type: str, message: str, text: str) -> None:
    """A run that never reached unittest: one module-level error, so nothing looks green."""
    result = XmlTestResult(open(os.devnull, "w"), False, 0)  # noqa: SIM115
    result.xml_path, result.suite_name = xml_path, suite
    case = Case(suite, "setUpModule")
    case.duration = 0.0
    case.outcome = ("error", exc_type, message, text)
    result.cases.append(case)
    result.complete = True
    result.write()
    result.stream.close()
