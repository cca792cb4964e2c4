"""results.py: JUnit XML and unittest -v text -> per-test statuses, completeness, caps."""

from __future__ import annotations

import pytest

from qnn_migrate.bot.lab import results
from qnn_migrate.bot.lab.results import ArtifactError, RunEnd, RunOutcome
from qnn_migrate.bot.model import Shard, Status, TestResult

SHA = "a" * 40
FP = "TestQNNFloatingPointOperator"
QM = "TestQNNQuantizedModel"

# The stream of `python test_qnn_delegate.py -v ...` on Python 3.11, as unittest prints it
# (taken from a real run of unittest with these outcomes; module renamed to __main__).
VERBOSE_311 = f"""\
test_qnn_backend_abs (__main__.{FP}.test_qnn_backend_abs) ... ok
test_qnn_backend_add (__main__.{FP}.test_qnn_backend_add) ... FAIL
test_qnn_backend_conv2d (__main__.{FP}.test_qnn_backend_conv2d) ... ERROR
test_qnn_backend_linear (__main__.{FP}.test_qnn_backend_linear)
Checks linear lowering. ... [INFO] log line from the test
ok
test_qnn_backend_relu (__main__.{FP}.test_qnn_backend_relu) ... skipped 'not on this SoC'
test_qnn_backend_sub (__main__.{FP}.test_qnn_backend_sub) ... ERROR
test_qnn_backend_pow (__main__.{FP}.test_qnn_backend_pow) ...
  test_qnn_backend_pow (__main__.{FP}.test_qnn_backend_pow) (i=1) ... FAIL
setUpClass (__main__.{QM}) ... ERROR
test_qnn_typo (unittest.loader._FailedTest.test_qnn_typo) ... ERROR

======================================================================
ERROR: test_qnn_backend_conv2d (__main__.{FP}.test_qnn_backend_conv2d)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "test_qnn_delegate.py", line 10, in test_qnn_backend_conv2d
ValueError: unsupported node in partition

======================================================================
ERROR: test_qnn_backend_sub (__main__.{FP}.test_qnn_backend_sub)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "export_utils.py", line 372, in _adb
RuntimeError: adb command failed: ['adb', '-s', 'X', 'shell', 'cd /data/local/tmp']

======================================================================
ERROR: setUpClass (__main__.{QM})
----------------------------------------------------------------------
Traceback (most recent call last):
ValueError: model zoo entry could not be built

======================================================================
ERROR: test_qnn_typo (unittest.loader._FailedTest.test_qnn_typo)
----------------------------------------------------------------------
AttributeError: type object '{FP}' has no attribute 'test_qnn_typo'

======================================================================
FAIL: test_qnn_backend_add (__main__.{FP}.test_qnn_backend_add)
----------------------------------------------------------------------
Traceback (most recent call last):
AssertionError: 0.25 not less than 0.01 : output mismatch

======================================================================
FAIL: test_qnn_backend_pow (__main__.{FP}.test_qnn_backend_pow) (i=1)
----------------------------------------------------------------------
AssertionError: 1 not less than 1

----------------------------------------------------------------------
Ran 9 tests in 3.001s

FAILED (failures=2, errors=4, skipped=1)
"""


def shard(*tests: str, **kw: object) -> Shard:
    return Shard(
        id="s1",
        matrix="m",
        soc="SM8650",
        backend="htp",
        seed=1126,
        tests=tests,
        sha=SHA,
        **kw,  # type: ignore[arg-type]
    )


def test_verbose_statuses_and_classification() -> None:
    rep = results.parse_verbose(VERBOSE_311)
    got = {k: v.status for k, v in rep.results.items()}
    assert got == {
        f"{FP}.test_qnn_backend_abs": Status.PASS,
        f"{FP}.test_qnn_backend_add": Status.FAIL,
        f"{FP}.test_qnn_backend_conv2d": Status.ERROR,
        f"{FP}.test_qnn_backend_linear": Status.PASS,
        f"{FP}.test_qnn_backend_relu": Status.SKIP,
        f"{FP}.test_qnn_backend_sub": Status.INFRA,
        f"{FP}.test_qnn_backend_pow": Status.FAIL,
    }
    assert rep.results[f"{FP}.test_qnn_backend_add"].message.startswith("AssertionError: 0.25")
    assert "adb command failed" in rep.results[f"{FP}.test_qnn_backend_sub"].message
    assert rep.results[f"{FP}.test_qnn_backend_relu"].message == "not on this SoC"
    assert rep.ran == 9 and rep.complete and rep.running is None
    assert set(rep.class_errors) == {QM}
    assert rep.class_errors[QM].status is Status.ERROR
    assert "test_qnn_typo" in rep.load_errors


def test_typo_and_lost_class_are_missing_never_green() -> None:
    s = shard(
        f"{FP}.test_qnn_backend_abs",
        f"{FP}.test_qnn_typo",
        f"{QM}.test_qnn_backend_conv_relu",
        f"{FP}.test_qnn_backend_never_mentioned",
    )
    res = results.build(s, results.parse_verbose(VERBOSE_311))
    by_id = {r.test_id: r for r in res.results}
    assert by_id[f"{FP}.test_qnn_backend_abs"].status is Status.PASS
    typo = by_id[f"{FP}.test_qnn_typo"]
    assert typo.status is Status.MISSING and "has no attribute 'test_qnn_typo'" in typo.message
    lost = by_id[f"{QM}.test_qnn_backend_conv_relu"]
    assert lost.status is Status.MISSING
    assert "setUpClass of TestQNNQuantizedModel failed" in lost.message
    assert "model zoo" in lost.message
    never = by_id[f"{FP}.test_qnn_backend_never_mentioned"]
    assert never.status is Status.MISSING and "ran 1 of 4 expected" in never.message
    assert not res.ok and res.ran == 1 and res.expected == 4
    assert results.ran_line(res) == "ran 1 of 4 expected tests, 1 passed (3 MISSING)"


def test_k_matching_nothing_exits_zero_but_is_missing() -> None:
    text = "\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\nOK\n"
    rep = results.parse_verbose(text)
    assert rep.complete and rep.ran == 0
    res = results.build(shard(f"{FP}.test_qnn_backend_abs"), rep)
    assert [r.status for r in res.results] == [Status.MISSING]
    assert not res.ok


def test_setupclass_adb_error_makes_the_class_infra() -> None:
    text = (
        f"setUpClass (__main__.{QM}) ... ERROR\n\n" + "=" * 70 + "\n"
        f"ERROR: setUpClass (__main__.{QM})\n" + "-" * 70 + "\n"
        "RuntimeError: adb command failed: ['adb', '-s', 'X', 'shell', 'mkdir']\n\n"
        + "-"
        * 70
        + "\n"
        "Ran 0 tests in 0.1s\n\nFAILED (errors=1)\n"
    )
    res = results.build(shard(f"{QM}.test_qnn_backend_conv_relu"), results.parse_verbose(text))
    (only,) = res.results
    assert only.status is Status.INFRA and "adb command failed" in only.message


def test_running_test_at_timeout_is_infra_and_rest_not_run() -> None:
    text = f"test_qnn_backend_abs (__main__.{FP}.test_qnn_backend_abs) ... ok\ntest_qnn_backend_add (__main__.{FP}.test_qnn_backend_add) ... "
    rep = results.parse_verbose(text)
    assert rep.running == f"{FP}.test_qnn_backend_add" and not rep.complete
    s = shard(
        f"{FP}.test_qnn_backend_abs", f"{FP}.test_qnn_backend_add", f"{FP}.test_qnn_backend_cos"
    )
    res = results.build(
        s, rep, RunOutcome(RunEnd.TIMEOUT, "timed out after the shard budget of 5 s")
    )
    assert [r.status for r in res.results] == [Status.PASS, Status.INFRA, Status.INFRA]
    assert "was running when the run timed out" in res.results[1].message
    assert res.results[2].message.startswith("not run: the run timed out")


def test_crash_leaves_the_running_test_missing_with_the_signal() -> None:
    text = f"test_qnn_backend_abs (__main__.{FP}.test_qnn_backend_abs) ... "
    s = shard(f"{FP}.test_qnn_backend_abs", f"{FP}.test_qnn_backend_add")
    res = results.build(
        s, results.parse_verbose(text), RunOutcome(RunEnd.CRASHED, "killed by SIGABRT")
    )
    assert [r.status for r in res.results] == [Status.MISSING, Status.MISSING]
    assert "SIGABRT" in res.results[0].message and "was running" in res.results[0].message
    assert "after 0 of 2 tests" in res.results[1].message


JUNIT = f"""<?xml version="1.0" encoding="utf-8"?>
<testsuites name="test_qnn_delegate" tests="5" complete="true">
 <testsuite name="test_qnn_delegate" tests="5">
  <properties><property name="python" value="3.11.7"/></properties>
  <testcase classname="test_qnn_delegate.{FP}" name="test_qnn_backend_abs" time="1.5"/>
  <testcase classname="test_qnn_delegate.{FP}" name="test_qnn_backend_add" time="2.0">
   <failure type="AssertionError" message="output mismatch">Traceback...</failure></testcase>
  <testcase classname="test_qnn_delegate.{FP}" name="test_qnn_backend_conv2d" time="0.1">
   <error type="RuntimeError" message="adb command failed: ['adb']">Traceback...</error></testcase>
  <testcase classname="test_qnn_delegate.{FP}" name="test_qnn_backend_linear" time="9.0">
   <error type="PerTestTimeout" message="exceeded the per-test budget of 9 s"/></testcase>
  <testcase classname="test_qnn_delegate.{FP}" name="test_qnn_backend_relu" time="0">
   <skipped message="needs a dataset"/></testcase>
  <testcase classname="test_qnn_delegate.{FP}" name="test_qnn_backend_sub" time="0.2">
   <error type="KeyError" message="'x'"/></testcase>
  <testcase classname="test_qnn_delegate.{QM}" name="setUpClass">
   <error type="ValueError" message="zoo"/></testcase>
 </testsuite>
</testsuites>
"""


def test_junit_statuses_durations_and_classification() -> None:
    rep = results.parse_junit(JUNIT.encode())
    got = {k: (v.status, v.duration_s) for k, v in rep.results.items()}
    assert got == {
        f"{FP}.test_qnn_backend_abs": (Status.PASS, 1.5),
        f"{FP}.test_qnn_backend_add": (Status.FAIL, 2.0),
        f"{FP}.test_qnn_backend_conv2d": (Status.INFRA, 0.1),
        f"{FP}.test_qnn_backend_linear": (Status.INFRA, 9.0),
        f"{FP}.test_qnn_backend_relu": (Status.SKIP, 0.0),
        f"{FP}.test_qnn_backend_sub": (Status.ERROR, 0.2),
    }
    assert rep.complete and rep.class_errors[QM].message == "ValueError: zoo"
    assert rep.results[f"{FP}.test_qnn_backend_sub"].message == "KeyError: 'x'"


def test_junit_module_error_applies_to_every_test() -> None:
    xml = (
        b'<testsuites complete="true"><testsuite><testcase classname="test_qnn_delegate" '
        b'name="setUpModule"><error type="SetupEnvironmentError" message="rejected --seed"/>'
        b"</testcase></testsuite></testsuites>"
    )
    res = results.build(shard(f"{FP}.test_qnn_backend_abs"), results.parse_junit(xml))
    assert res.results[0].status is Status.INFRA
    assert "the test module failed" in res.results[0].message


@pytest.mark.parametrize(
    "data",
    [
        b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><testsuites>&a;</testsuites>',
        b"<testsuites><testcase",
        b"<html><body>not junit</body></html>",
    ],
    ids=["dtd-entities", "truncated", "not-junit"],
)
def test_junit_refuses_hostile_or_broken_xml(data: bytes) -> None:
    with pytest.raises(ArtifactError):
        results.parse_junit(data)


def test_junit_size_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(results, "MAX_XML_BYTES", 100)
    with pytest.raises(ArtifactError, match="over the 100 cap"):
        results.parse_junit(b"<testsuites>" + b" " * 200 + b"</testsuites>")


def test_messages_are_capped_and_stripped_of_control_characters() -> None:
    xml = (
        f'<testsuites><testsuite><testcase classname="x.{FP}" name="test_qnn_backend_abs">'
        f'<failure type="AssertionError" message="a\x7f[31m{"x" * 5000}"/></testcase>'
        "</testsuite></testsuites>"
    ).encode()
    msg = results.parse_junit(xml).results[f"{FP}.test_qnn_backend_abs"].message
    assert "\x7f" not in msg and len(msg) <= results.MAX_MESSAGE_CHARS


def test_xml_wins_and_text_fills_the_gaps() -> None:
    xml = results.parse_junit(JUNIT.encode())
    text = results.parse_verbose(
        f"test_qnn_backend_cos (__main__.{FP}.test_qnn_backend_cos) ... ok\n"
        f"test_qnn_backend_abs (__main__.{FP}.test_qnn_backend_abs) ... FAIL\n"
    )
    merged = xml.merged_with(text)
    assert merged.results[f"{FP}.test_qnn_backend_abs"].status is Status.PASS
    assert merged.results[f"{FP}.test_qnn_backend_cos"].status is Status.PASS


def test_unexpected_success_fails_and_expected_failure_passes() -> None:
    text = (
        f"test_qnn_backend_abs (__main__.{FP}.test_qnn_backend_abs) ... unexpected success\n"
        f"test_qnn_backend_add (__main__.{FP}.test_qnn_backend_add) ... expected failure\n"
    )
    rep = results.parse_verbose(text)
    assert rep.results[f"{FP}.test_qnn_backend_abs"].status is Status.FAIL
    assert rep.results[f"{FP}.test_qnn_backend_add"].status is Status.PASS


def test_log_lines_that_look_like_tests_do_not_confuse_the_parser() -> None:
    text = (
        f"test_qnn_backend_abs (__main__.{FP}.test_qnn_backend_abs) ... \n"
        "Compiling graph (qnn.compiler) ... 3 nodes\n"
        "ok\n"
    )
    rep = results.parse_verbose(text)
    assert rep.results[f"{FP}.test_qnn_backend_abs"].status is Status.PASS


def test_durations_are_medians_of_ran_tests() -> None:
    s = shard(f"{FP}.test_qnn_backend_abs", f"{FP}.test_qnn_backend_add")
    runs = [
        results.build(
            s,
            results.Reported(
                results={
                    f"{FP}.test_qnn_backend_abs": TestResult(
                        f"{FP}.test_qnn_backend_abs", Status.PASS, d
                    ),
                    f"{FP}.test_qnn_backend_add": TestResult(
                        f"{FP}.test_qnn_backend_add", Status.SKIP, 0.0
                    ),
                }
            ),
        )
        for d in (1.0, 5.0, 3.0)
    ]
    assert results.durations(runs) == {f"{FP}.test_qnn_backend_abs": 3.0}


@pytest.mark.parametrize(
    ("line", "progress"),
    [
        (f"test_qnn_backend_abs (__main__.{FP}.test_qnn_backend_abs) ... ", True),
        ("ok\n", True),
        ("Docstring. ... skipped 'x'", True),
        ("[INFO] compiling the graph", False),
        ("Compiling graph (qnn.compiler) ... 3 nodes", False),
    ],
)
def test_progress_lines(line: str, progress: bool) -> None:
    assert results.is_progress_line(line) is progress
