"""hoststate.py: a long-lived host without its protections is refused; an ephemeral one is
left alone (the full story, a hostile job and the next, is test_scenario_persistence.py)."""

from __future__ import annotations

from dataclasses import replace

from qnn_migrate_tests.bot.lab.long_lived import commit, long_lived_host, run_job
from qnn_migrate_tests.bot.lab.support import ABS, ADD, Lab, statuses

from qnn_migrate.bot.lab.host_config import LONG_LIVED
from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.model import Status


def test_a_long_lived_host_without_a_job_env_or_a_manifest_is_refused(lab: Lab) -> None:
    settings = lab.settings()
    settings.host = replace(settings.host, lifetime=LONG_LIVED)
    result = Runner(settings).run(lab.shard(ABS))
    assert statuses(result) == [Status.INFRA] and result.attempts == 0
    reason = result.infra_reason or ""
    assert "no [job_env] and no integrity_manifest" in reason
    assert 'lifetime = "ephemeral"' in reason
    assert lab.runs_log() == [] and lab.calls() == []


def test_an_ephemeral_host_runs_without_host_checks(lab: Lab) -> None:
    result = Runner(lab.settings()).run(lab.shard(ABS))
    assert statuses(result) == [Status.PASS]
    assert not (lab.root / "out" / "host-check.json").exists()
    assert ["kill-server"] not in lab.calls()


def test_a_change_in_the_jobs_python_environment_makes_every_result_infra(lab: Lab) -> None:
    """It was only logged: a job whose code planted a .pth in its own environment (on a
    single-user host, where nothing stops it) kept its results."""
    lab.scenario(tests={ABS: "pass", ADD: "pass"})
    config = long_lived_host(lab)
    plant = (
        "import pathlib, sysconfig\n"
        "site = pathlib.Path(sysconfig.get_paths()['purelib'])\n"
        "(site / 'zz_job.pth').write_text('import os\\n')\n"
    )
    result, report = run_job(lab, config, "job1", commit(lab, plant, "plants a .pth"))
    assert set(statuses(result)) == {Status.INFRA}
    assert "the job changed its Python environment after it was built" in (
        result.infra_reason or ""
    )
    assert any("zz_job.pth" in line for line in report["job_environment_changes"])
    assert report["trusted_paths_after"] == []  # nothing else changed: the control
