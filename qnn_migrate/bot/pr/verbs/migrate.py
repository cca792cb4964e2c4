"""``/qnn migrate``: suggest the qnn-migrate rewrite of the PR's changed ``.py`` files.

Grammar: ``"migrate" (WS ("--target" (WS|"=") TARGET | PATH))*``: the rewrite's target (the
codemod's deprecation data names them, the default first) and paths relative to the
repository's root, without ``.`` or ``..`` parts, that narrow the files. It has its own
authorization (the PR's author may ask; it only proposes text): ``pr/migrate.py`` does the
work and says the order of its checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.pr.context import Outcome, Turn, Verb
from qnn_migrate.bot.pr.grammar import PATH_RE, CommandError, options, quote_untrusted
from qnn_migrate.bot.pr.migrate import MIGRATE_ROLES, handle_migrate
from qnn_migrate.codemods.deprecations import target_names

NAME = "migrate"
OPTIONS = ("--target",)
# The rewrite targets come from the codemod's deprecation data, the default first.
TARGETS = target_names()


@dataclass(frozen=True)
class MigrateCommand:
    """One validated ``/qnn migrate``."""

    target: str = ""  # the rewrite's --target ("" reads as the default)
    paths: tuple[str, ...] = ()  # only changed files at or under these paths
    line: int = field(default=0, compare=False)

    @property
    def verb(self) -> str:
        return NAME

    def canonical(self) -> str:
        return " ".join(["/qnn", NAME, "--target", self.target or TARGETS[0], *self.paths])

    def to_dict(self) -> dict[str, Any]:
        return {"action": NAME, "target": self.target, "paths": list(self.paths), "line": self.line}


def parse(words: Sequence[str], catalog: Catalog, line: int) -> MigrateCommand:
    """The words after ``migrate``."""
    positional, found = options(words, line, OPTIONS)
    targets = found.get("--target", [])
    if len(targets) > 1:
        raise CommandError("`--target` may be given once", line)
    target = targets[0] if targets else TARGETS[0]
    if target not in TARGETS:
        raise CommandError(
            f"unknown target {quote_untrusted(target)}; targets: " + ", ".join(TARGETS), line
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
    return MigrateCommand(target, tuple(dict.fromkeys(paths)), line)


def handle(turn: Turn, command: MigrateCommand) -> Outcome:
    """One review of suggestions, or the refusal. Releasing its claim is always safe: a
    review already posted at the head SHA makes the re-run a duplicate
    (``migrate.already_reviewed``)."""
    done = handle_migrate(
        turn.gw,
        command,
        pr=turn.pr,
        login=turn.login,
        bot_login=turn.ctx.bot_login,
        comment_id=turn.comment_id,
    )
    return Outcome(done.action, done.reason, sha=done.sha)


def _notes(catalog: Catalog) -> tuple[str, ...]:
    return (
        "`/qnn migrate` reads the changed files at the head commit and runs nothing from the "
        "PR; the\n  PR's author or anyone with "
        f"{', '.join(MIGRATE_ROLES)} permission may ask for it.",
    )


VERB = Verb(
    NAME,
    parse,
    handle,
    usage="`/qnn migrate [--target qnn-passes\\|executorch] [PATH ...]`",
    summary="suggest the qnn-migrate rewrite of this PR's changed `.py` files as one review",
    notes=_notes,
    takes_paths=True,
)
