"""``pull_request`` and ``workflow_run`` events that keep the results comment honest (pure over a gateway).

- A push to the PR (``synchronize``) or closing it makes a run still pending on the old
  head stale: the run is cancelled and the comment says why (Prow aborts on push too).
- A device workflow run that ends without its report job writing (cancelled in the UI,
  a crashed report job) would leave the comment "running" forever: it is marked with
  the run's conclusion.

Both only ever touch the bot's own results comment, found by marker and login.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from qnn_migrate.bot.github.gateway import GitHubGateway, IssueComment
from qnn_migrate.bot.pr import render
from qnn_migrate.bot.pr.dispatch import BotContext, Outcome
from qnn_migrate.bot.pr.state import Phase, RunState, find_results_comment

SUPERSEDED = (
    "The PR head moved to `{head}` while this run was pending on `{sha}`, so the run was "
    "cancelled. Comment `/qnn retry` to test the new head."
)
PR_CLOSED = "The PR was closed while this run was pending, so the run was cancelled."
ENDED = (
    "The device workflow run ended ({conclusion}) without reporting results. See the "
    "[run]({url}); comment `/qnn retry` to start again."
)


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
    gw.edit_comment(
        comment.id,
        render.render_closed(state.with_phase(Phase.CANCELLED, note), ctx.links, "cancelled", note),
    )
    gw.set_status(
        state.sha,
        "error",
        ctx.catalog.policy.status_context,
        "cancelled: the PR head moved" if action == "synchronize" else "cancelled: PR closed",
        state.run_url,
    )
    return Outcome("cancelled", note, sha=state.sha)


def handle_workflow_run_event(
    event: Mapping[str, Any], gw: GitHubGateway, ctx: BotContext, pr: int
) -> Outcome:
    """``pr`` comes from the run's inputs (the workflow passes it); the event lacks it."""
    run = event.get("workflow_run") or {}
    if event.get("action") != "completed":
        return Outcome("ignored", "only completed runs matter")
    comment, state = _results(gw, pr, ctx)
    if comment is None or state is None:
        return Outcome("ignored", "no results comment")
    if state.phase is not Phase.PENDING or state.run_id != run.get("id"):
        return Outcome("ignored", "the results comment is not waiting for this run")
    conclusion = str(run.get("conclusion") or "unknown")
    url = state.run_url or str(run.get("html_url", ""))
    note = ENDED.format(conclusion=conclusion, url=url)
    gw.edit_comment(
        comment.id,
        render.render_closed(state.with_phase(Phase.CANCELLED, note), ctx.links, "ended", note),
    )
    gw.set_status(
        state.sha, "error", ctx.catalog.policy.status_context, f"run ended: {conclusion}"[:140], url
    )
    return Outcome("cancelled", note, sha=state.sha)
