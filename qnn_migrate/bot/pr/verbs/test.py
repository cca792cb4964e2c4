"""``/qnn test``: run tests of the catalog at the PR's head, on phones or the simulator tier.

Grammar::

    test     := "test" (WS test-arg)*
    test-arg := MATRIX | "auto" | TEST_ID | "--soc" (WS|"=") SOC(","SOC)*
              | "--backend" (WS|"=") BACKEND | "--seed" (WS|"=") DIGITS | "--sim"
              | "--compare" (WS|"=") "base" | "--sha" (WS|"=") HEX{40}

An unknown name is answered with close matches. ``auto`` (the default) picks the matrices
whose guarded files the PR changes. ``--compare base`` also runs the same shards at the
PR's merge base, on the simulator tier (so it implies ``--sim``), and the PR's programs are
compared with those instead of the nightly's.

``handle`` is the verb's whole work after the claim, and the entry for code that starts a
test run itself (``runs`` says the order of checks).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.github.gateway import PullRequest
from qnn_migrate.bot.model import TEST_ID_RE, RunsOn
from qnn_migrate.bot.pr import runs
from qnn_migrate.bot.pr.context import Outcome, Turn, Verb
from qnn_migrate.bot.pr.grammar import (
    CommandError,
    options,
    parse_sha,
    quote_untrusted,
    split_values,
    suggest,
)
from qnn_migrate.bot.pr.plan import (
    ADHOC,
    Plan,
    PlanError,
    PlanRequest,
    Selection,
    check_limits,
    plan,
)

NAME = "test"
OPTIONS = ("--soc", "--backend", "--seed", "--compare", "--sha")
FLAGS = ("--sim",)
SEED_RE = re.compile(r"^[0-9]{1,10}$")
# What `--compare` may name: `base`, the PR's merge base (run again on the simulator tier).
COMPARE_WITH = ("base",)


@dataclass(frozen=True)
class TestCommand:
    """One validated ``/qnn test``; every name in it is in the catalog."""

    __test__ = False  # not a pytest test class

    matrices: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()
    auto: bool = False
    socs: tuple[str, ...] = ()
    backend: str = ""
    seed: int = 0
    sha: str | None = None
    runs_on: RunsOn = RunsOn.PHONE  # --sim: the x86 simulator tier
    # "base": also run the same shards at the PR's merge base (simulator tier, so
    # ``runs_on`` is the simulator's) and compare the PR's programs with those.
    compare: str = ""
    line: int = field(default=0, compare=False)

    @property
    def verb(self) -> str:
        return NAME

    def canonical(self) -> str:
        """The command as the bot would write it: the rerun line shown in reports."""
        words = ["/qnn", NAME] + (["auto"] if self.auto else [])
        words += [*self.matrices, *self.tests]
        words += ["--soc", ",".join(self.socs), "--backend", self.backend, "--seed", str(self.seed)]
        words += ["--sim"] if self.runs_on is RunsOn.SIMULATOR else []
        words += ["--compare", self.compare] if self.compare else []
        words += ["--sha", self.sha] if self.sha else []
        return " ".join(words)

    def to_dict(self) -> dict[str, Any]:
        """The form the results comment keeps (what ``/qnn retry`` runs again)."""
        doc: dict[str, Any] = {
            "action": NAME,
            "matrices": list(self.matrices),
            "tests": list(self.tests),
            "auto": self.auto,
            "socs": list(self.socs),
            "backend": self.backend,
            "seed": self.seed,
            "sha": self.sha,
            "failed_only": False,  # the state's shape from when one type held every verb
            "line": self.line,
        }
        # Keys added later appear only when set, so stored state from before reads the same.
        if self.runs_on is RunsOn.SIMULATOR:
            doc["simulator"] = True
        if self.compare:
            doc["compare"] = self.compare
        return doc

    @classmethod
    def from_stored(cls, doc: Mapping[str, Any]) -> TestCommand:
        """A test command the bot stored, not checked against the catalog (``VerbTable.load``
        does); its ``--sha`` is dropped: a stored command runs again at the head of then."""
        if doc["action"] != NAME:
            raise ValueError(f"a stored {doc['action']!r} command is not a test command")
        return cls(
            matrices=tuple(str(m) for m in doc.get("matrices", [])),
            tests=tuple(str(t) for t in doc.get("tests", [])),
            auto=bool(doc.get("auto", False)),
            socs=tuple(str(s) for s in doc.get("socs", [])),
            backend=str(doc.get("backend", "")),
            seed=int(doc.get("seed", 0)),
            runs_on=RunsOn.SIMULATOR if doc.get("simulator") else RunsOn.PHONE,
            compare=str(doc.get("compare", "")),
        )


def parse(words: Sequence[str], catalog: Catalog, line: int) -> TestCommand:
    """The words after ``test``."""
    limits = catalog.limits
    positional, found = options(words, line, OPTIONS, FLAGS)
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
                    + suggest(word, sorted(catalog.test_ids), "see `qnn-migrate matrix show`"),
                    line,
                )
            tests.append(word)
        else:
            names = sorted(catalog.matrices)
            raise CommandError(
                f"{quote_untrusted(word)} is not a matrix, `auto` or a test id "
                "(`TestClass.test_name`)"
                + suggest(word, [*names, "auto"], "matrices: " + ", ".join(names)),
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
    socs = _socs(found.get("--soc", []), catalog, line)
    backend = _backend(found.get("--backend", []), socs, catalog, line)
    compare = _compare(found.get("--compare", []), line)
    # The merge base runs on the simulator tier, and programs compare within one tier.
    simulator = "--sim" in found or bool(compare)
    return TestCommand(
        matrices=tuple(matrices),
        tests=tuple(tests),
        auto=auto,
        socs=tuple(socs),
        backend=backend,
        seed=_seed(found.get("--seed", []), catalog, line),
        sha=parse_sha(found.get("--sha"), line),
        runs_on=RunsOn.SIMULATOR if simulator else RunsOn.PHONE,
        compare=compare,
        line=line,
    )


def _socs(values: list[str], catalog: Catalog, line: int) -> list[str]:
    socs: list[str] = []
    for value in values:
        for raw in split_values(value, "--soc", line):
            soc = raw.upper()
            if soc not in catalog.socs:
                raise CommandError(
                    f"unknown SoC {quote_untrusted(raw)}"
                    + suggest(soc, list(catalog.socs), "SoCs: " + ", ".join(catalog.lab_socs)),
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
    if len(socs) > catalog.limits.max_socs:
        raise CommandError(f"{len(socs)} SoCs; at most {catalog.limits.max_socs} per command", line)
    return socs


def _backend(values: list[str], socs: list[str], catalog: Catalog, line: int) -> str:
    if len(values) > 1:
        raise CommandError("`--backend` may be given once", line)
    backend = values[0].lower() if values else catalog.defaults.backend
    if backend not in catalog.backends:
        raise CommandError(
            f"unknown backend {quote_untrusted(values[0])}; backends: "
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
    return backend


def _seed(values: list[str], catalog: Catalog, line: int) -> int:
    if len(values) > 1:
        raise CommandError("`--seed` may be given once", line)
    if not values:
        return catalog.defaults.seed
    if not SEED_RE.match(values[0]) or int(values[0]) > catalog.limits.max_seed:
        raise CommandError(
            f"`--seed` must be a whole number from 0 to {catalog.limits.max_seed}, "
            f"got {quote_untrusted(values[0])}",
            line,
        )
    return int(values[0])


def _compare(values: list[str], line: int) -> str:
    if len(values) > 1:
        raise CommandError("`--compare` may be given once", line)
    compare = values[0].lower() if values else ""
    if values and compare not in COMPARE_WITH:
        raise CommandError(
            f"`--compare` takes only `base` (run the same shards at this PR's merge base on "
            f"the simulator and compare the programs with those), got {quote_untrusted(values[0])}"
            + suggest(compare, COMPARE_WITH, "write `--compare base`"),
            line,
        )
    return compare


def select(
    command: TestCommand, catalog: Catalog, changed_files: Sequence[str] | None = None
) -> tuple[Selection, ...]:
    """The tests the command names, resolving ``auto`` against the PR's changed files.

    A test in two selected matrices runs once, under the first.
    """
    names = list(command.matrices)
    if command.auto:
        files = list(changed_files or ())
        guarded = catalog.matrices_for_paths(files)
        if not guarded and not (names or command.tests):
            raise PlanError(
                f"`auto` found no matrix guarding the {len(files)} file(s) this PR changes. "
                "Name a matrix: " + ", ".join(f"`{m}`" for m in catalog.matrices) + "."
            )
        names += [m for m in guarded if m not in names]
    seen: set[str] = set()
    out: list[Selection] = []
    for name in names:
        tests = tuple(t for t in catalog.matrices[name].tests if t not in seen)
        seen.update(tests)
        if tests:
            out.append(Selection(name, tests))
    adhoc = tuple(t for t in command.tests if t not in seen)
    if adhoc:
        out.append(Selection(ADHOC, adhoc))
    return tuple(out)


def plan_command(
    command: TestCommand,
    catalog: Catalog,
    *,
    sha: str,
    pr: int | None,
    work: Mapping[str, Sequence[Selection]] | None = None,
    changed_files: Sequence[str] | None = None,
    merge_base: str | None = None,
    durations: Mapping[str, float] | None = None,
) -> Plan:
    """The shards of ``command`` at ``sha``: ``work`` (SoC -> selections; by default what it
    selects, on every SoC it names) on its tier, and, with ``merge_base`` (a commit, for
    ``--compare base``), the same work again there, on the simulator tier."""
    if work is None:
        selections = select(command, catalog, changed_files)
        work = {soc: list(selections) for soc in command.socs}
    at_head = PlanRequest(work, command.backend, command.seed, sha, pr, command.runs_on)
    requests = [at_head] if merge_base is None else [at_head, at_head.at_merge_base(merge_base)]
    return plan(*requests, catalog=catalog, durations=durations)


def plan_at_head(
    turn: Turn,
    pull: PullRequest,
    command: TestCommand,
    work: Mapping[str, Sequence[Selection]] | None = None,
) -> Plan:
    """``plan_command`` for the PR: its changed files (for ``auto``) and its merge base (for
    ``--compare base``) read from GitHub, the caps checked. PlanError: the reply."""
    catalog = turn.ctx.catalog
    files = turn.gw.changed_files(pull.number) if command.auto and work is None else None
    base = runs.merge_base(turn.gw, pull) if command.compare else None
    the_plan = plan_command(
        command,
        catalog,
        sha=pull.head_sha,
        pr=pull.number,
        work=work,
        changed_files=files,
        merge_base=base,
        durations=turn.ctx.durations,
    )
    check_limits(the_plan, catalog.limits)
    return the_plan


def handle(turn: Turn, command: TestCommand) -> Outcome:
    """Run ``command`` on the PR of ``turn``, as if its commenter had commented it.

    ``turn`` names the PR, the comment that asked (the run's identity: the results comment,
    the dispatch input ``comment_id`` and the report know the run by it) and the login that
    asked, who must be allowed to start runs; with ``command.sha`` unset the run is pinned
    to the PR's head only where ``auth.pin_problem`` allows it. The outcome says what was
    done (``dispatched``, ``refused``, ``failed``); replies, the results comment and the
    status are written as for a comment. A GitHub failure before the dispatch raises
    GatewayError with ``turn.started`` unset."""
    return _handle(turn, command, check_permission=True)


def handle_trusted(turn: Turn, command: TestCommand) -> Outcome:
    """``handle`` for a caller that is itself the authority to start runs, not a commenter:
    the migration campaign, a workflow of the default branch started by its schedule or by a
    maintainer (``bot/campaign/proof.py``). The commenter's permission check is skipped (the
    bot's own login is no collaborator); the pin (``command.sha`` must be the head), the
    plan, the caps and everything after are those of ``handle``."""
    return _handle(turn, command, check_permission=False)


def _handle(turn: Turn, command: TestCommand, *, check_permission: bool) -> Outcome:
    asked = command.canonical()
    admitted = runs.admit(turn, asked, check_permission=check_permission)
    if isinstance(admitted, Outcome):
        return admitted
    refused = runs.pin(turn, admitted, command.sha, asked)
    if refused is not None:
        return refused
    try:
        the_plan = plan_at_head(turn, admitted.pull, command)
    except PlanError as exc:
        return turn.refuse("refused", f"😕 {exc}")
    return runs.start(turn, admitted, the_plan, stored=command.to_dict(), asked=asked)


def _notes(catalog: Catalog) -> tuple[str, ...]:
    d = catalog.defaults
    return (
        "`auto` (the default) picks the matrices whose guarded files this PR changes.",
        "`--sim` runs the tests on the x86 HTP simulator tier instead of phones.",
        "`--compare base` also runs the same tests at this PR's merge base (on the simulator "
        "tier:\n  it implies `--sim`) and compares the PR's lowered programs with those instead "
        "of the\n  nightly's; pass/fail is judged as without it.",
        f"Defaults: `--soc {','.join(d.socs)} --backend {d.backend} --seed {d.seed}`.",
        f"Matrices: {', '.join(f'`{m}`' for m in catalog.matrices)}.",
        f"SoCs with phones: {', '.join(catalog.lab_socs)}. "
        f"Backends: {', '.join(catalog.backends)}.",
    )


def _load(doc: Mapping[str, Any]) -> TestCommand:
    return TestCommand.from_stored(doc)


VERB = Verb(
    NAME,
    parse,
    handle,
    usage=(
        "`/qnn test [MATRIX ...\\|auto\\|TEST_ID ...] [--soc SOC ...] [--backend B] [--seed N] "
        "[--sim] [--compare base]`"
    ),
    summary="run tests on phones at the PR's current head",
    notes=_notes,
    load=_load,
)
