"""pr/summary.py: verdicts against the nightly baseline, and the state the commit status gets."""

from __future__ import annotations

from qnn_migrate_tests.bot.support import baseline_for, results_for
from qnn_migrate_tests.bot.support import planned_shards as _shards

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.model import Baseline, ShardResult, Status, TestResult, Verdict
from qnn_migrate.bot.pr.summary import summarize


def test_summary_verdicts(catalog: Catalog) -> None:
    shards = _shards(catalog)
    summary = summarize(results_for(shards), baseline_for(shards, catalog))
    verdicts = {(f.soc, f.result.status): f.verdict for f in summary.failures}
    assert verdicts[("SM8650", Status.FAIL)] is Verdict.NEW
    assert verdicts[("SM8650", Status.ERROR)] is Verdict.PRE_EXISTING
    assert verdicts[("SM8650", Status.MISSING)] is Verdict.FLAKY
    assert verdicts[("SM8750", Status.INFRA)] is Verdict.INFRA
    assert summary.state == "failure" and summary.headline == "1 new failure"
    assert (summary.ran, summary.expected) == (30, 32)


def test_verdict_states() -> None:
    from qnn_migrate.bot.model import Shard

    shard = Shard("s", "m", "SM8650", "htp", 1, ("TestA.test_a",), "a" * 40)

    def state(status: Status, history: list[Status] | None = None) -> str:
        result = ShardResult.complete(shard, [TestResult("TestA.test_a", status)])
        baseline = Baseline(history={("SM8650", "TestA.test_a"): tuple(history or [])})
        return summarize([result], baseline).state

    assert state(Status.PASS) == "success"
    assert state(Status.SKIP) == "success"
    assert state(Status.FAIL) == "failure"  # no baseline: UNCLASSIFIED blocks
    assert state(Status.FAIL, [Status.FAIL]) == "success"  # pre-existing
    assert state(Status.INFRA) == "error"
    assert state(Status.MISSING, [Status.PASS]) == "failure"
