"""model.py, the shared bot data model: shard/result JSON round trips, completeness, baseline
verdicts, and reconciling the planned shards with the results that came back."""

from __future__ import annotations

import json

import pytest

from qnn_migrate.bot.model import (
    Baseline,
    ModelError,
    Shard,
    ShardResult,
    Status,
    TestResult,
    Verdict,
    reconcile,
)

from .support import tonight_results

SHA = "0123456789abcdef0123456789abcdef01234567"
T1 = "TestQNNFloatingPointOperator.test_qnn_backend_conv1d"
T2 = "TestQNNQuantizedOperator.test_qnn_backend_conv1d"
T3 = "TestQNNQuantizedOperator.test_qnn_backend_linear"
FP = "TestQNNFloatingPointOperator"
P, INF = Status.PASS, Status.INFRA


def make_shard(**overrides: object) -> Shard:
    doc: dict[str, object] = {
        "id": "canonicalize_conv-SM8650-0",
        "matrix": "canonicalize_conv",
        "soc": "SM8650",
        "backend": "htp",
        "seed": 1126,
        "tests": [T1, T2, T3],
        "sha": SHA,
    }
    doc.update(overrides)
    return Shard.from_dict(doc)


def test_shard_json_round_trip_keeps_every_field() -> None:
    shard = make_shard(pr=7, device_pool=["a", "b"], compile_only=True, timeout_s=5)
    again = Shard.from_dict(json.loads(json.dumps(shard.to_dict())))
    assert again == shard
    assert again.device_pool == ("a", "b") and again.compile_only and again.timeout_s == 5


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"tests": ["TestX.test_a; rm -rf /"]}, "malformed test id"),
        ({"tests": ["TestX.test_a\nTestY.test_b"]}, "malformed test id"),
        ({"tests": []}, "no tests"),
        ({"sha": "main"}, "40 lowercase hex"),
        ({"soc": "sm8650 --evil"}, "malformed SoC"),
        ({"seed": "1126"}, "'seed' has type str"),
        ({"seed": True}, "'seed' has type bool"),
        ({"surprise": 1}, "unknown shard field"),
        ({"device_pool": "abc"}, "device_pool"),
    ],
)
def test_shard_rejects_malformed_documents(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ModelError, match=message):
        make_shard(**overrides)


def test_shard_requires_every_mandatory_field() -> None:
    doc = make_shard().to_dict()
    del doc["sha"]
    with pytest.raises(ModelError, match="missing field 'sha'"):
        Shard.from_dict(doc)


def test_complete_marks_unreported_tests_missing_and_drops_strangers() -> None:
    shard = make_shard()
    reported = [
        TestResult(T2, Status.PASS, 1.5),
        TestResult("TestOther.test_not_asked_for", Status.PASS),
    ]
    result = ShardResult.complete(shard, reported, device="serial-1")
    assert [r.test_id for r in result.results] == [T1, T2, T3]
    assert [r.status for r in result.results] == [Status.MISSING, Status.PASS, Status.MISSING]
    assert (result.ran, result.expected) == (1, 3)
    assert not result.ok


def test_all_infra_keeps_reason_for_every_test() -> None:
    result = ShardResult.all_infra(make_shard(), "device offline")
    assert {r.status for r in result.results} == {Status.INFRA}
    assert {r.message for r in result.results} == {"device offline"}
    assert result.ran == 0 and result.infra_reason == "device offline"


def test_shard_result_round_trip() -> None:
    result = ShardResult.complete(
        make_shard(),
        [TestResult(T1, Status.FAIL, 2.0, "AssertionError: mismatch")],
        attempts=2,
        command=("python", "x.py"),
    )
    again = ShardResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again == result
    assert again.counts()[Status.FAIL] == 1 and again.counts()[Status.MISSING] == 2


def test_result_rejects_unknown_status() -> None:
    with pytest.raises(ModelError, match="unknown status"):
        TestResult.from_dict({"test_id": T1, "status": "GREEN"})


def test_baseline_verdicts() -> None:
    history = {
        ("SM8650", T1): [Status.PASS, Status.PASS],
        ("SM8650", T2): [Status.FAIL, Status.FAIL],
        ("SM8650", T3): [Status.PASS, Status.FAIL, Status.PASS],
    }
    baseline = Baseline(sha=SHA, history=history)
    fail = Status.FAIL
    assert baseline.verdict("SM8650", TestResult(T1, fail)) is Verdict.NEW
    assert baseline.verdict("SM8650", TestResult(T2, fail)) is Verdict.PRE_EXISTING
    assert baseline.verdict("SM8650", TestResult(T3, fail)) is Verdict.FLAKY
    assert baseline.verdict("SM8750", TestResult(T1, fail)) is Verdict.UNCLASSIFIED
    assert baseline.verdict("SM8650", TestResult(T1, Status.INFRA)) is Verdict.INFRA


def test_flakiness_ignores_infra_and_old_flips() -> None:
    history = {("S", T1): [Status.FAIL, *[Status.PASS] * 5, Status.INFRA, Status.PASS]}
    baseline = Baseline(history=history)
    assert not baseline.is_flaky("S", T1, window=5)
    assert baseline.is_flaky("S", T1, window=8)


def test_reconcile_turns_a_missing_shard_into_infra() -> None:
    res = tonight_results("SM8650", {"abs": P})
    lost = Shard(
        "sm8650-m-2", "m", "SM8650", "htp", 1126, (f"{FP}.test_qnn_backend_add",), "f" * 40
    )
    got = reconcile([res[0].shard, lost], res)
    assert [r.results[0].status for r in got] == [P, INF]
