"""Helpers shared by the PR-side tests: a comment sent through ``handle_comment_event``, and a
reported run's state and links (what the render and program tests render)."""

from __future__ import annotations

from qnn_migrate_tests.bot.support import RUN, SHA
from qnn_migrate_tests.github_standin.fixtures import BOT_LOGIN, REPO
from qnn_migrate_tests.github_standin.payloads import comment_event
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.github.client import PyGithubGateway
from qnn_migrate.bot.pr.commands import parse
from qnn_migrate.bot.pr.context import BotContext
from qnn_migrate.bot.pr.dispatch import handle_comment_event
from qnn_migrate.bot.pr.render import Links
from qnn_migrate.bot.pr.state import Phase, RunState

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


LINKS = Links("https://github.com/qnn-lab/executorch", RUN)


def reported_state(
    catalog: Catalog, body: str = "/qnn test canonicalize_conv --soc SM8650,SM8750"
) -> RunState:
    """PR 7's run of ``body`` at SHA, reported (run RUN)."""
    command = parse(body, catalog)
    assert command is not None
    return RunState(Phase.REPORTED, 7, SHA, command.to_dict(), "maint", 1000001, 4242, RUN)
