"""The ``/qnn`` verbs, one module each, listed once.

Each module holds its command type, its parser, its handler and its replies, and ends in
one ``VERB``; this table is all the grammar (``commands``), the dispatch and the help read.
A new verb is a new module here and one line below (CONTRIBUTING.md shows it).
"""

from __future__ import annotations

from qnn_migrate.bot.pr.context import BotContext, VerbTable
from qnn_migrate.bot.pr.verbs import cancel, help, migrate, retry, test

VERBS = VerbTable(
    (
        test.VERB,
        retry.VERB,
        migrate.VERB,
        cancel.VERB,
        help.VERB,
    )
)


def table_of(ctx: BotContext) -> VerbTable:
    """The context's verbs, or the bot's own."""
    return ctx.verbs or VERBS
