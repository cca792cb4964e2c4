"""``/qnn cancel``: cancel the device run in progress on this PR (no arguments).

Who may start runs may stop them (``runs.admit``); the run is the one the results comment
tracks. Once GitHub has cancelled it, the claim stays: a re-run of the job must not find
the run gone and say there was nothing to cancel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.pr import render, runs
from qnn_migrate.bot.pr.context import Outcome, Turn, Verb
from qnn_migrate.bot.pr.grammar import no_arguments
from qnn_migrate.bot.pr.state import Phase

NAME = "cancel"
NOTHING_TO_CANCEL = "😕 No device run is in progress on this PR."
CANCELLED = "🛑 Cancelled the device run at `{sha}`{run}, as @{login} asked."


@dataclass(frozen=True)
class CancelCommand:
    """``/qnn cancel``."""

    line: int = field(default=0, compare=False)

    @property
    def verb(self) -> str:
        return NAME

    def canonical(self) -> str:
        return f"/qnn {NAME}"

    def to_dict(self) -> dict[str, Any]:
        return {"action": NAME, "line": self.line}


def parse(words: Sequence[str], catalog: Catalog, line: int) -> CancelCommand:
    no_arguments(NAME, words, line)
    return CancelCommand(line)


def handle(turn: Turn, command: CancelCommand) -> Outcome:
    """Cancel the pending run, close the results comment and the status as cancelled."""
    admitted = runs.admit(turn, command.canonical())
    if isinstance(admitted, Outcome):
        return admitted
    state = admitted.prior
    if admitted.previous is None or state is None or state.phase is not Phase.PENDING:
        return turn.refuse("refused", NOTHING_TO_CANCEL)
    gw, login = turn.gw, turn.login
    if state.run_id is not None and not gw.cancel_run(state.run_id):
        return turn.refuse("refused", NOTHING_TO_CANCEL)
    turn.started = True
    note = f"Cancelled by @{login}."
    closed = state.with_phase(Phase.CANCELLED, note)
    shown = turn.verbs.describe(state.command)
    body = render.render_closed(closed, turn.ctx.links, "cancelled", note, command_text=shown)
    gw.edit_comment(admitted.previous[0].id, body)
    gw.set_status(
        state.sha,
        "error",
        turn.ctx.catalog.policy.status_context,
        f"cancelled by @{login}"[:140],
        state.run_url,
    )
    turn.react("rocket")
    run = f" ([run]({state.run_url}))" if state.run_url else ""
    turn.reply(CANCELLED.format(sha=state.sha, run=run, login=login))
    return Outcome("cancelled", f"run {state.run_id} cancelled", sha=state.sha)


VERB = Verb(
    NAME,
    parse,
    handle,
    usage="`/qnn cancel`",
    summary="cancel the device run in progress for this PR",
)
