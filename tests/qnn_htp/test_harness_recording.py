"""The harness runner's result records every test's worst outcome, subtests and messages (no QNN needed)."""

from __future__ import annotations

import io
import unittest

from qnn_migrate_tests.qnn_htp.harness_main import RecordingResult


class _Cases(unittest.TestCase):
    __test__ = False  # run by _records through RecordingResult, not collected by pytest

    def test_passes(self) -> None:
        for i in range(2):
            with self.subTest(i=i):
                self.assertEqual(i, i)

    def test_one_subtest_fails(self) -> None:
        for i in range(3):
            with self.subTest(i=i):
                self.assertLess(i, 2, "too big")

    def test_raises(self) -> None:
        raise KeyError("gone")

    @unittest.skip("not here")
    def test_skipped(self) -> None:
        pass


def _records() -> dict[str, dict[str, object]]:
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(_Cases)
    runner = unittest.TextTestRunner(resultclass=RecordingResult, stream=io.StringIO())
    result = runner.run(suite)
    assert isinstance(result, RecordingResult)
    return result.records


def test_outcomes_subtests_and_messages_are_recorded() -> None:
    records = _records()
    assert records["_Cases.test_passes"]["status"] == "ok"
    assert records["_Cases.test_passes"]["subtests"] == 2
    failed = records["_Cases.test_one_subtest_fails"]
    assert failed["status"] == "FAIL"
    assert (failed["subtests"], failed["failed_subtests"]) == (3, 1)
    assert "(i=2)" in str(failed["detail"]) and "too big" in str(failed["detail"])
    assert records["_Cases.test_raises"]["status"] == "ERROR"
    assert "KeyError" in str(records["_Cases.test_raises"]["detail"])
    assert records["_Cases.test_skipped"]["status"] == "skipped"


def _detail(ref: str, out: str) -> str:
    # The shape of the harness's assertion message (test_qnn_delegate.py's verify_output).
    return (
        "test_x (i=0): AssertionError: False is not true : ref_output:\n"
        f"tensor({ref})\n\nmodel_output:\ntensor({out})"
    )


def test_a_failure_is_explained_by_the_elements_that_missed_and_their_lsb() -> None:
    from qnn_migrate_tests.qnn_htp.run_harness import mismatch

    ref = "[[-1.7336,  0.0000,  0.8668],\n        [ 2.6004, -0.8668,  1.7336]]"
    off = "[[-1.7336,  0.8668,  0.8668],\n        [ 2.6004, -0.8668,  1.7336]]"
    assert mismatch(_detail(ref, off)) == (
        "1 of 6 elements off: reference 0, output 0.8668 (1.0 LSB); LSB 0.8668"
    )
    # Control: outputs equal to the reference have no element off.
    assert mismatch(_detail(ref, ref)).startswith("0 of 6 elements off")
    assert mismatch("KeyError: 'x'") == "KeyError: 'x'"
