"""model.py, the shared bot data model: shard/result JSON round trips, completeness, baseline
verdicts, and reconciling the planned shards with the results that came back."""

from __future__ import annotations

import dataclasses
import json

import pytest
from qnn_migrate_tests.bot.support import tonight_results

from qnn_migrate.bot.model import (
    At,
    Baseline,
    HostShard,
    ModelError,
    RunsOn,
    Shard,
    ShardResult,
    Status,
    Suite,
    TestResult,
    Verdict,
    reconcile,
)

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
    shard = make_shard(pr=7, runs_on="compile-only", at="merge-base", timeout_s=5)
    again = Shard.from_dict(json.loads(json.dumps(shard.to_dict())))
    assert again == shard
    assert (again.runs_on, again.at, again.suite, again.timeout_s) == (
        RunsOn.COMPILE_ONLY,
        At.MERGE_BASE,
        Suite.QNN,
        5,
    )
    on_host = HostShard.of(shard, device_pool=("a", "b"), executorch_dir="/srv/et")
    back = HostShard.from_dict(json.loads(json.dumps(on_host.to_dict())))
    assert back == on_host and back.device_pool == ("a", "b")
    assert back != shard  # control: the planned shard and the host's are two types


def test_a_shard_has_an_enum_per_fact_and_no_flag() -> None:
    assert [f.name for f in dataclasses.fields(Shard) if f.type == "bool"] == []
    assert [f.name for f in dataclasses.fields(Shard) if f.type in ("RunsOn", "At", "Suite")] == [
        "runs_on",
        "at",
        "suite",
    ]

    @dataclasses.dataclass
    class Flagged:  # control: the check sees a flag when there is one
        enable_x86_64: bool = False

    assert [f.name for f in dataclasses.fields(Flagged) if f.type == "bool"] == ["enable_x86_64"]


# The JSON of a shard as the bot wrote it before runs_on/at/suite: runs dispatched by that
# bot are still read by this one.
OLD_SIM_BASE = {
    "id": "sim-base-sm8650-other_backends-1",
    "matrix": "other_backends",
    "soc": "SM8650",
    "backend": "htp",
    "seed": 1126,
    "tests": [T1],
    "sha": SHA,
    "pr": 7,
    "build_folder": "build-android/",
    "executorch_dir": None,
    "adb_host": None,
    "device": None,
    "device_pool": [],
    "enable_x86_64": True,
    "compile_only": False,
    "timeout_s": 3600,
    "per_test_timeout_s": 600,
    "merge_base": True,
    "other_backends": True,
}


def test_a_shard_written_by_the_old_bot_is_read() -> None:
    shard = Shard.from_dict(OLD_SIM_BASE)
    assert (shard.runs_on, shard.at, shard.suite, shard.pr) == (
        RunsOn.SIMULATOR,
        At.MERGE_BASE,
        Suite.OTHER_BACKENDS,
        7,
    )
    phone = {k: v for k, v in OLD_SIM_BASE.items() if k not in ("merge_base", "other_backends")}
    phone["enable_x86_64"] = False
    on_phone = Shard.from_dict(phone)
    assert (on_phone.runs_on, on_phone.at, on_phone.suite) == (RunsOn.PHONE, At.HEAD, Suite.QNN)
    assert Shard.from_dict(
        OLD_SIM_BASE | {"compile_only": True, "enable_x86_64": False}
    ).runs_on is (RunsOn.COMPILE_ONLY)
    # What the old bot's runner wrote into a result file: read as the host's shard.
    ran = dict(OLD_SIM_BASE, executorch_dir="/srv/et", device_pool=["x86-sim-1"])
    result = ShardResult.from_dict({"shard": ran, "results": []})
    assert isinstance(result.shard, HostShard) and result.shard.executorch_dir == "/srv/et"
    assert result.shard.runs_on is RunsOn.SIMULATOR
    # The new JSON names each fact once.
    assert {k: shard.to_dict()[k] for k in ("runs_on", "at", "suite")} == {
        "runs_on": "x86-simulator",
        "at": "merge-base",
        "suite": "other-backends",
    }
    assert not set(shard.to_dict()) & {"enable_x86_64", "compile_only", "merge_base"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"compile_only": True}, "both set: a shard runs in one place"),
        ({"runs_on": "x86-simulator"}, "either by runs_on or, as before, by enable_x86_64"),
        ({"merge_base": "yes"}, "'merge_base' has type str"),
        ({"executorch_dir": "/etc"}, "executorch_dir belong to the runner host"),
        ({"device": "PHONE"}, "device belong to the runner host"),
    ],
)
def test_an_old_shard_that_means_nothing_is_refused(
    change: dict[str, object], message: str
) -> None:
    with pytest.raises(ModelError, match=message):
        Shard.from_dict(OLD_SIM_BASE | change)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"runs_on": "moon"}, "'runs_on' must be one of 'phone', 'x86-simulator', 'compile-only'"),
        ({"at": "tail"}, "'at' must be one of 'head', 'merge-base'"),
        ({"suite": "xnn"}, "'suite' must be one of 'qnn', 'other-backends'"),
        ({"runs_on": True}, "'runs_on' must be one of"),
    ],
)
def test_an_unknown_place_commit_or_suite_is_refused(
    change: dict[str, object], message: str
) -> None:
    with pytest.raises(ModelError, match=message):
        make_shard(**change)
    make_shard(**{k: {"runs_on": "phone", "at": "head", "suite": "qnn"}[k] for k in change})


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
        ({"device_pool": ["a"]}, "device_pool belong to the runner host, not the plan"),
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
