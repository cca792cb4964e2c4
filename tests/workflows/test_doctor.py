"""`bot doctor`'s REST checks (D2): what keeps PR code off the phones, read from the API."""

from __future__ import annotations

import copy
from typing import Any

from qnn_migrate.bot import doctor

REPO = "qnn-lab/executorch"
SELECTED = f"{REPO}/.github/workflows/qnn-device-tests.yml@refs/heads/main"
RUNNER = {"name": "lab-1", "ephemeral": True, "labels": [{"name": "qnn"}, {"name": "sm8650"}]}
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
    "/orgs/qnn-lab/actions/runner-groups/3/runners?per_page=100": (200, {"runners": [RUNNER]}),
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
