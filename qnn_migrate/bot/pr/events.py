"""``pull_request`` events that keep the results comment honest (pure over a gateway).

A push to the PR (``synchronize``) or closing it makes a run still pending on the old
head stale: the run is cancelled and the comment says why (Prow aborts on push too). It
only ever touches the bot's own results comment, found by marker and login.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from qnn_migrate.bot.github.gateway import GitHubGateway, IssueComment
from qnn_migrate.bot.pr import render
from qnn_migrate.bot.pr.context import BotContext, Outcome
from qnn_migrate.bot.pr.state import Phase, RunState, find_results_comment
from qnn_migrate.bot.pr.verbs import table_of

SUPERSEDED = (
    "The PR head moved to `{head}` while this run was pending on `{sha}`, so the run was "
    "cancelled. Comment `/qnn retry` to test the new head."
)
PR_CLOSED = "The PR was closed while this run was pending, so the run was cancelled."


def _results(
    gw: GitHubGateway, pr: int, ctx: BotContext
) -> tuple[IssueComment | None, RunState | None]:
    found = find_results_comment(gw.comments(pr), ctx.bot_login)
    return found if found is not None else (None, None)


def handle_pull_request_event(
    event: Mapping[str, Any], gw: GitHubGateway, ctx: BotContext
) -> Outcome:
    action = event.get("action")
    if action not in ("synchronize", "closed"):
        return Outcome("ignored", f"pull_request {action} needs nothing")
    if (event.get("repository") or {}).get("full_name") != gw.repo:
        return Outcome("ignored", "event for another repository")
    pull = event.get("pull_request") or {}
    number = int(event.get("number") or pull.get("number") or 0)
    head = str((pull.get("head") or {}).get("sha", ""))
    comment, state = _results(gw, number, ctx)
    if comment is None or state is None or state.phase is not Phase.PENDING:
        return Outcome("ignored", "no pending run on this PR")
    if action == "synchronize" and head == state.sha:
        return Outcome("ignored", "the pending run is for the current head")
    if state.run_id is not None:
        gw.cancel_run(state.run_id)
    note = PR_CLOSED if action == "closed" else SUPERSEDED.format(head=head, sha=state.sha)
    closed = state.with_phase(Phase.CANCELLED, note)
    shown = table_of(ctx).describe(state.command)
    gw.edit_comment(
        comment.id, render.render_closed(closed, ctx.links, "cancelled", note, command_text=shown)
    )
    gw.set_status(
        state.sha,
        "error",
        ctx.catalog.policy.status_context,
        "cancelled: the PR head moved" if action == "synchronize" else "cancelled: PR closed",
        state.run_url,
    )
    return Outcome("cancelled", note, sha=state.sha)
