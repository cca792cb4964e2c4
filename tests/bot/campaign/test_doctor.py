"""`bot doctor` checks the campaign's setup when a workflow calls it (and says nothing otherwise)."""

from __future__ import annotations

from pathlib import Path

import pytest
from qnn_migrate_tests.workflows.templates import filled

from qnn_migrate.bot import doctor

ROOT = Path(__file__).resolve().parents[3]
ADOPT = ROOT / ".github" / "adopt"
PIN = "5f1d0c3b9a8e7d6c5b4a39281706f5e4d3c2b1a0"


def adopter(tmp: Path, campaign: str | None) -> Path:
    """A repository with the command and device callers, and the campaign's if given."""
    workflows = tmp / ".github" / "workflows"
    workflows.mkdir(parents=True)
    for name in ("qnn-command.yml", "qnn-device-tests.yml"):
        text = filled((ADOPT / "workflows" / name).read_text(), PIN)
        (workflows / name).write_text(text)
    if campaign is not None:
        (workflows / "qnn-campaign.yml").write_text(campaign)
    return tmp


def template() -> str:
    return filled((ADOPT / "campaign" / "qnn-campaign.yml").read_text(), PIN)


def test_the_template_adopted_at_the_same_commit_passes(tmp_path: Path) -> None:
    checks = doctor.campaign_checks(adopter(tmp_path, template()))
    assert [(c.name, c.ok) for c in checks] == [
        ("campaign (qnn-campaign.yml)", True),
        ("campaign settings", None),
    ]
    assert "create and approve pull requests" in checks[1].detail
    # Registered with the adoption's checks.
    found, _ = doctor.local_checks(tmp_path)
    assert [c.name for c in found if c.name.startswith("campaign")] == [c.name for c in checks]


def test_no_campaign_no_lines(tmp_path: Path) -> None:
    assert doctor.campaign_checks(adopter(tmp_path, None)) == []


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            lambda t: t.replace(
                f"qnn-bot-campaign.yml@{PIN}", "qnn-bot-campaign.yml@" + "1" * 40
            ).replace(f'bot-ref: "{PIN}"', 'bot-ref: "' + "1" * 40 + '"'),
            "adopt one commit for all",
        ),
        (
            lambda t: t.replace(f"qnn-bot-campaign.yml@{PIN}", "qnn-bot-campaign.yml@main"),
            "pin one full release commit",
        ),
        (lambda t: t.replace(f'bot-ref: "{PIN}"', 'bot-ref: "v0.0.9"'), "bot-ref differs"),
        (
            lambda t: t.replace("qnn-lab/qnn-migrate/", "someone/qnn-migrate/"),
            "not qnn-lab/qnn-migrate",
        ),
        (
            lambda t: t.replace(
                "  workflow_dispatch:\n", "  workflow_dispatch:\n  pull_request_target:\n"
            ),
            "runs on pull_request_target",
        ),
        (lambda t: t.replace("on:\n  schedule:", "on:\n  push:\n  schedule:"), "runs on push"),
        (
            lambda t: t.replace("      pull-requests: write", "      pull-requests: read"),
            "grants no pull-requests: write",
        ),
    ],
)
def test_each_breach_fails_with_what_to_do(tmp_path: Path, change: object, said: str) -> None:
    text = change(template())  # type: ignore[operator]
    assert text != template()
    (check, _) = doctor.campaign_checks(adopter(tmp_path, text))
    assert check.ok is False and said in check.detail, check.detail


def test_triggers_are_read_from_the_on_block_only() -> None:
    text = template()
    assert doctor._triggers(text) == ["schedule", "workflow_dispatch"]
    # `issues: write` under permissions is a grant, not an `issues` trigger.
    assert "issues: write" in text
    assert doctor._triggers("on: [push, schedule]\njobs: {}\n") == ["push", "schedule"]
    assert doctor._triggers("on: workflow_dispatch\n") == ["workflow_dispatch"]
