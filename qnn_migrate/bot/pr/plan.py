"""Command x catalog -> shards for the device workflow's ``strategy.matrix`` (pure).

One shard is one SoC x one matrix x one chunk of that matrix's tests; chunks are balanced
by expected duration (``bot.balance``). Test ids named directly in a command form the
pseudo-matrix ``tests``. The plan crosses ``workflow_dispatch`` as the JSON list
``[{"shard": <model.Shard>, "runs_on": [labels]}, ...]``.

A command with ``--sim`` plans simulator shards: ``enable_x86_64`` set, ids starting
``sim-``, and the ``[simulator]`` runner labels, which no phone host carries. With
``--compare base`` the same selections are planned a second time at the PR's merge base:
simulator shards marked ``merge_base``, with that commit as their ``sha`` and ids starting
``sim-base-``.

``device_matrix`` is the other end: the device workflow's plan job checks the list that
crossed the dispatch against the catalog (every field a shard carries) before any of it
reaches a runner host.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qnn_migrate.bot import artifacts
from qnn_migrate.bot.catalog import OTHER_BACKENDS_DRIVER, Catalog, Limits
from qnn_migrate.bot.model import Shard
from qnn_migrate.bot.pr import balance
from qnn_migrate.bot.pr.commands import Command

ADHOC = "tests"  # the pseudo-matrix of test ids named in a comment
SIM_PREFIX = "sim-"
BASE_PREFIX = "sim-base-"  # shards of the PR's merge base (`--compare base`)
SHARD_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,99}$")
# A build folder the shard may name: relative, plain characters, no `..`, never an option.
BUILD_FOLDER_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./-]{0,99}$")
HOST_LOCAL_FIELDS = ("executorch_dir", "adb_host", "device", "device_pool")
# Where a shard's results come from; the report keeps them apart.
PHONE = "phone"
SIMULATOR = "x86 simulator"
COMPILE_ONLY = "compile only"


def mode_of(shard: Shard) -> str:
    """Whether ``shard`` ran on a phone, the x86 HTP simulator, or compiled only."""
    if shard.compile_only:
        return COMPILE_ONLY
    return SIMULATOR if shard.enable_x86_64 else PHONE


def baseline_key(shard: Shard) -> str:
    """The nightly history a shard's failures are compared with: its SoC's phones, or, for
    the simulator, a history of its own (``SM8650 (x86 simulator)``) that phone nights
    never write, so a simulator result is never judged against a phone's."""
    mode = mode_of(shard)
    return shard.soc if mode == PHONE else f"{shard.soc} ({mode})"


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
    mode = mode_of(shard)
    if mode == PHONE:
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
    return out + (["--enable_x86_64"] if mode == SIMULATOR else ["--compile_only"])


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


def select(
    command: Command, catalog: Catalog, changed_files: Sequence[str] | None = None
) -> tuple[Selection, ...]:
    """The tests a test command names, resolving ``auto`` against the PR's changed files.

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


def plan(
    work: Mapping[str, Sequence[Selection]],
    *,
    catalog: Catalog,
    backend: str,
    seed: int,
    sha: str,
    pr: int | None,
    durations: Mapping[str, float] | None = None,
    simulator: bool = False,
    merge_base: bool = False,
) -> Plan:
    """Shards for ``work`` (SoC -> selections), balanced by duration within each matrix.

    ``simulator``: shards for the x86 simulator tier instead of phones. ``merge_base``:
    shards of the PR's merge base (``sha``), on the simulator tier. An other-backends
    matrix (``modules`` in the catalog) is planned once, on the simulator tier's first SoC
    (its baseline's key), whatever SoCs the command names: no phone runs it."""
    other = {
        sel.matrix: sel
        for sels in work.values()
        for sel in sels
        if sel.matrix in catalog.matrices and catalog.matrices[sel.matrix].other_backends
    }
    sim = catalog.simulator
    simulator = simulator or merge_base
    if not other:
        return _shards(work, catalog, backend, seed, sha, pr, durations, simulator, merge_base)
    if sim is None or not sim.socs or not sim.runner_labels:
        raise PlanError(
            f"{', '.join(other)} runs on the simulator tier only, and this repository has none "
            "([simulator] in the bot's config, with its socs and runner_labels)"
        )
    kept = {soc: [s for s in sels if s.matrix not in other] for soc, sels in work.items()}
    kept = {soc: sels for soc, sels in kept.items() if sels}
    sim_backend = backend if backend in sim.backends else sim.backends[0]
    on_sim = {sim.socs[0]: list(other.values())}
    rest = (
        _shards(kept, catalog, backend, seed, sha, pr, durations, simulator, merge_base)
        if kept
        else None
    )
    sims = _shards(on_sim, catalog, sim_backend, seed, sha, pr, durations, True, merge_base)
    return Plan((rest.shards if rest else ()) + sims.shards)


def _shards(
    work: Mapping[str, Sequence[Selection]],
    catalog: Catalog,
    backend: str,
    seed: int,
    sha: str,
    pr: int | None,
    durations: Mapping[str, float] | None,
    simulator: bool,
    merge_base: bool = False,
) -> Plan:
    """The shards of ``work``, all on phones or all on the simulator tier."""
    per_shard = catalog.limits.tests_per_shard
    shards: list[PlannedShard] = []
    if simulator:
        check_simulator(catalog, tuple(work), backend)
    for soc, selections in work.items():
        labels = catalog.socs[soc].runner_labels
        prefix = ""
        if simulator and catalog.simulator is not None:
            labels = catalog.simulator.runner_labels
            prefix = BASE_PREFIX if merge_base else SIM_PREFIX
        for sel in selections:
            parts = max(1, math.ceil(len(sel.tests) / per_shard))
            chunks = balance.split(sel.tests, parts, durations)
            for k, chunk in enumerate(chunks, start=1):
                shard = Shard(
                    id=f"{prefix}{soc.lower()}-{sel.matrix}-{k}",
                    matrix=sel.matrix,
                    soc=soc,
                    backend=backend,
                    seed=seed,
                    tests=tuple(chunk),
                    sha=sha,
                    pr=pr,
                    build_folder=catalog.defaults.build_folder,
                    enable_x86_64=simulator,
                    merge_base=merge_base,
                    other_backends=sel.matrix in catalog.matrices
                    and catalog.matrices[sel.matrix].other_backends,
                )
                shards.append(PlannedShard(shard, labels))
    return Plan(tuple(shards))


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


def plan_command(
    command: Command,
    selections: Sequence[Selection],
    *,
    catalog: Catalog,
    sha: str,
    pr: int | None,
    durations: Mapping[str, float] | None = None,
    merge_base: str | None = None,
) -> Plan:
    """The same selections on every SoC the command names; with ``merge_base`` (a commit, for
    ``--compare base``), the same shards again at that commit, after the PR's."""
    work = {soc: list(selections) for soc in command.socs}
    return plan_at_head_and_base(
        work, command, catalog=catalog, sha=sha, pr=pr, durations=durations, merge_base=merge_base
    )


def plan_at_head_and_base(
    work: Mapping[str, Sequence[Selection]],
    command: Command,
    *,
    catalog: Catalog,
    sha: str,
    pr: int | None,
    durations: Mapping[str, float] | None,
    merge_base: str | None,
) -> Plan:
    """``work`` at the PR's ``sha`` on the command's tier, then (``merge_base``: a commit)
    the same work at the merge base, on the simulator tier."""
    at_head = plan(
        work,
        catalog=catalog,
        backend=command.backend,
        seed=command.seed,
        sha=sha,
        pr=pr,
        durations=durations,
        simulator=bool(getattr(command, "simulator", False)),
    )
    if merge_base is None:
        return at_head
    at_base = plan(
        work,
        catalog=catalog,
        backend=command.backend,
        seed=command.seed,
        sha=merge_base,
        pr=pr,
        durations=durations,
        merge_base=True,
    )
    return Plan(at_head.shards + at_base.shards)


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
    if shard.enable_x86_64:
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
    if not shard.enable_x86_64 and labels[2] != shard.soc.lower():
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
    ``--host=evil``, which the harness would parse); no compile-only shard; and no
    host-local field (paths, serials).
    """
    limits = catalog.limits
    problems: list[str] = []
    ids = [s.id for s in shards]
    if len(set(ids)) != len(ids):
        problems.append("shard ids must be unique")
    base_shas = sorted({s.sha for s in shards if s.merge_base})
    if len(base_shas) > 1:
        problems.append(
            f"the merge base's shards are at {len(base_shas)} commits; they share the PR's one"
        )
    include: list[dict[str, Any]] = []
    for s in shards:
        where = f"shard {s.id[:100]!r}"
        if not SHARD_ID_RE.match(s.id):
            problems.append(f"{where}: ids are lower-case letters, digits, '.', '_' and '-'")
        if s.merge_base:
            # `--compare base`: main's code at the PR's merge base, its own commit, run by the
            # same device job as the PR's shards (no token there either).
            if pr is None:
                problems.append(f"{where}: a merge base's shard belongs to a PR's run")
            if not s.enable_x86_64 or not s.id.startswith(BASE_PREFIX):
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
        if found is not None and found.other_backends and not s.enable_x86_64:
            problems.append(f"{where}: matrix {s.matrix} runs on the simulator tier only")
        if s.other_backends != bool(found is not None and found.other_backends):
            problems.append(
                f"{where}: other_backends is {str(s.other_backends).lower()}, but matrix "
                f"{s.matrix[:64]} is {'' if found is not None and found.other_backends else 'not '}"
                "an other-backends matrix"
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
        if s.compile_only:
            problems.append(
                f"{where}: compile-only shards are not run (ExecuTorch 1.5.1's verify_output "
                "ignores compile_only); use the simulator tier"
            )
        chosen = [f for f in HOST_LOCAL_FIELDS if getattr(s, f)]
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
