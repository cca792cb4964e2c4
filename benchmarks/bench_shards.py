"""Shard planning with historical durations: the full suite over 8 phones of one SoC.

Target: the longest planned shard within 1.10x of the lower bound
max(total / phones, longest single test). The durations come the way the bot gets them:
earlier nights' JUnit XML (here synthesised, seeded, in the wrapper's format) read by
``bot.results`` and reduced to a median per test, then ``bot.balance.split``.

The test list is the real registry of ExecuTorch's QNN delegate tests
(bot/data/test_registry.json). The durations are synthetic: log-normal per test around a
per-class scale (operators tens of seconds, models a few minutes, the example scripts up
to twenty), with night-to-night noise. The script also reports the makespan the plan
would have had on a *new* night's durations, which is what a real run would see.

    python benchmarks/bench_shards.py [--phones 8] [--nights 5] [--seed 1126]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from xml.sax.saxutils import quoteattr

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from qnn_migrate.bot.lab import results  # noqa: E402
from qnn_migrate.bot.model import Shard  # noqa: E402
from qnn_migrate.bot.pr import balance  # noqa: E402

TARGET = 1.10
CLASS_SCALE_S = {  # median seconds per test of each class
    "TestQNNFloatingPointOperator": 25.0,
    "TestQNNQuantizedOperator": 40.0,
    "TestQNNFloatingPointModel": 90.0,
    "TestQNNQuantizedModel": 150.0,
    "TestQNNFloatingPointUtils": 30.0,
    "TestQNNQuantizedUtils": 45.0,
    "TestExampleLLMScript": 900.0,
    "TestExampleMultimodalityScript": 600.0,
    "TestExampleOssScript": 240.0,
    "TestExampleQaihubScript": 300.0,
    "TestExampleScript": 180.0,
    "TestUtilsScript": 60.0,
}


def registry_ids() -> list[str]:
    doc = json.loads(
        (ROOT / "qnn_migrate" / "bot" / "data" / "test_registry.json").read_text("utf-8")
    )
    return [f"{cls}.{m}" for cls, methods in doc["classes"].items() for m in methods]


def true_durations(tests: list[str], rng: random.Random) -> dict[str, float]:
    return {
        t: CLASS_SCALE_S.get(t.split(".")[0], 60.0) * rng.lognormvariate(0.0, 0.6) for t in tests
    }


def junit_night(base: dict[str, float], rng: random.Random) -> bytes:
    """One night's JUnit XML, as junit_wrapper writes it, with run-to-run noise."""
    cases = []
    for test_id, seconds in base.items():
        cls, name = test_id.split(".")
        took = seconds * rng.lognormvariate(0.0, 0.15)
        cases.append(
            f"<testcase classname={quoteattr('test_qnn_delegate.' + cls)} "
            f"name={quoteattr(name)} time={quoteattr(f'{took:.3f}')}/>"
        )
    body = "".join(cases)
    return (
        f'<?xml version="1.0" encoding="utf-8"?><testsuites tests="{len(cases)}" complete="true">'
        f'<testsuite name="test_qnn_delegate">{body}</testsuite></testsuites>'
    ).encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--phones", type=int, default=8)
    parser.add_argument("--nights", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1126)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    tests = registry_ids()
    base = true_durations(tests, rng)
    shard = Shard("nightly", "all", "SM8650", "htp", args.seed, tuple(tests), "0" * 40)

    t0 = time.perf_counter()
    history = [
        results.build(shard, results.parse_junit(junit_night(base, rng)))
        for _ in range(args.nights)
    ]
    t1 = time.perf_counter()
    durations = results.durations(history)
    t2 = time.perf_counter()
    plan = balance.split(tests, args.phones, durations)
    t3 = time.perf_counter()

    longest = balance.makespan(plan, durations)
    bound = balance.lower_bound(tests, args.phones, durations)
    ratio = longest / bound
    tonight = {t: d * rng.lognormvariate(0.0, 0.15) for t, d in base.items()}
    real_longest = balance.makespan(plan, tonight)
    real_bound = balance.lower_bound(tests, args.phones, tonight)

    print(
        f"tests: {len(tests)} (registry), phones: {args.phones}, nights of history: {args.nights}"
    )
    print(
        f"total expected: {sum(durations.values()) / 3600:.2f} h, longest test: {max(durations.values()):.0f} s"
    )
    print(f"shards: {[len(b) for b in plan]} tests")
    print(f"longest shard: {longest:.0f} s, lower bound: {bound:.0f} s")
    print(
        f"ratio (planned): {ratio:.4f}  target <= {TARGET:.2f}  {'OK' if ratio <= TARGET else 'MISSED'}"
    )
    print(f"ratio on a new night's durations: {real_longest / real_bound:.4f} (informational)")
    print(
        f"time: parse {args.nights} JUnit files {1000 * (t1 - t0):.1f} ms, "
        f"medians {1000 * (t2 - t1):.1f} ms, split {1000 * (t3 - t2):.1f} ms"
    )
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
