"""Webhook event name -> its handler: the one place the PR side's events are listed.

As bedevere's ``__main__`` only combines the routers of its feature modules, this only
combines handlers: a ``/qnn`` comment goes to ``dispatch`` (and from there to its verb), a
push or a close to ``events``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from qnn_migrate.bot.github.gateway import GitHubGateway
from qnn_migrate.bot.pr.context import BotContext, Outcome
from qnn_migrate.bot.pr.dispatch import handle_comment_event
from qnn_migrate.bot.pr.events import handle_pull_request_event

Handler = Callable[[Mapping[str, Any], GitHubGateway, BotContext], Outcome]

EVENTS: Mapping[str, Handler] = {
    "issue_comment": handle_comment_event,
    "pull_request": handle_pull_request_event,
    "pull_request_target": handle_pull_request_event,
}
