"""Planning: one shard per SoC x matrix x chunk, auto from changed files, caps, JSON contract."""

from __future__ import annotations

import json

import pytest

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.model import ModelError, RunsOn
from qnn_migrate.bot.pr.commands import parse
from qnn_migrate.bot.pr.plan import (
    ADHOC,
    Plan,
    PlanError,
    check_limits,
    device_matrix,
    repro_argv,
)
from qnn_migrate.bot.pr.verbs.test import TestCommand, plan_command

SHA = "1" * 40
CONV = "canonicalize_conv"
LIN = "convert_linear_to_conv2d"


def _command(body: str, catalog: Catalog) -> TestCommand:
    command = parse(body, catalog)
    assert isinstance(command, TestCommand)
    return command


def _plan(body: str, catalog: Catalog, files: list[str] | None = None) -> Plan:
    command = _command(body, catalog)
    return plan_command(command, catalog, sha=SHA, pr=9, changed_files=files)


def test_one_shard_per_soc_and_chunk(catalog: Catalog) -> None:
    p = _plan(f"/qnn test {CONV} {LIN} --soc SM8650,SM8750", catalog)
    ids = [s.shard.id for s in p.shards]
    assert ids == [
        "sm8650-canonicalize_conv-1",
        "sm8650-canonicalize_conv-2",
        "sm8650-convert_linear_to_conv2d-1",
        "sm8650-convert_linear_to_conv2d-2",
        "sm8750-canonicalize_conv-1",
        "sm8750-canonicalize_conv-2",
        "sm8750-convert_linear_to_conv2d-1",
        "sm8750-convert_linear_to_conv2d-2",
    ]
    assert p.expected == 2 * (16 + 11)
    per_soc = [t for s in p.shards if s.shard.soc == "SM8650" for t in s.shard.tests]
    assert sorted(per_soc) == sorted(catalog.matrices[CONV].tests + catalog.matrices[LIN].tests)
    first = p.shards[0]
    assert first.runs_on == ("self-hosted", "qnn", "sm8650")
    assert (first.shard.sha, first.shard.pr, first.shard.seed, first.shard.backend) == (
        SHA,
        9,
        1126,
        "htp",
    )


def test_auto_uses_the_changed_files(catalog: Catalog) -> None:
    p = _plan("/qnn test auto", catalog, ["backends/qualcomm/_passes/convert_linear_to_conv2d.py"])
    assert p.matrices == (LIN,)
    with pytest.raises(PlanError, match="found no matrix guarding the 1 file"):
        _plan("/qnn test auto", catalog, ["README.md"])


def test_named_tests_form_the_adhoc_matrix_and_duplicates_run_once(catalog: Catalog) -> None:
    in_conv = catalog.matrices[CONV].tests[0]
    other = "TestQNNQuantizedOperator.test_qnn_backend_abs"
    p = _plan(f"/qnn test {CONV} {in_conv} {other}", catalog)
    assert p.matrices == (CONV, ADHOC)
    all_tests = [t for s in p.shards for t in s.shard.tests]
    assert all_tests.count(in_conv) == 1 and other in all_tests


def test_durations_balance_the_chunks(catalog: Catalog) -> None:
    command = _command(f"/qnn test {CONV}", catalog)
    tests = catalog.matrices[CONV].tests
    durations = {t: (100.0 if i == 0 else 1.0) for i, t in enumerate(tests)}
    p = plan_command(command, catalog, sha=SHA, pr=1, durations=durations)
    heavy = next(s for s in p.shards if tests[0] in s.shard.tests)
    assert len(heavy.shard.tests) < len(tests) // 2


def test_json_round_trip_is_the_dispatch_contract(catalog: Catalog) -> None:
    p = _plan(f"/qnn test {CONV}", catalog)
    doc = json.loads(p.to_json())
    assert set(doc[0]) == {"shard", "runs_on"}
    assert Plan.from_json(p.to_json()) == p
    with pytest.raises(ModelError):
        Plan.from_json(json.dumps([{"shard": {"id": "x"}, "runs_on": []}]))
    with pytest.raises(ModelError, match="unique"):
        Plan.from_json(json.dumps(doc + doc))


def test_limits(catalog: Catalog) -> None:
    p = _plan(f"/qnn test {CONV} --soc SM8650", catalog)
    check_limits(p, catalog.limits)
    from dataclasses import replace

    with pytest.raises(PlanError, match="at most 10"):
        check_limits(p, replace(catalog.limits, max_test_runs=10))
    with pytest.raises(PlanError, match="shards; at most 1"):
        check_limits(p, replace(catalog.limits, max_shards=1))
    with pytest.raises(PlanError, match="workflow_dispatch"):
        check_limits(p, replace(catalog.limits, max_dispatch_chars=100))


def test_other_backends_run_once_on_the_simulator_tier_whatever_socs_are_named(
    catalog: Catalog,
) -> None:
    p = _plan(f"/qnn test {CONV} other_backends --soc SM8650,SM8750", catalog)
    sim = catalog.simulator
    assert sim is not None
    other = [s for s in p.shards if s.shard.matrix == "other_backends"]
    assert [s.shard.id for s in other] == [
        "sim-sm8650-other_backends-1",
        "sim-sm8650-other_backends-2",
    ]
    assert all(
        s.shard.runs_on is RunsOn.SIMULATOR and s.runs_on == sim.runner_labels for s in other
    )
    assert sorted(t for s in other for t in s.shard.tests) == sorted(
        catalog.matrices["other_backends"].tests
    )
    # The QNN matrix still runs on both SoCs' phones.
    assert {s.shard.soc for s in p.shards if s.shard.matrix == CONV} == {"SM8650", "SM8750"}
    assert {s.shard.runs_on for s in p.shards if s.shard.matrix == CONV} == {RunsOn.PHONE}
    # And the device workflow's plan job takes the list that crossed the dispatch.
    assert len(device_matrix([s.shard for s in p.shards], catalog, sha=SHA, pr=9)["include"]) == 6
    # Rerun by hand: the entry by module name, not the report host's path to it.
    repro = repro_argv(catalog, other[0].shard, other[0].shard.tests[:1])
    assert repro[:3] == ["python", "-m", "qnn_migrate.bot.lab.other_backends"]


def test_other_backends_without_a_simulator_tier_are_refused_saying_why(catalog: Catalog) -> None:
    from dataclasses import replace

    command = _command("/qnn test other_backends", catalog)
    with pytest.raises(PlanError, match="other_backends runs on the simulator tier only"):
        plan_command(command, replace(catalog, simulator=None), sha=SHA, pr=9)
