"""The organization's table: each repository's campaign PR after a run over many (pure).

Every job of the organization's matrix writes ``campaign.json`` (``run``'s result) and,
when it dispatched a proof, ``proof.json``; a job that died first writes nothing. The
summary job merges them into one markdown table for the run's job summary: one row per
repository with its PR's state (opened, updated, unchanged, merged, nothing to do,
failed), the proof, and the reason where something failed. A repository the run was
asked to cover (``expected``) with no result is a failure, never a missing row.

The files come from jobs that held other repositories' tokens, so they are read as any
file another job wrote: through the capped reader, each field checked, every text made
inert for the table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from qnn_migrate.bot.campaign.decide import State
from qnn_migrate.bot.text import escape

REPO_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
URL_RE = re.compile(r"^https://[A-Za-z0-9.-]+(:[0-9]+)?/[A-Za-z0-9_./#%-]*$")
NOTE_CHARS = 300
NO_RESULT = "no result: the job ended before the campaign reported (see its log)"


class SummaryError(ValueError):
    """A result file is not one the campaign writes; the message names the field."""


@dataclass
class Row:
    """One repository's line of the table."""

    repository: str
    state: str = State.FAILED.value
    pr: int | None = None
    url: str | None = None
    note: str = ""
    proof: str = "—"
    proof_url: str | None = None
    proof_failed: bool = False
    notes: list[str] = field(default_factory=list)


def _text(doc: Mapping[str, Any], key: str, where: str) -> str:
    value = doc.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise SummaryError(f"{where}: {key} must be a string")
    return value


def _url(value: object) -> str | None:
    return value if isinstance(value, str) and URL_RE.match(value) else None


def _number(value: object, where: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise SummaryError(f"{where}: pr must be a PR number")
    return value


def merge(docs: Sequence[tuple[str, Any]], expected: Sequence[str] = ()) -> list[Row]:
    """One row per repository from ``(where, document)`` pairs, in ``expected`` order then
    by name; SummaryError names the first document that is not a campaign result."""
    rows: dict[str, Row] = {}
    states = {s.value for s in State}
    for where, doc in docs:
        if not isinstance(doc, Mapping) or doc.get("schema") != 1:
            raise SummaryError(f"{where}: not a campaign result (schema 1)")
        repository = _text(doc, "repository", where)
        if not REPO_RE.match(repository):
            raise SummaryError(f"{where}: repository must be owner/name")
        row = rows.setdefault(repository, Row(repository, note=NO_RESULT))
        kind = doc.get("kind")
        if kind == "campaign":
            state = _text(doc, "state", where)
            if state not in states:
                raise SummaryError(f"{where}: state {state[:40]!r} is not one of {sorted(states)}")
            row.state = state
            row.note = _text(doc, "reason", where)
            row.pr = _number(doc.get("pr"), where) or row.pr
            row.url = _url(doc.get("url")) or row.url
        elif kind == "proof":
            action = _text(doc, "action", where)
            if action not in ("dispatched", "refused", "failed", "skipped"):
                raise SummaryError(f"{where}: proof action {action[:40]!r} is unknown")
            row.proof = action
            row.proof_url = _url(doc.get("results_url")) or _url(doc.get("run_url"))
            row.pr = row.pr or _number(doc.get("pr"), where)
            if action != "dispatched":
                row.proof_failed = action == "failed"
                row.notes.append(f"proof {action}: {_text(doc, 'reason', where)}")
        else:
            raise SummaryError(f"{where}: kind must be campaign or proof")
    for repository in expected:
        rows.setdefault(repository, Row(repository, note=NO_RESULT))
    order = {name: i for i, name in enumerate(expected)}
    return sorted(rows.values(), key=lambda r: (order.get(r.repository, len(order)), r.repository))


def render(rows: Sequence[Row], title: str = "qnn-migrate campaign") -> str:
    """The job summary: a count line and the table."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.state] = counts.get(row.state, 0) + 1
    said = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
    proofs = sum(1 for r in rows if r.proof_failed)
    if proofs:
        said += f"; {proofs} proof{'s' if proofs != 1 else ''} failed"
    lines = [
        f"### {title}: {len(rows)} repositor{'y' if len(rows) == 1 else 'ies'}",
        "",
        said,
        "",
        "| repository | PR | state | proof | reason / note |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        pr = f"[#{row.pr}]({row.url})" if row.pr and row.url else (f"#{row.pr}" if row.pr else "—")
        state = f"❌ {row.state}" if row.state == State.FAILED.value else row.state
        proof = f"[{row.proof}]({row.proof_url})" if row.proof_url else row.proof
        if row.proof_failed:
            proof = f"❌ {proof}"
        note = "; ".join(n for n in [row.note, *row.notes] if n)
        lines.append(
            f"| `{row.repository}` | {pr} | {state} | {proof} | {escape(note, NOTE_CHARS)} |"
        )
    return "\n".join(lines) + "\n"


def failed(rows: Sequence[Row]) -> bool:
    return any(r.state == State.FAILED.value or r.proof_failed for r in rows)
