"""campaign/run.py and dry_run.py over the real gateway and the stand-in: what is written, when."""

from __future__ import annotations

from pathlib import Path

import pytest
from qnn_migrate_tests.bot.campaign.support import Fork
from qnn_migrate_tests.github_standin.fixtures import BOT_LOGIN, REPO
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot.campaign.decide import Action, State
from qnn_migrate.bot.campaign.dry_run import DRY_SHA, DryRunGateway
from qnn_migrate.bot.campaign.run import (
    CampaignError,
    CampaignSettings,
    proof_command,
    run_campaign,
)
from qnn_migrate.bot.campaign.tree import TreeOptions, rewrite_checkout
from qnn_migrate.bot.github.client import PyGithubGateway

SETTINGS = CampaignSettings(bot_login=BOT_LOGIN, repo_url=f"https://github.com/{REPO}")
BRANCH = SETTINGS.branch


@pytest.fixture
def fork(github_standin: GitHubStandIn, tmp_path: Path) -> Fork:
    return Fork(github_standin, tmp_path / "checkout", REPO)


def _run(gw: object, fork: Fork) -> object:
    tree = rewrite_checkout(fork.checkout, TreeOptions(jobs=1))
    return run_campaign(gw, tree, base=fork.base, settings=SETTINGS, version="9.9")  # type: ignore[arg-type]


def _calls(gh: GitHubStandIn, since: int) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in gh.requests[since:]]


@pytest.mark.parametrize("step", ["open", "recreate", "close"])
def test_the_dry_run_lists_the_calls_the_real_run_makes(
    github_standin: GitHubStandIn, gateway: PyGithubGateway, fork: Fork, step: str
) -> None:
    gh = github_standin
    if step in ("recreate", "close"):
        _run(gateway, fork)
        if step == "recreate":
            fork.move_main({"README.md": b"moved\n"}, "main moves")
        else:
            rewritten = gh.branch_files(BRANCH)
            fork.move_main(
                {p: d for p, d in rewritten.items() if gh.branch_files("main").get(p) != d},
                "migrated by hand",
            )
    before = len(gh.requests)
    said: list[str] = []
    dry = DryRunGateway(gateway, said.append)
    planned = _run(dry, fork)
    assert all(r.method == "GET" for r in gh.requests[before:])  # nothing written
    listed = list(dry.calls)
    before = len(gh.requests)
    done = _run(gateway, fork)
    assert _calls(gh, before) == listed
    assert planned.action is done.action and planned.action.value == step  # type: ignore[attr-defined]
    assert len(said) == len(listed) and all("read" in s or "not sent" in s for s in said)


def test_the_dry_run_answers_writes_with_stand_in_values(
    gateway: PyGithubGateway, fork: Fork
) -> None:
    dry = DryRunGateway(gateway, lambda line: None)
    result = _run(dry, fork)
    assert result.commit == DRY_SHA and result.state is State.OPENED  # type: ignore[attr-defined]


def test_a_push_between_the_decision_and_the_update_is_not_overwritten(
    github_standin: GitHubStandIn, gateway: PyGithubGateway, fork: Fork
) -> None:
    gh = github_standin
    _run(gateway, fork)
    fork.move_main({"README.md": b"moved\n"}, "main moves")
    pushed: list[str] = []
    # Someone pushes right after the run wrote its new commit, before it moves the branch.
    gh.before_next(
        "POST",
        r"/git/commits$",
        lambda: pushed.append(gh.commit_on_branch(BRANCH, {"x.py": b"mine\n"}, "mine")),
    )
    with pytest.raises(CampaignError, match="moved while the campaign ran"):
        _run(gateway, fork)
    assert gh.repos[REPO].refs[f"heads/{BRANCH}"] == pushed[0]
    assert gh.requests_to("PATCH", r"/git/refs/") == []
    # The next run sees the person's commit, and stops.
    assert _run(gateway, fork).action is Action.STOP  # type: ignore[attr-defined]


def test_a_run_that_stops_before_moving_the_branch_is_finished_by_the_next(
    github_standin: GitHubStandIn, gateway: PyGithubGateway, fork: Fork
) -> None:
    gh = github_standin
    first = _run(gateway, fork)
    fork.move_main({"README.md": b"moved\n"}, "main moves")
    gh.fail_next("PATCH", r"/git/refs/heads/", 422, message="Protected branch")
    with pytest.raises(CampaignError, match="protected"):
        _run(gateway, fork)
    # The description names the new commit, the branch still holds the first one: the
    # marker's prev says that one is the campaign's own, so it is not a person's push.
    assert gh.repos[REPO].refs[f"heads/{BRANCH}"] == first.commit  # type: ignore[attr-defined]
    again = _run(gateway, fork)
    assert again.action is Action.RECREATE and "stopped before" in again.reason  # type: ignore[attr-defined]
    assert gh.repos[REPO].refs[f"heads/{BRANCH}"] == again.commit  # type: ignore[attr-defined]
    # Then it is current: nothing more to write.
    writes = len(gh.writes())
    assert _run(gateway, fork).action is Action.REFRESH  # type: ignore[attr-defined]
    assert len(gh.writes()) == writes


def test_a_pr_github_refuses_to_open_leaves_no_branch_behind(
    github_standin: GitHubStandIn, gateway: PyGithubGateway, fork: Fork
) -> None:
    gh = github_standin
    message = "GitHub Actions is not permitted to create or approve pull requests."
    gh.fail_next("POST", r"/pulls$", 403, message=message)
    with pytest.raises(CampaignError, match="allow GitHub Actions to create pull requests"):
        _run(gateway, fork)
    assert f"heads/{BRANCH}" not in gh.repos[REPO].refs
    # Control: once GitHub allows it, the next run opens the PR.
    assert _run(gateway, fork).action is Action.OPEN  # type: ignore[attr-defined]


def test_the_proof_command_names_the_tier_and_matrices() -> None:
    sha = "a" * 40
    assert proof_command(SETTINGS, sha) == f"/qnn test auto --sim --compare base --sha {sha}"
    phones = CampaignSettings(BOT_LOGIN, SETTINGS.repo_url, tier="phones", matrices=("m1", "m2"))
    assert proof_command(phones, sha) == f"/qnn test m1 m2 --sha {sha}"


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"branch": "../x"}, "branch"),
        ({"branch": "a b"}, "branch"),
        ({"tier": "moon"}, "tier"),
        ({"matrices": ("Bad!",)}, "malformed"),
    ],
)
def test_settings_refuse_what_the_workflow_could_not_mean(
    kw: dict[str, object], match: str
) -> None:
    with pytest.raises(CampaignError, match=match):
        CampaignSettings(BOT_LOGIN, SETTINGS.repo_url, **kw)  # type: ignore[arg-type]
