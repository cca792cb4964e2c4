"""Split tests into shards of near-equal expected duration (pure).

Longest-processing-time-first: sort by expected duration, give each test to the currently
lightest shard. Tests with no recorded duration get the median of the known ones, so a
new test neither vanishes from the estimate nor dominates it.
"""

from __future__ import annotations

import heapq
import statistics
from collections.abc import Mapping, Sequence

DEFAULT_DURATION_S = 60.0


def estimate(tests: Sequence[str], durations: Mapping[str, float]) -> dict[str, float]:
    """Expected seconds per test; unknown tests get the median of the known ones."""
    known = [durations[t] for t in tests if t in durations and durations[t] >= 0]
    fallback = statistics.median(known) if known else DEFAULT_DURATION_S
    return {t: float(durations.get(t, fallback)) for t in tests}


def split(
    tests: Sequence[str], parts: int, durations: Mapping[str, float] | None = None
) -> list[list[str]]:
    """Partition ``tests`` into at most ``parts`` non-empty lists of balanced duration.

    The result is deterministic for the same input. Within a shard, tests keep the order
    they had in ``tests``, so a shard's command line reads like the matrix it came from.
    """
    if parts < 1:
        raise ValueError("parts must be at least 1")
    unique = list(dict.fromkeys(tests))
    if not unique:
        return []
    parts = min(parts, len(unique))
    cost = estimate(unique, durations or {})
    position = {t: i for i, t in enumerate(unique)}
    heap: list[tuple[float, int]] = [(0.0, i) for i in range(parts)]
    buckets: list[list[str]] = [[] for _ in range(parts)]
    for test in sorted(unique, key=lambda t: (-cost[t], position[t])):
        load, index = heapq.heappop(heap)
        buckets[index].append(test)
        heapq.heappush(heap, (load + cost[test], index))
    for bucket in buckets:
        bucket.sort(key=position.__getitem__)
    return [b for b in buckets if b]


def makespan(buckets: Sequence[Sequence[str]], durations: Mapping[str, float]) -> float:
    """Expected wall time of the longest shard."""
    flat = [t for b in buckets for t in b]
    cost = estimate(flat, durations)
    return max((sum(cost[t] for t in b) for b in buckets), default=0.0)


def lower_bound(tests: Sequence[str], parts: int, durations: Mapping[str, float]) -> float:
    """No split can beat max(total / parts, longest single test)."""
    cost = estimate(list(dict.fromkeys(tests)), durations)
    if not cost:
        return 0.0
    return max(sum(cost.values()) / parts, max(cost.values()))
