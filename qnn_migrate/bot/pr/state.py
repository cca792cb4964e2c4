"""The bot's memory of the last device run on a PR, kept inside its own results comment.

Actions runners are stateless, so the results comment carries a hidden JSON line. It is
read back only from a comment that has the marker **and** was written by the bot's own
login (anyone can paste the marker), and every field is validated again on the way in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from qnn_migrate.bot.github.gateway import IssueComment
from qnn_migrate.bot.model import SHA_RE, TEST_ID_RE

MARKER = "<!-- qnn-bot:results -->"
# Failures remembered for `/qnn retry failed`; more would crowd the comment's size limit.
MAX_FAILED = 200
STATE_RE = re.compile(r"^<!-- qnn-bot:state (\{.*\}) -->$", re.M)


class Phase(StrEnum):
    """Where the last run on the PR stands."""

    PENDING = "pending"  # dispatched, no report yet
    REPORTED = "reported"
    CANCELLED = "cancelled"
    REFUSED = "refused"  # the run refused to start: the head moved


class StateError(ValueError):
    """The hidden state in the results comment is missing or malformed."""


@dataclass(frozen=True)
class RunState:
    """The last dispatched command on a PR, and what came of it."""

    phase: Phase
    pr: int
    sha: str
    command: Mapping[str, Any]  # commands.Command.to_dict(), re-validated when used
    requested_by: str
    comment_id: int  # the /qnn comment that started the run: the run's identity
    run_id: int | None = None
    run_url: str | None = None
    expected: int = 0
    failed: tuple[tuple[str, str, str], ...] = ()  # (soc, matrix, test id), at most MAX_FAILED
    failed_total: int = 0  # all failures of the last report, even past MAX_FAILED
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "v": 1,
            "phase": self.phase.value,
            "pr": self.pr,
            "sha": self.sha,
            "command": dict(self.command),
            "requested_by": self.requested_by,
            "comment_id": self.comment_id,
            "run_id": self.run_id,
            "run_url": self.run_url,
            "expected": self.expected,
            "failed": [list(f) for f in self.failed[:MAX_FAILED]],
            "failed_total": max(self.failed_total, len(self.failed)),
            "note": self.note,
        }

    def line(self) -> str:
        text = json.dumps(self.to_dict(), separators=(",", ":"), sort_keys=True)
        # JSON of validated names cannot hold "-->", but never let it end the comment early.
        safe = text.replace("--", "-\\u002d")
        return f"<!-- qnn-bot:state {safe} -->"

    def with_phase(self, phase: Phase, note: str = "") -> RunState:
        return replace(self, phase=phase, note=note)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> RunState:
        try:
            if doc.get("v") != 1:
                raise StateError("unknown state version")
            sha = str(doc["sha"])
            if not SHA_RE.match(sha):
                raise StateError("sha is malformed")
            failed = tuple(
                (str(s), str(m), str(t)) for s, m, t in doc.get("failed", []) if TEST_ID_RE.match(t)
            )
            run_id = doc.get("run_id")
            return cls(
                phase=Phase(doc["phase"]),
                pr=int(doc["pr"]),
                sha=sha,
                command=dict(doc["command"]),
                requested_by=str(doc["requested_by"]),
                comment_id=int(doc["comment_id"]),
                run_id=None if run_id is None else int(run_id),
                run_url=doc.get("run_url") if isinstance(doc.get("run_url"), str) else None,
                expected=int(doc.get("expected", 0)),
                failed=failed,
                failed_total=int(doc.get("failed_total", len(failed))),
                note=str(doc.get("note", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise StateError(f"results comment state is malformed: {exc}") from exc


def find_results_comment(
    comments: Sequence[IssueComment], bot_login: str
) -> tuple[IssueComment, RunState | None] | None:
    """The bot's results comment (marker and author), and its state if readable.

    If several exist (a race, or a renamed bot), the newest one is kept current.
    """
    mine = [c for c in comments if c.author == bot_login and MARKER in c.body]
    if not mine:
        return None
    comment = mine[-1]
    match = STATE_RE.search(comment.body)
    if not match:
        return comment, None
    try:
        return comment, RunState.from_dict(json.loads(match.group(1)))
    except (StateError, json.JSONDecodeError):
        return comment, None
