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
