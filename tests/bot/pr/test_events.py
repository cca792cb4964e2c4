"""pr/events.py: a push to the PR, through the real PyGithub gateway to the GitHub stand-in."""

from __future__ import annotations

from qnn_migrate_tests.bot.pr.support import HEAD, bot_comments, send
from qnn_migrate_tests.github_standin.fixtures import REPO
from qnn_migrate_tests.github_standin.payloads import pull_request_event
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot.github.client import PyGithubGateway
from qnn_migrate.bot.pr.context import BotContext
from qnn_migrate.bot.pr.events import handle_pull_request_event


def test_push_cancels_a_pending_run(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    send(gh, gateway, ctx, "/qnn test canonicalize_conv")
    same = handle_pull_request_event(
        pull_request_event(repo=REPO, number=7, head_sha=HEAD), gateway, ctx
    )
    assert same.action == "ignored"
    gh.push(7, "c" * 40)
    moved = handle_pull_request_event(
        pull_request_event(repo=REPO, number=7, head_sha="c" * 40), gateway, ctx
    )
    assert moved.action == "cancelled" and gh.runs()[0].conclusion == "cancelled"
    assert "cancelled" in bot_comments(gh)[0] and "c" * 40 in bot_comments(gh)[0]
