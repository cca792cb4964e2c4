"""preflight.py through the runner: what is refused before any test runs, and the SDK version.

Each test here failed before its fix."""

from __future__ import annotations

import os

from qnn_migrate_tests.bot.lab.support import ABS, QO, Lab, sim_settings, statuses

from qnn_migrate.bot.lab import preflight
from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.model import RunsOn, Status


def test_shards_go_only_to_hosts_of_their_kind(lab: Lab) -> None:
    on_phones = Runner(lab.settings()).run(lab.shard(ABS, runs_on=RunsOn.SIMULATOR))
    assert statuses(on_phones) == [Status.INFRA] and on_phones.attempts == 0
    assert "simulator shards run on hosts with kind" in (on_phones.infra_reason or "")
    on_sim = Runner(sim_settings(lab)).run(lab.shard(ABS))
    assert statuses(on_sim) == [Status.INFRA] and on_sim.attempts == 0
    assert "has no phones" in (on_sim.infra_reason or "")
    assert lab.runs_log() == [] and lab.calls() == []


def test_a_backend_the_host_cannot_run_is_infra_not_the_prs_fault(lab: Lab) -> None:
    result = Runner(sim_settings(lab)).run(lab.shard(ABS, runs_on=RunsOn.SIMULATOR, backend="gpu"))
    assert statuses(result) == [Status.INFRA]
    assert "does not run on x86-64" in result.results[0].message
    assert "not the change's" in result.results[0].message


def test_compile_only_is_refused_with_the_upstream_reason(lab: Lab) -> None:
    result = Runner(sim_settings(lab)).run(lab.shard(ABS, runs_on=RunsOn.COMPILE_ONLY))
    assert statuses(result) == [Status.INFRA] and result.attempts == 0
    assert "verify_output" in (result.infra_reason or "")
    assert lab.runs_log() == []


def test_sdk_version_comes_from_the_library_or_says_unknown_and_why(lab: Lab) -> None:
    result = Runner(sim_settings(lab)).run(lab.shard(ABS, runs_on=RunsOn.SIMULATOR))
    assert result.sdk_version == "2.51.0.260929181845 (from libQnnHtp.so; no sdk.yaml)"
    assert preflight.sdk_version(None).startswith("unknown (qnn_sdk_root is not set")
    empty = lab.root / "empty-sdk"
    empty.mkdir()
    assert preflight.sdk_version(str(empty)).startswith(f"unknown (no sdk.yaml in {empty}")


def test_an_executorch_imported_from_outside_the_checkout_is_refused(lab: Lab) -> None:
    other = lab.root / "another-jobs-checkout"
    (other / "executorch").mkdir(parents=True)
    (other / "executorch" / "__init__.py").write_text("")
    settings = lab.settings(env={"PYTHONPATH": str(other)})
    result = Runner(settings).run(lab.shard(ABS, f"{QO}.test_qnn_backend_abs"))
    assert statuses(result) == [Status.INFRA, Status.INFRA] and result.attempts == 0
    assert f"import executorch from {other.resolve()}" in (result.infra_reason or "")
    assert lab.runs_log() == []


def test_a_namespace_executorch_counts_where_its_first_portion_is(lab: Lab) -> None:
    # The wheel's executorch is a namespace package: its submodules come from the first
    # portion on sys.path, so that portion must be the checkout's.
    (lab.checkout / "executorch" / "__init__.py").unlink()
    other = lab.root / "site-packages"
    (other / "executorch").mkdir(parents=True)
    first = lab.settings(env={"PYTHONPATH": f"{lab.checkout}{os.pathsep}{other}"})
    assert Runner(first).run(lab.shard(ABS)).ok
    last = lab.settings(env={"PYTHONPATH": f"{other}{os.pathsep}{lab.checkout}"})
    refused = Runner(last).run(lab.shard(ABS))
    assert refused.attempts == 0 and "import executorch from" in (refused.infra_reason or "")
