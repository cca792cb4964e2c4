"""The nightly's program baselines reach the PR report, through the commands the workflows run.

`bot nightly publish` (qnn-bot-report.yml's nightly job) commits tonight's fingerprints
to the ``qnn-baselines`` branch of the GitHub stand-in, per SoC and tier, beside the
pass/fail baselines; the branch is then laid out on disk as the report job's checkout
does (``path: qnn-baselines``) and `bot report --baseline-dir qnn-baselines/baselines`
compares a PR's programs with it: the simulator's with the simulator's, the phone's with
the phone's.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from qnn_migrate_tests.bot.support import (
    NIGHTLY,
    SHA,
    output_doc,
    program_doc,
    programs_file,
    standin_env,
)
from qnn_migrate_tests.github_standin.fixtures import REPO
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot.cli.main import bot
from qnn_migrate.bot.model import RunsOn, Shard, ShardResult, Status, TestResult
from qnn_migrate.bot.nightly import program_baseline
from qnn_migrate.bot.nightly.baseline import BRANCH

ABS = "TestQNNFloatingPointOperator.test_qnn_backend_abs"
CONV = "TestQNNFloatingPointOperator.test_qnn_backend_conv1d"
SIM_PAYLOAD, PHONE_PAYLOAD = b"\x01" * 2000, b"\x02" * 3000


def _shards(sha: str) -> list[Shard]:
    return [
        Shard(
            "sim-sm8650-m-1", "m", "SM8650", "htp", 1126, (ABS, CONV), sha, runs_on=RunsOn.SIMULATOR
        ),
        Shard("sm8650-m-1", "m", "SM8650", "htp", 1126, (ABS, CONV), sha),
    ]


def _run(root: Path, sha: str, payloads: dict[tuple[str, str], bytes]) -> tuple[Path, Path]:
    """The shard list and artifacts of one run; ``payloads[(shard id, test)]`` each program."""
    shards = _shards(sha)
    for shard in shards:
        folder = root / "results" / f"qnn-result-{shard.id}"
        (folder / "attempt-1").mkdir(parents=True)
        result = ShardResult.complete(shard, [TestResult(t, Status.PASS, 1.0) for t in shard.tests])
        (folder / "result.json").write_text(json.dumps(result.to_dict()))
        doc = programs_file(
            {
                t: [program_doc(payloads=(payloads[(shard.id, t)],), outputs=[output_doc(t)])]
                for t in shard.tests
            }
        )
        (folder / "attempt-1" / "programs.json").write_text(json.dumps(doc))
    (root / "shards.json").write_text(json.dumps([s.to_dict() for s in shards]))
    return root / "shards.json", root / "results"


def _tonight(root: Path) -> tuple[Path, Path]:
    return _run(
        root,
        NIGHTLY,
        {
            **{("sim-sm8650-m-1", t): SIM_PAYLOAD for t in (ABS, CONV)},
            **{("sm8650-m-1", t): PHONE_PAYLOAD for t in (ABS, CONV)},
        },
    )


def _publish(gh: GitHubStandIn, shards: Path, results: Path) -> dict[str, object]:
    if 7 not in gh.repos[REPO].runs:
        gh.add_run(7, "qnn-device-tests.yml", "2026-11-02T02:00:00Z")
    args = ["nightly", "publish", "--shards-file", str(shards), "--results-dir", str(results)]
    env = standin_env(gh) | {"GITHUB_RUN_ID": "7"}
    ran = CliRunner().invoke(bot, [*args, "--sha", NIGHTLY], env=env, catch_exceptions=False)
    assert ran.exit_code == 0, ran.output
    done: dict[str, object] = json.loads(ran.output.splitlines()[-1])
    return done


def test_published_program_baselines_are_what_the_pr_report_compares_with(
    github_standin: GitHubStandIn, tmp_path: Path
) -> None:
    gh = github_standin
    first = _publish(gh, *_tonight(tmp_path / "night"))
    assert first["programs"] == ["SM8650-phone.json", "SM8650-simulator.json"]
    files = gh.branch_files(BRANCH)
    assert {"baselines/SM8650.json", "baselines/programs/SM8650-simulator.json"} <= set(files)
    sim = program_baseline.parse(files["baselines/programs/SM8650-simulator.json"], "sim")
    phone = program_baseline.parse(files["baselines/programs/SM8650-phone.json"], "phone")
    assert (sim.simulator, phone.simulator) == (True, False)
    assert sim.latest_sha == phone.latest_sha == NIGHTLY and set(sim.tests) == {ABS, CONV}
    sim_size = sim.tests[ABS].programs[0].methods[0].delegates[0].size
    phone_size = phone.tests[ABS].programs[0].methods[0].delegates[0].size
    assert (sim_size, phone_size) == (len(SIM_PAYLOAD), len(PHONE_PAYLOAD))
    # The job re-run: nothing new to commit.
    again = _publish(gh, *_tonight(tmp_path / "rerun"))
    assert again["commit"] is None and again["programs"] == []
    assert not gh.violations

    # The report job's checkout of the branch (actions/checkout, path: qnn-baselines).
    checkout = tmp_path / "qnn-baselines"
    for path, data in gh.branch_files(BRANCH).items():
        (checkout / path).parent.mkdir(parents=True, exist_ok=True)
        (checkout / path).write_bytes(data)
    # A PR whose simulator programs match the nightly's; on the phone, conv1d lowers to
    # another payload. Were the tiers mixed, every program would read CHANGED.
    shards, results = _run(
        tmp_path / "pr",
        SHA,
        {
            **{("sim-sm8650-m-1", t): SIM_PAYLOAD for t in (ABS, CONV)},
            ("sm8650-m-1", ABS): PHONE_PAYLOAD,
            ("sm8650-m-1", CONV): b"\x03" * 3000,
        },
    )
    body = tmp_path / "comment.md"
    ran = CliRunner().invoke(
        bot,
        [
            *("report", "--shards-file", str(shards), "--results-dir", str(results)),
            *("--baseline-dir", str(checkout / "baselines"), "--dry-run", "--body-out", str(body)),
        ],
        env={"GITHUB_REPOSITORY": REPO},
        catch_exceptions=False,
    )
    assert ran.exit_code == 0, ran.output
    text = body.read_text()
    assert (
        "programs on SM8650 (x86 simulator): 2 identical to main's nightly "
        f"(run at `{NIGHTLY[:7]}`), 0 changed"
    ) in text
    assert (
        f"programs on SM8650: 1 identical to main's nightly (run at `{NIGHTLY[:7]}`), 1 changed"
    ) in text
    assert f"| SM8650 | `{CONV}` | 🔶 CHANGED | delegate 1 (QnnBackend) payload" in text
