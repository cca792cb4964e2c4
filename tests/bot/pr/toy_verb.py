"""``/qnn ping [WORD]``: a toy verb, only for the tests; CONTRIBUTING.md shows this code.

The whole verb is this module and one line in a table: its command, its parser, its
handler and its help row. Whoever may start device runs may ping; the bot answers pong.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.pr import runs
from qnn_migrate.bot.pr.context import Outcome, Turn, Verb
from qnn_migrate.bot.pr.grammar import CommandError, options, quote_untrusted

NAME = "ping"


@dataclass(frozen=True)
class PingCommand:
    """``/qnn ping [WORD]``."""

    word: str = ""
    line: int = field(default=0, compare=False)

    @property
    def verb(self) -> str:
        return NAME

    def canonical(self) -> str:
        return " ".join(["/qnn", NAME, *([self.word] if self.word else [])])

    def to_dict(self) -> dict[str, Any]:
        return {"action": NAME, "word": self.word, "line": self.line}


def parse(words: Sequence[str], catalog: Catalog, line: int) -> PingCommand:
    positional, _ = options(words, line, ())
    if len(positional) > 1:
        raise CommandError(
            f"`/qnn ping` takes one word, got {quote_untrusted(' '.join(positional))}", line
        )
    return PingCommand(positional[0] if positional else "", line)


def handle(turn: Turn, command: PingCommand) -> Outcome:
    admitted = runs.admit(turn, command.canonical())  # who may start runs, on an open PR
    if isinstance(admitted, Outcome):
        return admitted
    turn.reply(f"🏓 pong{f' {command.word}' if command.word else ''}, @{turn.login}.")
    return Outcome("pong", f"pong to @{turn.login}")


VERB = Verb(NAME, parse, handle, usage="`/qnn ping [WORD]`", summary="answer pong")
