"""``/qnn help`` (and a bare ``/qnn``): the commands, from the table; anyone may ask."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.pr.context import Outcome, Turn, Verb, VerbTable
from qnn_migrate.bot.pr.grammar import no_arguments

NAME = "help"
HEAD = (
    "**QNN device tests bot.** Commands (one per comment, on a line of its own):\n\n"
    "| command | what it does |\n|---|---|\n"
)


@dataclass(frozen=True)
class HelpCommand:
    """``/qnn help``."""

    line: int = field(default=0, compare=False)

    @property
    def verb(self) -> str:
        return NAME

    def canonical(self) -> str:
        return f"/qnn {NAME}"

    def to_dict(self) -> dict[str, Any]:
        return {"action": NAME, "line": self.line}


def parse(words: Sequence[str], catalog: Catalog, line: int) -> HelpCommand:
    no_arguments(NAME, words, line)
    return HelpCommand(line)


def help_text(catalog: Catalog, verbs: VerbTable) -> str:
    """A row per verb of the table, each verb's notes, then what holds for all of them."""
    rows = "".join(f"| {v.usage} | {v.summary} |\n" for v in verbs)
    notes = [note for v in verbs for note in v.notes(catalog)]
    notes += [
        "Add `--sha <commit>` (the full 40-digit SHA) to name the commit you reviewed; it is\n"
        "  required when the PR's author cannot start device runs.",
        "Device runs may be started by collaborators with "
        f"{', '.join(catalog.policy.run_roles)} permission.",
        "Try a command offline: `echo '/qnn test auto' | qnn-migrate bot parse`.",
    ]
    return HEAD + rows + "\n" + "".join(f"- {note}\n" for note in notes)


def handle(turn: Turn, command: HelpCommand) -> Outcome:
    turn.reply(help_text(turn.ctx.catalog, turn.verbs))
    return Outcome("help", "help sent")


VERB = Verb(NAME, parse, handle, usage="`/qnn help`", summary="this text")
