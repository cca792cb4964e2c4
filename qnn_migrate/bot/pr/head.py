"""Before a device run starts: is the PR head still the commit that was approved? (pure over a gateway)

The device workflow calls this (``qnn-migrate bot check-head``) on a GitHub-hosted runner
before any job touches a phone. If the head moved, the run refuses: the results comment
and the commit status say so, and how to approve the new head. Fork PRs follow the same
rule: only the pinned SHA is ever checked out, and the device job verifies it again with
``git rev-parse HEAD``.
"""

from __future__ import annotations

from dataclasses import dataclass

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.github.gateway import GitHubGateway
from qnn_migrate.bot.pr import render
from qnn_migrate.bot.pr.state import Phase, find_results_comment
from qnn_migrate.bot.pr.verbs import VERBS

MOVED = (
    "The PR head moved from `{sha}` to `{head}` after the command was accepted, so the run "
    "refused to start: only the commit that was approved may run on the phones. Review the "
    "new commits, then comment `/qnn retry` (add `--sha {head}` if the author cannot start "
    "runs)."
)
CLOSED = "PR #{pr} is {state}, so the run refused to start."


@dataclass(frozen=True)
class HeadCheck:
    """The verdict of the check, and the message shown to people."""

    ok: bool
    head: str | None
    message: str


def check_head(
    gw: GitHubGateway,
    *,
    pr: int,
    sha: str,
    comment_id: int | None,
    catalog: Catalog,
    bot_login: str,
    links: render.Links,
) -> HeadCheck:
    """Compare the PR's head with the pinned ``sha``; on a mismatch, say so on the PR."""
    pull = gw.pull(pr)
    if pull is not None and pull.state == "open" and pull.head_sha == sha:
        return HeadCheck(True, sha, f"PR #{pr} head is still {sha}")
    if pull is None or pull.state != "open":
        message = CLOSED.format(pr=pr, state="gone" if pull is None else pull.state)
        head = None if pull is None else pull.head_sha
    else:
        message = MOVED.format(sha=sha, head=pull.head_sha)
        head = pull.head_sha
    found = find_results_comment(gw.comments(pr), bot_login)
    comment, state = found if found is not None else (None, None)
    if (
        comment is not None
        and state is not None
        and state.sha == sha
        and (comment_id is None or state.comment_id == comment_id)
    ):
        closed = state.with_phase(Phase.REFUSED, message)
        shown = VERBS.describe(state.command)
        body = render.render_closed(closed, links, "refused to start", message, command_text=shown)
        gw.edit_comment(comment.id, body)
    gw.set_status(
        sha,
        "error",
        catalog.policy.status_context,
        "not run: the PR head moved after approval" if head else "not run: the PR is closed",
        links.run_url,
    )
    return HeadCheck(False, head, message)
