"""PR comment text -> a verb's command, or ``CommandError`` (pure; nothing here reaches a shell).

Grammar (one command per comment)::

    line     := INDENT? "/qnn" (WS verb)? WS? EOL      INDENT is 0-3 ASCII spaces
    verb     := NAME (WS word)*                         NAME: a verb of the table
    WS       := (" " | TAB)+

A bare ``/qnn`` is ``help``. Each verb's words are its own module's (``pr/verbs/``, with
its grammar in the docstring); the table (``pr/verbs/__init__.py``) says which verbs there
are. ``grammar`` holds what every verb's words share.

A line counts only when GitHub renders it as plain text at the start of a line of a
top-level paragraph: the body is parsed as CommonMark with GitHub's table extension by
markdown-it-py, so fenced and indented code, quotes (lazy continuation lines included),
lists, headings, tables, HTML blocks and comments, link reference definitions (titles
included), GFM footnote definitions (GitHub hides one nothing refers to, lazy continuation
lines included) and text inside code spans, links or emphasis never run. The line must also
start with ASCII ``/qnn`` followed by a space, a tab or the end of the line.
A line that *looks* like ``/qnn`` once Unicode is normalised (full-width solidus,
Cyrillic letters, zero-width spaces, upper case) is refused with an error rather than run.
The words are split on ASCII blanks, never by a shell; each must use only
``A-Z a-z 0-9 _ . , = -`` and is then checked against the catalog: an unknown name is
answered with close matches. Counts are capped by ``[limits]`` in ``matrices.toml``.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.rules_inline.escape import escape as _escape_rule
from markdown_it.rules_inline.newline import newline as _newline_rule
from markdown_it.token import Token
from mdit_py_plugins.footnote import footnote_plugin

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.pr.context import VerbTable
from qnn_migrate.bot.pr.grammar import PREFIX, Command, CommandError, quote_untrusted
from qnn_migrate.bot.pr.verbs import VERBS

COMMAND_RE = re.compile(r"^ {0,3}/qnn(?:[ \t]|$)")
LINE_END_RE = re.compile(r"\r\n?")
# Characters that render like '/', 'q' or 'n' but are not ASCII, beyond what NFKC folds.
_CONFUSABLES = str.maketrans(
    {
        "\u2215": "/",  # DIVISION SLASH
        "\u2044": "/",  # FRACTION SLASH
        "\u29f8": "/",  # BIG SOLIDUS
        "\u2571": "/",  # BOX DRAWINGS LIGHT DIAGONAL
        "\u27cb": "/",  # MATHEMATICAL RISING DIAGONAL
        "\u3033": "/",  # VERTICAL KANA REPEAT MARK UPPER HALF
        "\u30ce": "/",  # KATAKANA NO
        "\u4e3f": "/",  # CJK radical slash
        "\u0338": "/",  # COMBINING LONG SOLIDUS OVERLAY
        "\u051b": "q",  # CYRILLIC SMALL QA
        "\u0566": "q",  # ARMENIAN ZA
        "\u0563": "q",  # ARMENIAN GIM
        "\u0578": "n",  # ARMENIAN VO
        "\u057c": "n",  # ARMENIAN RA
        "\u043f": "n",  # CYRILLIC PE
        "\u0273": "n",  # LATIN N WITH RETROFLEX HOOK
        "\u03b7": "n",  # GREEK ETA
    }
)


def _skeleton(text: str) -> str:
    """Fold text the way a reader's eye does: NFKC, drop invisible marks, map confusables."""
    folded = unicodedata.normalize("NFKC", text).translate(_CONFUSABLES)
    folded = "".join(ch for ch in folded if unicodedata.category(ch) not in ("Cf", "Mn"))
    return folded.casefold()


def _looks_like_command(line: str) -> bool:
    skeleton = _skeleton(line.lstrip(" \t\u3000\u00a0"))
    return skeleton.startswith(PREFIX) and not skeleton[len(PREFIX) : len(PREFIX) + 1].isalnum()


def _with_offset(rule: Any) -> Any:
    """Wrap an inline rule so the line breaks it makes remember where they are in the text."""

    def rule_with_offset(state: StateInline, silent: bool) -> bool:
        pos, count = state.pos, len(state.tokens)
        matched = bool(rule(state, silent))
        if matched and not silent:
            for token in state.tokens[count:]:
                if token.type in ("softbreak", "hardbreak"):
                    token.meta["offset"] = pos
        return matched

    return rule_with_offset


@cache
def _markdown() -> MarkdownIt:
    """CommonMark plus GFM tables and footnotes, with HTML on, as GitHub parses a comment's
    blocks (a footnote's paragraphs are nested: never at level 0)."""
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"]).use(footnote_plugin)
    md.inline.ruler.at("newline", _with_offset(_newline_rule))
    md.inline.ruler.at("escape", _with_offset(_escape_rule))
    return md


def _line_starts(inline: Token) -> list[int]:
    """0-based lines of an inline block that begin with plain text outside any span."""
    starts: list[int] = []
    children = inline.children or []
    depth = 0
    fresh: int | None = 0
    line, seen = 0, 0  # lines counted in inline.content[:seen]; breaks come in text order
    for child in children:
        if child.type in ("softbreak", "hardbreak") and depth == 0:
            offset = int(child.meta.get("offset", seen))
            line += inline.content.count("\n", seen, offset)
            seen = offset
            fresh = line + 1
            continue
        if fresh is not None and depth == 0 and child.type == "text":
            starts.append(fresh)
        fresh = None
        depth += child.nesting
    return starts


def command_lines(body: str) -> list[tuple[int, str]]:
    """The (1-based line number, text) of lines that start a command.

    Only lines that GitHub shows as plain text at the start of a line in a top-level
    paragraph are read (see the module docstring). Raises CommandError for look-alikes of
    ``/qnn`` there.
    """
    text = LINE_END_RE.sub("\n", body)
    lines = text.split("\n")
    found: list[tuple[int, str]] = []
    if not any(COMMAND_RE.match(line) or _looks_like_command(line) for line in lines):
        return found  # the usual comment: no line could start a command, nothing to parse
    tokens = _markdown().parse(text)
    for i, token in enumerate(tokens[:-1]):
        if token.type != "paragraph_open" or token.level != 0 or token.map is None:
            continue
        inline = tokens[i + 1]
        for offset in _line_starts(inline):
            number = token.map[0] + offset + 1
            line = lines[number - 1]
            if COMMAND_RE.match(line):
                found.append((number, line))
            elif _looks_like_command(line):
                raise CommandError(
                    f"{quote_untrusted(line.strip(), 20)} looks like a /qnn command but is not "
                    "plain ASCII `/qnn` at the start of the line, so it was not run. "
                    "Type it again with ASCII characters.",
                    number,
                )
    return found


def parse(body: str, catalog: Catalog, verbs: VerbTable = VERBS) -> Command | None:
    """The comment's command, None if it has none; CommandError if it has a bad one."""
    limits = catalog.limits
    if len(body) > limits.max_comment_chars:
        raise CommandError(
            f"the comment is {len(body)} characters; the bot reads commands only from "
            f"comments up to {limits.max_comment_chars}. Post the /qnn line on its own."
        )
    if "\x00" in body:
        raise CommandError("the comment contains a NUL character; post the command again")
    lines = command_lines(body)
    if not lines:
        return None
    if len(lines) > 1:
        numbers = ", ".join(str(n) for n, _ in lines)
        raise CommandError(
            f"one /qnn command per comment; found them on lines {numbers}. "
            "Post each command as its own comment."
        )
    number, line = lines[0]
    spaced = line.replace("\t", " ")  # tabs separate words, as spaces do
    if not spaced.isascii() or not spaced.isprintable():
        bad = next(ch for ch in spaced if not ch.isascii() or not ch.isprintable())
        raise CommandError(
            f"the /qnn line contains {quote_untrusted(bad)} (U+{ord(bad):04X}); "
            "commands are plain ASCII",
            number,
        )
    return verbs.parse_line(line.rstrip(" \t"), catalog, number)


def parse_line(line: str, catalog: Catalog, number: int = 1, verbs: VerbTable = VERBS) -> Command:
    """Parse one line that starts with ``/qnn``."""
    return verbs.parse_line(line, catalog, number)
