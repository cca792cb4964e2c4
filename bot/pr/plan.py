"""Command x catalog -> shards for the device workflow's ``strategy.matrix`` (pure).

One shard is one SoC x one matrix x one chunk of that matrix's tests; chunks are balanced
by expected duration (``bot.balance``). Test ids named directly in a command form the
pseudo-matrix ``tests``. The plan crosses ``workflow_dispatch`` as the JSON list
``[{"shard": <model.Shard>, "runs_on": [labels]}, ...]``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qnn_migrate.bot.catalog import Catalog, Limits
from qnn_migrate.bot.model import ModelError, Shard
from qnn_migrate.bot.pr import balance
from qnn_migrate.bot.pr.commands import Command

ADHOC = "tests"  # the pseudo-matrix of test ids named in a comment


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

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> PlannedShard:
        if not isinstance(doc, Mapping) or set(doc) != {"shard", "runs_on"}:
            raise ModelError("a planned shard is {'shard': {...}, 'runs_on': [...]}")
        labels = doc["runs_on"]
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
            raise ModelError("'runs_on' must be a list of strings")
        return cls(Shard.from_dict(doc["shard"]), tuple(labels))


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
        """Read the dispatch input back; raises ModelError on any malformed shard."""
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ModelError(f"shards input is not JSON: {exc}") from exc
        if not isinstance(doc, list) or not doc:
            raise ModelError("shards input must be a non-empty JSON list")
        shards = tuple(PlannedShard.from_dict(d) for d in doc)
        ids = [p.shard.id for p in shards]
        if len(set(ids)) != len(ids):
            raise ModelError("shard ids must be unique")
        return cls(shards)


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
) -> Plan:
    """Shards for ``work`` (SoC -> selections), balanced by duration within each matrix."""
    per_shard = catalog.limits.tests_per_shard
    shards: list[PlannedShard] = []
    for soc, selections in work.items():
        labels = catalog.socs[soc].runner_labels
        for sel in selections:
            parts = max(1, math.ceil(len(sel.tests) / per_shard))
            chunks = balance.split(sel.tests, parts, durations)
            for k, chunk in enumerate(chunks, start=1):
                shard = Shard(
                    id=f"{soc.lower()}-{sel.matrix}-{k}",
                    matrix=sel.matrix,
                    soc=soc,
                    backend=backend,
                    seed=seed,
                    tests=tuple(chunk),
                    sha=sha,
                    pr=pr,
                    build_folder=catalog.defaults.build_folder,
                )
                shards.append(PlannedShard(shard, labels))
    return Plan(tuple(shards))


def plan_command(
    command: Command,
    selections: Sequence[Selection],
    *,
    catalog: Catalog,
    sha: str,
    pr: int | None,
    durations: Mapping[str, float] | None = None,
) -> Plan:
    """The same selections on every SoC the command names."""
    work = {soc: list(selections) for soc in command.socs}
    return plan(
        work,
        catalog=catalog,
        backend=command.backend,
        seed=command.seed,
        sha=sha,
        pr=pr,
        durations=durations,
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
