"""Deterministic shard results and a baseline for report tests (shared by render and e2e tests)."""

from __future__ import annotations

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.model import Baseline, Shard, ShardResult, Status, TestResult

SHA = "c0ffee" + "0" * 34
NIGHTLY = "babe" + "1" * 36
RUN = "https://github.com/qnn-lab/executorch/actions/runs/4242"


def outcomes(shard: Shard) -> list[TestResult]:
    """A spread of statuses, fixed by position and SoC, so the golden file is stable."""
    out = []
    first = shard.id.endswith("-1")
    for i, test in enumerate(shard.tests):
        status = Status.PASS
        message = ""
        if not first:
            pass
        elif shard.soc == "SM8650" and i == 0:
            status, message = (
                Status.FAIL,
                "AssertionError: Tensor-likes are not close! | <b>@here</b>",
            )
        elif shard.soc == "SM8650" and i == 1:
            status, message = Status.ERROR, "RuntimeError: QNN graph finalize failed"
        elif shard.soc == "SM8750" and i == 0:
            status, message = Status.INFRA, "adb command failed: device offline"
        elif shard.soc == "SM8750" and i == 2:
            status, message = Status.SKIP, "needs a dataset"
        out.append(TestResult(test, status, 1.5 + i, message))
    if first and shard.soc == "SM8650" and len(out) > 3:
        out.pop(3)  # never reported: MISSING
    return out


def results_for(shards: list[Shard]) -> list[ShardResult]:
    return [
        ShardResult.complete(s, outcomes(s), device="serial-1", log_url=f"{RUN}/job/{i}")
        for i, s in enumerate(shards, start=1)
    ]


def baseline_for(shards: list[Shard], catalog: Catalog) -> Baseline:
    """Nightly history: the ERROR test already failed; the MISSING one flips (flaky)."""
    history: dict[tuple[str, str], list[Status]] = {}
    for s in shards:
        for t in s.tests:
            history[(s.soc, t)] = [Status.PASS, Status.PASS]
    sm8650 = [s for s in shards if s.soc == "SM8650"]
    if sm8650:
        tests = sm8650[0].tests
        history[("SM8650", tests[1])] = [Status.FAIL, Status.FAIL]
        if len(tests) > 3:
            history[("SM8650", tests[3])] = [Status.PASS, Status.FAIL, Status.PASS]
    return Baseline(sha=NIGHTLY, history={k: tuple(v) for k, v in history.items()})
