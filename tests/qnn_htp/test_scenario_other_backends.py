"""The other-backends matrix answers the seed's review question: did a shared change alter
another backend's program signature? (issue 21, item 4)

ExecuTorch 1.5.1's own XNNPACK and portable tests, planned from the real catalog (the
``other_backends`` matrix: a simulator shard, no phone), run by `bot run-shard` on an
x86-simulator host over the wheel (tests/qnn_htp/real_harness/support.py), with the program
recorder. Three tests: XNNPACK abs (no weight), XNNPACK conv1d (a weight) and a portable
program (no delegate, ``to_edge``), the first run stored as the simulator baseline by the
nightly path, then:

- the same code again: IDENTICAL everywhere (the control: the comparison does not flag
  a run of unchanged code, random inputs and weights included);
- the shared code patched with the seed's lift applied to a backend whose passes insert a
  ``get_attr`` (patched_shared_lift.py): conv1d is CHANGED and the change named is its
  signature (one more constant input: the replaced weight left behind); abs, whose program
  has no weight, and the portable test, which does not go through the patched function,
  stay IDENTICAL; `bot report --dry-run` renders that row and summary in the comment.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from qnn_migrate_tests.qnn_htp.real_harness.support import (
    make_host,
    run_shard,
    sdk_or_fail,
    statuses,
)
from qnn_migrate_tests.qnn_htp.sdk import QnnSdk

from qnn_migrate.bot import catalog as catalog_mod
from qnn_migrate.bot.artifacts import shard_programs
from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.cli.main import bot
from qnn_migrate.bot.model import RunsOn, Shard, Status, Suite
from qnn_migrate.bot.nightly import program_baseline
from qnn_migrate.bot.pr.plan import PlanRequest, Selection, plan
from qnn_migrate.bot.pr.programs import gather
from qnn_migrate.bot.programs import ProgramVerdict

pytestmark = [pytest.mark.passes, pytest.mark.qnn_htp, pytest.mark.xdist_group("qnn-harness")]

ABS = "TestAbs.test_fp32_abs"
CONV1D = "TestConv1d.test_fp32_conv1d"
PORTABLE = "TestRemoveViewCopy.test_disable"


@pytest.fixture(scope="module")
def sdk() -> QnnSdk:
    return sdk_or_fail("the simulator host")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return catalog_mod.load()


def verdicts(shard: Shard, results: Path, baselines: Path) -> dict[str, tuple[str, ...]]:
    (group,), warnings = gather([shard], results, baselines)
    assert warnings == []
    return {c.test_id: (c.verdict, *c.changes) for c in group.comparisons}


def test_a_shared_lift_shows_as_a_signature_change_in_the_other_backends_matrix(
    sdk: QnnSdk, catalog: Catalog, tmp_path: Path
) -> None:
    host = make_host(tmp_path, sdk)
    # A command naming a phone SoC still plans the matrix on the simulator tier.
    (planned,) = plan(
        PlanRequest(
            {"SM8750": [Selection("other_backends", (ABS, CONV1D, PORTABLE))]},
            "htp",
            1126,
            host["sha"],
            7,
        ),
        catalog=catalog,
    ).shards
    shard = planned.shard
    assert catalog.simulator is not None
    assert shard.runs_on is RunsOn.SIMULATOR and planned.runs_on == catalog.simulator.runner_labels
    assert shard.soc == catalog.simulator.socs[0] and shard.suite is Suite.OTHER_BACKENDS

    base = run_shard(host, shard, tmp_path / "base")
    got = statuses(base)
    assert {t: s for t, (s, _) in got.items()} == dict.fromkeys(shard.tests, Status.PASS), got
    command = (base / "attempt-1" / "command.txt").read_text()
    assert "other_backends.py" in command and "--device" not in command
    recorded = shard_programs(tmp_path / "base", shard)
    for test in (ABS, CONV1D):
        (program,) = recorded[test].programs
        (method,) = program.methods
        assert [d.backend for d in method.delegates] == ["XnnpackBackend"], recorded[test]
        assert [t.dtype for t in method.inputs] == ["float32"] and method.constants == (0, 0)
        # The generic harness ran the program against eager: its outputs and their SNR.
        outputs = program.outputs
        assert outputs and all(o.snr_db is not None and o.snr_db > 30 for o in outputs), outputs
    (program,) = recorded[PORTABLE].programs
    (portable,) = program.methods
    assert portable.delegates == () and ("aten::view_copy.out", 5) in portable.outside
    assert program.outputs is None  # this test compares outputs its own way: none recorded
    baselines = tmp_path / "baselines"
    assert program_baseline.record_night(baselines, [shard], tmp_path / "base", host["sha"]) == []
    # A baseline of its own, apart from the QNN simulator's of the same SoC.
    assert sorted(p.name for p in (baselines / "programs").iterdir()) == [
        "other-backends-SM8650-simulator.json"
    ]

    run_shard(host, shard, tmp_path / "again")
    assert verdicts(shard, tmp_path / "again", baselines) == dict.fromkeys(
        shard.tests, (ProgramVerdict.IDENTICAL,)
    )

    patched = run_shard(host, shard, tmp_path / "patched", {"QNN_E2E_PATCH_SHARED_LIFT": "1"})
    assert {s for s, _ in statuses(patched).values()} == {Status.PASS}
    assert verdicts(shard, tmp_path / "patched", baselines) == {
        ABS: (ProgramVerdict.IDENTICAL,),
        CONV1D: (
            ProgramVerdict.CHANGED,
            "signature: constant inputs 0 (0 bytes) → 1 (24 bytes)",
        ),
        PORTABLE: (ProgramVerdict.IDENTICAL,),
    }
    # The comment, rendered as for the QNN matrices: the row and the summary line.
    (tmp_path / "planned.json").write_text(json.dumps([shard.to_dict()]))
    body = tmp_path / "comment.md"
    ran = CliRunner().invoke(
        bot,
        [
            "report",
            "--shards-file",
            str(tmp_path / "planned.json"),
            "--results-dir",
            str(tmp_path / "patched"),
            "--baseline-dir",
            str(baselines),
            "--dry-run",
            "--body-out",
            str(body),
        ],
        env={"GITHUB_REPOSITORY": "qnn-lab/executorch"},
    )
    assert ran.exit_code == 0, ran.output
    text = body.read_text()
    assert "programs on other backends (x86 simulator host): 2 identical to main's nightly" in text
    assert "1 changed" in text
    row = (
        f"| other backends (x86 simulator host) | `{CONV1D}` | 🔶 CHANGED | "
        "signature: constant inputs 0"
    )
    assert row in text, text
