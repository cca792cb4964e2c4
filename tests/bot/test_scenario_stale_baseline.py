"""The stale-baseline note, computed: `bot report` asks GitHub's compare API (the stand-in,
seeded with a commit history) what changed between each program baseline's nightly commit
and the PR's merge base, and the Programs section says so when files under
`backends/qualcomm/` or `exir/` did; a capped file list may matter; a compare that fails
says the staleness could not be checked, and the report still posts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from qnn_migrate_tests.bot.support import output_doc, program_doc, programs_file, standin_env
from qnn_migrate_tests.github_standin.fixtures import BOT_LOGIN, REPO
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot.cli.main import bot
from qnn_migrate.bot.model import Shard, ShardResult, Status, TestResult
from qnn_migrate.bot.nightly import program_baseline
from qnn_migrate.bot.pr.programs import WHERE
from qnn_migrate.bot.pr.state import MARKER

ABS = "TestQNNFloatingPointOperator.test_qnn_backend_abs"
HEAD = "a" * 40
ROOT, MERGE_BASE, TIP = "1" * 40, "2" * 40, "4" * 40
PR_FILE = "backends/qualcomm/_passes/canonicalize_conv.py"  # the PR's own: never counted


def _shards(sha: str, socs: tuple[str, ...] = ("SM8650",)) -> list[Shard]:
    return [Shard(f"{s.lower()}-m-1", "m", s, "htp", 1126, (ABS,), sha, pr=7) for s in socs]


def _artifacts(root: Path, shards: list[Shard]) -> Path:
    """Each shard's result and programs.json, one program per test, the same everywhere."""
    for shard in shards:
        folder = root / f"qnn-result-{shard.id}"
        (folder / "attempt-1").mkdir(parents=True)
        result = ShardResult.complete(shard, [TestResult(t, Status.PASS, 1.0) for t in shard.tests])
        (folder / "result.json").write_text(json.dumps(result.to_dict()))
        doc = programs_file({t: [program_doc(outputs=[output_doc(t)])] for t in shard.tests})
        (folder / "attempt-1" / "programs.json").write_text(json.dumps(doc))
    return root


def _report(
    gh: GitHubStandIn,
    tmp: Path,
    nightly: str,
    socs: tuple[str, ...] = ("SM8650",),
    head: str = HEAD,
) -> str:
    """Record a nightly at ``nightly``, report the PR's run against it; the Programs section."""
    baselines = tmp / "baselines"
    night = _shards(nightly, socs)
    program_baseline.record_night(baselines, night, _artifacts(tmp / "night", night), nightly)
    shards = _shards(head, socs)
    (tmp / "shards.json").write_text(json.dumps([s.to_dict() for s in shards]))
    ran = CliRunner().invoke(
        bot,
        [
            *("report", "--shards-file", str(tmp / "shards.json")),
            *("--results-dir", str(_artifacts(tmp / "results", shards))),
            *("--baseline-dir", str(baselines)),
        ],
        env=standin_env(gh),
        catch_exceptions=False,
    )
    assert ran.exit_code == 0, ran.output
    (comment,) = [c for c in gh.comments(7) if c.author == BOT_LOGIN and MARKER in c.body]
    assert "| ✅ SM8650 | `m` |" in comment.body  # the pass/fail part is there whatever
    return comment.body.split("### Programs", 1)[1].split("**Rerun:**", 1)[0]


@pytest.fixture
def gh(github_standin: GitHubStandIn) -> GitHubStandIn:
    """main: ROOT -> MERGE_BASE -> ... ; PR 7 branched at MERGE_BASE and changes a QNN pass."""
    github_standin.add_user("maint", role="maintain", repo=REPO)
    github_standin.add_commit(ROOT, files=["README.md"])
    github_standin.add_commit(MERGE_BASE, [ROOT], files=["docs/a.md"])
    github_standin.add_commit(HEAD, [MERGE_BASE], files=[PR_FILE])
    github_standin.add_pull(7, author="maint", head_sha=HEAD, files=[PR_FILE])
    return github_standin


def test_a_newer_baseline_in_no_file_that_matters_has_no_note_and_one_under_exir_has(
    gh: GitHubStandIn, tmp_path: Path
) -> None:
    gh.add_commit("3" * 40, [MERGE_BASE], files=["docs/b.md", "backends/arm/x.py"])
    gh.add_commit(TIP, ["3" * 40], files=["exir/passes/lift.py"], branch="main")
    section = _report(gh, tmp_path / "docs-only", "3" * 40)
    assert "identical to main's nightly (run at `3333333`)" in section
    assert "⚠️" not in section and "merge base" not in section
    # Control: the nightly after main changed exir/ (the PR's own QNN pass never counts).
    for c in gh.comments(7):
        gh.repos[REPO].comments.pop(c.id)
    section = _report(gh, tmp_path / "exir", TIP)
    assert (
        f"The nightly baseline (`{TIP[:12]}`) is newer than this PR's merge base "
        f"(`{MERGE_BASE[:12]}`) by 1 file(s) {WHERE}"
    ) in section
    assert "--compare base" in section


def test_an_older_baseline_with_a_change_under_exir_gets_the_note(
    gh: GitHubStandIn, tmp_path: Path
) -> None:
    # main went on after the nightly: ROOT (nightly) -> MERGE_BASE, then exir/ changed.
    gh.add_commit("5" * 40, [MERGE_BASE], files=["exir/program/_program.py", "docs/c.md"])
    gh.add_commit(
        "6" * 40, ["5" * 40], files=["backends/qualcomm/builders/op_conv.py"], branch="main"
    )
    gh.add_commit("b" * 40, ["6" * 40], files=[PR_FILE])
    gh.push(7, "b" * 40)
    section = _report(gh, tmp_path, ROOT, head="b" * 40)
    assert (
        f"> ⚠️ SM8650: The nightly baseline (`{ROOT[:12]}`) is older than this PR's merge base "
        f"(`{'6' * 12}`) in 2 file(s) {WHERE}: a CHANGED program "
        "may come from main, not from this PR."
    ) in section


def test_a_capped_file_list_may_matter(gh: GitHubStandIn, tmp_path: Path) -> None:
    gh.add_commit("7" * 40, [MERGE_BASE], files=[f"docs/page{i}.md" for i in range(310)])
    gh.add_commit(TIP, ["7" * 40], branch="main")
    section = _report(gh, tmp_path, TIP)
    assert (
        "GitHub lists at most 300 changed files, and listed 300 between the nightly baseline "
        f"(`{TIP[:12]}`) and this PR's merge base (`{MERGE_BASE[:12]}`), none {WHERE}; "
        "such files may be among the rest"
    ) in section
    # What GitHub answered: 300 names of the 310 (the stand-in cuts as GitHub does).
    (listed,) = [r for r in gh.requests_to("GET", r"/compare/") if MERGE_BASE + "..." in r.path]
    assert listed.status == 200


def test_a_compare_that_fails_says_the_staleness_could_not_be_checked(
    gh: GitHubStandIn, tmp_path: Path
) -> None:
    gone = "d" * 40  # the nightly's commit is not in the repository any more (force-push)
    gh.add_commit(TIP, [MERGE_BASE], branch="main")
    section = _report(gh, tmp_path, gone)
    assert (
        f"Whether files {WHERE} changed between the nightly "
        f"baseline (`{gone[:12]}`) and this PR's merge base could not be checked: GitHub "
        f"cannot compare the baseline's commit `{gone[:12]}` with the merge base (404"
    ) in section
    assert "identical to main's nightly" in section  # the comparison itself is still shown


def test_the_merge_base_that_cannot_be_read_is_said_too(gh: GitHubStandIn, tmp_path: Path) -> None:
    gh.add_commit(TIP, [MERGE_BASE], branch="main")
    gh.fail_next("GET", r"/compare/main\.\.\.", 502, count=10)
    section = _report(gh, tmp_path, TIP)
    assert "could not be checked: the PR's merge base could not be read from GitHub" in section
    assert "GitHub API GET compare/main...aaaa" in section


def test_one_compare_per_distinct_baseline_commit(gh: GitHubStandIn, tmp_path: Path) -> None:
    gh.add_commit("3" * 40, [MERGE_BASE], files=["exir/a.py"])
    gh.add_commit(TIP, ["3" * 40], branch="main")
    section = _report(gh, tmp_path, "3" * 40, socs=("SM8650", "SM8750"))
    assert section.count("is newer than this PR's merge base") == 2  # SM8650 and SM8750
    paths = [r.path.rsplit("/compare/", 1)[1] for r in gh.requests_to("GET", r"/compare/")]
    # The merge base once; the baseline behind it both ways, once for both SoCs.
    assert paths == [
        f"main...{HEAD}",
        f"{'3' * 40}...{MERGE_BASE}",
        f"{MERGE_BASE}...{'3' * 40}",
    ]
