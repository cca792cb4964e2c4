"""The types every part of the PR side shares: the context, an outcome, one claimed comment
(``Turn``), and the verbs' table that the grammar, the dispatch and the help all read.

A verb lives in its own module under ``pr/verbs/`` and is one ``Verb`` value there: its
parser, its handler, its line in the help. ``pr/verbs/__init__.py`` lists them once
(``VERBS``), as bedevere's ``__main__`` only combines the routers of its feature modules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.github.gateway import DispatchedRun, GitHubGateway, IssueComment
from qnn_migrate.bot.pr.grammar import Command, CommandError, quote_untrusted, split_words, suggest
from qnn_migrate.bot.pr.plan import Plan
from qnn_migrate.bot.pr.render import Links

C = TypeVar("C", bound=Command)


@dataclass(frozen=True)
class BotContext:
    """What every handler needs besides the event and the gateway."""

    catalog: Catalog
    bot_login: str
    links: Links
    dispatch_ref: str | None = None  # None: the repository's default branch
    durations: Mapping[str, float] | None = None
    verbs: VerbTable | None = None  # None: the bot's own (``pr.verbs.VERBS``)


@dataclass(frozen=True)
class Outcome:
    """What the bot did with one event; ``action`` is stable for tests and logs."""

    # ignored | duplicate | help | rejected | refused | dispatched | cancelled | failed
    # | interrupted (a GitHub API failure before anything started; the claim released)
    # | reviewed (``/qnn migrate``), or what another verb says it did
    action: str
    reason: str
    plan: Plan | None = None
    run: DispatchedRun | None = None
    sha: str | None = None


@dataclass
class Turn:
    """One ``/qnn`` comment the bot has claimed: who asked where, and the replies to it."""

    gw: GitHubGateway
    ctx: BotContext
    verbs: VerbTable
    pr: int
    comment_id: int
    login: str
    # Set once something was started that a re-run of the job must not start again: a
    # GitHub failure after that is the job's, and the claim stays (``dispatch``).
    started: bool = False

    def reply(self, text: str) -> IssueComment:
        return self.gw.create_comment(self.pr, text)

    def react(self, content: str) -> None:
        self.gw.add_reaction(self.comment_id, content)

    def refuse(self, action: str, text: str) -> Outcome:
        """😕 and a reply saying why; the outcome's reason is the reply's first line."""
        self.react("confused")
        self.reply(text)
        return Outcome(action, text.splitlines()[0])


def _no_notes(catalog: Catalog) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True)
class Verb(Generic[C]):
    """One ``/qnn`` verb: how its words parse, what the bot does, its line in the help."""

    name: str
    # The words after the verb -> its command, or CommandError naming the problem.
    parse: Callable[[Sequence[str], Catalog, int], C]
    # After the claim: everything the verb does, its replies included (``Turn``).
    handle: Callable[[Turn, C], Outcome]
    usage: str  # the help table's first column, e.g. "`/qnn cancel`"
    summary: str  # what it does, for the help table
    notes: Callable[[Catalog], Sequence[str]] = _no_notes  # bullet lines under the table
    takes_paths: bool = False  # its words may hold `/`
    # A command of this verb stored in the results comment's state -> the command, not yet
    # checked against the catalog (KeyError, ValueError or TypeError when malformed).
    load: Callable[[Mapping[str, Any]], C] | None = None


@dataclass(frozen=True)
class VerbTable:
    """The verbs, once: the grammar, the dispatch and the help read this and nothing else."""

    verbs: tuple[Verb[Any], ...]
    default: str = "help"  # what a bare ``/qnn`` means
    _by_name: dict[str, Verb[Any]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = [v.name for v in self.verbs]
        if len(set(names)) != len(names) or self.default not in names:
            raise ValueError(f"verbs {names}: each once, and the default {self.default!r} too")
        object.__setattr__(self, "_by_name", {v.name: v for v in self.verbs})

    def __iter__(self) -> Iterator[Verb[Any]]:
        return iter(self.verbs)

    def __getitem__(self, name: str) -> Verb[Any]:
        return self._by_name[name]

    def get(self, name: str) -> Verb[Any] | None:
        return self._by_name.get(name)

    def parse_line(self, line: str, catalog: Catalog, number: int = 1) -> Command:
        """One line that starts with ``/qnn`` -> the command of the verb it names."""
        paths = [v.name for v in self.verbs if v.takes_paths]
        words = split_words(line, catalog, number, paths)
        name, args = (words[0], words[1:]) if words else (self.default, [])
        verb = self.get(name)
        if verb is None:
            raise CommandError(
                f"unknown command {quote_untrusted(name)}"
                + suggest(name, [v.name for v in self.verbs], "see `/qnn help`"),
                number,
            )
        command: Command = verb.parse(args, catalog, number)
        return command

    def load(self, stored: Mapping[str, Any], catalog: Catalog) -> Command:
        """A command the bot stored, checked again: through its canonical line and the parser,
        so stored state obeys the same rules as a comment."""
        verb = self.get(str(stored.get("action", ""))) if isinstance(stored, Mapping) else None
        if verb is None or verb.load is None:
            raise CommandError("stored command is malformed: not a command the bot stores")
        try:
            command: Command = verb.load(stored)
        except (KeyError, ValueError, TypeError) as exc:
            raise CommandError(f"stored command is malformed: {exc}") from exc
        return self.parse_line(command.canonical(), catalog)

    def describe(self, stored: Mapping[str, Any]) -> str:
        """The text a results comment shows for a stored command (``/qnn`` when unreadable)."""
        verb = self.get(str(stored.get("action", ""))) if isinstance(stored, Mapping) else None
        if verb is None or verb.load is None:
            return "/qnn"
        try:
            text: str = verb.load(stored).canonical()
        except (KeyError, ValueError, TypeError):
            return "/qnn"
        return text
