"""Duration-balanced shard splitting."""

from __future__ import annotations

import random

import pytest

from qnn_migrate.bot.pr.balance import estimate, lower_bound, makespan, split


def test_split_covers_every_test_once_and_keeps_order() -> None:
    tests = [f"TestA.test_{i}" for i in range(10)]
    parts = split(tests, 3, {t: float(i) for i, t in enumerate(tests)})
    flat = [t for p in parts for t in p]
    assert sorted(flat) == sorted(tests)
    for p in parts:
        assert p == sorted(p, key=tests.index)


def test_split_never_returns_empty_shards_and_dedupes() -> None:
    assert split(["TestA.test_a", "TestA.test_a"], 4) == [["TestA.test_a"]]
    assert split([], 3) == []
    with pytest.raises(ValueError, match="at least 1"):
        split(["TestA.test_a"], 0)


def test_unknown_durations_take_the_median_of_known_ones() -> None:
    cost = estimate(["a", "b", "c", "d"], {"a": 1.0, "b": 3.0, "c": 100.0})
    assert cost["d"] == 3.0


def test_split_is_close_to_the_lower_bound_on_realistic_durations() -> None:
    rng = random.Random(1126)
    tests = [f"TestQ.test_{i}" for i in range(559)]
    durations = {t: rng.lognormvariate(3.0, 1.0) for t in tests}
    parts = split(tests, 8, durations)
    assert makespan(parts, durations) <= 1.10 * lower_bound(tests, 8, durations)


def test_one_dominant_test_is_the_bound() -> None:
    durations = {"TestA.test_big": 1000.0, "TestA.test_s1": 1.0, "TestA.test_s2": 1.0}
    parts = split(list(durations), 2, durations)
    assert makespan(parts, durations) == lower_bound(list(durations), 2, durations) == 1000.0
