"""bot/lab/junit_wrapper/: stdlib only, staged whole, real unittest, XML that survives crashes
and hostile text, one process per test.

No test here waits for a wall-clock budget to pass: where a test needs the supervisor's
deadline to pass, the wrapper runs on ``SteppingClock`` (a clock double, below), which passes
it when the test says it is stuck; every other budget is 60 s or more, there only as a bound.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import unittest
from pathlib import Path

import pytest
from qnn_migrate_tests.bot.lab.support import DOUBLES, FP, Lab
from qnn_migrate_tests.bot.two_users import SYSTEM_PYTHON, TwoUserLab

from qnn_migrate.bot.lab import attempt, job_user, results, settings
from qnn_migrate.bot.lab.junit_wrapper import fork, hooks, xml_result
from qnn_migrate.bot.lab.junit_wrapper import main as wrapper_main
from qnn_migrate.bot.model import Shard, Status

WRAPPER = attempt.WRAPPER  # the package's folder, which the runner runs by path
ABS = f"{FP}.test_qnn_backend_abs"
# A per-test budget that is only a bound: no test here expects it to pass.
BOUND = "60"


def run_wrapper(lab: Lab, script: Path, *args: str, xml: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            str(WRAPPER),
            "--junit-xml",
            str(xml),
            "--per-test-timeout",
            BOUND,
            str(script),
            *args,
        ],
        capture_output=True,
        text=True,
        env=lab.env(),
        cwd=lab.root,
        timeout=120,
        check=False,
    )


# ---------------------------------------------------------------- standard library only

# Loads the package at argv[1] by path, as the runner does, with nothing but the standard
# library importable (-I -S: no site-packages, no PYTHONPATH, no working directory), imports
# each of its modules, and prints the modules that are not the standard library's.
_IMPORT_EACH = """
import importlib, importlib.util, json, os, sys
folder = sys.argv[1]
spec = importlib.util.spec_from_file_location("wrapper_entry", os.path.join(folder, "__main__.py"))
entry = importlib.util.module_from_spec(spec)
spec.loader.exec_module(entry)
entry.load()
for name in sorted(os.listdir(folder)):
    if name.endswith(".py") and name != "__init__.py":
        importlib.import_module(entry.PACKAGE + "." + name[:-3])
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} - set(sys.stdlib_module_names))))
"""


def _not_stdlib(folder: Path) -> list[str]:
    """What in the package at ``folder`` needs more than the standard library: every import
    statement, at any depth (read from the source, so one inside a function counts), and
    what importing each module loads with everything else blocked."""
    found: list[str] = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue  # a relative import stays inside the package
            found += [
                f"{path.name}:{node.lineno} imports {name}"
                for name in names
                if name.split(".")[0] not in {*sys.stdlib_module_names, "__future__"}
            ]
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _IMPORT_EACH, str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0:
        found.append(f"importing it with only the standard library failed: {proc.stderr[-500:]}")
    else:
        ours = {"__main__", "wrapper_entry", "qnn_junit_wrapper"}
        loaded = [m for m in json.loads(proc.stdout) if m not in ours]
        found += [f"importing it loads {name}" for name in loaded]
    return found


def test_every_module_of_the_wrapper_needs_only_the_standard_library(tmp_path: Path) -> None:
    modules = {p.name for p in WRAPPER.glob("*.py")}
    assert {"__main__.py", "main.py", "fork.py", "hooks.py", "xml_result.py"} <= modules
    assert _not_stdlib(WRAPPER) == []
    # Control: a copy with a third-party import at the top of one module and another inside a
    # function of a second (which importing alone would not run) is caught twice.
    copy = tmp_path / "junit_wrapper"
    shutil.copytree(WRAPPER, copy, ignore=shutil.ignore_patterns("__pycache__"))
    with (copy / "hooks.py").open("a") as out:
        out.write("\nimport defusedxml\n")
    with (copy / "fork.py").open("a") as out:
        out.write("\n\ndef planted() -> None:\n    from qnn_migrate.bot import model\n")
    found = _not_stdlib(copy)
    assert any(p.startswith("hooks.py:") and p.endswith("imports defusedxml") for p in found)
    assert any(p.startswith("fork.py:") and "imports qnn_migrate.bot" in p for p in found)
    assert any("No module named 'defusedxml'" in p for p in found), found


def test_a_wrapper_that_cannot_load_is_the_runners_fault(tmp_path: Path) -> None:
    """A copy of the package runs from any folder; one whose module fails to import exits 4
    (the runner reports INFRA, never the PR's fault), where a traceback alone would be 1."""
    script = tmp_path / "test_plain.py"
    script.write_text(
        "import sys, unittest\n\ndef setup_environment():\n    return sys.argv[:1]\n\n"
        "class TestA(unittest.TestCase):\n    def test_a(self):\n        pass\n"
    )
    copy = tmp_path / "elsewhere" / "junit_wrapper"
    shutil.copytree(WRAPPER, copy, ignore=shutil.ignore_patterns("__pycache__"))

    def run() -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-I", "-S", str(copy), "--junit-xml", str(tmp_path / "out.xml")]
        return subprocess.run(
            [*argv, str(script), "TestA.test_a"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    ran = run()  # the control: the copy as it is
    assert ran.returncode == 0, ran.stderr
    (copy / "hooks.py").write_text("raise RuntimeError('a broken install')\n")
    broken = run()
    assert broken.returncode == wrapper_main.EXIT_WRAPPER_FAULT, broken.stderr
    assert broken.stderr.startswith(f"junit_wrapper: cannot load {copy}")
    assert "RuntimeError: a broken install" in broken.stderr


# ----------------------------------------------------------------------- staged whole


def test_the_package_is_staged_whole_beside_the_recorder(tmp_path: Path) -> None:
    staged = job_user.stage(tmp_path)
    for path in sorted(WRAPPER.glob("*.py")):
        copy = staged / "junit_wrapper" / path.name
        assert copy.read_bytes() == path.read_bytes(), path.name
        assert copy.stat().st_mode & 0o777 == 0o644
    assert {p.name for p in (staged / "junit_wrapper").iterdir()} == {
        p.name for p in WRAPPER.glob("*.py")
    }
    assert (staged / "junit_wrapper").stat().st_mode & 0o777 == 0o755
    # The recorder is loaded from beside the package's folder, where it is staged.
    assert (staged / hooks.RECORDER_FILE).read_bytes() == (
        WRAPPER.parent / hooks.RECORDER_FILE
    ).read_bytes()
    argv = job_user.staged_argv(["python3", str(WRAPPER), "--junit-xml", "x.xml"], staged)
    assert argv == ["python3", str(staged / "junit_wrapper"), "--junit-xml", "x.xml"]
    assert job_user.stage(tmp_path) == staged  # made once


_WHO_RUNS = """
import json, os, sys, unittest

def setup_environment():
    return sys.argv[:1] + [a for a in sys.argv[1:] if not a.startswith("--")]

class TestWho(unittest.TestCase):
    def test_who(self):
        wrapper = sys.modules["qnn_junit_wrapper"]
        facts = {
            "uid": os.getuid(),
            "wrapper": os.path.dirname(wrapper.__file__),
            "sys_path": sys.path,
            "qnn_migrate": any(m.split(".")[0] == "qnn_migrate" for m in sys.modules),
        }
        with open(os.path.join(os.environ["FACTS"], "facts.json"), "w") as out:
            json.dump(facts, out)

    def test_fails(self):
        self.assertEqual(1, 2)
"""


def test_a_staged_copy_runs_as_the_job_user(two_user_lab: TwoUserLab) -> None:
    """The runner's command for a job user (attempt.run_tests: the wrapper's path made the
    staged one), run as that user with the host's python: the staged package runs, loads the
    staged recorder, forks per test, and writes what the supervisor reads back."""
    t = two_user_lab
    spec = t.settings().host.job_users
    assert spec is not None
    staged = job_user.stage(t.lab.state_dir)
    user = job_user.resolve(spec, t.users[0], path_env=os.environ["PATH"], staged=staged)
    user.prepare(("home", "tmp", "out"))
    scripts = t.root / "scripts"
    scripts.mkdir()
    (scripts / "test_who.py").write_text(_WHO_RUNS)
    argv = [
        SYSTEM_PYTHON,
        str(WRAPPER),
        "--junit-xml",
        str(user.out / "junit.xml"),
        "--per-test-timeout",
        BOUND,
        "--programs",
        str(user.out / "programs.json"),
        "--seed",
        "1126",
        "--fork-per-test",
        str(scripts / "test_who.py"),
        "TestWho.test_who",
        "TestWho.test_fails",
    ]
    full, env = user.command(
        job_user.staged_argv(argv, user.staged),
        {"PATH": "/usr/bin:/bin", "HOME": str(user.home), "FACTS": str(user.tmp)},
        scripts,
    )
    ran = subprocess.run(full, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert ran.returncode == 1, ran.stderr  # one test fails, as written
    facts = json.loads((user.tmp / "facts.json").read_text())
    assert facts["uid"] == t.uid(user.name) != os.getuid()
    assert facts["wrapper"] == str(staged / "junit_wrapper") != str(WRAPPER)
    # The harness sees the sys.path of a program: its own folder first, not the wrapper's.
    assert facts["sys_path"][0] == str(scripts)
    assert str(staged / "junit_wrapper") not in facts["sys_path"]
    assert facts["qnn_migrate"] is False
    # What the supervisor reads back, through the job user, as the runner does.
    into = t.root / "collected"
    assert user.collect(user.out, into) == []
    report = results.parse_junit((into / "junit.xml").read_bytes())
    assert {k: v.status for k, v in report.results.items()} == {
        "TestWho.test_who": Status.PASS,
        "TestWho.test_fails": Status.FAIL,
    }
    programs = json.loads((into / "programs.json").read_text())
    assert programs["schema"] == 1 and "failed" not in programs, programs
    assert " ... ok" in ran.stderr and " ... FAIL" in ran.stderr


# ------------------------------------------------------------------------ one process


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
    assert proc.returncode == wrapper_main.EXIT_UNUSABLE
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
    monkeypatch.setattr(xml_result.XmlTestResult, "xml_path", str(xml))
    monkeypatch.setattr(xml_result.XmlTestResult, "suite_name", "hostile")
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(_hostile_case())
    with open(tmp_path / "stream.txt", "w") as stream:
        unittest.TextTestRunner(
            stream=stream, verbosity=2, resultclass=xml_result.XmlTestResult
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
        timeout=120,
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
    script = tmp_path / "test_drawing.py"
    script.write_text(_DRAWING)
    out = tmp_path / f"{name}.jsonl"
    xml = str(tmp_path / f"{name}.xml")
    proc = subprocess.run(
        [sys.executable, str(WRAPPER), "--junit-xml", xml, *seed, str(script), *tests],
        capture_output=True,
        text=True,
        env={"DRAWS": str(out), "PATH": "/usr/bin:/bin"},
        timeout=120,
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

    assert hooks.seed_generators(1126) == ["random", "numpy", "torch"]
    first = (torch.rand(3), numpy.random.rand(3))
    hooks.seed_generators(1126)
    second = (torch.rand(3), numpy.random.rand(3))
    assert torch.equal(first[0], second[0]) and (first[1] == second[1]).all()
    # Control: a different seed draws differently.
    hooks.seed_generators(1127)
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

def _stuck():
    # Tell SteppingClock this test will not return (it then passes the deadline).
    open(os.environ["STUCK"], "w").close()
    time.sleep(600)

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
        _stuck()

    def test_closes_and_hangs(self):
        # Closes every descriptor it has (the report's pipe with them), then never returns.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        os.closerange(3, 65536)
        _stuck()

    def test_after(self):
        pass
"""

# The wrapper's main on SteppingClock, a clock double for the fork supervisor's deadline:
# real monotonic time, plus an hour each time a test says it is stuck (the file $STUCK
# appears), so the deadline passes at that event, whatever the load, and never before it.
_ON_STEPPING_CLOCK = """
import importlib.util, os, sys, time

class SteppingClock:
    def __init__(self, flag):
        self.flag, self.offset = flag, 0.0

    def __call__(self):
        if os.path.exists(self.flag):
            os.unlink(self.flag)
            self.offset += 3600.0
        return time.monotonic() + self.offset

folder, *argv = sys.argv[1:]
spec = importlib.util.spec_from_file_location("wrapper_entry", os.path.join(folder, "__main__.py"))
entry = importlib.util.module_from_spec(spec)
spec.loader.exec_module(entry)
sys.exit(entry.load().main_guarded(argv, clock=SteppingClock(os.environ["STUCK"])))
"""
# A budget no test reaches: only SteppingClock's event ends a stuck test's wait.
NEVER = "600"


def _run_stateful(
    tmp_path: Path, name: str, tests: list[str], *flags: str, stepping: bool = False
) -> tuple[subprocess.CompletedProcess[str], results.Reported, list[str]]:
    script = tmp_path / "test_stateful.py"
    script.write_text(_STATEFUL)
    log = tmp_path / f"{name}.log"
    xml = tmp_path / f"{name}.xml"
    entry = [str(WRAPPER)]
    if stepping:
        driver = tmp_path / "on_stepping_clock.py"
        driver.write_text(_ON_STEPPING_CLOCK)
        entry = [str(driver), str(WRAPPER)]
    proc = subprocess.run(
        [sys.executable, *entry, "--junit-xml", str(xml), *flags, str(script), *tests],
        capture_output=True,
        text=True,
        env={"LOG": str(log), "STUCK": str(tmp_path / "stuck"), "PATH": "/usr/bin:/bin"},
        timeout=120,
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
        tmp_path, "native", tests, "--fork-per-test", "--per-test-timeout", NEVER, stepping=True
    )
    assert proc.returncode == 1, proc.stderr
    got = {k: (v.status, v.message) for k, v in rep.results.items()}
    assert got["TestNative.test_crash"] == (
        Status.MISSING,
        "TestProcessDied: the test's process was killed by signal 6 (SIGABRT)",
    )
    status, message = got["TestNative.test_stuck"]
    assert status is Status.INFRA
    assert message.startswith("PerTestTimeout: killed after") and f"budget of {NEVER} s" in message
    assert got["TestNative.test_after"] == (Status.PASS, "")
    assert rep.complete and rep.running is None
    # Control: in one process the crash ends the run (the rest is never reported).
    proc, rep, _ = _run_stateful(tmp_path, "native-one", tests, "--per-test-timeout", NEVER)
    assert proc.returncode < 0 and set(rep.results) == set()
    assert rep.running == "TestNative.test_crash"


def test_fork_per_test_a_child_that_closes_its_pipe_and_hangs_is_killed_at_the_deadline(
    tmp_path: Path,
) -> None:
    """Before, the parent read the pipe's end of file and then waited for the child with no
    deadline: the shard's own watchdog had to stop the whole shard."""
    tests = ["TestNative.test_closes_and_hangs", "TestNative.test_after"]
    proc, rep, _ = _run_stateful(
        tmp_path, "closes", tests, "--fork-per-test", "--per-test-timeout", NEVER, stepping=True
    )
    got = {k: (v.status, v.message) for k, v in rep.results.items()}
    status, message = got["TestNative.test_closes_and_hangs"]
    assert status is Status.INFRA, got
    assert message.startswith("PerTestTimeout: killed after") and f"budget of {NEVER} s" in message
    assert got["TestNative.test_after"] == (Status.PASS, ""), "the rest of the shard ran"
    assert proc.returncode == 1 and rep.complete


def test_a_report_nested_past_the_recursion_limit_is_no_report() -> None:
    """json.loads raises RecursionError, not ValueError, on deep nesting: it ended the
    wrapper (every later test INFRA) instead of reading as a test that did not report."""
    assert fork.child_message(b"[" * 100_000 + b"]" * 100_000) is None
    assert fork.child_message(b'{"a": ' * 100_000) is None
    # The control: the same shape, shallow, is a report.
    assert fork.child_message(b'{"outcome": null}') == {"outcome": None}


def test_hard_deadline_leaves_the_runners_watchdog_the_last_word() -> None:
    # The runner kills the whole run after the budget plus min(30, max(1, budget / 4)).
    for budget in (0.5, 1, 4, 60, 600, 3600):
        runner_grace = min(30.0, max(1.0, budget * 0.25))
        assert budget < fork.hard_deadline_s(budget) < budget + runner_grace
    assert fork.hard_deadline_s(0) == float("inf")


def test_a_childs_report_is_taken_only_in_the_shape_the_wrapper_writes() -> None:
    """A test's code shares the process that writes the report: anything else is no report
    (the test then reads as a process that died before reporting, never as passed)."""
    good = {"outcome": None, "skipped": None, "expected_failure": False, "programs": None}
    assert fork.child_message(json.dumps(good).encode()) == good  # the control
    failed = {**good, "outcome": ["failure", "AssertionError", "1 != 2", "Traceback..."]}
    assert fork.child_message(json.dumps(failed).encode()) == failed
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
        assert fork.child_message(bad) is None, bad
