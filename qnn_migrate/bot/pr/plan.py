"""Command x catalog -> shards for the device workflow's ``strategy.matrix`` (pure).

One shard is one SoC x one matrix x one chunk of that matrix's tests; chunks are balanced
by expected duration (``bot.balance``). Test ids named directly in a command form the
pseudo-matrix ``tests``. The plan crosses ``workflow_dispatch`` as the JSON list
``[{"shard": <model.Shard>, "runs_on": [labels]}, ...]``.

The planner answers ``PlanRequest``s: selections per SoC, at one commit (``At``), in one
place (``RunsOn``). A simulator request makes shards that run on the x86 simulator, with
ids starting ``sim-`` and the ``[simulator]`` runner labels, which no phone host carries.
``--compare base`` is two requests: the PR's head, then the same selections at the PR's
merge base (``At.MERGE_BASE``, on the simulator tier, ids starting ``sim-base-``).

``device_matrix`` is the other end: the device workflow's plan job checks the list that
crossed the dispatch against the catalog (every field a shard carries) before any of it
reaches a runner host.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from qnn_migrate.bot import artifacts
from qnn_migrate.bot.catalog import OTHER_BACKENDS_DRIVER, Catalog, Limits
from qnn_migrate.bot.model import HOST_FIELDS, At, HostShard, RunsOn, Shard, Suite
from qnn_migrate.bot.pr import balance

ADHOC = "tests"  # the pseudo-matrix of test ids named in a comment
SIM_PREFIX = "sim-"
BASE_PREFIX = "sim-base-"  # shards of the PR's merge base (`--compare base`)
SHARD_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,99}$")
# A build folder the shard may name: relative, plain characters, no `..`, never an option.
BUILD_FOLDER_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./-]{0,99}$")


def baseline_key(shard: Shard) -> str:
    """The nightly history a shard's failures are compared with: its SoC's phones, or, for
    the simulator, a history of its own (``SM8650 (x86 simulator)``) that phone nights
    never write, so a simulator result is never judged against a phone's."""
    where = shard.runs_on
    return shard.soc if where is RunsOn.PHONE else f"{shard.soc} ({where.label})"


def repro_argv(catalog: Catalog, shard: Shard, tests: Sequence[str]) -> list[str]:
    """The command that reruns ``tests`` of ``shard`` locally: its mode and backend, the
    adb flags (as $ADB_HOST/$SERIAL) only when it ran on a phone."""
    argv = catalog.command_argv(
        list(tests),
        soc=shard.soc,
        backend=shard.backend,
        seed=shard.seed,
        host="$ADB_HOST",
        device="$SERIAL",
        build_folder=shard.build_folder,
        matrix=shard.matrix,
    )
    if str(OTHER_BACKENDS_DRIVER) in argv:  # this host's path means nothing where it reruns
        at = argv.index(str(OTHER_BACKENDS_DRIVER))
        argv[at : at + 1] = ["-m", "qnn_migrate.bot.lab.other_backends"]
    if shard.runs_on is RunsOn.PHONE:
        return argv
    out: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word in ("--host", "--device"):
            skip = True
        else:
            out.append(word)
    return out + (["--enable_x86_64"] if shard.runs_on is RunsOn.SIMULATOR else ["--compile_only"])


class PlanError(ValueError):
    """A command that cannot be turned into device work; the text is the reply."""


@dataclass(frozen=True)
class Selection:
    """Tests of one matrix (or of ``tests``, the ids named directly) to run."""

    matrix: str
    tests: tuple[str, ...]


@dataclass(frozen=True)
class PlannedShard:
    """A shard and the ``runs-on`` labels of the runners with its SoC's phone."""

    shard: Shard
    runs_on: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"shard": self.shard.to_dict(), "runs_on": list(self.runs_on)}


@dataclass(frozen=True)
class Plan:
    """All shards of one device run, pinned to one commit."""

    shards: tuple[PlannedShard, ...]

    @property
    def expected(self) -> int:
        return sum(len(p.shard.tests) for p in self.shards)

    @property
    def socs(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.shard.soc for p in self.shards))

    @property
    def matrices(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.shard.matrix for p in self.shards))

    def to_json(self) -> str:
        return json.dumps([p.to_dict() for p in self.shards], separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Plan:
        """Read the dispatch input back (``artifacts``); raises ModelError on any problem."""
        entries = artifacts.parse_planned(text, "shards input")
        return cls(tuple(PlannedShard(e.shard, e.runs_on) for e in entries))


@dataclass(frozen=True)
class PlanRequest:
    """One question for the planner: ``work`` (SoC -> selections) at one commit, in one place.

    The PR's head and its merge base (``--compare base``) are two requests (``at_merge_base``)."""

    work: Mapping[str, Sequence[Selection]]
    backend: str
    seed: int
    sha: str
    pr: int | None
    runs_on: RunsOn = RunsOn.PHONE
    at: At = At.HEAD

    def __post_init__(self) -> None:
        if self.runs_on is RunsOn.COMPILE_ONLY:
            raise ValueError(
                "compile-only shards are not planned (ExecuTorch 1.5.1 cannot run them)"
            )
        if self.at is At.MERGE_BASE and self.runs_on is not RunsOn.SIMULATOR:
            raise ValueError("a merge base's shards run on the simulator tier")

    def at_merge_base(self, merge_base: str) -> PlanRequest:
        """The same work at the PR's merge base, on the simulator tier (``--compare base``)."""
        return replace(self, sha=merge_base, at=At.MERGE_BASE, runs_on=RunsOn.SIMULATOR)


def plan(
    *requests: PlanRequest,
    catalog: Catalog,
    durations: Mapping[str, float] | None = None,
) -> Plan:
    """The shards of every request, in order, balanced by duration within each matrix.

    An other-backends matrix (``modules`` in the catalog) is planned once per request, on
    the simulator tier's first SoC (its baseline's key), whatever SoCs the request names:
    no phone runs it."""
    shards: list[PlannedShard] = []
    for request in requests:
        shards += _plan_one(request, catalog, durations)
    return Plan(tuple(shards))


def _plan_one(
    request: PlanRequest, catalog: Catalog, durations: Mapping[str, float] | None
) -> list[PlannedShard]:
    other = {
        sel.matrix: sel
        for sels in request.work.values()
        for sel in sels
        if sel.matrix in catalog.matrices and catalog.matrices[sel.matrix].other_backends
    }
    if not other:
        return _shards(request, catalog, durations)
    sim = catalog.simulator
    if sim is None or not sim.socs or not sim.runner_labels:
        raise PlanError(
            f"{', '.join(other)} runs on the simulator tier only, and this repository has none "
            "([simulator] in the bot's config, with its socs and runner_labels)"
        )
    kept = {soc: [s for s in sels if s.matrix not in other] for soc, sels in request.work.items()}
    kept = {soc: sels for soc, sels in kept.items() if sels}
    rest = _shards(replace(request, work=kept), catalog, durations) if kept else []
    on_sim = replace(
        request,
        work={sim.socs[0]: list(other.values())},
        backend=request.backend if request.backend in sim.backends else sim.backends[0],
        runs_on=RunsOn.SIMULATOR,
    )
    return rest + _shards(on_sim, catalog, durations)


def _shards(
    request: PlanRequest, catalog: Catalog, durations: Mapping[str, float] | None
) -> list[PlannedShard]:
    """The shards of one request, all on phones or all on the simulator tier."""
    per_shard = catalog.limits.tests_per_shard
    shards: list[PlannedShard] = []
    simulator = request.runs_on is RunsOn.SIMULATOR
    if simulator:
        check_simulator(catalog, tuple(request.work), request.backend)
    for soc, selections in request.work.items():
        labels = catalog.socs[soc].runner_labels
        prefix = ""
        if simulator and catalog.simulator is not None:
            labels = catalog.simulator.runner_labels
            prefix = BASE_PREFIX if request.at is At.MERGE_BASE else SIM_PREFIX
        for sel in selections:
            parts = max(1, math.ceil(len(sel.tests) / per_shard))
            chunks = balance.split(sel.tests, parts, durations)
            found = catalog.matrices.get(sel.matrix)
            suite = Suite.OTHER_BACKENDS if found and found.other_backends else Suite.QNN
            for k, chunk in enumerate(chunks, start=1):
                shard = Shard(
                    id=f"{prefix}{soc.lower()}-{sel.matrix}-{k}",
                    matrix=sel.matrix,
                    soc=soc,
                    backend=request.backend,
                    seed=request.seed,
                    tests=tuple(chunk),
                    sha=request.sha,
                    pr=request.pr,
                    build_folder=catalog.defaults.build_folder,
                    runs_on=request.runs_on,
                    at=request.at,
                    suite=suite,
                )
                shards.append(PlannedShard(shard, labels))
    return shards


def check_simulator(catalog: Catalog, socs: Sequence[str], backend: str) -> None:
    """Refuse a simulator plan the tier cannot run, saying what it can."""
    sim = catalog.simulator
    if sim is None or not sim.runner_labels:
        raise PlanError("this repository has no simulator tier ([simulator] in the bot's config)")
    other = [s for s in socs if s not in sim.socs]
    if other:
        raise PlanError(
            f"the simulator tier runs SoC(s) {', '.join(sim.socs)}, not {', '.join(other)}"
        )
    if backend not in sim.backends:
        raise PlanError(
            f"the simulator tier runs backend(s) {', '.join(sim.backends)}, not {backend}"
        )


def check_limits(p: Plan, limits: Limits) -> None:
    """Refuse plans too large for one comment-triggered run, saying what to narrow."""
    if not p.shards:
        raise PlanError("the command selects no tests")
    if p.expected > limits.max_test_runs:
        raise PlanError(
            f"the command asks for {p.expected} test runs (tests x SoCs); at most "
            f"{limits.max_test_runs}. Name fewer matrices or SoCs."
        )
    if len(p.shards) > limits.max_shards:
        raise PlanError(f"the command needs {len(p.shards)} shards; at most {limits.max_shards}")
    size = len(p.to_json())
    if size > limits.max_dispatch_chars:
        raise PlanError(
            f"the shard list is {size} characters, over the {limits.max_dispatch_chars} "
            "that fit in a workflow_dispatch. Name fewer tests or SoCs."
        )


def _runner_label(shard: Shard, catalog: Catalog, where: str, problems: list[str]) -> str:
    """The third runs-on label of the shard's runners; checks they are [self-hosted, qnn, X]."""
    if shard.runs_on is RunsOn.SIMULATOR:
        sim = catalog.simulator
        if sim is None:
            problems.append(f"{where}: a simulator shard, but there is no [simulator] tier")
            return ""
        if shard.soc not in sim.socs:
            problems.append(f"{where}: SoC {shard.soc} is not run on the simulator tier")
        if shard.backend not in sim.backends:
            problems.append(f"{where}: backend {shard.backend} is not run on the simulator tier")
        if not shard.id.startswith(SIM_PREFIX):
            problems.append(f"{where}: simulator shard ids start with {SIM_PREFIX!r}")
        labels = sim.runner_labels
    else:
        soc = catalog.socs.get(shard.soc)
        if soc is None:
            problems.append(f"{where}: SoC {shard.soc} is not in the catalog")
            return ""
        if shard.backend not in soc.backends:
            problems.append(f"{where}: backend {shard.backend!r} is not one of {shard.soc}'s")
        if shard.id.startswith(SIM_PREFIX):
            problems.append(f"{where}: a phone shard's id must not start with {SIM_PREFIX!r}")
        labels = soc.runner_labels
    if len(labels) != 3 or tuple(labels[:2]) != ("self-hosted", "qnn"):
        problems.append(
            f"{where}: its runners are labelled {list(labels)}; the device workflow runs on "
            "[self-hosted, qnn, <label>]"
        )
        return ""
    if shard.runs_on is not RunsOn.SIMULATOR and labels[2] != shard.soc.lower():
        problems.append(f"{where}: SoC {shard.soc} has runner_labels {list(labels)}")
    return labels[2]


def device_matrix(
    shards: Sequence[Shard],
    catalog: Catalog,
    *,
    sha: str | None = None,
    pr: int | None = None,
) -> dict[str, Any]:
    """The device job's ``strategy.matrix`` for ``shards``, or ValueError naming every problem.

    The shard list crossed a ``workflow_dispatch``: whoever can dispatch can write any of
    it. Every field a runner host acts on is checked here against the catalog: one commit
    and one PR; ids usable as artifact names; a known SoC or the simulator tier, whose
    runners carry ``[self-hosted, qnn, <label>]``; the backend, the seed, the timeouts and
    every test id; a build folder that is a plain relative path (never an option such as
    ``--host=evil``, which the harness would parse); no compile-only shard; and a shard as
    planned, never as a host ran it (``HostShard``: paths, serials).
    """
    limits = catalog.limits
    problems: list[str] = []
    ids = [s.id for s in shards]
    if len(set(ids)) != len(ids):
        problems.append("shard ids must be unique")
    base_shas = sorted({s.sha for s in shards if s.at is At.MERGE_BASE})
    if len(base_shas) > 1:
        problems.append(
            f"the merge base's shards are at {len(base_shas)} commits; they share the PR's one"
        )
    include: list[dict[str, Any]] = []
    for s in shards:
        where = f"shard {s.id[:100]!r}"
        if not SHARD_ID_RE.match(s.id):
            problems.append(f"{where}: ids are lower-case letters, digits, '.', '_' and '-'")
        if s.at is At.MERGE_BASE:
            # `--compare base`: main's code at the PR's merge base, its own commit, run by the
            # same device job as the PR's shards (no token there either).
            if pr is None:
                problems.append(f"{where}: a merge base's shard belongs to a PR's run")
            if s.runs_on is not RunsOn.SIMULATOR or not s.id.startswith(BASE_PREFIX):
                problems.append(
                    f"{where}: a merge base's shard runs on the simulator tier, its id starting "
                    f"with {BASE_PREFIX!r}"
                )
        elif s.id.startswith(BASE_PREFIX):
            problems.append(f"{where}: only the merge base's shards start with {BASE_PREFIX!r}")
        elif sha is not None and s.sha != sha:
            problems.append(f"{where}: pinned to {s.sha[:12]}, not the run's {sha[:12]}")
        if pr is not None and s.pr != pr:
            problems.append(f"{where}: for PR {s.pr}, not {pr}")
        label = _runner_label(s, catalog, where, problems)
        if s.backend not in catalog.backends:
            problems.append(f"{where}: unknown backend {s.backend[:20]!r}")
        if s.matrix != ADHOC and s.matrix not in catalog.matrices:
            problems.append(f"{where}: unknown matrix {s.matrix[:64]!r}")
        unknown = [t for t in s.tests if not catalog.knows(s.matrix, t)]
        if unknown:
            problems.append(
                f"{where}: test id(s) not in the registry: {', '.join(u[:120] for u in unknown[:5])}"
            )
        found = catalog.matrices.get(s.matrix)
        other = found is not None and found.other_backends
        if other and s.runs_on is not RunsOn.SIMULATOR:
            problems.append(f"{where}: matrix {s.matrix} runs on the simulator tier only")
        if (s.suite is Suite.OTHER_BACKENDS) != other:
            problems.append(
                f"{where}: its suite is {s.suite.value}, but matrix {s.matrix[:64]} is "
                f"{'' if other else 'not '}an other-backends matrix"
            )
        if len(s.tests) > limits.max_test_runs:
            problems.append(f"{where}: {len(s.tests)} tests, over {limits.max_test_runs}")
        if not 0 <= s.seed <= limits.max_seed:
            problems.append(f"{where}: seed must be between 0 and {limits.max_seed}")
        folder = s.build_folder
        if not BUILD_FOLDER_RE.match(folder) or ".." in folder.split("/") or folder.startswith("-"):
            problems.append(
                f"{where}: build_folder {folder[:40]!r} must be a plain relative path such as "
                f"{catalog.defaults.build_folder!r}"
            )
        if not limits.min_timeout_s <= s.timeout_s <= limits.max_timeout_s:
            problems.append(
                f"{where}: timeout_s must be between {limits.min_timeout_s} and "
                f"{limits.max_timeout_s}"
            )
        if not limits.min_per_test_timeout_s <= s.per_test_timeout_s <= s.timeout_s:
            problems.append(
                f"{where}: per_test_timeout_s must be between {limits.min_per_test_timeout_s} "
                "and timeout_s"
            )
        if s.runs_on is RunsOn.COMPILE_ONLY:
            problems.append(
                f"{where}: compile-only shards are not run (ExecuTorch 1.5.1's verify_output "
                "ignores compile_only); use the simulator tier"
            )
        chosen = [f for f in HOST_FIELDS if getattr(s, f)] if isinstance(s, HostShard) else []
        if chosen:
            problems.append(f"{where}: {', '.join(chosen)} belong to the runner host, not the plan")
        include.append({"id": s.id, "soc": s.soc.lower(), "label": label, "shard": s.to_dict()})
    if not shards:
        problems.append("no shards")
    if len(shards) > limits.max_shards:
        problems.append(f"{len(shards)} shards, over the limit of {limits.max_shards}")
    if problems:
        raise ValueError("; ".join(problems))
    return {"include": include}
