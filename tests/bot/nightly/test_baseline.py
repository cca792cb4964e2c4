"""baseline.py: the per-SoC nightly history files, their window, validation and the model view."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qnn_migrate.bot import artifacts
from qnn_migrate.bot.model import Shard, ShardResult, Status, TestResult, Verdict
from qnn_migrate.bot.nightly import baseline
from qnn_migrate.bot.nightly.baseline import BaselineError, RunInfo, SocBaseline

A = "TestQNNFloatingPointOperator.test_qnn_backend_abs"
B = "TestQNNFloatingPointOperator.test_qnn_backend_add"
C = "TestQNNQuantizedOperator.test_qnn_backend_add"


def night(n: int) -> RunInfo:
    return RunInfo(
        f"{n:040x}", f"2026-11-{n:02d}T02:00:00Z", f"https://github.com/o/r/actions/runs/{n}"
    )


def results(soc: str, **statuses: Status) -> list[ShardResult]:
    ids = {"a": A, "b": B, "c": C}
    tests = tuple(ids[k] for k in statuses)
    shard = Shard("s", "m", soc, "htp", 1126, tests, "f" * 40)
    return [ShardResult.complete(shard, [TestResult(ids[k], s) for k, s in statuses.items()])]


def test_record_appends_aligned_columns_and_keeps_the_window() -> None:
    b = baseline.record(
        None, "SM8650", results("SM8650", a=Status.PASS, b=Status.FAIL), night(1), window=3
    )
    b = baseline.record(b, "SM8650", results("SM8650", a=Status.PASS, c=Status.PASS), night(2))
    assert b.tests == {
        A: (Status.PASS, Status.PASS),
        B: (Status.FAIL, None),
        C: (None, Status.PASS),
    }
    for n in (3, 4):
        b = baseline.record(b, "SM8650", results("SM8650", a=Status.INFRA), night(n))
    assert [r.sha for r in b.runs] == [night(n).sha for n in (2, 3, 4)]
    # B was only in night 1, which left the window: it is dropped.
    assert b.tests == {A: (Status.PASS, Status.INFRA, Status.INFRA), C: (Status.PASS, None, None)}
    assert b.window == 3


def test_record_ignores_other_socs_and_does_not_count_a_rerun_twice() -> None:
    mixed = results("SM8650", a=Status.PASS) + results("SM8550", a=Status.FAIL)
    b = baseline.record(None, "SM8650", mixed, night(1))
    b = baseline.record(b, "SM8650", results("SM8650", a=Status.FAIL), night(1))
    assert b.runs == (night(1),) and b.tests == {A: (Status.FAIL,)}


def test_a_rerun_of_the_same_workflow_run_is_the_same_night() -> None:
    b = baseline.record(None, "SM8650", results("SM8650", a=Status.PASS), night(1))
    later = RunInfo(night(1).sha, "2026-11-01T09:30:00Z", night(1).run_url)
    b = baseline.record(b, "SM8650", results("SM8650", a=Status.FAIL), later)
    assert b.runs == (later,) and b.tests == {A: (Status.FAIL,)}
    assert b.before(later).runs == ()


def test_json_round_trip_and_model_view(tmp_path: Path) -> None:
    b = baseline.record(None, "SM8650", results("SM8650", a=Status.PASS, b=Status.FAIL), night(1))
    b = baseline.record(b, "SM8650", results("SM8650", a=Status.FAIL, b=Status.FAIL), night(2))
    text = b.to_json()
    assert json.loads(text)["tests"][A] == ["PASS", "FAIL"]
    assert baseline.loads(text) == b
    other = baseline.record(None, "SM8550", results("SM8550", a=Status.PASS), night(1))
    (tmp_path / "SM8650.json").write_text(text)
    (tmp_path / "SM8550.json").write_text(other.to_json())
    model, warnings = baseline.load_model(tmp_path)
    assert warnings == []
    assert model.sha == night(2).sha
    assert model.history[("SM8650", A)] == (Status.PASS, Status.FAIL)
    assert model.verdict("SM8650", TestResult(B, Status.FAIL)) is Verdict.PRE_EXISTING
    assert model.verdict("SM8550", TestResult(A, Status.FAIL)) is Verdict.NEW
    assert model.verdict("SM8650", TestResult(A, Status.FAIL)) is Verdict.FLAKY
    assert model.verdict("SM8750", TestResult(A, Status.FAIL)) is Verdict.UNCLASSIFIED


def test_load_dir_skips_broken_or_misnamed_files_with_a_warning(tmp_path: Path) -> None:
    good = baseline.record(None, "SM8650", results("SM8650", a=Status.PASS), night(1))
    (tmp_path / "SM8650.json").write_text(good.to_json())
    (tmp_path / "SM8550.json").write_text(good.to_json())  # holds SM8650
    (tmp_path / "SM8750.json").write_text("{not json")
    files, warnings = baseline.load_dir(tmp_path)
    assert [f.soc for f in files] == ["SM8650"]
    assert len(warnings) == 2 and any("holds SoC SM8650" in w for w in warnings)
    _, missing = baseline.load_dir(tmp_path / "nope")
    assert "every failure is UNCLASSIFIED" in missing[0]


GOOD = {
    "schema": 1,
    "soc": "SM8650",
    "window": 14,
    "runs": [{"sha": "a" * 40, "date": "2026-11-01T02:00:00Z", "run_url": ""}],
    "tests": {A: ["PASS"]},
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schema": 2}, "schema-1"),
        ({"soc": "sm8650; rm -rf"}, "'soc'"),
        ({"window": 0}, "'window'"),
        ({"runs": [{"sha": "zz", "date": "2026-11-01T02:00:00Z"}]}, "runs[0].sha"),
        ({"runs": [{"sha": "a" * 40, "date": "yesterday"}]}, "runs[0].date"),
        ({"tests": {A: ["PASS", "PASS"]}}, "one status per run"),
        ({"tests": {A: ["GREEN"]}}, "GREEN"),
        ({"tests": {"<img src=x>": ["PASS"]}}, "malformed test id"),
    ],
)
def test_untrusted_files_are_validated(change: dict[str, object], message: str) -> None:
    with pytest.raises(BaselineError, match=message.replace("[", r"\[").replace("]", r"\]")):
        baseline.loads(json.dumps({**GOOD, **change}))


def test_size_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(artifacts, "MAX_BYTES", 50)
    with pytest.raises(BaselineError, match="over the 50 cap"):
        baseline.loads(json.dumps(GOOD))


def test_empty_history_serialises() -> None:
    empty = SocBaseline("SM8650")
    assert baseline.loads(empty.to_json()) == empty


def test_a_rerun_of_an_old_night_keeps_its_place_in_the_history() -> None:
    """Night 2's job re-run after night 3 (a later date, the same run) stays second."""
    b = baseline.record(None, "SM8650", results("SM8650", a=Status.PASS), night(1))
    b = baseline.record(b, "SM8650", results("SM8650", a=Status.FAIL), night(2))
    b = baseline.record(b, "SM8650", results("SM8650", a=Status.PASS), night(3))
    rerun = RunInfo(night(2).sha, "2026-11-09T10:00:00Z", night(2).run_url)
    b = baseline.record(b, "SM8650", results("SM8650", a=Status.ERROR), rerun)
    assert [r.run_url for r in b.runs] == [night(n).run_url for n in (1, 2, 3)]
    assert b.tests[A] == (Status.PASS, Status.ERROR, Status.PASS)
    assert b.latest_run == night(3)
    # What the re-run is compared with: the nights before it, not the later one.
    assert [r.run_url for r in b.before(rerun).runs] == [night(1).run_url]
