"""PR comment text -> ``Command`` or ``CommandError`` (pure; nothing here reaches a shell).

Grammar (one command per comment)::

    line     := INDENT? "/qnn" (WS verb)? WS? EOL      INDENT is 0-3 ASCII spaces
    verb     := "test" (WS test-arg)* | "retry" (WS "failed")? (WS sha-opt)?
              | "migrate" (WS migrate-arg)* | "cancel" | "help"
    test-arg := MATRIX | "auto" | TEST_ID | "--soc" (WS|"=") SOC(","SOC)*
              | "--backend" (WS|"=") BACKEND | "--seed" (WS|"=") DIGITS | "--sim"
              | "--compare" (WS|"=") "base" | sha-opt
    migrate-arg := "--target" (WS|"=") ("qnn-passes"|"executorch") | PATH
    sha-opt  := "--sha" (WS|"=") HEX{40}
    WS       := (" " | TAB)+

A line counts only when GitHub renders it as plain text at the start of a line of a
top-level paragraph: the body is parsed as CommonMark with GitHub's table extension by
markdown-it-py, so fenced and indented code, quotes (lazy continuation lines included),
lists, headings, tables, HTML blocks and comments, link reference definitions (titles
included), GFM footnote definitions (GitHub hides one nothing refers to, lazy continuation
lines included) and text inside code spans, links or emphasis never run. The line must also
start with ASCII ``/qnn`` followed by a space, a tab or the end of the line.
A line that *looks* like ``/qnn`` once Unicode is normalised (full-width solidus,
Cyrillic letters, zero-width spaces, upper case) is refused with an error rather than run.
The words are split on ASCII blanks by this module, never by a shell; each must use only
``A-Z a-z 0-9 _ . , = -`` and is then checked against the catalog: an unknown name is
answered with close matches. Counts are capped by ``[limits]`` in ``matrices.toml``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.rules_inline.escape import escape as _escape_rule
from markdown_it.rules_inline.newline import newline as _newline_rule
from markdown_it.token import Token
from mdit_py_plugins.footnote import footnote_plugin

from qnn_migrate.bot.catalog import Catalog, close_matches
from qnn_migrate.bot.model import TEST_ID_RE
from qnn_migrate.codemods.deprecations import target_names

PREFIX = "/qnn"
TOKEN_RE = re.compile(r"^[A-Za-z0-9_.,=-]+$")
HEX_RE = re.compile(r"^[0-9a-f]+$")
SEED_RE = re.compile(r"^[0-9]{1,10}$")
COMMAND_RE = re.compile(r"^ {0,3}/qnn(?:[ \t]|$)")
LINE_END_RE = re.compile(r"\r\n?")
# A PATH of `/qnn migrate`: a relative POSIX path; `..` and `.` parts are refused below.
PATH_RE = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_./-]*$")
OPTIONS = ("--soc", "--backend", "--seed", "--compare", "--sha")
# What `--compare` may name: `base`, the PR's merge base (run again on the simulator tier).
COMPARE_WITH = ("base",)
FLAGS = ("--sim",)
MIGRATE_OPTIONS = ("--target",)
# The rewrite targets come from the codemod's deprecation data, the default first.
MIGRATE_TARGETS = target_names()
VERBS = ("test", "retry", "migrate", "cancel", "help")
# Who may ask for `/qnn migrate` besides the PR's author: it only proposes text.
MIGRATE_ROLES = ("admin", "maintain", "write")
# A reply quotes at most this much of an error, so a hostile comment cannot make a long one.
ERROR_MAX_CHARS = 600
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


class Action(StrEnum):
    """What a command asks the bot to do."""

    TEST = "test"
    RETRY = "retry"
    MIGRATE = "migrate"
    CANCEL = "cancel"
    HELP = "help"


class CommandError(ValueError):
    """A comment that holds a /qnn command the bot cannot accept; the text is the reply."""

    def __init__(self, message: str, line: int | None = None) -> None:
        where = f"line {line}: " if line else ""
        if len(message) > ERROR_MAX_CHARS:
            message = message[: ERROR_MAX_CHARS - 2].rstrip() + " …"
        super().__init__(f"{where}{message}")
        self.line = line
        self.reason = message


@dataclass(frozen=True)
class Command:
    """One validated /qnn command; every name in it is in the catalog."""

    action: Action
    matrices: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()
    auto: bool = False
    socs: tuple[str, ...] = ()
    backend: str = ""
    seed: int = 0
    sha: str | None = None
    failed_only: bool = False
    simulator: bool = False  # run on the x86 HTP simulator tier instead of phones
    # "base": also run the same shards at the PR's merge base (simulator tier, so implies
    # ``simulator``) and compare the PR's programs with those instead of the nightly's.
    compare: str = ""
    target: str = ""  # migrate: the rewrite's --target
    paths: tuple[str, ...] = ()  # migrate: only changed files at or under these paths
    line: int = field(default=0, compare=False)

    def canonical(self) -> str:
        """The command as the bot would write it: the rerun line shown in reports."""
        if self.action is Action.RETRY:
            words = ["/qnn", "retry"] + (["failed"] if self.failed_only else [])
        elif self.action is Action.MIGRATE:
            words = ["/qnn", "migrate", "--target", self.target or MIGRATE_TARGETS[0]]
            words += list(self.paths)
        elif self.action is not Action.TEST:
            words = ["/qnn", self.action.value]
        else:
            words = ["/qnn", "test"] + (["auto"] if self.auto else [])
            words += [*self.matrices, *self.tests]
            words += ["--soc", ",".join(self.socs), "--backend", self.backend]
            words += ["--seed", str(self.seed)] + (["--sim"] if self.simulator else [])
            words += ["--compare", self.compare] if self.compare else []
        if self.sha:
            words += ["--sha", self.sha]
        return " ".join(words)

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "action": self.action.value,
            "matrices": list(self.matrices),
            "tests": list(self.tests),
            "auto": self.auto,
            "socs": list(self.socs),
            "backend": self.backend,
            "seed": self.seed,
            "sha": self.sha,
            "failed_only": self.failed_only,
            "line": self.line,
        }
        # Keys added later appear only when set, so stored state from before reads the same.
        if self.simulator:
            doc["simulator"] = True
        if self.compare:
            doc["compare"] = self.compare
        if self.action is Action.MIGRATE:
            doc |= {"target": self.target, "paths": list(self.paths)}
        return doc


def quote_untrusted(text: str, limit: int = 40) -> str:
    """Show text from a comment safely inside an inline code span of a bot reply."""
    shown = text if len(text) <= limit else text[:limit] + "…"
    escaped = shown.encode("ascii", "backslashreplace").decode("ascii").replace("`", "\\x60")
    return f"`{escaped}`"


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


def _split_values(token: str, option: str, line: int) -> list[str]:
    values = [v for v in token.split(",")]
    if any(not v for v in values):
        raise CommandError(f"`{option}` has an empty value in {quote_untrusted(token)}", line)
    return values


def _suggest(word: str, choices: Sequence[str], kind: str) -> str:
    hints = close_matches(word, choices)
    return f"; did you mean {', '.join(f'`{h}`' for h in hints)}?" if hints else f"; {kind}"


def _options(
    words: Sequence[str], line: int, allowed: Sequence[str], flags: Sequence[str] = ()
) -> tuple[list[str], dict[str, list[str]]]:
    """Split words into positionals and option values (``--x v`` or ``--x=v``); a flag
    (``--sim``) takes no value and is recorded with the value ``""``."""
    positional: list[str] = []
    options: dict[str, list[str]] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word in flags:
            options.setdefault(word, []).append("")
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
            options.setdefault(name, []).append(value)
        elif word.startswith("-"):
            raise CommandError(
                f"{quote_untrusted(word)} is not an option; options: {', '.join(allowed)}", line
            )
        else:
            positional.append(word)
        i += 1
    return positional, options


def _parse_sha(values: list[str] | None, catalog: Catalog, line: int) -> str | None:
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


def _parse_test(words: Sequence[str], catalog: Catalog, line: int) -> Command:
    limits = catalog.limits
    positional, options = _options(words, line, OPTIONS, FLAGS)
    matrices: list[str] = []
    tests: list[str] = []
    auto = False
    for word in positional:
        if word == "auto":
            auto = True
        elif word in catalog.matrices:
            matrices.append(word)
        elif TEST_ID_RE.match(word):
            if word not in catalog.test_ids:
                raise CommandError(
                    f"test id `{word}` is not in the registry "
                    f"({catalog.registry.package} {catalog.registry.version})"
                    + _suggest(word, sorted(catalog.test_ids), "see `qnn-migrate matrix show`"),
                    line,
                )
            tests.append(word)
        else:
            names = sorted(catalog.matrices)
            raise CommandError(
                f"{quote_untrusted(word)} is not a matrix, `auto` or a test id "
                "(`TestClass.test_name`)"
                + _suggest(word, [*names, "auto"], "matrices: " + ", ".join(names)),
                line,
            )
    matrices = list(dict.fromkeys(matrices))
    tests = list(dict.fromkeys(tests))
    if len(tests) > limits.max_test_ids:
        raise CommandError(
            f"{len(tests)} test ids named; at most {limits.max_test_ids} per command. "
            "Name a matrix instead, or split the command.",
            line,
        )
    if len(matrices) > limits.max_matrices:
        raise CommandError(f"{len(matrices)} matrices; at most {limits.max_matrices}", line)
    if not (matrices or tests):
        auto = True

    socs: list[str] = []
    for value in options.get("--soc", []):
        for raw in _split_values(value, "--soc", line):
            soc = raw.upper()
            if soc not in catalog.socs:
                raise CommandError(
                    f"unknown SoC {quote_untrusted(raw)}"
                    + _suggest(soc, list(catalog.socs), "SoCs: " + ", ".join(catalog.lab_socs)),
                    line,
                )
            if not catalog.socs[soc].in_lab:
                raise CommandError(
                    f"no device runner has a {soc} phone; SoCs in the lab: "
                    + ", ".join(catalog.lab_socs),
                    line,
                )
            socs.append(soc)
    socs = list(dict.fromkeys(socs)) or list(catalog.defaults.socs)
    if len(socs) > limits.max_socs:
        raise CommandError(f"{len(socs)} SoCs; at most {limits.max_socs} per command", line)

    backends = options.get("--backend", [])
    if len(backends) > 1:
        raise CommandError("`--backend` may be given once", line)
    backend = backends[0].lower() if backends else catalog.defaults.backend
    if backend not in catalog.backends:
        raise CommandError(
            f"unknown backend {quote_untrusted(backends[0])}; backends: "
            + ", ".join(catalog.backends),
            line,
        )
    unsupported = [s for s in socs if backend not in catalog.socs[s].backends]
    if unsupported:
        able = [s for s in catalog.lab_socs if backend in catalog.socs[s].backends]
        raise CommandError(
            f"backend `{backend}` does not run on {', '.join(unsupported)}; "
            f"it runs on {', '.join(able) or 'no SoC in the lab'}",
            line,
        )

    seeds = options.get("--seed", [])
    if len(seeds) > 1:
        raise CommandError("`--seed` may be given once", line)
    seed = catalog.defaults.seed
    if seeds:
        if not SEED_RE.match(seeds[0]) or int(seeds[0]) > limits.max_seed:
            raise CommandError(
                f"`--seed` must be a whole number from 0 to {limits.max_seed}, "
                f"got {quote_untrusted(seeds[0])}",
                line,
            )
        seed = int(seeds[0])

    compares = options.get("--compare", [])
    if len(compares) > 1:
        raise CommandError("`--compare` may be given once", line)
    compare = compares[0].lower() if compares else ""
    if compares and compare not in COMPARE_WITH:
        raise CommandError(
            f"`--compare` takes only `base` (run the same shards at this PR's merge base on "
            f"the simulator and compare the programs with those), got {quote_untrusted(compares[0])}"
            + _suggest(compare, COMPARE_WITH, "write `--compare base`"),
            line,
        )

    return Command(
        action=Action.TEST,
        matrices=tuple(matrices),
        tests=tuple(tests),
        auto=auto,
        socs=tuple(socs),
        backend=backend,
        seed=seed,
        sha=_parse_sha(options.get("--sha"), catalog, line),
        # The merge base runs on the simulator tier, and programs compare within one tier.
        simulator="--sim" in options or bool(compare),
        compare=compare,
        line=line,
    )


def _parse_migrate(words: Sequence[str], line: int) -> Command:
    positional, options = _options(words, line, MIGRATE_OPTIONS)
    targets = options.get("--target", [])
    if len(targets) > 1:
        raise CommandError("`--target` may be given once", line)
    target = targets[0] if targets else MIGRATE_TARGETS[0]
    if target not in MIGRATE_TARGETS:
        raise CommandError(
            f"unknown target {quote_untrusted(target)}; targets: " + ", ".join(MIGRATE_TARGETS),
            line,
        )
    paths: list[str] = []
    for word in positional:
        parts = word.rstrip("/").split("/")
        if not PATH_RE.match(word) or any(part in ("", ".", "..") for part in parts):
            raise CommandError(
                f"{quote_untrusted(word)} is not a path in the repository; give paths "
                "relative to its root, without `.` or `..` parts",
                line,
            )
        paths.append("/".join(parts))
    return Command(Action.MIGRATE, target=target, paths=tuple(dict.fromkeys(paths)), line=line)


def parse_line(line: str, catalog: Catalog, number: int = 1) -> Command:
    """Parse one line that starts with ``/qnn``."""
    limits = catalog.limits
    if len(line) > limits.max_line_chars:
        raise CommandError(
            f"the /qnn line is {len(line)} characters; at most {limits.max_line_chars}", number
        )
    rest = line.lstrip(" ")[len(PREFIX) :]
    words = rest.replace("\t", " ").split(" ")
    words = [w for w in words if w]
    if len(words) > limits.max_tokens:
        raise CommandError(f"{len(words)} words; at most {limits.max_tokens}", number)
    migrate = bool(words) and words[0] == "migrate"
    for word in words:
        if migrate and PATH_RE.match(word):
            continue  # a path; _parse_migrate checks its parts
        if not TOKEN_RE.match(word):
            allowed = "`A-Z a-z 0-9 _ . , = - /`" if migrate else "`A-Z a-z 0-9 _ . , = -`"
            raise CommandError(
                f"{quote_untrusted(word)} has characters other than {allowed}; "
                "commands take only names, ids, paths and numbers",
                number,
            )
    if not words:
        return Command(Action.HELP, line=number)
    verb, args = words[0], words[1:]
    if verb == "migrate":
        return _parse_migrate(args, number)
    if verb == "test":
        return _parse_test(args, catalog, number)
    if verb == "retry":
        positional, options = _options(args, number, ("--sha",))
        if positional not in ([], ["failed"]):
            raise CommandError(
                f"`/qnn retry` takes only `failed`, got {quote_untrusted(' '.join(positional))}",
                number,
            )
        return Command(
            Action.RETRY,
            failed_only=bool(positional),
            sha=_parse_sha(options.get("--sha"), catalog, number),
            line=number,
        )
    if verb in ("cancel", "help"):
        if args:
            raise CommandError(f"`/qnn {verb}` takes no arguments", number)
        return Command(Action(verb), line=number)
    raise CommandError(
        f"unknown command {quote_untrusted(verb)}" + _suggest(verb, VERBS, "see `/qnn help`"),
        number,
    )


def parse(body: str, catalog: Catalog) -> Command | None:
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
    return parse_line(line.rstrip(" \t"), catalog, number)


HELP_TEXT = """\
**QNN device tests bot.** Commands (one per comment, on a line of its own):

| command | what it does |
|---|---|
| `/qnn test [MATRIX ...\\|auto\\|TEST_ID ...] [--soc SOC ...] [--backend B] [--seed N] [--sim] [--compare base]` | run tests on phones at the PR's current head |
| `/qnn retry [failed]` | run the last command again at the current head (only failed tests with `failed`) |
| `/qnn migrate [--target qnn-passes\\|executorch] [PATH ...]` | suggest the qnn-migrate rewrite of this PR's changed `.py` files as one review |
| `/qnn cancel` | cancel the device run in progress for this PR |
| `/qnn help` | this text |

- `auto` (the default) picks the matrices whose guarded files this PR changes.
- `--sim` runs the tests on the x86 HTP simulator tier instead of phones.
- `--compare base` also runs the same tests at this PR's merge base (on the simulator tier:
  it implies `--sim`) and compares the PR's lowered programs with those instead of the
  nightly's; pass/fail is judged as without it.
- `/qnn migrate` reads the changed files at the head commit and runs nothing from the PR; the
  PR's author or anyone with {migrate_roles} permission may ask for it.
- Defaults: {defaults}.
- Matrices: {matrices}.
- SoCs with phones: {socs}. Backends: {backends}.
- Add `--sha <commit>` (the full 40-digit SHA) to name the commit you reviewed; it is
  required when the PR's author cannot start device runs.
- Device runs may be started by collaborators with {roles} permission.
- Try a command offline: `echo '/qnn test auto' | qnn-migrate bot parse`.
"""


def help_text(catalog: Catalog) -> str:
    d = catalog.defaults
    return HELP_TEXT.format(
        defaults=f"`--soc {','.join(d.socs)} --backend {d.backend} --seed {d.seed}`",
        matrices=", ".join(f"`{m}`" for m in catalog.matrices),
        socs=", ".join(catalog.lab_socs),
        backends=", ".join(catalog.backends),
        roles=", ".join(catalog.policy.run_roles),
        migrate_roles=", ".join(MIGRATE_ROLES),
    )


def command_from_dict(doc: Mapping[str, Any], catalog: Catalog) -> Command:
    """Rebuild a Command stored by the bot (e.g. in its results comment) and re-validate it."""
    try:
        action = Action(doc["action"])
        command = Command(
            action=action,
            matrices=tuple(str(m) for m in doc.get("matrices", [])),
            tests=tuple(str(t) for t in doc.get("tests", [])),
            auto=bool(doc.get("auto", False)),
            socs=tuple(str(s) for s in doc.get("socs", [])),
            backend=str(doc.get("backend", "")),
            seed=int(doc.get("seed", 0)),
            sha=None,
            failed_only=bool(doc.get("failed_only", False)),
            simulator=bool(doc.get("simulator", False)),
            compare=str(doc.get("compare", "")),
            target=str(doc.get("target", "")),
            paths=tuple(str(p) for p in doc.get("paths", [])),
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise CommandError(f"stored command is malformed: {exc}") from exc
    # Round-trip through the parser so stored state obeys the same rules as a comment.
    reparsed = parse_line(command.canonical(), catalog)
    return reparsed
