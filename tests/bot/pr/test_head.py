"""pr/head.py: the device job's check that the PR head is still the pinned one."""

from __future__ import annotations

from qnn_migrate_tests.bot.pr.support import CONV_FILE, HEAD, send
from qnn_migrate_tests.github_standin.fixtures import BOT_LOGIN
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot.github.client import PyGithubGateway
from qnn_migrate.bot.pr.context import BotContext
from qnn_migrate.bot.pr.head import check_head
from qnn_migrate.bot.pr.state import Phase, find_results_comment


def test_run_refuses_when_the_head_moved_before_it_started(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    gh.add_pull(
        9, author="outsider", head_sha=HEAD, head_repo="outsider/executorch", files=[CONV_FILE]
    )
    _, cid = send(gh, gateway, ctx, f"/qnn test canonicalize_conv --sha {HEAD}", number=9)
    ok = check_head(
        gateway,
        pr=9,
        sha=HEAD,
        comment_id=cid,
        catalog=ctx.catalog,
        bot_login=BOT_LOGIN,
        links=ctx.links,
    )
    assert ok.ok
    gh.push(9, "b" * 40)
    moved = check_head(
        gateway,
        pr=9,
        sha=HEAD,
        comment_id=cid,
        catalog=ctx.catalog,
        bot_login=BOT_LOGIN,
        links=ctx.links,
    )
    assert not moved.ok and moved.head == "b" * 40
    results = find_results_comment(gateway.comments(9), BOT_LOGIN)
    assert results is not None and results[1] is not None
    assert results[1].phase is Phase.REFUSED and "refused to start" in results[0].body
    assert gh.statuses(HEAD)[-1]["state"] == "error"
