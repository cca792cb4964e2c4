"""nightly/program_baseline.py: per SoC and tier, the latest fingerprint of each test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from qnn_migrate_tests.bot.support import program_doc, programs_file

from qnn_migrate.bot.artifacts import ArtifactError
from qnn_migrate.bot.model import ModelError, RunsOn, Shard
from qnn_migrate.bot.nightly import program_baseline
from qnn_migrate.bot.nightly.program_baseline import ProgramBaseline
from qnn_migrate.bot.programs import parse_test

A = "TestQNNFloatingPointOperator.test_qnn_backend_conv1d"
B = "TestQNNFloatingPointOperator.test_qnn_backend_conv2d"
NIGHT1, NIGHT2 = "1" * 40, "2" * 40


def _entry(test: str, payload: bytes) -> object:
    return parse_test(test, {"programs": [program_doc(payloads=(payload,))], "dropped": 0})


def test_a_night_replaces_what_it_fingerprinted_and_keeps_the_rest(tmp_path: Path) -> None:
    first = ProgramBaseline("SM8650", True).updated(
        NIGHT1,
        {A: _entry(A, b"a"), B: _entry(B, b"b")},  # type: ignore[dict-item]
    )
    broken = parse_test(B, {"programs": "nope", "dropped": 0})
    second = first.updated(NIGHT2, {A: _entry(A, b"A"), B: broken})  # type: ignore[dict-item]
    assert second.shas == {A: NIGHT2, B: NIGHT1}  # an unusable entry is never stored
    assert second.tests[B] == first.tests[B]
    path = program_baseline.save(tmp_path, second)
    assert path == tmp_path / "programs" / "SM8650-simulator.json"
    loaded = program_baseline.load(tmp_path, program_baseline.Place("SM8650", True))
    assert loaded == second
    assert (
        program_baseline.load(tmp_path, program_baseline.Place("SM8650", False)) is None
    )  # the phone tier apart
    with pytest.raises(ModelError):
        first.updated("abc", {})


@pytest.mark.parametrize(
    "doc",
    [
        {"schema": 1, "soc": "SM8650", "tier": "moon", "tests": {}},
        {"schema": 1, "soc": "sm8650", "tier": "phone", "tests": {}},
        {"schema": 1, "soc": "SM8650", "tier": "phone", "tests": {A: {"programs": []}}},
        {"schema": 1, "soc": "SM8650", "tier": "phone", "tests": {"rm -rf": {}}},
        {"schema": 2, "soc": "SM8650", "tier": "phone", "tests": {}},
    ],
)
def test_a_malformed_file_is_refused_with_its_name(doc: object) -> None:
    with pytest.raises(ArtifactError, match=r"where\.json"):
        program_baseline.parse(json.dumps(doc), "where.json")


def test_record_night_from_shard_artifacts(tmp_path: Path) -> None:
    shard = Shard(
        "sim-sm8650-x-1", "x", "SM8650", "htp", 1, (A, B), NIGHT1, runs_on=RunsOn.SIMULATOR
    )
    folder = tmp_path / "results" / f"qnn-result-{shard.id}" / "attempt-1"
    folder.mkdir(parents=True)
    (folder / "programs.json").write_text(json.dumps(programs_file({A: [program_doc()]})))
    warnings = program_baseline.record_night(tmp_path / "b", [shard], tmp_path / "results", NIGHT1)
    assert len(warnings) == 1 and "1 test(s) not fingerprinted" in warnings[0]
    stored = program_baseline.load(tmp_path / "b", program_baseline.Place("SM8650", True))
    assert stored is not None and set(stored.tests) == {A} and stored.latest_sha == NIGHT1
