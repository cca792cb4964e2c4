"""pr/plan.py's ``device_matrix``, the device workflow's plan job: what crosses the dispatch is
checked field by field (D11), and simulator shards are planned and routed to simulator runners
only."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from qnn_migrate_tests.bot.support import FP
from qnn_migrate_tests.bot.support import dispatched_shard as _shard

from qnn_migrate.bot import catalog as catalog_mod
from qnn_migrate.bot.model import At, HostShard, RunsOn, Shard, Suite
from qnn_migrate.bot.pr import plan as plan_mod

SHA = "a" * 40
CATALOG = catalog_mod.load()
CONV = CATALOG.matrices["canonicalize_conv"]
WITH_BAD_LABELS = replace(
    CATALOG,
    socs={
        "SM8650": CATALOG.socs["SM8650"],
        "SM8550": replace(CATALOG.socs["SM8550"], runner_labels=("self-hosted", "qnn", "other")),
    },
)


def shard(**kw: Any) -> Shard:
    fields: dict[str, Any] = {
        "id": "sm8650-canonicalize_conv-1",
        "matrix": "canonicalize_conv",
        "soc": "SM8650",
        "backend": "htp",
        "seed": 1126,
        "tests": CONV.tests[:2],
        "sha": SHA,
        "pr": 7,
    }
    fields.update(kw)
    return Shard(**fields)


def test_good_phone_and_simulator_shards_get_their_own_runner_label() -> None:
    matrix = plan_mod.device_matrix(
        [shard(), shard(id="sim-sm8650-canonicalize_conv-1", runs_on=RunsOn.SIMULATOR)],
        CATALOG,
        sha=SHA,
        pr=7,
    )
    assert [(e["id"], e["label"]) for e in matrix["include"]] == [
        ("sm8650-canonicalize_conv-1", "sm8650"),
        ("sim-sm8650-canonicalize_conv-1", "x86-simulator"),
    ]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"build_folder": "--host=evil"}, "build_folder '--host=evil' must be a plain relative"),
        ({"build_folder": "../../etc"}, "must be a plain relative path"),
        ({"build_folder": "/abs/build"}, "must be a plain relative path"),
        ({"backend": "--device=x"}, "unknown backend"),
        ({"backend": "lpai"}, "is not one of SM8650's"),
        ({"timeout_s": 5}, "timeout_s must be between 60 and 10800"),
        ({"timeout_s": 10**6}, "timeout_s must be between"),
        ({"per_test_timeout_s": 1}, "per_test_timeout_s must be between 30"),
        ({"tests": ("TestQNNFloatingPointOperator.test_qnn_backend_nope",)}, "not in the registry"),
        ({"matrix": "no_such_matrix"}, "unknown matrix"),
        ({"seed": -1}, "seed must be between"),
        ({"runs_on": RunsOn.COMPILE_ONLY}, "compile-only shards are not run"),
        ({"runs_on": RunsOn.SIMULATOR}, "simulator shard ids start with 'sim-'"),
        ({"id": "sim-sm8650-x-1"}, "must not start with 'sim-'"),
        ({"soc": "SM8350", "id": "sm8350-x-1"}, None),
        # Other backends: their own tests only, on the simulator tier only.
        (
            {
                "matrix": "other_backends",
                "id": "sim-sm8650-o-1",
                "runs_on": RunsOn.SIMULATOR,
                "suite": Suite.OTHER_BACKENDS,
            },
            "not in the registry",
        ),
        (
            {
                "matrix": "other_backends",
                "tests": ("TestAbs.test_fp32_abs",),
                "suite": Suite.OTHER_BACKENDS,
            },
            "runs on the simulator tier only",
        ),
        (
            {
                "matrix": "other_backends",
                "tests": ("TestAbs.test_fp32_abs",),
                "id": "sim-sm8650-o-1",
                "runs_on": RunsOn.SIMULATOR,
            },
            "is an other-backends matrix",
        ),
        ({"suite": Suite.OTHER_BACKENDS}, "is not an other-backends matrix"),
        (
            {
                "matrix": "other_backends",
                "tests": ("TestAbs.test_fp32_abs",),
                "id": "sim-sm8650-o-1",
                "runs_on": RunsOn.SIMULATOR,
                "suite": Suite.OTHER_BACKENDS,
            },
            None,
        ),
    ],
)
def test_dispatched_fields_are_validated(change: dict[str, Any], words: str | None) -> None:
    if words is None:  # a control: the same shard made right is fine
        plan_mod.device_matrix([shard(**change)], CATALOG, sha=SHA, pr=7)
        return
    with pytest.raises(ValueError) as caught:
        plan_mod.device_matrix([shard(**change)], CATALOG, sha=SHA, pr=7)
    assert words in str(caught.value)


def test_a_simulator_shard_for_a_soc_or_backend_the_tier_does_not_run_is_refused() -> None:
    sim = shard(id="sim-sm8750-canonicalize_conv-1", soc="SM8750", runs_on=RunsOn.SIMULATOR)
    with pytest.raises(ValueError, match="not run on the simulator tier"):
        plan_mod.device_matrix([sim], CATALOG, sha=SHA, pr=7)
    gpu = shard(id="sim-sm8650-canonicalize_conv-1", backend="gpu", runs_on=RunsOn.SIMULATOR)
    with pytest.raises(ValueError, match="backend gpu is not run on the simulator tier"):
        plan_mod.device_matrix([gpu], CATALOG, sha=SHA, pr=7)


def test_plan_with_sim_makes_simulator_shards_on_simulator_labels() -> None:
    selections = [plan_mod.Selection("canonicalize_conv", CONV.tests)]
    on_phones = plan_mod.PlanRequest({"SM8650": selections}, "htp", 1, SHA, 7)
    on_sim = replace(on_phones, runs_on=RunsOn.SIMULATOR)
    sim = plan_mod.plan(on_sim, catalog=CATALOG)
    phones = plan_mod.plan(on_phones, catalog=CATALOG)
    assert sim.shards and all(p.shard.runs_on is RunsOn.SIMULATOR for p in sim.shards)
    assert {p.runs_on for p in sim.shards} == {("self-hosted", "qnn", "x86-simulator")}
    assert all(p.shard.id.startswith("sim-sm8650-") for p in sim.shards)
    assert not any(p.shard.runs_on is RunsOn.SIMULATOR for p in phones.shards)
    assert {p.runs_on for p in phones.shards} == {("self-hosted", "qnn", "sm8650")}
    # What the plan makes, the device workflow accepts.
    plan_mod.device_matrix([p.shard for p in sim.shards], CATALOG, sha=SHA, pr=7)
    with pytest.raises(plan_mod.PlanError, match="simulator tier runs backend"):
        plan_mod.plan(replace(on_sim, backend="gpu"), catalog=CATALOG)
    with pytest.raises(plan_mod.PlanError, match="no simulator tier"):
        plan_mod.plan(on_sim, catalog=replace(CATALOG, simulator=None))


def test_a_sim_command_from_the_grammar_plans_simulator_shards() -> None:
    from qnn_migrate.bot.pr.commands import parse
    from qnn_migrate.bot.pr.verbs.test import TestCommand, plan_command

    command = parse("/qnn test canonicalize_conv --sim", CATALOG)
    assert isinstance(command, TestCommand) and command.runs_on is RunsOn.SIMULATOR
    planned = plan_command(command, CATALOG, sha=SHA, pr=7)
    assert planned.shards and all(p.shard.runs_on is RunsOn.SIMULATOR for p in planned.shards)
    assert {p.runs_on[-1] for p in planned.shards} == {"x86-simulator"}
    phones = parse("/qnn test canonicalize_conv", CATALOG)
    assert isinstance(phones, TestCommand)
    on_phones = plan_command(phones, CATALOG, sha=SHA, pr=7)
    assert {p.shard.runs_on for p in on_phones.shards} == {RunsOn.PHONE}


def test_device_matrix_for_good_shards() -> None:
    m = plan_mod.device_matrix([_shard(), _shard(id="sm8650-m-2")], CATALOG, sha="a" * 40, pr=7)
    assert [(e["id"], e["soc"]) for e in m["include"]] == [
        ("sm8650-m-1", "sm8650"),
        ("sm8650-m-2", "sm8650"),
    ]
    assert m["include"][0]["shard"]["tests"] == [f"{FP}.test_qnn_backend_abs"]


def test_device_matrix_refuses_what_the_dispatcher_must_not_choose() -> None:
    bad = [
        _shard(sha="b" * 40),
        _shard(id="x", pr=8),
        HostShard.of(_shard(id="Bad Id/.."), device="PHONE_A", executorch_dir="/etc"),
        _shard(id="y", soc="SM8550"),
        _shard(id="z", soc="SM8750"),
        _shard(id="x"),
    ]
    try:
        plan_mod.device_matrix(bad, WITH_BAD_LABELS, sha="a" * 40, pr=7)
    except ValueError as exc:
        text = str(exc)
    else:
        raise AssertionError("accepted")
    for needle in (
        "pinned to bbbbbbbbbbbb",
        "for PR 8, not 7",
        "ids are lower-case",
        "executorch_dir, device belong to the runner host",
        "SoC SM8550 has runner_labels ['self-hosted', 'qnn', 'other']",
        "SoC SM8750 is not in the catalog",
        "shard ids must be unique",
    ):
        assert needle in text, needle


def _base(**kw: Any) -> Shard:
    """A merge base's shard (`--compare base`): simulator tier, its own id and commit."""
    fields: dict[str, Any] = {
        "id": "sim-base-sm8650-canonicalize_conv-1",
        "runs_on": RunsOn.SIMULATOR,
        "at": At.MERGE_BASE,
        "sha": "b" * 40,
    }
    return shard(**(fields | kw))


def test_the_merge_base_shards_run_at_their_own_commit_on_the_simulator() -> None:
    pr_sim = shard(id="sim-sm8650-canonicalize_conv-1", runs_on=RunsOn.SIMULATOR)
    matrix = plan_mod.device_matrix([pr_sim, _base()], CATALOG, sha=SHA, pr=7)
    assert [(e["id"], e["label"], e["shard"]["sha"]) for e in matrix["include"]] == [
        ("sim-sm8650-canonicalize_conv-1", "x86-simulator", SHA),
        ("sim-base-sm8650-canonicalize_conv-1", "x86-simulator", "b" * 40),
    ]
    assert [e["shard"]["at"] for e in matrix["include"]] == ["head", "merge-base"]


@pytest.mark.parametrize(
    ("shards", "words"),
    [
        # Control for the test above: an unmarked shard at another commit is refused.
        ([shard(sha="b" * 40)], "pinned to bbbbbbbbbbbb, not the run's aaaaaaaaaaaa"),
        ([_base(), _base(id="sim-base-sm8650-canonicalize_conv-2", sha="c" * 40)], "2 commits"),
        ([_base(runs_on=RunsOn.PHONE, id="base-sm8650-x-1")], "runs on the simulator tier"),
        ([_base(id="sim-sm8650-canonicalize_conv-9")], "its id starting with 'sim-base-'"),
        (
            [shard(id="sim-base-sm8650-x-1", runs_on=RunsOn.SIMULATOR)],
            "only the merge base's shards",
        ),
    ],
)
def test_merge_base_shards_that_break_the_rules_are_refused(
    shards: list[Shard], words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        plan_mod.device_matrix(shards, CATALOG, sha=SHA, pr=7)
