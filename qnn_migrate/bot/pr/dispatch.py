"""``issue_comment`` event -> parse, claim, then the verb's handler (pure over a gateway).

The order of checks is the security argument, so it is spelled out here:

1. Only ``created`` comments, on an **open pull request**, of this repository, by a
   person (not this bot, not any ``[bot]``/``Bot`` account). Otherwise: nothing, no call.
2. The body is parsed offline against the verbs' table; no ``/qnn`` line means nothing
   happens.
3. Claim the comment with the bot's 👀 reaction. GitHub answers 201 when the reaction is
   new and 200 when this login already left it, atomically on its side: a redelivered
   or re-run event gets 200 and stops here, so one comment dispatches at most once.
   A GitHub API failure after the claim and before anything was started (the device
   workflow dispatched, a run cancelled: the handler sets ``Turn.started``) releases the
   claim (the 👀 is taken back) and says so on the PR, so a re-run of the job handles the
   command instead of calling it a duplicate; past that point the claim stays, as a re-run
   would start the work twice.
4. A malformed command gets 😕 and a reply naming the problem.
5. Everything else is the verb's (``pr/verbs/``): ``help`` answers anyone; ``test``,
   ``retry`` and ``cancel`` check who may start runs and pin the head first (``runs``);
   ``migrate`` has its own authorization (``migrate``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from qnn_migrate.bot.github.gateway import GatewayError, GitHubGateway
from qnn_migrate.bot.pr.commands import parse
from qnn_migrate.bot.pr.context import BotContext, Outcome, Turn
from qnn_migrate.bot.pr.grammar import Command, CommandError
from qnn_migrate.bot.pr.verbs import table_of

COMMAND_ERROR = "😕 {error}\n\nSee `/qnn help` for the commands, or try one offline with `qnn-migrate bot parse`."
INTERRUPTED = (
    "⚠️ GitHub's API failed while I handled this command: {error}. Nothing was started. {then}"
)
INTERRUPTED_RELEASED = (
    "I took my 👀 back, so re-running the failed job of this workflow run handles the "
    "command again; or post it again."
)
INTERRUPTED_KEPT = (
    "My 👀 could not be taken back, so a re-run would skip this comment: post the command "
    "again in a new comment."
)


def _is_bot(user: Mapping[str, Any], bot_login: str) -> bool:
    login = str(user.get("login", ""))
    return login == bot_login or user.get("type") == "Bot" or login.endswith("[bot]")


def handle_comment_event(event: Mapping[str, Any], gw: GitHubGateway, ctx: BotContext) -> Outcome:
    """Act on one ``issue_comment`` webhook payload; see the module docstring for the order."""
    if event.get("action") != "created":
        return Outcome("ignored", "only newly created comments are read")
    issue = event.get("issue") or {}
    comment = event.get("comment") or {}
    repository = (event.get("repository") or {}).get("full_name")
    if "pull_request" not in issue:
        return Outcome("ignored", "not a pull request")
    if issue.get("state") != "open":
        return Outcome("ignored", "the pull request is not open")
    if repository != gw.repo:
        return Outcome("ignored", f"event for {repository}, not {gw.repo}")
    user = comment.get("user") or {}
    if _is_bot(user, ctx.bot_login):
        return Outcome("ignored", "comment by a bot")
    verbs = table_of(ctx)
    error: CommandError | None = None
    command: Command | None = None
    try:
        command = parse(str(comment.get("body") or ""), ctx.catalog, verbs)
    except CommandError as exc:
        error = exc
    if command is None and error is None:
        return Outcome("ignored", "no /qnn command")

    comment_id = int(comment["id"])
    if not gw.add_reaction(comment_id, "eyes"):
        return Outcome("duplicate", f"comment {comment_id} was already handled")
    login = str(user.get("login", ""))
    turn = Turn(gw, ctx, verbs, int(issue["number"]), comment_id, login)
    try:
        if command is None:
            return turn.refuse("rejected", COMMAND_ERROR.format(error=error))
        return verbs[command.verb].handle(turn, command)
    except GatewayError as exc:
        if turn.started:
            raise
        return _release(turn, exc)


def _release(turn: Turn, exc: GatewayError) -> Outcome:
    """Take the claim back after a failure that started nothing, and say so if GitHub lets us."""
    try:
        turn.gw.remove_reaction(turn.comment_id, "eyes")
        then = INTERRUPTED_RELEASED
    except GatewayError:
        then = INTERRUPTED_KEPT
    text = INTERRUPTED.format(error=str(exc)[:300], then=then)
    with contextlib.suppress(GatewayError):  # still failing: the job log (outcome) says it
        turn.reply(text)
    return Outcome("interrupted", f"{exc}; {then}")
