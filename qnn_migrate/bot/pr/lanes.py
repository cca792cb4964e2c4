"""Which concurrency lane of the command workflow a ``/qnn`` comment waits in (pure over a gateway).

A concurrency group keeps at most one pending run unless it says ``queue: max``, and then
a newer run drops the pending one. Every comment starts a run of the command workflow, so
a group anyone can enter lets anyone drop a pending command by commenting. The ``gate``
job (outside any group) therefore sorts each comment into a lane, and the workflow gives
each lane its own per-PR group:

* ``runs``: the commenter may start device runs (the REST permission API says so);
* ``author``: the PR's own author, who may ask ``/qnn migrate`` on it;
* ``unsure``: the permission check could not be made (an API failure, no token, an
  event file that cannot be read): the commenter may well be a maintainer;
* ``others``: everyone else, whose commands the bot can only refuse or answer with help.

The first three are kept lanes: their groups say ``queue: max``, so none of their pending
commands is ever dropped, and each lane has its own group, so an author who floods their
own PR with comments only queues behind themselves. Only ``others`` may lose a pending
command to a later comment. The lane only routes: the bot authorizes again in every lane
before it does anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from qnn_migrate.bot.catalog import Policy
from qnn_migrate.bot.github.gateway import GatewayError, GitHubGateway


class Lane(StrEnum):
    """A lane of the command workflow; its value is the gate's output and part of the group."""

    RUNS = "runs"
    AUTHOR = "author"
    UNSURE = "unsure"
    OTHERS = "others"

    @property
    def kept(self) -> bool:
        """True when no later comment can drop a pending command of this lane."""
        return self is not Lane.OTHERS


@dataclass(frozen=True)
class Routed:
    """The lane of one comment and why (the why goes to the job log)."""

    lane: Lane
    why: str


def _login(user: Any) -> str | None:
    """A person's login, or None for a bot account or anything malformed."""
    if not isinstance(user, Mapping):
        return None
    login = user.get("login")
    if not isinstance(login, str) or not login or login.endswith("[bot]"):
        return None
    return login if user.get("type", "User") == "User" else None


def commenter_and_author(event: Any) -> tuple[str | None, str | None]:
    """(who wrote the comment, who opened the PR) from an ``issue_comment`` payload."""
    if not isinstance(event, Mapping):
        return None, None
    comment, issue = event.get("comment"), event.get("issue")
    commenter = _login(comment.get("user")) if isinstance(comment, Mapping) else None
    author = _login(issue.get("user")) if isinstance(issue, Mapping) else None
    return commenter, author


def route(event: Any, gw: GitHubGateway | None, policy: Policy | None) -> Routed:
    """The lane of the comment in ``event``; ``gw``/``policy`` None: they could not be made.

    Never raises: any doubt about a person who may matter sends them to a kept lane.
    """
    commenter, author = commenter_and_author(event)
    if commenter is None:
        if isinstance(event, Mapping) and isinstance(event.get("comment"), Mapping):
            return Routed(Lane.OTHERS, "the comment is not by a person (the bot ignores it)")
        return Routed(Lane.UNSURE, "the event does not name the commenter")
    fallback = (
        Routed(Lane.AUTHOR, f"{commenter} opened the pull request")
        if commenter == author
        else Routed(Lane.UNSURE, f"cannot tell whether {commenter} may start runs")
    )
    if gw is None or policy is None:
        return fallback
    try:
        role = gw.role(commenter)
    except GatewayError as exc:
        return Routed(fallback.lane, f"{fallback.why} (permission API: {exc})"[:300])
    if role in policy.run_roles:
        return Routed(Lane.RUNS, f"{commenter} has the {role} role")
    if commenter == author:
        return fallback
    return Routed(Lane.OTHERS, f"{commenter} has the {role} role and did not open the PR")
