"""junit_wrapper.py: stdlib only, real unittest, XML that survives crashes and hostile text."""

from __future__ import annotations

import ast
import subprocess
import sys
import unittest
from pathlib import Path

import pytest

from qnn_migrate.bot.lab import attempt, junit_wrapper, results, settings
from qnn_migrate.bot.model import Shard, Status

from .support import DOUBLES, FP, Lab

WRAPPER = Path(junit_wrapper.__file__)
ABS = f"{FP}.test_qnn_backend_abs"


def run_wrapper(lab: Lab, script: Path, *args: str, xml: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            str(WRAPPER),
            "--junit-xml",
            str(xml),
            "--per-test-timeout",
            "5",
            str(script),
            *args,
        ],
        capture_output=True,
        text=True,
        env=lab.env(),
        cwd=lab.root,
        timeout=60,
        check=False,
    )


def test_wrapper_imports_only_the_standard_library() -> None:
    tree = ast.parse(WRAPPER.read_text())
    names = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert names - {"__future__"} <= set(sys.stdlib_module_names), names


def test_crash_leaves_the_tests_before_it_and_names_the_running_one(lab: Lab) -> None:
    lab.scenario(tests={f"{FP}.test_qnn_backend_add": "crash"})
    xml = lab.root / "out.xml"
    proc = run_wrapper(
        lab,
        DOUBLES / "fake_test_qnn_delegate.py",
        f"{FP}.test_qnn_backend_abs",
        f"{FP}.test_qnn_backend_add",
        "--device",
        "PHONE_A",
        xml=xml,
    )
    assert proc.returncode < 0  # died on SIGABRT
    rep = results.parse_junit(xml.read_bytes())
    assert not rep.complete
    assert rep.running == f"{FP}.test_qnn_backend_add"
    assert {k: v.status for k, v in rep.results.items()} == {
        f"{FP}.test_qnn_backend_abs": Status.PASS
    }


def test_a_script_that_does_not_import_is_an_error_for_every_test(lab: Lab) -> None:
    script = lab.root / "broken_test_qnn_delegate.py"
    script.write_text("import torch_that_is_not_installed\n")
    xml = lab.root / "out.xml"
    proc = run_wrapper(lab, script, f"{FP}.test_qnn_backend_abs", xml=xml)
    assert proc.returncode == 1
    shard = Shard("s", "m", "SM8650", "htp", 1, (f"{FP}.test_qnn_backend_abs",), "a" * 40)
    res = results.build(shard, results.parse_junit(xml.read_bytes()))
    assert res.results[0].status is Status.MISSING
    assert "the test module failed: ModuleNotFoundError" in res.results[0].message


def test_a_rejected_command_line_is_infra(lab: Lab) -> None:
    xml = lab.root / "out.xml"
    proc = run_wrapper(
        lab,
        DOUBLES / "fake_test_qnn_delegate.py",
        f"{FP}.test_qnn_backend_abs",
        "--backend",
        "npu",
        xml=xml,
    )
    assert proc.returncode == 1
    shard = Shard("s", "m", "SM8650", "htp", 1, (f"{FP}.test_qnn_backend_abs",), "a" * 40)
    res = results.build(shard, results.parse_junit(xml.read_bytes()))
    assert res.results[0].status is Status.INFRA
    assert "rejected the command line" in res.results[0].message


def test_a_script_without_setup_environment_is_refused_with_exit_3(lab: Lab) -> None:
    script = lab.root / "plain_test.py"
    script.write_text(
        "import unittest\nclass TestA(unittest.TestCase):\n    def test_a(self): pass\n"
    )
    proc = run_wrapper(lab, script, "TestA.test_a", xml=lab.root / "out.xml")
    assert proc.returncode == junit_wrapper.EXIT_UNUSABLE
    assert "no setup_environment()" in proc.stderr
    assert not (lab.root / "out.xml").exists()


def _hostile_case() -> type[unittest.TestCase]:
    """Built inside a function so pytest does not collect it as a test of its own."""

    class _Hostile(unittest.TestCase):
        def test_ansi(self) -> None:
            raise ValueError("\x1b[31mred\x1b[0m and a NUL \x00 here")

        def test_sub(self) -> None:
            for i in range(3):
                with self.subTest(i=i):
                    self.assertLess(i, 2)

        @unittest.expectedFailure
        def test_unexpected(self) -> None:
            pass

    return _Hostile


def test_control_characters_and_subtests_still_give_valid_xml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    xml = tmp_path / "out.xml"
    monkeypatch.setattr(junit_wrapper.XmlTestResult, "xml_path", str(xml))
    monkeypatch.setattr(junit_wrapper.XmlTestResult, "suite_name", "hostile")
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(_hostile_case())
    with open(tmp_path / "stream.txt", "w") as stream:
        unittest.TextTestRunner(
            stream=stream, verbosity=2, resultclass=junit_wrapper.XmlTestResult
        ).run(suite)
    rep = results.parse_junit(xml.read_bytes())
    assert rep.complete
    got = {k: v.status for k, v in rep.results.items()}
    assert got == {
        "_Hostile.test_ansi": Status.ERROR,
        "_Hostile.test_sub": Status.FAIL,
        "_Hostile.test_unexpected": Status.FAIL,
    }
    assert "red" in rep.results["_Hostile.test_ansi"].message


def test_the_wrapper_exits_4_when_it_cannot_write_the_xml(lab: Lab) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(attempt.WRAPPER),
            "--junit-xml",
            str(lab.root / "no" / "such" / "dir" / "junit.xml"),
            str(lab.checkout / settings.TEST_SCRIPT),
            ABS,
            "--enable_x86_64",
        ],
        capture_output=True,
        text=True,
        env=lab.env(),
        cwd=lab.checkout,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 4, proc.stderr
    assert "could not write" in proc.stderr
    assert " ... ok" in proc.stderr  # the run went on; the -v text still has the outcome


_DRAWING = """
import json, os, random, sys, unittest

def setup_environment():
    return sys.argv[:1] + [a for a in sys.argv[1:] if not a.startswith("--")]

class TestDraws(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        random.random()  # a class fixture that draws, as the harness's phone path seeds

    def _draw(self):
        with open(os.environ["DRAWS"], "a") as out:
            out.write(json.dumps([self.id().rsplit(".", 1)[-1], random.random()]) + "\\n")

    def test_a(self):
        self._draw()

    def test_b(self):
        self._draw()
"""


def _draws(tmp_path: Path, name: str, tests: list[str], *seed: str) -> dict[str, float]:
    import json

    script = tmp_path / "test_drawing.py"
    script.write_text(_DRAWING)
    out = tmp_path / f"{name}.jsonl"
    xml = str(tmp_path / f"{name}.xml")
    proc = subprocess.run(
        [sys.executable, str(WRAPPER), "--junit-xml", xml, *seed, str(script), *tests],
        capture_output=True,
        text=True,
        env={"DRAWS": str(out), "PATH": "/usr/bin:/bin"},
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return {k: v for k, v in (json.loads(line) for line in out.read_text().splitlines())}


def test_seed_makes_each_tests_draws_independent_of_the_tests_before_it(tmp_path: Path) -> None:
    both = _draws(tmp_path, "both", ["TestDraws.test_a", "TestDraws.test_b"], "--seed", "1126")
    alone = _draws(tmp_path, "alone", ["TestDraws.test_b"], "--seed", "1126")
    again = _draws(tmp_path, "again", ["TestDraws.test_a", "TestDraws.test_b"], "--seed", "1126")
    assert both == again
    assert alone["test_b"] == both["test_b"] == both["test_a"]
    other = _draws(tmp_path, "other", ["TestDraws.test_b"], "--seed", "7")
    assert other["test_b"] != both["test_b"]
    # Control: without --seed each run, and each test, draws anew.
    unseeded = _draws(tmp_path, "unseeded", ["TestDraws.test_a", "TestDraws.test_b"])
    unseeded_again = _draws(tmp_path, "unseeded-again", ["TestDraws.test_a", "TestDraws.test_b"])
    assert unseeded["test_a"] != unseeded["test_b"]
    assert unseeded != unseeded_again


@pytest.mark.passes
def test_seed_generators_seeds_torch_and_numpy_once_imported() -> None:
    import numpy
    import torch

    assert junit_wrapper.seed_generators(1126) == ["random", "numpy", "torch"]
    first = (torch.rand(3), numpy.random.rand(3))
    junit_wrapper.seed_generators(1126)
    second = (torch.rand(3), numpy.random.rand(3))
    assert torch.equal(first[0], second[0]) and (first[1] == second[1]).all()
    # Control: a different seed draws differently.
    junit_wrapper.seed_generators(1127)
    assert not torch.equal(torch.rand(3), first[0])


# ---------------------------------------------------------------------- --fork-per-test

_STATEFUL = """
import os, signal, sys, time, unittest

COUNTER = [0]  # process-wide state, as QNN's compiler keeps its tensor ids and graph names

def setup_environment():
    return sys.argv[:1] + [a for a in sys.argv[1:] if not a.startswith("--")]

def _log(line):
    with open(os.environ["LOG"], "a") as out:
        out.write(line + "\\n")

class TestState(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        _log(f"setUpClass {os.getpid()}")

    def test_a(self):
        COUNTER[0] += 1
        _log(f"test_a {COUNTER[0]} {os.getpid()}")

    def test_b(self):
        COUNTER[0] += 1
        _log(f"test_b {COUNTER[0]} {os.getpid()}")

class TestOutcomes(unittest.TestCase):
    def test_fail(self):
        self.assertEqual(1, 2)

    def test_error(self):
        raise ValueError("unsupported node")

    @unittest.skip("no phone")
    def test_skip(self):
        pass

    @unittest.expectedFailure
    def test_expected(self):
        self.assertEqual(1, 2)

    @unittest.expectedFailure
    def test_unexpected(self):
        pass

    def test_sub(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertLess(i, 2)

    def test_ok(self):
        pass

class TestNative(unittest.TestCase):
    def test_crash(self):
        os.abort()

    def test_stuck(self):
        # Native code that never returns to Python: the timer's exception cannot reach it.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        time.sleep(60)

    def test_closes_and_hangs(self):
        # Closes every descriptor it has (the report's pipe with them), then never returns.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        os.closerange(3, 65536)
        time.sleep(60)

    def test_after(self):
        pass
"""


def _run_stateful(
    tmp_path: Path, name: str, tests: list[str], *flags: str
) -> tuple[subprocess.CompletedProcess[str], results.Reported, list[str]]:
    script = tmp_path / "test_stateful.py"
    script.write_text(_STATEFUL)
    log = tmp_path / f"{name}.log"
    xml = tmp_path / f"{name}.xml"
    proc = subprocess.run(
        [sys.executable, str(WRAPPER), "--junit-xml", str(xml), *flags, str(script), *tests],
        capture_output=True,
        text=True,
        env={"LOG": str(log), "PATH": "/usr/bin:/bin"},
        timeout=60,
        check=False,
    )
    lines = log.read_text().splitlines() if log.exists() else []
    return proc, results.parse_junit(xml.read_bytes()), lines


def test_fork_per_test_keeps_one_tests_state_from_the_next(tmp_path: Path) -> None:
    tests = ["TestState.test_a", "TestState.test_b"]
    proc, rep, lines = _run_stateful(tmp_path, "forked", tests, "--fork-per-test")
    assert proc.returncode == 0, proc.stderr
    assert {k: v.status for k, v in rep.results.items()} == dict.fromkeys(tests, Status.PASS)
    setup, a, b = (line.split() for line in lines)
    # The class fixture ran once, in the wrapper; each test in its own child of it.
    assert setup[0] == "setUpClass" and a[:2] == ["test_a", "1"] and b[:2] == ["test_b", "1"]
    assert len({setup[1], a[2], b[2]}) == 3
    # Control: in one process the second test sees what the first left behind.
    proc, rep, lines = _run_stateful(tmp_path, "one-process", tests)
    assert proc.returncode == 0, proc.stderr
    assert [line.split()[:2] for line in lines[1:]] == [["test_a", "1"], ["test_b", "2"]]


def test_fork_per_test_reports_every_outcome_as_one_process_does(tmp_path: Path) -> None:
    tests = [
        f"TestOutcomes.test_{n}" for n in ("fail", "error", "skip", "expected", "unexpected")
    ] + ["TestOutcomes.test_sub", "TestOutcomes.test_ok"]
    one, one_rep, _ = _run_stateful(tmp_path, "one", tests)
    forked, forked_rep, _ = _run_stateful(tmp_path, "forked", tests, "--fork-per-test")
    assert one.returncode == forked.returncode == 1

    def view(rep: results.Reported) -> dict[str, tuple[Status, str]]:
        return {k: (v.status, v.message) for k, v in rep.results.items()}

    assert view(forked_rep) == view(one_rep)
    assert {k: v[0] for k, v in view(forked_rep).items()} == {
        "TestOutcomes.test_fail": Status.FAIL,
        "TestOutcomes.test_error": Status.ERROR,
        "TestOutcomes.test_skip": Status.SKIP,
        "TestOutcomes.test_expected": Status.PASS,
        "TestOutcomes.test_unexpected": Status.FAIL,
        "TestOutcomes.test_sub": Status.FAIL,
        "TestOutcomes.test_ok": Status.PASS,
    }
    assert forked_rep.complete and forked_rep.ran == one_rep.ran == len(tests)
    # The -v text the runner falls back on says the same outcomes.
    for word in ("FAIL", "ERROR", "skipped 'no phone'", "expected failure", "unexpected success"):
        assert word in forked.stderr and word in one.stderr, word
    # Control: the comparison sees a difference when there is one.
    _, other_rep, _ = _run_stateful(tmp_path, "other", [*tests[:-1], "TestState.test_a"])
    assert view(other_rep) != view(one_rep)


def test_fork_per_test_a_crash_or_a_stuck_test_is_that_tests_and_the_rest_run(
    tmp_path: Path,
) -> None:
    tests = ["TestNative.test_crash", "TestNative.test_stuck", "TestNative.test_after"]
    proc, rep, _ = _run_stateful(
        tmp_path, "native", tests, "--fork-per-test", "--per-test-timeout", "1"
    )
    assert proc.returncode == 1
    got = {k: (v.status, v.message) for k, v in rep.results.items()}
    assert got["TestNative.test_crash"] == (
        Status.MISSING,
        "TestProcessDied: the test's process was killed by signal 6 (SIGABRT)",
    )
    status, message = got["TestNative.test_stuck"]
    assert status is Status.INFRA
    assert message.startswith("PerTestTimeout: killed after") and "budget of 1 s" in message
    assert got["TestNative.test_after"] == (Status.PASS, "")
    assert rep.complete and rep.running is None
    # Control: in one process the crash ends the run (the rest is never reported).
    proc, rep, _ = _run_stateful(tmp_path, "native-one", tests, "--per-test-timeout", "1")
    assert proc.returncode < 0 and set(rep.results) == set()
    assert rep.running == "TestNative.test_crash"


def test_fork_per_test_a_child_that_closes_its_pipe_and_hangs_is_killed_at_the_deadline(
    tmp_path: Path,
) -> None:
    """Before, the parent read the pipe's end of file and then waited for the child with no
    deadline: the shard's own watchdog had to stop the whole shard."""
    tests = ["TestNative.test_closes_and_hangs", "TestNative.test_after"]
    proc, rep, _ = _run_stateful(
        tmp_path, "closes", tests, "--fork-per-test", "--per-test-timeout", "1"
    )
    got = {k: (v.status, v.message) for k, v in rep.results.items()}
    status, message = got["TestNative.test_closes_and_hangs"]
    assert status is Status.INFRA, got
    assert message.startswith("PerTestTimeout: killed after") and "budget of 1 s" in message
    assert got["TestNative.test_after"] == (Status.PASS, ""), "the rest of the shard ran"
    assert proc.returncode == 1 and rep.complete


def test_a_report_nested_past_the_recursion_limit_is_no_report() -> None:
    """json.loads raises RecursionError, not ValueError, on deep nesting: it ended the
    wrapper (every later test INFRA) instead of reading as a test that did not report."""
    assert junit_wrapper._child_message(b"[" * 100_000 + b"]" * 100_000) is None
    assert junit_wrapper._child_message(b'{"a": ' * 100_000) is None
    # The control: the same shape, shallow, is a report.
    assert junit_wrapper._child_message(b'{"outcome": null}') == {"outcome": None}


def test_hard_deadline_leaves_the_runners_watchdog_the_last_word() -> None:
    # The runner kills the whole run after the budget plus min(30, max(1, budget / 4)).
    for budget in (0.5, 1, 4, 60, 600, 3600):
        runner_grace = min(30.0, max(1.0, budget * 0.25))
        assert budget < junit_wrapper.hard_deadline_s(budget) < budget + runner_grace
    assert junit_wrapper.hard_deadline_s(0) == float("inf")


def test_a_childs_report_is_taken_only_in_the_shape_the_wrapper_writes() -> None:
    """A test's code shares the process that writes the report: anything else is no report
    (the test then reads as a process that died before reporting, never as passed)."""
    import json

    good = {"outcome": None, "skipped": None, "expected_failure": False, "programs": None}
    assert junit_wrapper._child_message(json.dumps(good).encode()) == good  # the control
    failed = {**good, "outcome": ["failure", "AssertionError", "1 != 2", "Traceback..."]}
    assert junit_wrapper._child_message(json.dumps(failed).encode()) == failed
    for bad in (
        b"",
        b"\xff",
        b"[1, 2]",
        b'{"outcome": ["failure"]}',
        b'{"outcome": ["a", "b", "c", 4]}',
        b'{"skipped": 3}',
        b'{"programs": [1]}',
        json.dumps(good).encode() + b"{}",
    ):
        assert junit_wrapper._child_message(bad) is None, bad
