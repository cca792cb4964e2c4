"""Fixtures of the PR-side tests: the stand-in seeded with users and PR 7."""

from __future__ import annotations

import pytest
from github_standin.fixtures import REPO
from github_standin.server import GitHubStandIn

from .support import CONV_FILE, HEAD


@pytest.fixture
def gh(github_standin: GitHubStandIn) -> GitHubStandIn:
    github_standin.add_user("maint", role="write", repo=REPO)
    github_standin.add_user("admin", role="admin", repo=REPO)
    github_standin.add_user("reader", role="read", repo=REPO)
    github_standin.add_pull(7, author="maint", head_sha=HEAD, files=[CONV_FILE])
    return github_standin
