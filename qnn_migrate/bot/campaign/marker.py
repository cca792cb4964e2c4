"""What the campaign remembers about its PR, kept in the PR's own body (pure).

Runners keep nothing between runs, so the body carries a hidden line with the base the
branch was built on, the commit the campaign last wrote to it, and a digest of the files
that commit changed. It is read back only from a PR opened by the campaign's own login
(anyone with write access can edit a body or paste the line), and every field is checked.

Three more things live in the body, each behind its own hidden tag:

* the proof section, which ``prove`` fills in with the results comment's link and a later
  run keeps as it is when nothing changed;
* the notice that someone pushed to the branch (written once);
* a task-list box a person ticks to ask the next run to recreate the branch anyway
  (Renovate's "rebase/retry" box).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MARKER_RE = re.compile(
    r"^<!-- qnn-campaign base=(?P<base>[0-9a-f]{40}) head=(?P<head>[0-9a-f]{40}) "
    r"changes=(?P<changes>[0-9a-f]{16})(?: prev=(?P<prev>[0-9a-f]{40}))?(?P<closed> closed)? -->$",
    re.M,
)
PROOF_START = "<!-- qnn-campaign:proof -->"
PROOF_END = "<!-- /qnn-campaign:proof -->"
STOPPED = "<!-- qnn-campaign:stopped -->"
REBASE_TAG = "<!-- qnn-campaign:rebase -->"
# The box as GitHub saves it once ticked: "- [x]" (or "[X]"), at the start of a line.
REBASE_TICKED_RE = re.compile(r"^- \[[xX]\] " + re.escape(REBASE_TAG), re.M)


@dataclass(frozen=True)
class Marker:
    """The campaign's memory of its PR: ``base`` it built on, ``head`` it last wrote, the
    digest of the ``changes`` that commit made; ``closed`` when the campaign closed it.

    ``prev``: the branch's tip before ``head`` replaced it. A run writes the marker first
    and moves the branch after, so a run that stopped between the two leaves the branch at
    ``prev``: the next run recognises its own commit there and finishes the job, instead of
    taking it for a person's."""

    base: str
    head: str
    changes: str
    closed: bool = False
    prev: str = ""

    def line(self) -> str:
        prev = f" prev={self.prev}" if self.prev else ""
        closed = " closed" if self.closed else ""
        return (
            f"<!-- qnn-campaign base={self.base} head={self.head} "
            f"changes={self.changes}{prev}{closed} -->"
        )

    @property
    def ours(self) -> frozenset[str]:
        """The branch tips the campaign itself may have left."""
        return frozenset(filter(None, (self.head, self.prev)))


def read_marker(body: str) -> Marker | None:
    """The marker of a body, or None when it has none (or one that is malformed)."""
    found = MARKER_RE.search(body)
    if found is None:
        return None
    return Marker(
        found["base"], found["head"], found["changes"], bool(found["closed"]), found["prev"] or ""
    )


def rebase_requested(body: str) -> bool:
    """Whether a person ticked the box that asks the next run to recreate the branch."""
    return REBASE_TICKED_RE.search(body) is not None


def stop_said(body: str) -> bool:
    return STOPPED in body


def proof_section(body: str) -> str | None:
    """The proof section of a body, its tags included; None when it has none."""
    start = body.find(PROOF_START)
    end = body.find(PROOF_END, start + 1) if start >= 0 else -1
    if start < 0 or end < 0:
        return None
    return body[start : end + len(PROOF_END)]


def with_proof(body: str, section: str) -> str:
    """``body`` with its proof section replaced by ``section`` (tags included)."""
    old = proof_section(body)
    return body if old is None else body.replace(old, section, 1)
