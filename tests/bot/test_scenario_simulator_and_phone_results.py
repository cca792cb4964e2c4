"""The comment says where results came from (phone, simulator), keeps them apart, judges
simulator failures against the simulator's own history, builds "Reproduce" from the shard,
and renders offline with `bot report --dry-run`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from qnn_migrate.bot import catalog as catalog_mod
from qnn_migrate.bot.cli.main import bot
from qnn_migrate.bot.model import Baseline, RunsOn, Shard, ShardResult, Status, TestResult, Verdict
from qnn_migrate.bot.pr import plan as plan_mod
from qnn_migrate.bot.pr.report import render_offline
from qnn_migrate.bot.pr.summary import summarize

CATALOG = catalog_mod.load()
SHA = "b" * 40
CONV = "TestQNNFloatingPointOperator.test_qnn_backend_conv2d"
QCONV = "TestQNNQuantizedOperator.test_qnn_backend_conv2d"


def shards() -> tuple[Shard, Shard]:
    common = {
        "matrix": "canonicalize_conv",
        "soc": "SM8650",
        "backend": "htp",
        "seed": 7,
        "tests": (CONV, QCONV),
        "sha": SHA,
        "pr": 3,
    }
    phone = Shard(id="sm8650-canonicalize_conv-1", **common)  # type: ignore[arg-type]
    sim = Shard(id="sim-sm8650-canonicalize_conv-1", runs_on=RunsOn.SIMULATOR, **common)  # type: ignore[arg-type]
    return phone, sim


def results(phone: Shard, sim: Shard) -> list[ShardResult]:
    return [
        ShardResult.complete(
            phone, [TestResult(CONV, Status.PASS), TestResult(QCONV, Status.PASS)]
        ),
        ShardResult.complete(
            sim,
            [
                TestResult(CONV, Status.FAIL, 1.0, "AssertionError: max abs diff 0.3 > atol 0.1"),
                TestResult(QCONV, Status.PASS),
            ],
        ),
    ]


def phone_baseline() -> Baseline:
    """A nightly on SM8650 phones where every test passed."""
    return Baseline(
        sha="e" * 40,
        history={("SM8650", CONV): [Status.PASS], ("SM8650", QCONV): [Status.PASS]},
    )


def test_simulator_and_phone_results_are_kept_apart_and_judged_apart() -> None:
    phone, sim = shards()
    summary = summarize(results(phone, sim), phone_baseline())
    assert [(g.soc, g.runs_on, g.ok) for g in summary.groups] == [
        ("SM8650", RunsOn.PHONE, True),
        ("SM8650", RunsOn.SIMULATOR, False),
    ]
    (failure,) = summary.failures
    # Against the phones' nightly it would read NEW; the simulator has no history yet.
    assert failure.runs_on is RunsOn.SIMULATOR and failure.verdict is Verdict.UNCLASSIFIED
    assert plan_mod.baseline_key(sim) == "SM8650 (x86 simulator)"
    assert plan_mod.baseline_key(phone) == "SM8650"


def test_the_comment_names_the_mode_and_reproduces_on_the_simulator() -> None:
    phone, sim = shards()
    _, body = render_offline(
        [phone, sim], results(phone, sim), phone_baseline(), CATALOG, "https://github.com/o/r"
    )
    assert "Results from phones, the x86 HTP simulator" in body
    assert "| ✅ SM8650 | `canonicalize_conv` |" in body
    assert "| ❌ SM8650 (x86 simulator) | `canonicalize_conv` |" in body
    assert f"| SM8650 (x86 simulator) | `{CONV}` |" in body
    repro = body.split("```sh\n", 1)[1].split("```", 1)[0].strip()
    assert repro.endswith("--enable_x86_64")
    assert "--host" not in repro and "--device" not in repro and "$SERIAL" not in repro
    assert "--seed 7" in repro and "--backend htp" in repro


def test_a_phone_failure_reproduces_with_adb_flags() -> None:
    phone, _ = shards()
    argv = plan_mod.repro_argv(CATALOG, phone, [CONV])
    assert argv[argv.index("--device") + 1] == "$SERIAL" and "--enable_x86_64" not in argv


def test_report_dry_run_renders_without_github(tmp_path: Path) -> None:
    phone, sim = shards()
    planned = tmp_path / "shards.json"
    planned.write_text(json.dumps([phone.to_dict(), sim.to_dict()]))
    out = tmp_path / "results"
    for result in results(phone, sim):
        folder = out / f"qnn-result-{result.shard.id}"
        folder.mkdir(parents=True)
        (folder / "result.json").write_text(json.dumps(result.to_dict()))
    body = tmp_path / "comment.md"
    env = {"GITHUB_TOKEN": "", "GITHUB_REPOSITORY": "o/r"}
    ran = CliRunner().invoke(
        bot,
        [
            "report",
            "--shards-file",
            str(planned),
            "--results-dir",
            str(out),
            "--dry-run",
            "--body-out",
            str(body),
        ],
        env=env,
    )
    assert ran.exit_code == 0, ran.output
    text = body.read_text()
    assert text.startswith("<!-- qnn-bot") and "SM8650 (x86 simulator)" in text
    assert "ran **4 of 4**" in text
