"""`qnn-migrate bot campaign ...`: inputs refused with what to do, exit codes, the org's --repo."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result
from qnn_migrate_tests.bot.campaign.support import Fork
from qnn_migrate_tests.bot.support import standin_env
from qnn_migrate_tests.github_standin.fixtures import DEVICE_WORKFLOW, DEVICE_WORKFLOW_INPUTS, REPO
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot.cli.main import bot


def invoke(gh: GitHubStandIn, tmp: Path, *args: str, **env: str) -> Result:
    full = standin_env(gh) | {"GITHUB_OUTPUT": str(tmp / "out")} | env
    return CliRunner().invoke(bot, ["campaign", *args], env=full, catch_exceptions=False)


def test_a_malformed_base_sha_is_refused_with_a_failed_result(
    github_standin: GitHubStandIn, tmp_path: Path
) -> None:
    fork = Fork(github_standin, tmp_path / "c", REPO)
    out = tmp_path / "r.json"
    ran = invoke(
        github_standin,
        tmp_path,
        "run",
        "--checkout",
        str(fork.checkout),
        "--base-sha",
        "abc123",
        "--json-out",
        str(out),
    )
    assert ran.exit_code == 2 and "not a full 40-hex commit SHA" in ran.stderr
    assert json.loads(out.read_text())["state"] == "failed"
    assert github_standin.requests == []


def test_a_run_from_another_ref_than_the_default_branch_is_refused(
    github_standin: GitHubStandIn, tmp_path: Path
) -> None:
    fork = Fork(github_standin, tmp_path / "c", REPO)
    base = ["run", "--checkout", str(fork.checkout), "--base-sha", fork.base, "--jobs", "1"]
    ran = invoke(github_standin, tmp_path, *base, "--ref", "refs/heads/feature")
    assert ran.exit_code == 2 and "default branch only (main)" in ran.stderr
    assert github_standin.writes() == []
    # Control: from the default branch it runs.
    ran = invoke(github_standin, tmp_path, *base, "--ref", "refs/heads/main")
    assert ran.exit_code == 0, ran.output


def test_a_malformed_config_on_the_default_branch_is_named(
    github_standin: GitHubStandIn, tmp_path: Path
) -> None:
    fork = Fork(github_standin, tmp_path / "c", REPO)
    fork.move_main({"pyproject.toml": b"[tool.qnn-migrate]\ntarget = 'nope'\n"}, "bad config")
    ran = invoke(
        github_standin, tmp_path, "run", "--checkout", str(fork.checkout), "--base-sha", fork.base
    )
    assert ran.exit_code == 2 and "pyproject.toml" in ran.stderr and "target" in ran.stderr
    assert json.loads(ran.stdout.splitlines()[-1])["state"] == "failed"


def test_an_organizations_run_names_the_repository_and_links_its_own_run(
    github_standin: GitHubStandIn, tmp_path: Path
) -> None:
    gh = github_standin
    gh.add_repo("qnn-lab/alpha")
    gh.add_workflow(DEVICE_WORKFLOW, set(DEVICE_WORKFLOW_INPUTS), "qnn-lab/alpha")
    fork = Fork(gh, tmp_path / "alpha", "qnn-lab/alpha")
    home = {"GITHUB_REPOSITORY": "qnn-lab/automation"}
    ran = invoke(
        gh,
        tmp_path,
        "run",
        "--repo",
        "qnn-lab/alpha",
        "--checkout",
        str(fork.checkout),
        "--base-sha",
        fork.base,
        "--jobs",
        "1",
        **home,
    )
    assert ran.exit_code == 0, ran.output
    opened = json.loads(ran.stdout.splitlines()[-1])
    assert opened["repository"] == "qnn-lab/alpha" and gh.pulls("qnn-lab/alpha")
    assert gh.pulls(REPO) == []
    ran = invoke(
        gh,
        tmp_path,
        "prove",
        "--repo",
        "qnn-lab/alpha",
        "--pr",
        str(opened["pr"]),
        "--sha",
        opened["commit"],
        "--catalog",
        str(fork.config),
        **home,
    )
    assert ran.exit_code == 0, ran.output
    (status,) = gh.statuses(opened["commit"], "qnn-lab/alpha")[:1]
    assert status["target_url"] == "https://github.com/qnn-lab/automation/actions/runs/4242"


def test_summary_reads_folders_refuses_foreign_files_and_can_be_strict(tmp_path: Path) -> None:
    good = tmp_path / "results" / "qnn-campaign-0"
    good.mkdir(parents=True)
    doc = {"schema": 1, "kind": "campaign", "repository": "o/a", "state": "opened", "reason": ""}
    (good / "campaign.json").write_text(json.dumps(doc))
    (good / "notes.json").write_text("not read")
    runner = CliRunner()
    ran = runner.invoke(bot, ["campaign", "summary", str(tmp_path / "results")])
    assert ran.exit_code == 0 and "| `o/a` |" in ran.stdout
    ran = runner.invoke(
        bot,
        ["campaign", "summary", str(tmp_path / "results"), "--expect-json", '["o/b"]', "--strict"],
    )
    assert ran.exit_code == 1 and "| `o/b` | — | ❌ failed |" in ran.stdout
    (good / "campaign.json").write_text('{"schema": 1, "kind": "campaign"}')
    ran = runner.invoke(bot, ["campaign", "summary", str(tmp_path / "results")])
    assert ran.exit_code == 2 and "campaign.json" in ran.stderr
    ran = runner.invoke(bot, ["campaign", "summary", str(tmp_path), "--expect-json", "{}"])
    assert ran.exit_code == 2 and "JSON list" in ran.stderr
