"""campaign/proof.py: the proof runs only on the campaign's own, untouched commit, as /qnn test --sha."""

from __future__ import annotations

from pathlib import Path

import pytest
from qnn_migrate_tests.bot.campaign.support import Fork
from qnn_migrate_tests.github_standin.fixtures import BOT_LOGIN, REPO
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot.campaign.marker import proof_section
from qnn_migrate.bot.campaign.proof import dispatch_proof, prove
from qnn_migrate.bot.campaign.run import CampaignSettings, proof_command, run_campaign
from qnn_migrate.bot.campaign.tree import TreeOptions, rewrite_checkout
from qnn_migrate.bot.github.client import PyGithubGateway
from qnn_migrate.bot.model import At, RunsOn
from qnn_migrate.bot.pr.context import BotContext
from qnn_migrate.bot.pr.plan import Plan

SETTINGS = CampaignSettings(
    bot_login=BOT_LOGIN, repo_url=f"https://github.com/{REPO}", matrices=("canonicalize_conv",)
)
BRANCH = SETTINGS.branch


@pytest.fixture
def opened(
    github_standin: GitHubStandIn, gateway: PyGithubGateway, tmp_path: Path
) -> tuple[int, str]:
    fork = Fork(github_standin, tmp_path / "checkout", REPO)
    tree = rewrite_checkout(fork.checkout, TreeOptions(jobs=1))
    result = run_campaign(gateway, tree, base=fork.base, settings=SETTINGS, version="9.9")
    assert result.pr is not None and result.commit is not None
    return result.pr, result.commit


def _prove(gw: PyGithubGateway, ctx: BotContext, pr: int, sha: str) -> object:
    return prove(gw, ctx, pr=pr, sha=sha, branch=BRANCH, command_line=proof_command(SETTINGS, sha))


def test_the_proof_is_the_campaigns_commit_against_its_merge_base(
    github_standin: GitHubStandIn,
    gateway: PyGithubGateway,
    ctx: BotContext,
    opened: tuple[int, str],
) -> None:
    gh = github_standin
    pr, sha = opened
    done = _prove(gateway, ctx, pr, sha)
    assert done.action == "dispatched", done  # type: ignore[attr-defined]
    (run,) = gh.runs()
    shards = [p.shard for p in Plan.from_json(run.inputs["shards"]).shards]
    main = gh.repos[REPO].refs["heads/main"]
    assert {(s.sha, s.at) for s in shards} == {(sha, At.HEAD), (main, At.MERGE_BASE)}
    assert all(s.matrix == "canonicalize_conv" and s.runs_on is RunsOn.SIMULATOR for s in shards)
    section = proof_section(gh.repos[REPO].pulls[pr].body or "")
    assert section is not None and done.results_url in section  # type: ignore[attr-defined]


@pytest.mark.parametrize("what", ["pushed", "closed", "not the bot's", "another branch"])
def test_anything_but_the_campaigns_open_untouched_pr_is_skipped(
    github_standin: GitHubStandIn,
    gateway: PyGithubGateway,
    ctx: BotContext,
    opened: tuple[int, str],
    what: str,
) -> None:
    gh = github_standin
    pr, sha = opened
    pull = gh.repos[REPO].pulls[pr]
    if what == "pushed":
        gh.commit_on_branch(BRANCH, {"x.py": b"mine\n"}, "mine")
    elif what == "closed":
        pull.state = "closed"
    elif what == "not the bot's":
        pull.author = "mallory"
    else:
        pull.head_ref = "elsewhere"
    done = _prove(gateway, ctx, pr, sha)
    assert done.action == "skipped" and gh.runs() == []  # type: ignore[attr-defined]
    assert not [r for r in gh.writes() if "/comments" in r.path]


def test_the_adapter_dispatches_only_a_pinned_test_command(
    github_standin: GitHubStandIn,
    gateway: PyGithubGateway,
    ctx: BotContext,
    opened: tuple[int, str],
) -> None:
    pr, sha = opened
    for line in ("/qnn test canonicalize_conv --sim", "/qnn help", "/qnn test nope --sha " + sha):
        done = dispatch_proof(gateway, ctx, pr=pr, command_line=line)
        assert done.action == "refused", line
    assert github_standin.runs() == []


def test_files_no_matrix_guards_refuse_the_proof_and_the_pr_says_how_to_ask(
    github_standin: GitHubStandIn,
    gateway: PyGithubGateway,
    ctx: BotContext,
    opened: tuple[int, str],
) -> None:
    """The bundled matrices guard none of the fork's rewritten files: `auto` selects none."""
    pr, sha = opened
    auto = CampaignSettings(bot_login=BOT_LOGIN, repo_url=SETTINGS.repo_url)
    command = proof_command(auto, sha)
    done = prove(gateway, ctx, pr=pr, sha=sha, branch=BRANCH, command_line=command)
    assert done.action == "refused" and "found no matrix" in done.reason
    assert github_standin.runs() == []
    section = proof_section(github_standin.repos[REPO].pulls[pr].body or "")
    assert section is not None and "⚠️ Not run:" in section and f"`{command}`" in section
