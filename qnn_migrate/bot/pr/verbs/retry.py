"""``/qnn retry [failed]``: the last test command again, at the PR's current head.

Grammar: ``"retry" (WS "failed")? (WS "--sha" (WS|"=") HEX{40})?``. The last command is the
one the results comment keeps; it is checked against the catalog again before it runs.
With ``failed``, only the failed (SoC, matrix, test) runs of the last report run again, on
the tier the command ran on, and for ``--compare base`` at the (new) merge base too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.pr import runs
from qnn_migrate.bot.pr.context import Outcome, Turn, Verb
from qnn_migrate.bot.pr.grammar import CommandError, options, parse_sha, quote_untrusted
from qnn_migrate.bot.pr.plan import PlanError, Selection
from qnn_migrate.bot.pr.state import Phase, RunState
from qnn_migrate.bot.pr.verbs.test import TestCommand, plan_at_head

NAME = "retry"
NOTHING_TO_RETRY = (
    "😕 There is no earlier device run on this PR to retry. Start one with `/qnn test`."
)
NOTHING_FAILED = "😕 Nothing failed in the last run (at `{sha}`); nothing to retry."
NOT_REPORTED = (
    "😕 The last run (at `{sha}`) has not reported yet; `/qnn retry failed` needs its results."
)


@dataclass(frozen=True)
class RetryCommand:
    """One validated ``/qnn retry``."""

    failed_only: bool = False
    sha: str | None = None
    line: int = field(default=0, compare=False)

    @property
    def verb(self) -> str:
        return NAME

    def canonical(self) -> str:
        words = ["/qnn", NAME] + (["failed"] if self.failed_only else [])
        return " ".join(words + (["--sha", self.sha] if self.sha else []))

    def to_dict(self) -> dict[str, Any]:
        return {"action": NAME, "failed_only": self.failed_only, "sha": self.sha, "line": self.line}


def parse(words: Sequence[str], catalog: Catalog, line: int) -> RetryCommand:
    """The words after ``retry``."""
    positional, found = options(words, line, ("--sha",))
    if positional not in ([], ["failed"]):
        raise CommandError(
            f"`/qnn retry` takes only `failed`, got {quote_untrusted(' '.join(positional))}",
            line,
        )
    return RetryCommand(bool(positional), parse_sha(found.get("--sha"), line), line)


def failed_work(prior: RunState, catalog: Catalog) -> dict[str, list[Selection]]:
    """SoC -> selections of exactly the failed (SoC, matrix, test) runs of the last report
    that can still run (their SoC in the lab, their id in the catalog)."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for soc, matrix, test in prior.failed:
        if soc not in catalog.socs or not catalog.socs[soc].in_lab:
            continue
        if not catalog.knows(matrix, test):
            continue  # the registry changed since; such an id can no longer run
        grouped.setdefault((soc, matrix), []).append(test)
    work: dict[str, list[Selection]] = {}
    for (soc, matrix), tests in grouped.items():
        work.setdefault(soc, []).append(Selection(matrix, tuple(dict.fromkeys(tests))))
    if not work:
        raise PlanError("none of the failed tests can run any more (SoCs or ids left the catalog)")
    return work


def handle(turn: Turn, command: RetryCommand) -> Outcome:
    """Run the last test command again (``runs`` says the order of checks)."""
    asked = command.canonical()
    admitted = runs.admit(turn, asked)
    if isinstance(admitted, Outcome):
        return admitted
    refused = runs.pin(turn, admitted, command.sha, asked)
    if refused is not None:
        return refused
    prior = admitted.prior
    if prior is None:
        return turn.refuse("refused", NOTHING_TO_RETRY)
    try:
        ran = turn.verbs.load(prior.command, turn.ctx.catalog)
    except CommandError:
        return turn.refuse("refused", NOTHING_TO_RETRY)
    if not isinstance(ran, TestCommand):
        return turn.refuse("refused", NOTHING_TO_RETRY)
    note = ""
    try:
        if command.failed_only:
            if prior.phase is not Phase.REPORTED:
                return turn.refuse("refused", NOT_REPORTED.format(sha=prior.sha))
            if not prior.failed:
                return turn.refuse("refused", NOTHING_FAILED.format(sha=prior.sha))
            work = failed_work(prior, turn.ctx.catalog)
            the_plan = plan_at_head(turn, admitted.pull, ran, work)
            note = f"retry of {len(prior.failed)} failed test run(s)"
            if prior.failed_total > len(prior.failed):
                note += f" (the first {len(prior.failed)} of {prior.failed_total})"
        else:
            the_plan = plan_at_head(turn, admitted.pull, ran)
    except PlanError as exc:
        return turn.refuse("refused", f"😕 {exc}")
    return runs.start(turn, admitted, the_plan, stored=ran.to_dict(), asked=asked, note=note)


VERB = Verb(
    NAME,
    parse,
    handle,
    usage="`/qnn retry [failed]`",
    summary="run the last command again at the current head (only failed tests with `failed`)",
)
