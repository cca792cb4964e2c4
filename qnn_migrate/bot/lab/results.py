"""What a test run reported -> one ``ShardResult`` per shard, with nothing assumed (pure).

Two sources, both untrusted: the JUnit XML written by ``junit_wrapper`` (or any JUnit
producer), and the text of ``unittest -v`` on stderr, which is the fallback when there is
no XML and the only record of a test that was running when the process died. Either is
parsed into a ``Reported``; ``build`` then checks it against the shard's expected ids, so a
test that never reported is MISSING (or INFRA when the run was cut short by a timeout or a
device failure), never green.

Classification of one reported test:

* an ``AssertionError`` (a unittest *failure*) or an unexpected success -> FAIL;
* an error whose text shows adb or the device failing (``adb command failed``, device
  offline/unauthorized/not found), or the wrapper's per-test budget -> INFRA;
* any other exception -> ERROR;
* the wrapper's ``TestProcessDied`` (the test's own process died, ``--fork-per-test``)
  -> MISSING, with how it died;
* skipped -> SKIP; ok and expected failure -> PASS.

A ``setUpClass`` error hides its class's tests from the count: they become INFRA when the
error is an infrastructure one, else MISSING with the class error as the reason.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any
from xml.etree.ElementTree import Element

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

from qnn_migrate.bot.lab.junit_wrapper.fork import DIED_EXCEPTION
from qnn_migrate.bot.lab.junit_wrapper.hooks import PerTestTimeout
from qnn_migrate.bot.lab.junit_wrapper.main import SetupEnvironmentError
from qnn_migrate.bot.model import Shard, ShardResult, Status, TestResult

MAX_XML_BYTES = 32 * 1024 * 1024
MAX_TEXT_CHARS = 32 * 1024 * 1024
MAX_MESSAGE_CHARS = 600

# The wrapper's per-test budget raises this; a test that hangs is a timeout, and a
# timeout is infrastructure until proven otherwise (the retry on another phone decides).
TIMEOUT_EXCEPTION = PerTestTimeout.__name__
# The wrapper raises this when the script rejects our command line: a runner/checkout
# mismatch (say, an ExecuTorch without --seed), not something the change under test did.
SETUP_EXCEPTION = SetupEnvironmentError.__name__
INFRA_EXCEPTIONS = frozenset({TIMEOUT_EXCEPTION, SETUP_EXCEPTION})

INFRA_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.I)
    for p in (
        r"adb command failed",
        r"\berror: device (offline|unauthorized|still authorizing)",
        r"\berror: device '[^']*' not found",
        r"\berror: no devices/emulators found",
        r"\bdevice offline\b",
        r"\bcannot connect to daemon\b",
        r"\bfailed to (connect|get feature set)\b.*adb",
        r"\b" + TIMEOUT_EXCEPTION + r"\b",
        r"\b" + SETUP_EXCEPTION + r"\b",
    )
)

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_MODULE_FIXTURES = ("setUpModule", "tearDownModule")
_CLASS_FIXTURES = ("setUpClass", "tearDownClass", *_MODULE_FIXTURES)
_FAILED_TEST = "_FailedTest"


class ArtifactError(ValueError):
    """A results artifact that is too large or not what it claims to be."""


class RunEnd(StrEnum):
    """How the test process ended, which decides what an unreported test means."""

    EXITED = "exited"  # the process ended by itself; unreported tests are MISSING
    TIMEOUT = "timeout"  # we stopped it (shard timeout or per-test budget): INFRA
    CRASHED = "crashed"  # it died on a signal we did not send: MISSING, with the signal
    NOT_STARTED = "not-started"  # it could not be started at all: INFRA


@dataclass(frozen=True)
class Reported:
    """What a run said about itself, before it is checked against the shard's expectations."""

    results: Mapping[str, TestResult] = field(default_factory=dict)
    class_errors: Mapping[str, TestResult] = field(default_factory=dict)
    load_errors: Mapping[str, str] = field(default_factory=dict)
    ran: int | None = None
    running: str | None = None  # a test that started and never finished
    complete: bool = False  # the producer says it reached the end of the run
    module_error: TestResult | None = None  # the script failed before any class ran

    def merged_with(self, other: Reported) -> Reported:
        """Fill what this report lacks from ``other`` (used: XML first, then the -v text)."""
        return Reported(
            results={**other.results, **self.results},
            class_errors={**other.class_errors, **self.class_errors},
            load_errors={**other.load_errors, **self.load_errors},
            ran=self.ran if self.ran is not None else other.ran,
            running=self.running or other.running,
            complete=self.complete or other.complete,
            module_error=self.module_error or other.module_error,
        )


def clean(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """Strip control characters and cap the length of text that came from a test run."""
    text = _CONTROL_RE.sub("", text).strip()
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def is_infra_text(text: str) -> bool:
    return any(p.search(text) for p in INFRA_PATTERNS)


def classify(kind: str, exception: str, text: str) -> Status:
    """Status of one reported problem: ``kind`` is failure/error; ``text`` its traceback."""
    if exception == DIED_EXCEPTION:
        return Status.MISSING
    if exception in INFRA_EXCEPTIONS or is_infra_text(f"{exception}: {text}"):
        return Status.INFRA
    if kind == "failure" or exception == "AssertionError":
        return Status.FAIL
    return Status.ERROR


def summary_line(traceback: str) -> str:
    """The ``Type: message`` line of a traceback (the last line that looks like one)."""
    lines = [ln for ln in traceback.strip().splitlines() if ln.strip()]
    for line in reversed(lines):
        if re.match(r"^[\w.]+(Error|Exception|Timeout|Interrupt|Exit)\b", line):
            return line.strip()
    return lines[-1].strip() if lines else ""


def split_test_name(name: str, qualifier: str) -> tuple[str, str]:
    """(class, method) from unittest's ``name (module.Class.name)`` or ``(module.Class)``."""
    parts = qualifier.split(".")
    if len(parts) >= 2 and parts[-1] == name:
        return parts[-2], name
    return parts[-1], name


# --------------------------------------------------------------------------- JUnit XML


def _split_module_error(
    class_errors: dict[str, TestResult],
) -> tuple[dict[str, TestResult], TestResult | None]:
    """Module fixture errors apply to every test; class ones only to their class."""
    module = [r for r in class_errors.values() if r.test_id.rpartition(".")[2] in _MODULE_FIXTURES]
    rest = {k: r for k, r in class_errors.items() if r not in module}
    return rest, (module[0] if module else None)


def _attr_float(element: Element, name: str) -> float | None:
    try:
        value = float(element.get(name, ""))
    except ValueError:
        return None
    return value if value >= 0 else None


def parse_junit(data: bytes) -> Reported:
    """Read JUnit XML (the wrapper's, xmlrunner's or pytest's) into a ``Reported``."""
    if len(data) > MAX_XML_BYTES:
        raise ArtifactError(f"JUnit XML is {len(data)} bytes, over the {MAX_XML_BYTES} cap")
    try:
        root = SafeET.fromstring(data, forbid_dtd=True)
    except DefusedXmlException as exc:
        raise ArtifactError(f"JUnit XML refused: {type(exc).__name__}") from exc
    except SafeET.ParseError as exc:
        raise ArtifactError(f"JUnit XML does not parse: {exc}") from exc
    if root.tag not in ("testsuites", "testsuite"):
        raise ArtifactError(f"not JUnit XML: root element is <{clean(root.tag, 40)}>")

    results: dict[str, TestResult] = {}
    class_errors: dict[str, TestResult] = {}
    load_errors: dict[str, str] = {}
    properties = {
        p.get("name", ""): p.get("value", "") for p in root.iter("property") if p.get("name")
    }
    running = properties.get("running") or None
    for case in root.iter("testcase"):
        name = case.get("name", "")
        classname = case.get("classname", "")
        cls = classname.rsplit(".", 1)[-1]
        if f"{cls}.{name}" == running and not len(case):
            continue  # started, never finished: not a pass
        duration = _attr_float(case, "time")
        status, message = Status.PASS, ""
        for child in case:
            if child.tag in ("failure", "error"):
                exception = child.get("type", "") or ""
                body = child.text or ""
                text = child.get("message", "") or summary_line(body)
                status = classify(child.tag, exception, f"{text}\n{body}")
                line = f"{exception}: {text}" if exception and exception not in text else text
                message = clean(line)
                break
            if child.tag == "skipped":
                status = Status.SKIP
                message = clean(child.get("message", "") or (child.text or ""))
        if cls == _FAILED_TEST:
            load_errors[name] = message or "could not be loaded"
        elif name in _CLASS_FIXTURES:
            if status in (Status.ERROR, Status.FAIL, Status.INFRA):
                class_errors[cls] = TestResult(f"{cls}.{name}", status, duration, message)
        elif name and cls:
            results[f"{cls}.{name}"] = TestResult(f"{cls}.{name}", status, duration, message)

    ran: int | None = None
    if root.get("tests", "").isdigit():
        ran = int(root.get("tests", "0"))
    class_errors, module_error = _split_module_error(class_errors)
    return Reported(
        results=results,
        class_errors=class_errors,
        module_error=module_error,
        load_errors=load_errors,
        ran=ran,
        running=running,
        complete=root.get("complete") == "true" or properties.get("complete") == "true",
    )


# --------------------------------------------------------------------- unittest -v text

_HEADER_RE = re.compile(r"^(?P<name>\w+) \((?P<qual>[\w.]+)\)(?P<rest>.*)$")
_SUBTEST_RE = re.compile(
    r"^\s+(?P<name>\w+) \((?P<qual>[\w.]+)\) \(.*\) \.\.\. (?P<word>FAIL|ERROR)$"
)
_STATUS_RE = re.compile(
    r"(?:^|\.\.\. )(?P<word>ok|FAIL|ERROR|skipped(?: .*)?|expected failure|unexpected success)$"
)
_SECTION_RE = re.compile(
    r"^={20,}\n(?P<kind>FAIL|ERROR): (?P<name>\w+) \((?P<qual>[\w.]+)\)[^\n]*\n-{20,}\n"
    r"(?P<body>.*?)(?=^={20,}\n|^-{20,}\nRan \d+ tests?|\Z)",
    re.S | re.M,
)
_RAN_RE = re.compile(r"^Ran (\d+) tests? in ", re.M)
_FINAL_RE = re.compile(r"^(OK|FAILED)(?: \(.*\))?$", re.M)

_WORD_STATUS = {
    "ok": Status.PASS,
    "FAIL": Status.FAIL,
    "ERROR": Status.ERROR,
    "expected failure": Status.PASS,
    "unexpected success": Status.FAIL,
}


def _word_status(word: str) -> tuple[Status, str]:
    if word.startswith("skipped"):
        return Status.SKIP, clean(word[len("skipped") :].strip().strip("'\""))
    message = "unexpected success" if word == "unexpected success" else ""
    return _WORD_STATUS[word], message


def _is_test_header(name: str, qualifier: str) -> bool:
    # Log lines can look like "name (a.b)"; unittest's own lines name a test, a class
    # fixture, or a _FailedTest standing for a name that would not load.
    return name.startswith("test") or name in _CLASS_FIXTURES or _FAILED_TEST in qualifier


def is_progress_line(line: str) -> bool:
    """A line of unittest's -v stream that marks a test starting or ending (for watchdogs)."""
    line = line.rstrip("\n")
    header = _HEADER_RE.match(line)
    if header and _is_test_header(header["name"], header["qual"]):
        return True
    return bool(_STATUS_RE.search(line)) or bool(_SUBTEST_RE.match(line))


def parse_verbose(text: str) -> Reported:
    """Read the stream of ``unittest -v`` (Python 3.11 layout, older layouts tolerated)."""
    if len(text) > MAX_TEXT_CHARS:
        # The head holds the per-test lines we need most; the tail holds the summary.
        text = text[: MAX_TEXT_CHARS // 2] + "\n" + text[-MAX_TEXT_CHARS // 2 :]
    results: dict[str, TestResult] = {}
    class_errors: dict[str, TestResult] = {}
    load_errors: dict[str, str] = {}
    pending: tuple[str, str] | None = None  # (class, name) of a test awaiting its status

    def settle(cls: str, name: str, status: Status, message: str) -> None:
        test_id = f"{cls}.{name}"
        if cls == _FAILED_TEST:
            load_errors[name] = message or "could not be loaded"
        elif name in _CLASS_FIXTURES:
            class_errors[cls] = TestResult(test_id, status, None, message)
        else:
            previous = results.get(test_id)
            # A failing sub-test already marked it: a later "ok" cannot turn it green.
            if previous is None or not previous.status.is_failure:
                results[test_id] = TestResult(test_id, status, None, message)

    # The summary sections come after every per-test line; stop the line scan there.
    body_end = text.find("\n" + "=" * 70 + "\n")
    head = text if body_end < 0 else text[: body_end + 1]
    for raw in head.splitlines():
        line = raw.rstrip()
        sub = _SUBTEST_RE.match(line)
        if sub:
            cls, name = split_test_name(sub["name"], sub["qual"])
            status = Status.FAIL if sub["word"] == "FAIL" else Status.ERROR
            settle(cls, name, status, "a sub-test failed")
            if pending == (cls, name):
                pending = None
            continue
        header = _HEADER_RE.match(line)
        if header and _is_test_header(header["name"], header["qual"]):
            pending = split_test_name(header["name"], header["qual"])
            line = header["rest"]
        found = _STATUS_RE.search(line)
        if found and pending is not None:
            status, message = _word_status(found["word"])
            settle(*pending, status, message)
            pending = None

    # Details: which exception each FAIL/ERROR raised, which decides INFRA vs ERROR.
    for section in _SECTION_RE.finditer(text):
        cls, name = split_test_name(section["name"], section["qual"])
        body = section["body"]
        line = summary_line(body)
        exception = line.split(":", 1)[0] if ":" in line else line
        kind = "failure" if section["kind"] == "FAIL" else "error"
        status = classify(kind, exception, body)
        settle_id = f"{cls}.{name}"
        result = TestResult(settle_id, status, None, clean(line))
        if cls == _FAILED_TEST:
            load_errors[name] = clean(line) or "could not be loaded"
        elif name in _CLASS_FIXTURES:
            class_errors[cls] = result
        elif settle_id in results and results[settle_id].status.is_failure:
            # Several sections for one test (sub-tests): keep the most infrastructure-like.
            old = results[settle_id]
            if old.message in ("", "a sub-test failed") or status is Status.INFRA:
                results[settle_id] = result
        else:
            results[settle_id] = result

    ran_match = _RAN_RE.search(text)
    running = None
    if pending is not None and pending[1] not in _CLASS_FIXTURES:
        running = f"{pending[0]}.{pending[1]}"
    class_errors, module_error = _split_module_error(class_errors)
    return Reported(
        results=results,
        class_errors=class_errors,
        module_error=module_error,
        load_errors=load_errors,
        ran=int(ran_match.group(1)) if ran_match else None,
        running=running,
        complete=bool(ran_match and _FINAL_RE.search(text, ran_match.end())),
    )


# ------------------------------------------------------------------------ shard result


@dataclass(frozen=True)
class RunOutcome:
    """How the process ended, in the words the results will use."""

    end: RunEnd = RunEnd.EXITED
    detail: str = ""  # e.g. "timed out after 3600 s", "exit code -11 (SIGSEGV)"


def _unreported(
    test_id: str, reported: Reported, outcome: RunOutcome, ran: int, expected: int
) -> TestResult:
    cls, _, method = test_id.partition(".")
    if reported.module_error is not None:
        error = reported.module_error
        status = Status.INFRA if error.status is Status.INFRA else Status.MISSING
        return TestResult(test_id, status, None, clean(f"the test module failed: {error.message}"))
    class_error = reported.class_errors.get(cls)
    if class_error is not None:
        status = Status.INFRA if class_error.status is Status.INFRA else Status.MISSING
        fixture = class_error.test_id.partition(".")[2] or "setUpClass"
        return TestResult(
            test_id, status, None, clean(f"{fixture} of {cls} failed: {class_error.message}")
        )
    for part in (method, cls):
        if part in reported.load_errors:
            return TestResult(
                test_id,
                Status.MISSING,
                None,
                clean(f"not found in the test module: {reported.load_errors[part]}"),
            )
    if reported.running == test_id:
        if outcome.end is RunEnd.TIMEOUT:
            return TestResult(
                test_id, Status.INFRA, None, clean(f"was running when the run {outcome.detail}")
            )
        if outcome.end is RunEnd.CRASHED:
            return TestResult(
                test_id,
                Status.MISSING,
                None,
                clean(f"was running when the test process died: {outcome.detail}"),
            )
    if outcome.end is RunEnd.TIMEOUT:
        return TestResult(test_id, Status.INFRA, None, clean(f"not run: the run {outcome.detail}"))
    if outcome.end is RunEnd.NOT_STARTED:
        return TestResult(test_id, Status.INFRA, None, clean(f"not run: {outcome.detail}"))
    if outcome.end is RunEnd.CRASHED:
        return TestResult(
            test_id,
            Status.MISSING,
            None,
            clean(
                f"not run: the test process died ({outcome.detail}) after {ran} of {expected} tests"
            ),
        )
    detail = f"; {outcome.detail}" if outcome.detail else ""
    return TestResult(
        test_id,
        Status.MISSING,
        None,
        clean(f"not reported by the test run (ran {ran} of {expected} expected){detail}"),
    )


def build(
    shard: Shard,
    reported: Reported,
    outcome: RunOutcome | None = None,
    **kwargs: Any,
) -> ShardResult:
    """One result per expected test: reported ones as they are, the rest explained."""
    outcome = outcome or RunOutcome()
    expected = len(shard.tests)
    ran = sum(t in reported.results for t in shard.tests)
    entries = [
        reported.results.get(t) or _unreported(t, reported, outcome, ran, expected)
        for t in shard.tests
    ]
    return ShardResult.complete(shard, entries, **kwargs)


def ran_line(result: ShardResult) -> str:
    """The honest one-line summary: "ran N of M expected tests" plus what went wrong."""
    counts = result.counts()
    parts = [f"{counts[s]} {s.value}" for s in Status if counts[s] and s is not Status.PASS]
    tail = f" ({', '.join(parts)})" if parts else ""
    return (
        f"ran {result.ran} of {result.expected} expected tests, {counts[Status.PASS]} passed{tail}"
    )


def durations(results: Iterable[ShardResult]) -> dict[str, float]:
    """Median recorded duration per test id, for duration-balanced shard planning."""
    seen: dict[str, list[float]] = {}
    for shard_result in results:
        for r in shard_result.results:
            if r.duration_s is not None and r.status in (Status.PASS, Status.FAIL, Status.ERROR):
                seen.setdefault(r.test_id, []).append(r.duration_s)
    return {t: float(statistics.median(v)) for t, v in seen.items()}


def merge_retry(first: ShardResult, retry: ShardResult, retried: Sequence[str]) -> ShardResult:
    """First attempt's results, with the retried (INFRA) tests replaced by the retry's."""
    again = {r.test_id: r for r in retry.results if r.test_id in set(retried)}
    merged = [again.get(r.test_id, r) for r in first.results]
    still_infra = [r for r in merged if r.status is Status.INFRA]
    return ShardResult.complete(
        first.shard,
        merged,
        device=retry.device or first.device,
        attempts=first.attempts + retry.attempts,
        infra_reason=(still_infra[0].message if still_infra else None),
        log_url=first.log_url,
        sdk_version=retry.sdk_version or first.sdk_version,
        device_fingerprint=retry.device_fingerprint or first.device_fingerprint,
        command=retry.command or first.command,
    )
