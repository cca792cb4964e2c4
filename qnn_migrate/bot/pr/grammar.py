"""The words of one ``/qnn`` line: what every verb's parser shares (pure).

A line is split on ASCII blanks here, never by a shell; each word must use only
``A-Z a-z 0-9 _ . , = -`` (and ``/`` in the words of a verb that takes paths), and counts
are capped by ``[limits]`` in ``matrices.toml``. Options are ``--name value`` or
``--name=value``; a flag (``--sim``) takes no value. What a verb's words mean is the
verb's own (``pr/verbs/``); which verbs there are is the table's (``context.VerbTable``).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any, Protocol

from qnn_migrate.bot.catalog import Catalog, close_matches

PREFIX = "/qnn"
TOKEN_RE = re.compile(r"^[A-Za-z0-9_.,=-]+$")
HEX_RE = re.compile(r"^[0-9a-f]+$")
# A PATH of `/qnn migrate`: a relative POSIX path; `..` and `.` parts are refused by the verb.
PATH_RE = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_./-]*$")
# A reply quotes at most this much of an error, so a hostile comment cannot make a long one.
ERROR_MAX_CHARS = 600


class CommandError(ValueError):
    """A comment that holds a /qnn command the bot cannot accept; the text is the reply."""

    def __init__(self, message: str, line: int | None = None) -> None:
        where = f"line {line}: " if line else ""
        if len(message) > ERROR_MAX_CHARS:
            message = message[: ERROR_MAX_CHARS - 2].rstrip() + " …"
        super().__init__(f"{where}{message}")
        self.line = line
        self.reason = message


class Command(Protocol):
    """A validated command of one verb; every name in it is in the catalog."""

    @property
    def verb(self) -> str:
        """The verb's name, as in the table (``test``, ``retry``, ...)."""
        ...

    @property
    def line(self) -> int:
        """The comment's line the command was on (0: not from a comment)."""
        ...

    def canonical(self) -> str:
        """The command as the bot would write it: the line shown in replies and reports."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form (``bot parse``; a stored command, for verbs that store one)."""
        ...


def quote_untrusted(text: str, limit: int = 40) -> str:
    """Show text from a comment safely inside an inline code span of a bot reply."""
    shown = text if len(text) <= limit else text[:limit] + "…"
    escaped = shown.encode("ascii", "backslashreplace").decode("ascii").replace("`", "\\x60")
    return f"`{escaped}`"


def suggest(word: str, choices: Sequence[str], kind: str) -> str:
    """ "; did you mean ..." with the close matches of ``word``, else "; ``kind``"."""
    hints = close_matches(word, choices)
    return f"; did you mean {', '.join(f'`{h}`' for h in hints)}?" if hints else f"; {kind}"


def split_words(
    line: str, catalog: Catalog, number: int, path_verbs: Collection[str] = ()
) -> list[str]:
    """The words after ``/qnn``, each checked for its characters; ``path_verbs`` name the
    verbs whose words may be paths (``/``)."""
    limits = catalog.limits
    if len(line) > limits.max_line_chars:
        raise CommandError(
            f"the /qnn line is {len(line)} characters; at most {limits.max_line_chars}", number
        )
    rest = line.lstrip(" ")[len(PREFIX) :]
    words = [w for w in rest.replace("\t", " ").split(" ") if w]
    if len(words) > limits.max_tokens:
        raise CommandError(f"{len(words)} words; at most {limits.max_tokens}", number)
    paths = bool(words) and words[0] in path_verbs
    for word in words:
        if paths and PATH_RE.match(word):
            continue  # a path; the verb checks its parts
        if not TOKEN_RE.match(word):
            allowed = "`A-Z a-z 0-9 _ . , = - /`" if paths else "`A-Z a-z 0-9 _ . , = -`"
            raise CommandError(
                f"{quote_untrusted(word)} has characters other than {allowed}; "
                "commands take only names, ids, paths and numbers",
                number,
            )
    return words


def split_values(token: str, option: str, line: int) -> list[str]:
    """The comma-separated values of one option word; an empty one is an error."""
    values = token.split(",")
    if any(not v for v in values):
        raise CommandError(f"`{option}` has an empty value in {quote_untrusted(token)}", line)
    return values


def options(
    words: Sequence[str], line: int, allowed: Sequence[str], flags: Sequence[str] = ()
) -> tuple[list[str], dict[str, list[str]]]:
    """Split words into positionals and option values (``--x v`` or ``--x=v``); a flag
    (``--sim``) takes no value and is recorded with the value ``""``."""
    positional: list[str] = []
    found: dict[str, list[str]] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word in flags:
            found.setdefault(word, []).append("")
        elif word.startswith("--"):
            name, eq, value = word.partition("=")
            if name in flags:
                raise CommandError(f"`{name}` takes no value", line)
            if name not in allowed:
                names = [*allowed, *flags]
                hints = close_matches(name, names)
                hint = f"did you mean `{hints[0]}`?" if hints else "options: " + ", ".join(names)
                raise CommandError(f"unknown option {quote_untrusted(name)}; {hint}", line)
            if not eq:
                i += 1
                if i >= len(words) or words[i].startswith("--"):
                    raise CommandError(f"`{name}` needs a value", line)
                value = words[i]
            if not value:
                raise CommandError(f"`{name}` needs a value", line)
            found.setdefault(name, []).append(value)
        elif word.startswith("-"):
            raise CommandError(
                f"{quote_untrusted(word)} is not an option; options: {', '.join(allowed)}", line
            )
        else:
            positional.append(word)
        i += 1
    return positional, found


def parse_sha(values: list[str] | None, line: int) -> str | None:
    """The value of ``--sha``: the full commit SHA, lower case; None when not given."""
    if not values:
        return None
    if len(values) > 1:
        raise CommandError("`--sha` may be given once", line)
    sha = values[0].lower()
    # The whole SHA: a prefix can be matched by a second commit made to collide with it.
    if not HEX_RE.match(sha) or len(sha) != 40:
        raise CommandError(
            "`--sha` must be the full 40-hexadecimal-digit SHA of the commit you reviewed "
            f"(`git rev-parse HEAD`), got {quote_untrusted(values[0])}",
            line,
        )
    return sha


def no_arguments(verb: str, words: Sequence[str], line: int) -> None:
    """Refuse words after a verb that takes none."""
    if words:
        raise CommandError(f"`/qnn {verb}` takes no arguments", line)
