"""`bot gate` prints the lane of a comment; only `others` may lose a pending command."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from qnn_migrate_tests.github_standin.fixtures import REPO, TOKEN, github_standin  # noqa: F401
from qnn_migrate_tests.github_standin.payloads import comment_event
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot.cli.main import bot


def gate(gh: GitHubStandIn, tmp_path: Path, login: str, author: str = "x", **kw: object) -> str:
    event = tmp_path / f"{login}.json"
    doc = comment_event(repo=REPO, number=7, body="/qnn help", login=login, comment_id=5, **kw)
    doc["issue"]["user"]["login"] = author
    event.write_text(json.dumps(doc))
    env = {
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_API_URL": gh.base_url,
        "QNN_BOT_RETRIES": "0",
        "QNN_BOT_TIMEOUT": "5",
    }
    result = CliRunner().invoke(bot, ["gate", "--event-path", str(event)], env=env)
    assert result.exit_code == 0, result.output  # the gate never fails
    return result.stdout.strip()


def test_the_gate_trusts_exactly_who_may_start_runs(
    github_standin: GitHubStandIn,  # noqa: F811
    tmp_path: Path,
) -> None:
    gh = github_standin
    gh.add_user("maint", role="maintain", repo=REPO)
    gh.add_user("reader", role="read", repo=REPO)
    gh.add_user("stranger")
    assert gate(gh, tmp_path, "maint") == "lane=runs"
    assert gate(gh, tmp_path, "reader") == "lane=others"
    assert gate(gh, tmp_path, "reader", author="reader") == "lane=author"
    assert gate(gh, tmp_path, "stranger") == "lane=others"
    assert gate(gh, tmp_path, "maint", user_type="Bot") == "lane=others"
    gh.fail_next("GET", r"/collaborators/maint/permission$", 502, count=5)
    assert gate(gh, tmp_path, "maint") == "lane=unsure"


def test_a_gate_that_cannot_tell_routes_to_a_kept_lane(tmp_path: Path) -> None:
    event = tmp_path / "e.json"
    event.write_text("{not json")
    result = CliRunner().invoke(bot, ["gate", "--event-path", str(event)], env={})
    assert result.exit_code == 0 and result.stdout.strip() == "lane=unsure"
    assert str(event) in result.stderr
    doc = comment_event(repo=REPO, number=7, body="/qnn help", login="maint", comment_id=5)
    event.write_text(json.dumps(doc))
    # No token: the permission API cannot be asked.
    result = CliRunner().invoke(bot, ["gate", "--event-path", str(event)], env={})
    assert result.exit_code == 0 and result.stdout.strip() == "lane=unsure"
