"""Benchmark: plan and render the full QNN delegate suite on 20 SoCs (target: under 0.5 s together).

    python benchmarks/bench_bot.py

Plans every registry test (564 in executorch 1.5.1) on 20 SoCs into shards, builds one
result per test (a mix of statuses, some against a nightly baseline), then summarizes and
renders the results comment, folded under GitHub's 65,536-character limit. Prints the
best of several runs for each step, and the ratio to the target.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from qnn_migrate.bot import catalog as catalog_mod
from qnn_migrate.bot.model import Baseline, ShardResult, Status, TestResult
from qnn_migrate.bot.pr.plan import PlanRequest, Selection, plan
from qnn_migrate.bot.pr.render import Links, render_report
from qnn_migrate.bot.pr.state import Phase, RunState
from qnn_migrate.bot.pr.summary import summarize

TARGET_S = 0.5
SOCS = 20
REPEATS = 5
SHA = "ab" * 20


def main() -> int:
    catalog = catalog_mod.load()
    tests = catalog.registry.ids()
    socs = list(catalog.socs)[:SOCS]
    statuses = [Status.PASS] * 17 + [Status.FAIL, Status.SKIP, Status.INFRA]
    baseline = Baseline(
        sha=SHA,
        history={(s, t): (Status.PASS, Status.FAIL) for s in socs for t in tests[::7]},
    )
    state = RunState(Phase.REPORTED, 1, SHA, {}, "maint", 1)
    links = Links("https://github.com/pytorch/executorch", "https://github.com/x/y/actions/runs/1")

    best_plan = best_render = float("inf")
    body = ""
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        the_plan = plan(
            PlanRequest({s: [Selection("suite", tests)] for s in socs}, "htp", 1126, SHA, 1),
            catalog=catalog,
        )
        t1 = time.perf_counter()
        results = [
            ShardResult.complete(
                p.shard,
                [
                    TestResult(t, statuses[(i * 7 + j) % len(statuses)], 2.0, "AssertionError: x")
                    for j, t in enumerate(p.shard.tests)
                ],
                log_url=f"{links.repo_url}/actions/runs/1/job/{i}",
            )
            for i, p in enumerate(the_plan.shards)
        ]
        t2 = time.perf_counter()
        summary = summarize(results, baseline)
        body = render_report(
            summary, state, links, catalog, baseline_label="nightly", command_text="/qnn test"
        )
        t3 = time.perf_counter()
        best_plan = min(best_plan, t1 - t0)
        best_render = min(best_render, t3 - t2)

    total = best_plan + best_render
    print(f"suite: {len(tests)} tests x {len(socs)} SoCs = {the_plan.expected} test runs")
    print(f"plan:   {best_plan:.3f} s ({len(the_plan.shards)} shards)")
    print(f"render: {best_render:.3f} s (summary + comment, {len(body.encode())} bytes)")
    print(f"total:  {total:.3f} s; target {TARGET_S} s; ratio {total / TARGET_S:.2f} of target")
    return 0 if total < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
