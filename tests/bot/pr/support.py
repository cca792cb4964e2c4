"""Helpers shared by the PR-side tests: a comment sent through ``handle_comment_event``."""

from __future__ import annotations

from github_standin.fixtures import BOT_LOGIN, REPO
from github_standin.payloads import comment_event
from github_standin.server import GitHubStandIn

from qnn_migrate.bot.github.client import PyGithubGateway
from qnn_migrate.bot.pr.context import BotContext
from qnn_migrate.bot.pr.dispatch import handle_comment_event

HEAD = "a" * 40
CONV_FILE = "backends/qualcomm/_passes/canonicalize_conv.py"


def send(
    gh: GitHubStandIn,
    gw: PyGithubGateway,
    ctx: BotContext,
    body: str,
    login: str = "maint",
    number: int = 7,
    **kw: object,
) -> tuple[object, int]:
    comment = gh.add_comment(number, login, body)
    event = comment_event(
        repo=REPO, number=number, body=body, login=login, comment_id=comment.id, **kw
    )
    return handle_comment_event(event, gw, ctx), comment.id


def bot_comments(gh: GitHubStandIn, number: int = 7) -> list[str]:
    return [c.body for c in gh.comments(number) if c.author == BOT_LOGIN]
