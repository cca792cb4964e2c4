"""`/qnn test ... --compare base` end to end, through the CLI the workflows run and the stand-in.

`bot on-event` reads the PR's merge base from GitHub's compare API and dispatches the PR's
shards and the same shards again at the merge base (simulator tier, ids `sim-base-...`,
marked `merge_base`, pinned to the merge base) -> `bot device-matrix` accepts them -> the
shards' artifacts, fabricated as the recorder and `run-shard` write them -> `bot report`:
the PR's programs against the merge base's, the nightly's program baseline left aside,
the pass/fail verdicts as without the merge base's shards (golden:
tests/bot/golden/compare-base-report.md). A merge base's shard that did not report makes
its tests NOT FINGERPRINTED, never IDENTICAL.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from qnn_migrate_tests.bot.support import (
    NIGHTLY,
    check_golden,
    output_doc,
    program_doc,
    programs_file,
    standin_env,
)
from qnn_migrate_tests.github_standin.fixtures import BOT_LOGIN, REPO
from qnn_migrate_tests.github_standin.payloads import comment_event
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot.cli.main import bot
from qnn_migrate.bot.model import At, RunsOn, Shard, ShardResult, Status, TestResult
from qnn_migrate.bot.nightly import program_baseline
from qnn_migrate.bot.pr.plan import Plan
from qnn_migrate.bot.pr.state import MARKER

HEAD, ROOT, MERGE_BASE, TIP = "a" * 40, "1" * 40, "2" * 40, "4" * 40
CONV_FILE = "backends/qualcomm/_passes/canonicalize_conv.py"
CONV1D = "TestQNNFloatingPointOperator.test_qnn_backend_conv1d"
BATCH_NORM = "TestQNNFloatingPointOperator.test_qnn_conv1d_batch_norm"
CONV2D = "TestQNNFloatingPointOperator.test_qnn_backend_conv2d"


def _invoke(gh: GitHubStandIn, args: list[str], env: dict[str, str] | None = None) -> str:
    ran = CliRunner().invoke(bot, args, env=standin_env(gh) | (env or {}), catch_exceptions=False)
    assert ran.exit_code == 0, ran.output
    return ran.output


@pytest.fixture
def gh(github_standin: GitHubStandIn) -> GitHubStandIn:
    """main: ROOT -> MERGE_BASE -> TIP (exir/ changed); PR 7 branched at MERGE_BASE."""
    github_standin.add_user("maint", role="maintain", repo=REPO)
    github_standin.add_commit(ROOT)
    github_standin.add_commit(MERGE_BASE, [ROOT], files=["docs/a.md"])
    github_standin.add_commit(TIP, [MERGE_BASE], files=["exir/passes/lift.py"], branch="main")
    github_standin.add_commit(HEAD, [MERGE_BASE], files=[CONV_FILE])
    github_standin.add_pull(7, author="maint", head_sha=HEAD, files=[CONV_FILE])
    return github_standin


def _dispatch(gh: GitHubStandIn, tmp: Path) -> tuple[list[Shard], str]:
    body = "/qnn test canonicalize_conv --compare base"
    c = gh.add_comment(7, "maint", body)
    event = tmp / "event.json"
    event.write_text(
        json.dumps(comment_event(repo=REPO, number=7, body=body, login="maint", comment_id=c.id))
    )
    out = _invoke(gh, ["on-event", "--event-name", "issue_comment", "--event-path", str(event)])
    assert json.loads(out)["action"] == "dispatched", out
    (run,) = gh.runs()
    (tmp / "shards.json").write_text(run.inputs["shards"])
    return [p.shard for p in Plan.from_json(run.inputs["shards"]).shards], run.inputs["comment_id"]


def _payload(shard: Shard, test: str) -> bytes:
    """The PR lowers conv1d to another payload than its merge base; the rest the same."""
    return b"\x07" * (1792 if test == CONV1D and shard.at is At.HEAD else 2048)


def _artifacts(root: Path, shards: list[Shard]) -> Path:
    """Each shard's result.json and programs.json, as run-shard and the recorder write them.

    At the merge base, conv1d_batch_norm failed, and conv2d's program was not recorded (the
    test did not run to its end there)."""
    for shard in shards:
        folder = root / f"qnn-result-{shard.id}"
        (folder / "attempt-1").mkdir(parents=True)
        statuses = {t: Status.PASS for t in shard.tests}
        if shard.at is At.MERGE_BASE and BATCH_NORM in statuses:
            statuses[BATCH_NORM] = Status.FAIL
        result = ShardResult.complete(
            shard,
            [
                TestResult(t, s, 2.0, "" if s is Status.PASS else "AssertionError")
                for t, s in statuses.items()
            ],
            device="x86-sim-1",
        )
        (folder / "result.json").write_text(json.dumps(result.to_dict()))
        recorded = {
            t: [program_doc(payloads=(_payload(shard, t),), outputs=[output_doc(t)])]
            for t in shard.tests
            if not (shard.at is At.MERGE_BASE and t == CONV2D)
        }
        (folder / "attempt-1" / "programs.json").write_text(json.dumps(programs_file(recorded)))
    return root


def _nightly(root: Path, tests: list[str]) -> Path:
    """A nightly program baseline in which every program differs: were it the comparison,
    every test would read CHANGED."""
    night = [
        Shard(
            "sim-sm8650-m-1",
            "m",
            "SM8650",
            "htp",
            1126,
            tuple(tests),
            NIGHTLY,
            runs_on=RunsOn.SIMULATOR,
        )
    ]
    folder = root / "night" / "qnn-result-sim-sm8650-m-1" / "attempt-1"
    folder.mkdir(parents=True)
    doc = programs_file({t: [program_doc(payloads=(b"\x09" * 4096,))] for t in tests})
    (folder / "programs.json").write_text(json.dumps(doc))
    program_baseline.record_night(root / "baselines", night, root / "night", NIGHTLY)
    return root / "baselines"


def _report(
    gh: GitHubStandIn, shards_file: Path, results: Path, baselines: Path, cid: str
) -> tuple[dict[str, object], str]:
    out = _invoke(
        gh,
        [
            *("report", "--shards-file", str(shards_file), "--results-dir", str(results)),
            *("--baseline-dir", str(baselines), "--comment-id", cid),
        ],
    )
    (comment,) = [c for c in gh.comments(7) if c.author == BOT_LOGIN and MARKER in c.body]
    return json.loads(out.splitlines()[-1]), comment.body


def test_compare_base_from_the_comment_to_the_report(gh: GitHubStandIn, tmp_path: Path) -> None:
    shards, cid = _dispatch(gh, tmp_path)
    pr = [s for s in shards if s.at is At.HEAD]
    base = [s for s in shards if s.at is At.MERGE_BASE]
    assert [s.id for s in pr] == [
        "sim-sm8650-canonicalize_conv-1",
        "sim-sm8650-canonicalize_conv-2",
    ]
    assert [s.id for s in base] == [
        "sim-base-sm8650-canonicalize_conv-1",
        "sim-base-sm8650-canonicalize_conv-2",
    ]
    assert {s.sha for s in pr} == {HEAD} and {s.sha for s in base} == {MERGE_BASE}
    assert all(s.runs_on is RunsOn.SIMULATOR for s in shards)
    assert [s.tests for s in base] == [s.tests for s in pr]  # the same shards, again
    pending = next(c.body for c in gh.comments(7) if MARKER in c.body)
    assert f"| SM8650 (merge base `{MERGE_BASE[:7]}`) | `canonicalize_conv` | 16 | 2 |" in pending
    # The device workflow's plan job accepts the list, each shard at its own commit.
    matrix = _invoke(
        gh,
        [
            "device-matrix",
            "--shards-file",
            str(tmp_path / "shards.json"),
            "--sha",
            HEAD,
            "--pr",
            "7",
        ],
    )
    include = json.loads(matrix.splitlines()[0].removeprefix("matrix="))["include"]
    assert [(i["id"], i["label"], i["shard"]["sha"]) for i in include] == [
        *((s.id, "x86-simulator", HEAD) for s in pr),
        *((s.id, "x86-simulator", MERGE_BASE) for s in base),
    ]

    tests = [t for s in pr for t in s.tests]
    baselines = _nightly(tmp_path, tests)
    results = _artifacts(tmp_path / "results", shards)
    summary, body = _report(gh, tmp_path / "shards.json", results, baselines, cid)
    programs = body.split("### Programs", 1)[1]
    assert (
        f"programs on SM8650 (x86 simulator): 14 identical to the merge base (`{MERGE_BASE[:7]}`), "
        "1 changed"
    ) in programs
    assert (
        f"| SM8650 (x86 simulator) | `{CONV1D}` | 🔶 CHANGED | delegate 1 (QnnBackend) payload: 2048 → 1792 bytes"
        in programs
    )
    assert (
        f"| SM8650 (x86 simulator) | `{CONV2D}` | ⚠️ NOT FINGERPRINTED | at the merge base: "
        "the test did not run to its end"
    ) in programs
    assert (
        f"At the merge base (`{MERGE_BASE[:12]}`): 1 test(s) did not pass there (`{BATCH_NORM}`)."
        in programs
    )
    assert "main's nightly" not in programs and "is newer than" not in programs
    assert (summary["state"], summary["ran"], summary["expected"]) == ("success", 16, 16)
    check_golden("compare-base-report.md", body)

    # Control: the same run without the merge base's shards. The pass/fail part of the
    # comment and the status are the same; the programs are the nightly's, all CHANGED, and
    # the nightly's staleness against the merge base (exir/ changed since) is noted.
    only_pr = tmp_path / "pr-shards.json"
    only_pr.write_text(json.dumps([s.to_dict() for s in pr]))
    again, alone = _report(gh, only_pr, results, baselines, cid)
    assert again == summary | {"edited": True}
    assert alone.split("### Programs", 1)[0] == body.split("### Programs", 1)[0]
    assert "16 changed" in alone and "is older than this PR's merge base" not in alone
    assert gh.statuses(HEAD)[-1]["state"] == "success"


def test_a_merge_base_shard_that_did_not_report_is_never_identical(
    gh: GitHubStandIn, tmp_path: Path
) -> None:
    shards, cid = _dispatch(gh, tmp_path)
    results = _artifacts(tmp_path / "results", shards)
    lost = next(s for s in shards if s.id == "sim-base-sm8650-canonicalize_conv-2")
    shutil.rmtree(results / f"qnn-result-{lost.id}")
    _, body = _report(gh, tmp_path / "shards.json", results, tmp_path / "none", cid)
    programs = body.split("### Programs", 1)[1]
    assert (
        f"At the merge base (`{MERGE_BASE[:12]}`): 1 of 2 shard(s) of the merge base's run did "
        "not report or did not run (`sim-base-sm8650-canonicalize_conv-2`)"
    ) in programs
    for test in lost.tests:
        assert (
            f"| SM8650 (x86 simulator) | `{test}` | ⚠️ NOT FINGERPRINTED | at the merge base: "
            f"its shard {lost.id.replace('_', chr(92) + '_')} did not report |"
        ) in programs
        assert f"- `{test}` on SM8650" not in programs  # not in the identical list
    # Control: the other shard's tests did compare.
    assert "identical to the merge base" in programs and "6 identical" in programs
