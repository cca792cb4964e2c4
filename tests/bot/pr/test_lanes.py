"""lanes.py: which concurrency lane a comment waits in (real PyGithub to the stand-in)."""

from __future__ import annotations

from qnn_migrate_tests.github_standin.fixtures import REPO
from qnn_migrate_tests.github_standin.payloads import comment_event
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.github.client import PyGithubGateway
from qnn_migrate.bot.pr.lanes import Lane, route


def event(login: str, author: str = "outsider", **kw: object) -> dict[str, object]:
    doc = comment_event(repo=REPO, number=7, body="/qnn migrate", login=login, comment_id=5, **kw)
    doc["issue"]["user"]["login"] = author
    return doc


def test_maintainers_authors_and_the_unsure_wait_in_kept_lanes(
    gh: GitHubStandIn, gateway: PyGithubGateway, catalog: Catalog
) -> None:
    gh.add_user("outsider", role="read", repo=REPO)
    gh.add_user("stranger")
    policy = catalog.policy
    assert route(event("maint"), gateway, policy).lane is Lane.RUNS
    # The PR's author asks /qnn migrate: a later comment by anyone must not drop it.
    assert route(event("outsider"), gateway, policy).lane is Lane.AUTHOR
    # A maintainer who opened the PR goes where maintainers go (one order for them).
    assert route(event("maint", author="maint"), gateway, policy).lane is Lane.RUNS
    # Control: someone who neither may run nor opened the PR is in the lane that drops.
    stranger = route(event("stranger"), gateway, policy)
    assert stranger.lane is Lane.OTHERS and not stranger.lane.kept
    assert route(event("bot", user_type="Bot"), gateway, policy).lane is Lane.OTHERS
    assert all(lane.kept for lane in (Lane.RUNS, Lane.AUTHOR, Lane.UNSURE))


def test_a_permission_check_that_cannot_be_made_keeps_the_command(
    gh: GitHubStandIn, gateway: PyGithubGateway, catalog: Catalog
) -> None:
    gh.add_user("stranger")
    gh.fail_next("GET", r"/collaborators/maint/permission$", 502, count=10)
    routed = route(event("maint"), gateway, catalog.policy)
    assert routed.lane is Lane.UNSURE and "502" in routed.why
    gh.fail_next("GET", r"/collaborators/outsider/permission$", 502, count=10)
    assert route(event("outsider"), gateway, catalog.policy).lane is Lane.AUTHOR
    # No token or no catalog: the gate cannot ask at all.
    assert route(event("maint"), None, None).lane is Lane.UNSURE
    assert route(event("outsider"), None, None).lane is Lane.AUTHOR
    # An event that does not name the commenter: unsure, never "others".
    assert route({"issue": {}}, None, None).lane is Lane.UNSURE
    assert route("not an object", None, None).lane is Lane.UNSURE
