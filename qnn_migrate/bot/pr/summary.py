"""Shard results x nightly baseline -> per-SoC x matrix counts, failures and one verdict (pure).

The overall verdict is what the commit status carries:

- ``success``: every expected test passed or skipped, or every failure was already failing
  (PRE-EXISTING) or flaky in the latest nightly on the same SoC;
- ``failure``: a FAIL, ERROR or MISSING test that is NEW, or UNCLASSIFIED (no baseline);
- ``error``: nothing new failed, but some tests could not run (INFRA), so the run proves
  nothing about them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from qnn_migrate.bot.model import Baseline, RunsOn, Shard, ShardResult, Status, TestResult, Verdict
from qnn_migrate.bot.pr.plan import baseline_key


@dataclass(frozen=True)
class Failure:
    """One failing test on one SoC, with how it compares with the nightly there."""

    soc: str
    matrix: str
    shard_id: str
    result: TestResult
    verdict: Verdict
    log_url: str | None
    runs_on: RunsOn = RunsOn.PHONE
    shard: Shard | None = None


@dataclass(frozen=True)
class Group:
    """All results of one matrix on one SoC (possibly several shards)."""

    soc: str
    matrix: str
    results: tuple[TestResult, ...]
    log_urls: tuple[str, ...]
    devices: tuple[str, ...] = ()  # the phones that produced the results, as reported
    retried: int = 0  # shards that needed a second attempt (an INFRA failure on a phone)
    runs_on: RunsOn = RunsOn.PHONE  # never mixed in one group

    @property
    def expected(self) -> int:
        return len(self.results)

    @property
    def ran(self) -> int:
        return sum(r.status not in (Status.MISSING, Status.INFRA) for r in self.results)

    def count(self, status: Status) -> int:
        return sum(r.status is status for r in self.results)

    @property
    def ok(self) -> bool:
        return all(r.status in (Status.PASS, Status.SKIP) for r in self.results)


@dataclass(frozen=True)
class Summary:
    """Everything the report shows and the status says."""

    groups: tuple[Group, ...]
    failures: tuple[Failure, ...]
    expected: int
    ran: int
    state: str  # success | failure | error
    headline: str

    def count(self, status: Status) -> int:
        return sum(g.count(status) for g in self.groups)

    def verdicts(self, verdict: Verdict) -> int:
        return sum(f.verdict is verdict for f in self.failures)

    @property
    def description(self) -> str:
        """The commit status text (GitHub keeps 140 characters)."""
        text = f"ran {self.ran} of {self.expected}; {self.headline}"
        return text if len(text) <= 140 else text[:139] + "…"


def summarize(results: Sequence[ShardResult], baseline: Baseline) -> Summary:
    """Group shard results by SoC x matrix x where they ran (in shard order) and judge every failure.

    Simulator and compile-only results form groups of their own and are judged against
    their own history (``plan.baseline_key``), never against phones'."""
    order: list[tuple[str, str, RunsOn]] = []
    collected: dict[tuple[str, str, RunsOn], list[ShardResult]] = {}
    failures: list[Failure] = []
    for sr in results:
        key = (sr.shard.soc, sr.shard.matrix, sr.shard.runs_on)
        if key not in collected:
            order.append(key)
            collected[key] = []
        collected[key].append(sr)
        for r in sr.results:
            if r.status.is_failure:
                failures.append(
                    Failure(
                        soc=sr.shard.soc,
                        matrix=sr.shard.matrix,
                        shard_id=sr.shard.id,
                        result=r,
                        verdict=baseline.verdict(baseline_key(sr.shard), r),
                        log_url=sr.log_url,
                        runs_on=sr.shard.runs_on,
                        shard=sr.shard,
                    )
                )
    groups = tuple(
        Group(
            soc=soc,
            matrix=matrix,
            results=tuple(r for sr in collected[(soc, matrix, where)] for r in sr.results),
            log_urls=tuple(sr.log_url for sr in collected[(soc, matrix, where)] if sr.log_url),
            devices=tuple(
                dict.fromkeys(sr.device for sr in collected[(soc, matrix, where)] if sr.device)
            ),
            retried=sum(sr.attempts > 1 for sr in collected[(soc, matrix, where)]),
            runs_on=where,
        )
        for soc, matrix, where in order
    )
    expected = sum(g.expected for g in groups)
    ran = sum(g.ran for g in groups)
    blocking = [f for f in failures if f.verdict in (Verdict.NEW, Verdict.UNCLASSIFIED)]
    infra = [f for f in failures if f.verdict is Verdict.INFRA]
    known = [f for f in failures if f.verdict in (Verdict.PRE_EXISTING, Verdict.FLAKY)]
    if blocking:
        new = sum(f.verdict is Verdict.NEW for f in blocking)
        unclassified = len(blocking) - new
        parts = [f"{new} new failure{'s' * (new != 1)}"] if new else []
        if unclassified:
            parts.append(f"{unclassified} failing with no nightly baseline")
        state, headline = "failure", ", ".join(parts)
    elif infra:
        state = "error"
        headline = f"{len(infra)} test{'s' * (len(infra) != 1)} could not run (infrastructure)"
    elif known:
        state = "success"
        headline = f"no new failures ({len(known)} also failing or flaky in the nightly)"
    elif expected == 0:
        state, headline = "error", "no tests were expected"
    else:
        state, headline = "success", "all passed"
    return Summary(
        groups=groups,
        failures=tuple(failures),
        expected=expected,
        ran=ran,
        state=state,
        headline=headline,
    )
