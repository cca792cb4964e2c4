"""The verbs' table: a toy verb added by one line reaches the grammar, the dispatch and the
help; the table refuses what would make a verb ambiguous."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from qnn_migrate_tests.bot.pr import toy_verb
from qnn_migrate_tests.bot.pr.support import bot_comments, send
from qnn_migrate_tests.bot.support import ROOT
from qnn_migrate_tests.github_standin.fixtures import BOT_LOGIN
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.github.client import PyGithubGateway
from qnn_migrate.bot.pr.commands import parse
from qnn_migrate.bot.pr.context import BotContext, Outcome, VerbTable
from qnn_migrate.bot.pr.grammar import CommandError
from qnn_migrate.bot.pr.verbs import VERBS
from qnn_migrate.bot.pr.verbs.help import help_text

# The production table and one line: the whole of adding a verb outside its own module.
WITH_PING = VerbTable((*VERBS, toy_verb.VERB))


def test_a_toy_verb_goes_through_the_grammar_the_dispatch_and_the_help(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext, catalog: Catalog
) -> None:
    # The grammar: its words, its errors, its canonical line.
    command = parse("LGTM\n/qnn ping   hello", catalog, WITH_PING)
    assert command == toy_verb.PingCommand("hello") and command.canonical() == "/qnn ping hello"
    with pytest.raises(CommandError, match="takes one word"):
        parse("/qnn ping a b", catalog, WITH_PING)
    # The dispatch: claimed, handled by the toy, answered.
    with_ping = BotContext(ctx.catalog, ctx.bot_login, ctx.links, verbs=WITH_PING)
    outcome, cid = send(gh, gateway, with_ping, "/qnn ping hello")
    assert isinstance(outcome, Outcome) and outcome.action == "pong"
    assert bot_comments(gh)[-1] == "🏓 pong hello, @maint."
    assert gh.reactions(cid) == {"eyes": [BOT_LOGIN]}
    # ... through the shared admission: a reader may not.
    outcome, _ = send(gh, gateway, with_ping, "/qnn ping", login="reader")
    assert isinstance(outcome, Outcome) and outcome.action == "refused"
    # The help, asked through the dispatch, lists it.
    send(gh, gateway, with_ping, "/qnn help", login="reader")
    assert "| `/qnn ping [WORD]` | answer pong |" in bot_comments(gh)[-1]
    # A typo of it is answered with it.
    with pytest.raises(CommandError, match="did you mean `ping`"):
        parse("/qnn pong", catalog, WITH_PING)


def test_control_without_the_table_line_the_toy_verb_does_not_exist(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext, catalog: Catalog
) -> None:
    with pytest.raises(CommandError, match="unknown command `ping`"):
        parse("/qnn ping hello", catalog)
    outcome, _ = send(gh, gateway, ctx, "/qnn ping hello")
    assert isinstance(outcome, Outcome) and outcome.action == "rejected"
    assert "unknown command `ping`" in bot_comments(gh)[-1]
    assert "/qnn ping" not in help_text(catalog, VERBS)


def test_the_table_is_what_the_help_lists_in_order(catalog: Catalog) -> None:
    text = help_text(catalog, VERBS)
    rows = [line.split(" | ")[0] for line in text.splitlines() if line.startswith("| `/qnn")]
    assert rows == [f"| {v.usage}" for v in VERBS]
    assert [v.name for v in VERBS] == ["test", "retry", "migrate", "cancel", "help"]


def test_a_table_refuses_a_verb_twice_or_a_missing_default() -> None:
    with pytest.raises(ValueError, match="each once"):
        VerbTable((*VERBS, toy_verb.VERB, toy_verb.VERB))
    with pytest.raises(ValueError, match="the default 'help'"):
        VerbTable((toy_verb.VERB,))
    VerbTable((toy_verb.VERB,), default="ping")  # control: a table of one, its own default


def test_a_stored_command_reads_back_only_for_a_verb_that_stores_one(catalog: Catalog) -> None:
    stored = {"action": "test", "matrices": ["canonicalize_conv"], "socs": ["SM8650"]}
    assert VERBS.describe(stored).startswith("/qnn test canonicalize_conv --soc SM8650")
    assert VERBS.load(stored | {"backend": "htp", "seed": 1}, catalog).verb == "test"
    for other in ({"action": "cancel"}, {"action": "nope"}, {}, {"action": "test", "seed": "x"}):
        assert VERBS.describe(other) == "/qnn"
        with pytest.raises(CommandError, match="stored command is malformed"):
            VERBS.load(other, catalog)


def test_contributing_shows_the_toy_verbs_code() -> None:
    """The example in CONTRIBUTING.md is the module this test file runs (below its docstring)."""
    doc = (ROOT / "CONTRIBUTING.md").read_text("utf-8")
    shown = re.search(r"```python\n# qnn_migrate/bot/pr/verbs/ping\.py\n(.*?)```", doc, re.S)
    assert shown is not None
    code = Path(toy_verb.__file__).read_text("utf-8").split('"""', 2)[2]
    assert "def handle(" in code and "VERB = Verb(" in code  # control: not two empty splits
    assert code == shown.group(1).split('"""', 2)[2]
    assert "        ping.VERB,  # the new verb\n" in doc
