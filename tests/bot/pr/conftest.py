"""Fixtures of the PR-side tests: the stand-in seeded with users and PR 7."""

from __future__ import annotations

import pytest
from qnn_migrate_tests.bot.pr.support import CONV_FILE, HEAD
from qnn_migrate_tests.github_standin.fixtures import REPO
from qnn_migrate_tests.github_standin.server import GitHubStandIn


@pytest.fixture
def gh(github_standin: GitHubStandIn) -> GitHubStandIn:
    github_standin.add_user("maint", role="write", repo=REPO)
    github_standin.add_user("admin", role="admin", repo=REPO)
    github_standin.add_user("reader", role="read", repo=REPO)
    github_standin.add_pull(7, author="maint", head_sha=HEAD, files=[CONV_FILE])
    return github_standin
