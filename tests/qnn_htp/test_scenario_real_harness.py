"""`bot run-shard` on an x86-simulator host runs ExecuTorch 1.5.1's real test_qnn_delegate.py.

Real QNN compile and real HTP simulator (the onnxruntime-qnn libraries and ABI bridge of
tests/qnn_htp); the native qnn_executor_runner is the tier's QnnExecutorRunnerDouble. The
checkout is the wheel's ``executorch`` package, hard-linked into a git repository (never
written to: the links share the venv's files), put first on ``PYTHONPATH`` so the runner's
"executorch comes from the checkout" check holds. One real test per run keeps CI short:

1. a seed-matrix test passes and a mistyped id ends MISSING, through the JUnit wrapper;
2. with the runner's outputs made wrong, the same test ends FAIL with the harness's own
   message, and a host killed after it leaves the next test MISSING, never passed;
3. the program recorder fingerprinted what the harness lowered (issue 21); the nightly path
   stores the passing run as the simulator baseline; the same tests run again at the same
   commit are IDENTICAL, payloads and outputs byte for byte (the runner seeds each test with
   the shard's seed), and run with a patched ``CanonicalizeConv`` (the control) are CHANGED
   exactly where a conv1d is lowered;
4. `bot report --dry-run` renders both into the comment, marked as simulator results,
   with the Programs section against that baseline
   (tests/qnn_htp/golden/real-harness-report.md, durations masked; regenerate with
   ``QNN_REGEN_GOLDEN=1``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from qnn_migrate_tests.qnn_htp.real_harness import support
from qnn_migrate_tests.qnn_htp.real_harness.support import make_host, sdk_or_fail, statuses
from qnn_migrate_tests.qnn_htp.sdk import QnnSdk

from qnn_migrate.bot.artifacts import shard_programs
from qnn_migrate.bot.cli.main import bot
from qnn_migrate.bot.model import RunsOn, Shard, Status
from qnn_migrate.bot.nightly import program_baseline
from qnn_migrate.bot.pr.programs import gather
from qnn_migrate.bot.programs import ProgramVerdict, TestPrograms

pytestmark = [pytest.mark.passes, pytest.mark.qnn_htp, pytest.mark.xdist_group("qnn-harness")]

TESTS = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent / "real_harness"
GOLDEN = Path(__file__).parent / "golden" / "real-harness-report.md"
CONV1D = "TestQNNFloatingPointOperator.test_qnn_backend_conv1d"
CONV2D = "TestQNNFloatingPointOperator.test_qnn_backend_conv2d"
TYPO = "TestQNNFloatingPointOperator.test_qnn_backend_conv1dd"
ABS = "TestQNNFloatingPointOperator.test_qnn_backend_abs"


@pytest.fixture(scope="module")
def sdk() -> QnnSdk:
    return sdk_or_fail("the real-harness scenario")


@pytest.fixture(scope="module")
def host(sdk: QnnSdk, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The simulator host (real_harness/support.py), with a runner that corrupts outputs."""
    host = make_host(tmp_path_factory.mktemp("real-harness"), sdk)
    root = Path(str(host["root"]))
    bad = root / "corrupting_runner"
    bad.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{HERE / "corrupting_runner.py"}" "$@"\n')
    bad.chmod(0o755)
    return {**host, "good": Path(host["config"]["qnn_executor_runner"]), "bad": bad}


def shard_named(host: dict[str, object], name: str, tests: list[str]) -> Shard:
    return Shard(
        id=f"sim-sm8650-{name}-1",
        matrix="tests",
        soc="SM8650",
        backend="htp",
        seed=1126,
        tests=tuple(tests),
        sha=str(host["sha"]),
        pr=7,
        runs_on=RunsOn.SIMULATOR,
        timeout_s=1500,
        per_test_timeout_s=600,
    )


def run_shard(host: dict[str, object], name: str, tests: list[str], **extra: object) -> Path:
    """`bot run-shard` of the shard ``name`` (real_harness/support.py's; ``env`` and host-config
    keys in ``extra``) into the host's ``results`` folder."""
    env = dict(extra.pop("env", {}))  # type: ignore[call-overload]
    root = Path(str(host["root"]))
    shard = shard_named(host, name, tests)
    return support.run_shard(host, shard, root / "results", env, **extra)


def shard_of(host: dict[str, object], name: str) -> Shard:
    """The shard ``run_shard`` ran as ``name`` (as written for `bot run-shard`)."""
    path = Path(str(host["root"])) / f"sim-sm8650-{name}-1.json"
    return Shard.from_dict(json.loads(path.read_text()))


def delegate_hashes(test: TestPrograms) -> list[str]:
    return [d.sha256 for p in test.programs for m in p.methods for d in m.delegates]


def output_hashes(test: TestPrograms) -> list[str]:
    return [o.sha256 for p in test.programs for o in p.outputs or ()]


def check_programs(host: dict[str, object]) -> None:
    """What the recorder took from the harness, the nightly baseline, and the patched-pass control."""
    root = Path(str(host["root"]))
    recorded = shard_programs(root / "results", shard_of(host, "pass"))
    conv = recorded[CONV1D]
    # One program per subtest of the harness's test (i=0, i=1: two conv1d modules).
    assert conv.problem is None and [p.subtest for p in conv.programs] == ["(i=0)", "(i=1)"]
    for program in conv.programs:
        (method,) = program.methods
        assert [d.backend for d in method.delegates] == ["QnnBackend"]
        assert [t.dtype for t in method.inputs] == ["float32"]
        outputs = program.outputs
        assert outputs and all(o.snr_db is not None and o.snr_db > 30 for o in outputs), outputs
    assert recorded[ABS].problem is None and recorded[ABS].programs
    assert str(recorded[TYPO].problem).startswith("the test did not run")
    # The nightly stores the run as the simulator tier's baseline; the same tests at the
    # same commit with a patched CanonicalizeConv change exactly the test that lowers conv1d.
    baselines = root / "baselines"
    assert program_baseline.record_night(
        baselines, [shard_of(host, "pass")], root / "results", str(host["sha"])
    ) == [
        "sim-sm8650-pass-1: 1 test(s) not fingerprinted, kept from earlier nights "
        "(the test did not run to its end, so its programs are not all known)"
    ]
    # The same tests at the same commit again: IDENTICAL, payloads byte for byte (the
    # runner seeds each test with the shard's seed, so the weights and inputs repeat).
    again = run_shard(host, "again", [ABS, CONV1D], qnn_executor_runner=str(host["good"]))
    (group,), warnings = gather([shard_of(host, "again")], root / "results", baselines)
    assert warnings == []
    assert {c.test_id: c.verdict for c in group.comparisons} == {
        ABS: ProgramVerdict.IDENTICAL,
        CONV1D: ProgramVerdict.IDENTICAL,
    }, group.comparisons
    repeated = shard_programs(root / "results", shard_of(host, "again"))
    for test in (ABS, CONV1D):
        assert delegate_hashes(repeated[test]) == delegate_hashes(recorded[test]), test
        assert output_hashes(repeated[test]) == output_hashes(recorded[test]), test
    shutil.rmtree(again)
    patched = run_shard(
        host,
        "patched",
        [ABS, CONV1D],
        qnn_executor_runner=str(host["good"]),
        env={"QNN_E2E_PATCH_CONV1D": "1"},
    )
    (group,), warnings = gather([shard_of(host, "patched")], root / "results", baselines)
    assert warnings == []
    verdicts = {c.test_id: c for c in group.comparisons}
    assert verdicts[ABS].verdict is ProgramVerdict.IDENTICAL, verdicts[ABS]
    assert verdicts[CONV1D].verdict is ProgramVerdict.CHANGED, verdicts[CONV1D]
    # What changed is named per subtest: each conv1d's delegate payload (the ReLU is in it).
    changes = verdicts[CONV1D].changes
    for where in ("program 1 (i=0): ", "program 2 (i=1): "):
        assert any(c.startswith(f"{where}delegate 1 (QnnBackend) payload") for c in changes), (
            changes
        )
    shutil.rmtree(patched)


def test_the_real_harness_through_run_shard_and_the_offline_report(host: dict[str, object]) -> None:
    passing = run_shard(host, "pass", [ABS, CONV1D, TYPO], qnn_executor_runner=str(host["good"]))
    got = statuses(passing)
    assert got[CONV1D][0] == Status.PASS, (passing / "attempt-1" / "stderr.txt").read_text()[-3000:]
    assert got[ABS][0] == Status.PASS
    check_programs(host)
    assert got[TYPO][0] == Status.MISSING and "not found in the test module" in got[TYPO][1]
    doc = json.loads((passing / "result.json").read_text())
    assert doc["sdk_version"].startswith("2.51.0")
    junit = (passing / "attempt-1" / "junit.xml").read_text()
    assert 'complete="true"' in junit and "test_qnn_backend_conv1d" in junit
    command = (passing / "attempt-1" / "command.txt").read_text()
    assert "--enable_x86_64" in command and "--device" not in command

    broken = run_shard(
        host,
        "broken",
        [CONV1D, CONV2D],
        qnn_executor_runner=str(host["bad"]),
        env={"QNN_E2E_KILL_AFTER": "1"},
    )
    got = statuses(broken)
    assert got[CONV1D][0] == Status.FAIL, got
    assert "AssertionError" in got[CONV1D][1]
    assert got[CONV2D][0] in (Status.MISSING, Status.INFRA), got
    assert "SIGKILL" in got[CONV2D][1]

    root = Path(str(host["root"]))
    planned = [shard_of(host, n).to_dict() for n in ("pass", "broken")]
    (root / "planned.json").write_text(json.dumps(planned))
    body = root / "comment.md"
    ran = CliRunner().invoke(
        bot,
        [
            "report",
            "--shards-file",
            str(root / "planned.json"),
            "--results-dir",
            str(root / "results"),
            "--baseline-dir",
            str(root / "baselines"),
            "--dry-run",
            "--body-out",
            str(body),
        ],
        env={"GITHUB_REPOSITORY": "qnn-lab/executorch"},
    )
    assert ran.exit_code == 0, ran.output
    text = body.read_text()
    assert "Results from the x86 HTP simulator" in text
    assert f"| SM8650 (x86 simulator) | `{CONV1D}` | ❌ FAIL | **UNCLASSIFIED** |" in text
    assert "AssertionError: False is not true" in text
    assert f"`{TYPO}` | ❓ MISSING |" in text
    assert "was running when the test process died: killed by SIGKILL" in text
    assert "ran **3 of 5**" in text
    repro = text.split("```sh\n", 1)[1].split("```", 1)[0]
    assert repro.rstrip().endswith("--enable_x86_64") and "--device" not in repro
    # Durations vary from run to run; everything else is stable.
    stable = re.sub(r"\| \d+\.\ds \|", "| Ns |", text)
    # So do the harness's random inputs and weights: the SNRs, and how many payload blocks
    # differ between two lowerings of one conv1d (20 of 209 measured: over the tolerance).
    stable = re.sub(r"SNR -?[\d.]+ dB → -?[\d.]+ dB", "SNR x dB → y dB", stable)
    stable = re.sub(r"\d+ of (\d+) blocks differ", r"N of \1 blocks differ", stable)
    if os.environ.get("QNN_REGEN_GOLDEN"):
        GOLDEN.write_text(stable)
    assert stable == GOLDEN.read_text(), "the comment differs from " + str(GOLDEN)
    shutil.rmtree(root / "results")
