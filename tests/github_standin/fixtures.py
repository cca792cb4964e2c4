"""pytest fixtures over the GitHub stand-in; import the names you use into your test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from qnn_migrate_tests.github_standin.server import GitHubStandIn

REPO = "qnn-lab/executorch"
TOKEN = "ghs_standin_actions_token"
BOT_LOGIN = "github-actions[bot]"
DEVICE_WORKFLOW = "qnn-device-tests.yml"
DEVICE_WORKFLOW_INPUTS = {"pr", "sha", "shards", "comment_id"}


def new_standin() -> GitHubStandIn:
    """A started stand-in seeded with REPO, the bot's TOKEN and the device workflow."""
    gh = GitHubStandIn().start()
    gh.add_repo(REPO)
    gh.add_token(TOKEN, BOT_LOGIN, "Bot")
    gh.add_workflow(DEVICE_WORKFLOW, set(DEVICE_WORKFLOW_INPUTS), REPO)
    return gh


@pytest.fixture
def github_standin() -> Iterator[GitHubStandIn]:
    """A GitHub stand-in on 127.0.0.1; fails the test if any request broke the REST description."""
    gh = new_standin()
    try:
        yield gh
    finally:
        gh.stop()
    assert not gh.violations, "requests that GitHub's REST description rejects:\n" + "\n".join(
        gh.violations
    )
