"""`bot doctor`'s REST checks (D2): what keeps PR code off the phones, read from the API."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from qnn_migrate_tests.workflows.templates import filled

from qnn_migrate.bot import doctor

ADOPT = Path(__file__).resolve().parents[2] / ".github" / "adopt"
PIN = "5f1d0c3b9a8e7d6c5b4a39281706f5e4d3c2b1a0"

REPO = "qnn-lab/executorch"
SELECTED = f"{REPO}/.github/workflows/qnn-device-tests.yml@refs/heads/main"
RUNNER = {"name": "lab-1", "ephemeral": True, "labels": [{"name": "qnn"}, {"name": "sm8650"}]}
SIM = {"name": "sim-1", "ephemeral": True, "labels": [{"name": "qnn"}, {"name": "x86-simulator"}]}
GOOD: dict[str, tuple[int, Any]] = {
    f"/repos/{REPO}": (
        200,
        {"default_branch": "main", "owner": {"login": "qnn-lab", "type": "Organization"}},
    ),
    f"/repos/{REPO}/actions/permissions/fork-pr-contributor-approval": (
        200,
        {"approval_policy": "all_external_contributors"},
    ),
    f"/repos/{REPO}/actions/runners?per_page=100": (200, {"total_count": 0, "runners": []}),
    "/orgs/qnn-lab/actions/runner-groups?per_page=100": (
        200,
        {
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
    ),
    "/orgs/qnn-lab/actions/runner-groups/3/runners?per_page=100": (200, {"runners": [RUNNER, SIM]}),
}


class FakeRestReader:
    """A RestReader double answering from a dict of path -> (status, json)."""

    def __init__(self, answers: dict[str, tuple[int, Any]]) -> None:
        self.answers = answers

    def get(self, path: str) -> tuple[int, Any]:
        return self.answers.get(path, (404, {"message": "Not Found"}))


def checks(answers: dict[str, tuple[int, Any]]) -> list[doctor.Check]:
    return doctor.remote_checks(
        FakeRestReader(answers),
        REPO,
        device_workflow="qnn-device-tests.yml",
        lab_labels=["sm8650", "x86-simulator"],
    )


def test_a_locked_down_repository_passes() -> None:
    found = checks(GOOD)
    assert all(c.ok is True for c in found), [c.line() for c in found]
    text, ok = doctor.report(found)
    assert ok and "CHECK runner hosts" in text  # what a person must still look at


def test_each_missing_setting_fails_with_the_fix() -> None:
    loose = copy.deepcopy(GOOD)
    loose[f"/repos/{REPO}/actions/permissions/fork-pr-contributor-approval"] = (
        200,
        {"approval_policy": "first_time_contributors"},
    )
    group = loose["/orgs/qnn-lab/actions/runner-groups?per_page=100"][1]["runner_groups"][0]
    group["restricted_to_workflows"] = False
    loose["/orgs/qnn-lab/actions/runner-groups/3/runners?per_page=100"] = (
        200,
        {"runners": [dict(RUNNER, ephemeral=False)]},
    )
    found = {c.name: c for c in checks(loose) if c.ok is False}
    assert "Require approval for all outside collaborators" in found["fork PR approval"].detail
    assert SELECTED in found["runner group qnn"].detail
    text, ok = doctor.report(list(found.values()))
    assert not ok and "FAIL" in text


def test_repository_runners_and_personal_accounts_cannot_be_restricted() -> None:
    personal = copy.deepcopy(GOOD)
    personal[f"/repos/{REPO}"] = (200, {"default_branch": "main", "owner": {"type": "User"}})
    personal[f"/repos/{REPO}/actions/runners?per_page=100"] = (200, {"runners": [RUNNER]})
    found = [c for c in checks(personal) if c.ok is False]
    assert any("personal repository has no runner groups" in c.detail for c in found)
    assert any("registered on the repository itself" in c.detail for c in found)


def test_what_the_token_cannot_read_is_left_to_a_person() -> None:
    hidden = {k: v for k, v in GOOD.items() if "fork-pr" not in k and "runner-groups" not in k}
    found = {c.name: c for c in checks(hidden)}
    assert found["fork PR approval"].ok is None
    assert found["runner group"].ok is None and SELECTED in found["runner group"].detail


def test_a_soc_the_config_offers_without_a_runner_fails() -> None:
    """An adopter's config that inherits the bundled SoCs offers phones the lab lacks: a
    command naming one queues a job no runner takes (5aad75f said ok)."""
    found = doctor.remote_checks(
        FakeRestReader(GOOD),
        REPO,
        device_workflow="qnn-device-tests.yml",
        lab_labels=["sm8650", "sm8750", "x86-simulator"],
    )
    (coverage,) = [c for c in found if c.name == "SoC runners"]
    assert coverage.ok is False and "sm8750" in coverage.detail and "sm8650" not in coverage.detail
    # Control: the same answers with the lab's own SoCs only.
    assert [c.ok for c in checks(GOOD) if c.name == "SoC runners"] == [True]


def test_runners_in_a_group_are_checked_for_ephemeral_by_name() -> None:
    lasting = copy.deepcopy(GOOD)
    lasting["/orgs/qnn-lab/actions/runner-groups/3/runners?per_page=100"] = (
        200,
        {"runners": [dict(RUNNER, ephemeral=False), SIM]},
    )
    failed = [c for c in checks(lasting) if c.ok is False]
    assert [c.name for c in failed] == ["runner lab-1"]
    assert "runner group qnn: not ephemeral" in failed[0].detail


@pytest.mark.parametrize(
    "answers",
    [
        {**GOOD, f"/repos/{REPO}/actions/runners?per_page=100": (200, {"runners": None})},
        {
            **GOOD,
            "/orgs/qnn-lab/actions/runner-groups?per_page=100": (200, {"runner_groups": None}),
        },
        {
            **GOOD,
            "/orgs/qnn-lab/actions/runner-groups/3/runners?per_page=100": (200, {"runners": None}),
        },
        {**GOOD, "/orgs/qnn-lab/actions/runner-groups/3/runners?per_page=100": (200, None)},
        {
            **GOOD,
            "/orgs/qnn-lab/actions/runner-groups/3/runners?per_page=100": (
                200,
                {"runners": [dict(RUNNER, labels=None, ephemeral=None), "x", None]},
            ),
        },
        {**GOOD, f"/repos/{REPO}": (200, {"default_branch": None, "owner": None})},
    ],
    ids=[
        "repo-runners-null",
        "groups-null",
        "members-null",
        "members-body-null",
        "odd-runner",
        "repo-nulls",
    ],
)
def test_null_and_odd_fields_are_findings_not_tracebacks(
    answers: dict[str, tuple[int, Any]],
) -> None:
    """5aad75f raised TypeError on ``"runners": null``."""
    found = checks(answers)
    text, _ = doctor.report(found)
    assert text  # a report, whatever the answers held


@pytest.mark.parametrize(
    ("status", "body", "said"),
    [
        (
            0,
            {"message": "<urlopen error [Errno -3] name resolution>"},
            "offline, or GITHUB_API_URL",
        ),
        (401, {"message": "Bad credentials"}, "the token was refused; set GITHUB_TOKEN"),
        (403, {"message": "Resource not accessible by integration"}, "an admin token"),
        (404, {"message": "Not Found"}, "check --repo"),
    ],
)
def test_an_unusable_answer_says_what_it_means_and_what_to_do(
    status: int, body: dict[str, str], said: str
) -> None:
    """5aad75f printed ``GET ... answered 0`` with no hint."""
    everything = {path: (status, body) for path in GOOD}
    (repository,) = checks(everything)
    assert repository.ok is False and said in repository.detail
    assert body["message"] in repository.detail
    hidden = {**GOOD, "/orgs/qnn-lab/actions/runner-groups?per_page=100": (status, body)}
    (group,) = [c for c in checks(hidden) if c.name == "runner group"]
    assert group.ok is None and said in group.detail


def _adoption(root: Path, *, skip: str = "", edit: Callable[[str], str] = str) -> Path:
    """The adoption templates copied into ``root`` as an adopter would, commit filled in."""
    workflows = root / ".github" / "workflows"
    workflows.mkdir(parents=True)
    for template in sorted((ADOPT / "workflows").glob("*.yml")):
        if template.name != skip:
            text = filled(template.read_text(), PIN)
            (workflows / template.name).write_text(edit(text))
    return root


def _local(root: Path, bot_repo: str = "qnn-lab/qnn-migrate") -> dict[str, doctor.Check]:
    checks, _ = doctor.local_checks(root, bot_repo)
    return {c.name: c for c in checks}


def test_the_command_workflow_must_be_there(tmp_path: Path) -> None:
    """Without qnn-command.yml no comment does anything; 5aad75f said ok."""
    found = _local(_adoption(tmp_path / "without", skip="qnn-command.yml"))
    assert found["command workflow"].ok is False
    assert "qnn-command.yml" in found["command workflow"].detail
    assert "command workflow" not in _local(_adoption(tmp_path / "with"))  # control


def test_qnn_migrate_is_called_only_from_the_trusted_repository(tmp_path: Path) -> None:
    """5aad75f matched the file name only: ``evil/qnn-migrate/...qnn-bot-command.yml`` passed."""
    good = _local(_adoption(tmp_path / "good"))
    assert good["qnn-migrate source"].ok is True and good["pinned version"].ok is True
    moved = _adoption(
        tmp_path / "moved",
        edit=lambda text: text.replace("uses: qnn-lab/qnn-migrate/", "uses: evil/qnn-migrate/", 1),
    )
    found = _local(moved)
    assert found["qnn-migrate source"].ok is False
    assert "evil/qnn-migrate" in found["qnn-migrate source"].detail
    # A fork of qnn-migrate the adopter trusts is named with --bot-repo.
    assert _local(moved, "evil/qnn-migrate")["qnn-migrate source"].ok is False  # mixed sources
    renamed = _adoption(
        tmp_path / "renamed",
        edit=lambda text: text.replace("qnn-lab/qnn-migrate", "our-org/qnn-migrate"),
    )
    assert _local(renamed, "our-org/qnn-migrate")["qnn-migrate source"].ok is True
    assert _local(renamed)["qnn-migrate source"].ok is False
