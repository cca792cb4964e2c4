"""The seed's 27 tests through ExecuTorch 1.5.1's harness on the real QNN compiler: each lowered
twice, once as the nightly groups it and once as a PR's shards would.

Issue 21's test of the program fingerprints on the real-QNN tier: the harness's own
``test_qnn_delegate.py`` under the runner's JUnit wrapper with the flags `bot run-shard` gives
it (``--seed 1126``, ``--programs``, ``--fork-per-test``), the QNN 2.51 HTP compiler of
tests/qnn_htp, compile-only (lower and fingerprint, do not run: the x86 runs that also
fingerprint outputs are the real-harness scenario's, on abs and conv1d).

1. The nightly's run: the 27 in one shard, in the matrices' order (91 programs).
2. The same commit again as a PR's shards would group it: two shards side by side, each in
   reverse order, over the 15 tests the control below does not take. Every one is IDENTICAL
   to the nightly's. (Before each test had its own process this gave CHANGED: one test's
   lowering moved QNN's process-wide counters for every later test in its shard.)
3. The control, on the other 12, likewise regrouped: ``CanonicalizeConv`` patched (a ReLU
   after each conv1d it rewrites; real_harness/python_wrapper.py). They are those with a 1-D
   convolution, and a conv2d and a linear in each flavour. The tests the patch changed, as the
   patch itself logs them, are exactly the CHANGED ones, named by what changed; the rest stay
   IDENTICAL. So every test is lowered a second time in a PR's grouping, and every test the
   patch leaves alone must come out IDENTICAL (the real-harness scenario shows the same for
   conv1d unpatched, outputs included).

54 lowerings (27 + 15 + 12; it was 27 + 27 + 12: the control's 12 were lowered unpatched
twice over); the two-shard runs use both cores.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from qnn_migrate_tests.qnn_htp.real_harness.support import (
    harness_env,
    sdk_or_fail,
    seed_tests,
    wrapper_argv,
    x86_build,
)
from qnn_migrate_tests.qnn_htp.sdk import QnnSdk

from qnn_migrate.bot.programs import ProgramVerdict, TestPrograms, compare_all, parse_programs

pytestmark = [pytest.mark.passes, pytest.mark.qnn_htp, pytest.mark.xdist_group("qnn-harness")]

TIMEOUT_S = 1500
CONTROL_ALSO = ("test_qnn_backend_conv2d", "test_qnn_backend_linear")


@pytest.fixture(scope="module")
def sdk() -> QnnSdk:
    return sdk_or_fail("the seed-programs scenario")


def run_shards(
    root: Path, name: str, shards: list[list[str]], build: Path, env: dict[str, str]
) -> dict[str, TestPrograms]:
    """Run each shard in its own harness process, all at once; the programs they recorded."""
    procs = []
    for i, tests in enumerate(shards):
        out = root / f"{name}-{i + 1}"
        out.mkdir(parents=True)
        stderr = (out / "stderr.txt").open("w")
        argv = wrapper_argv(tests, out, build)
        procs.append((out, tests, stderr, subprocess.Popen(argv, env=env, cwd=out, stderr=stderr)))
    recorded: dict[str, TestPrograms] = {}
    for out, tests, stderr, proc in procs:
        code = proc.wait(timeout=TIMEOUT_S)
        stderr.close()
        tail = (out / "stderr.txt").read_text()[-2000:]
        # Compile-only: 1.5.1's tests error in verify_output after lowering (exit 1).
        assert code in (0, 1), tail
        doc = json.loads((out / "programs.json").read_text())
        assert not doc["notes"], doc["notes"]
        recorded |= parse_programs(doc, tests)
    return recorded


def test_seed_programs_are_identical_at_one_commit_and_a_patched_pass_changes_exactly_its_tests(
    sdk: QnnSdk, tmp_path: Path
) -> None:
    tests = seed_tests()
    assert len(tests) == 27
    build = x86_build(tmp_path)
    env = harness_env(sdk)
    nightly = run_shards(tmp_path, "nightly", [tests], build, env)
    # Every test lowered and was fingerprinted (no vacuous IDENTICAL).
    assert set(nightly) == set(tests)
    for test in nightly.values():
        assert test.problem is None and test.programs, test
        assert all(p.error is None for p in test.programs), test
    programs = sum(len(t.programs) for t in nightly.values())
    assert programs == 91

    # The control on the tests with a 1-D convolution (the patch's, and conv1d_relu_log_softmax
    # beside them) plus a 2-D convolution and a linear in each flavour: the others are no
    # closer to the patch than those. The rest are regrouped unpatched.
    chosen = [t for t in tests if "1d" in t or t.rsplit(".", 1)[1] in CONTROL_ALSO]
    assert len(chosen) == 12, chosen
    rest_of_seed = [t for t in tests if t not in chosen]
    regrouped = [rest_of_seed[0::2][::-1], rest_of_seed[1::2][::-1]]
    again = run_shards(tmp_path, "again", regrouped, build, env)
    verdicts = compare_all(nightly, again, rest_of_seed)
    assert len(verdicts) == 15
    not_same = {
        c.test_id: c.changes or c.note
        for c in verdicts
        if c.verdict is not ProgramVerdict.IDENTICAL
    }
    assert not not_same, not_same

    log = tmp_path / "patched-tests.log"
    patched_env = {**env, "QNN_E2E_PATCH_CONV1D": "1", "QNN_E2E_PATCH_LOG": str(log)}
    patched_shards = [chosen[0::2][::-1], chosen[1::2][::-1]]
    patched = run_shards(tmp_path, "patched", patched_shards, build, patched_env)
    touched = set(log.read_text().split())
    # The patch changed some tests, not all (else "exactly" would say nothing).
    assert touched and touched < set(chosen), touched
    verdicts = compare_all(nightly, patched, chosen)
    changed = {c.test_id: c.changes for c in verdicts if c.verdict is ProgramVerdict.CHANGED}
    assert set(changed) == touched
    rest = {c.test_id: c.verdict for c in verdicts if c.test_id not in touched}
    assert set(rest.values()) == {ProgramVerdict.IDENTICAL}, rest
    for test_id, changes in changed.items():
        # What changed is named: the delegate's payload (a ReLU more in the QNN graph).
        assert any("delegate" in change and "payload" in change for change in changes), (
            test_id,
            changes,
        )
