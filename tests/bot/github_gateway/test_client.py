"""The real PyGithub gateway (github/client.py) over HTTP: request validation, retries, rate
limits, App auth, write spacing."""

from __future__ import annotations

import time

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from qnn_migrate_tests.bot.support import standin_env
from qnn_migrate_tests.github_standin.fixtures import REPO, TOKEN, new_standin
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot.github.client import PyGithubGateway, make_client
from qnn_migrate.bot.github.gateway import GatewayError
from qnn_migrate.bot.github.settings import Settings

HEAD = "a" * 40


def test_an_invalid_request_is_rejected_and_recorded() -> None:
    gh = new_standin()
    try:
        bad = requests.post(
            f"{gh.base_url}/repos/{REPO}/issues/comments/5/reactions",
            json={"content": "thumbs"},
            headers={"Authorization": f"token {TOKEN}"},
            timeout=5,
        )
        unknown = requests.get(
            f"{gh.base_url}/repos/{REPO}/no/such/endpoint",
            headers={"Authorization": f"token {TOKEN}"},
            timeout=5,
        )
    finally:
        gh.stop()
    assert bad.status_code == 422 and unknown.status_code == 422
    assert len(gh.violations) == 2
    assert "is not one of" in gh.violations[0]
    assert "PathNotFound" in gh.violations[1]


def test_bad_credentials(github_standin: GitHubStandIn) -> None:
    settings = Settings.from_env(standin_env(github_standin) | {"GITHUB_TOKEN": "wrong"})
    gw = PyGithubGateway(make_client(settings), REPO)
    with pytest.raises(GatewayError, match="HTTP 401"):
        gw.comments(1)


def test_server_errors_are_retried(github_standin: GitHubStandIn, gateway: PyGithubGateway) -> None:
    github_standin.add_pull(7, author="maint", head_sha=HEAD)
    github_standin.fail_next("GET", r"/pulls/7$", 502, count=2)
    pull = gateway.pull(7)
    assert pull is not None and pull.head_sha == HEAD
    assert [r.status for r in github_standin.requests_to("GET", r"/pulls/7$")] == [502, 502, 200]


def test_server_errors_past_the_retry_budget_fail_with_the_call_named(
    github_standin: GitHubStandIn, gateway: PyGithubGateway
) -> None:
    github_standin.add_pull(7, author="maint", head_sha=HEAD)
    github_standin.fail_next("POST", r"/issues/7/comments$", 503, count=10)
    with pytest.raises(GatewayError, match="POST issues/7/comments failed"):
        gateway.create_comment(7, "hello")


@pytest.mark.parametrize(
    "headers",
    [
        {"Retry-After": "0"},
        {},
    ],  # without Retry-After GithubRetry waits secondary_rate_wait (0 here)
)
def test_secondary_rate_limits_are_retried(
    github_standin: GitHubStandIn, gateway: PyGithubGateway, headers: dict[str, str]
) -> None:
    github_standin.add_pull(7, author="maint", head_sha=HEAD)
    github_standin.fail_next(
        "POST",
        r"/issues/7/comments$",
        403,
        count=1,
        headers=headers,
        message="You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
    )
    comment = gateway.create_comment(7, "hello")
    assert comment.body == "hello"
    assert [r.status for r in github_standin.requests_to("POST", r"/issues/7/comments$")] == [
        403,
        201,
    ]


def test_a_plain_403_is_not_retried(
    github_standin: GitHubStandIn, gateway: PyGithubGateway
) -> None:
    github_standin.add_pull(7, author="maint", head_sha=HEAD)
    github_standin.fail_next(
        "GET", r"/pulls/7$", 403, message="Resource not accessible by integration"
    )
    with pytest.raises(GatewayError, match="HTTP 403"):
        gateway.pull(7)
    assert len(github_standin.requests_to("GET", r"/pulls/7$")) == 1


def test_pagination_reads_every_comment(
    github_standin: GitHubStandIn, gateway: PyGithubGateway
) -> None:
    github_standin.add_pull(7, author="maint", head_sha=HEAD)
    for i in range(75):
        github_standin.add_comment(7, "maint", f"c{i}")
    assert [c.body for c in gateway.comments(7)] == [f"c{i}" for i in range(75)]
    assert len(github_standin.requests_to("GET", r"/issues/7/comments$")) == 3


def test_reaction_status_tells_a_redelivery(
    github_standin: GitHubStandIn, gateway: PyGithubGateway
) -> None:
    github_standin.add_pull(7, author="maint", head_sha=HEAD)
    c = github_standin.add_comment(7, "maint", "/qnn test")
    assert gateway.add_reaction(c.id, "eyes") is True
    assert gateway.add_reaction(c.id, "eyes") is False


def test_pull_role_and_missing_objects(
    github_standin: GitHubStandIn, gateway: PyGithubGateway
) -> None:
    github_standin.add_pull(9, author="outsider", head_sha=HEAD, head_repo="outsider/executorch")
    github_standin.add_user("m", role="maintain", repo=REPO)
    github_standin.add_issue(3)
    pull = gateway.pull(9)
    assert pull is not None and pull.is_fork and pull.author == "outsider"
    assert gateway.pull(3) is None and gateway.pull(404) is None
    assert gateway.role("m") == "maintain" and gateway.role("outsider") == "read"
    assert gateway.role("nobody-at-all") == "none"


def test_github_app_installation_auth(github_standin: GitHubStandIn) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public_pem = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    github_standin.add_app(321, public_pem, "qnn-bot", installation_id=654)
    github_standin.add_pull(7, author="maint", head_sha=HEAD)
    env = standin_env(github_standin)
    del env["GITHUB_TOKEN"]
    env |= {
        "QNN_BOT_APP_ID": "321",
        "QNN_BOT_APP_INSTALLATION_ID": "654",
        "QNN_BOT_APP_PRIVATE_KEY": private_pem,
        "QNN_BOT_LOGIN": "qnn-bot[bot]",
    }
    settings = Settings.from_env(env)
    assert private_pem not in repr(settings)
    gw = PyGithubGateway(make_client(settings), REPO)
    comment = gw.create_comment(7, "from the app")
    assert comment.author == "qnn-bot[bot]"
    assert len(github_standin.requests_to("POST", r"/app/installations/654/access_tokens$")) == 1


def test_writes_are_spaced_as_settings_say(github_standin: GitHubStandIn) -> None:
    github_standin.add_pull(7, author="maint", head_sha=HEAD)
    env = standin_env(github_standin) | {"QNN_BOT_WRITE_INTERVAL": "0.2"}
    gw = PyGithubGateway(make_client(Settings.from_env(env)), REPO)
    start = time.monotonic()
    gw.create_comment(7, "one")
    gw.create_comment(7, "two")
    assert time.monotonic() - start >= 0.2


# ----- every write retried, none duplicated


def test_a_502_on_editing_a_comment_is_retried(
    github_standin: GitHubStandIn, gateway: PyGithubGateway
) -> None:
    """PyGithub's own retry leaves PATCH out; one 502 used to fail the report."""
    github_standin.add_pull(7, author="maint", head_sha=HEAD)
    c = gateway.create_comment(7, "before")
    github_standin.fail_next("PATCH", r"/issues/comments/\d+$", 502)
    gateway.edit_comment(c.id, "after")
    assert [x.body for x in github_standin.comments(7)] == ["after"]
    assert [r.status for r in github_standin.requests_to("PATCH", r"/issues/comments/")] == [
        502,
        200,
    ]


def test_a_comment_whose_reply_was_lost_is_not_posted_twice(
    github_standin: GitHubStandIn, gateway: PyGithubGateway
) -> None:
    """GitHub made the comment, then the answer came back 502: look, do not post again."""
    github_standin.add_pull(7, author="maint", head_sha=HEAD)
    github_standin.fail_next("POST", r"/issues/7/comments$", 502, after=True)
    made = gateway.create_comment(7, "accepted: run 1 at " + HEAD)
    assert [x.body for x in github_standin.comments(7)] == ["accepted: run 1 at " + HEAD]
    assert made.id == github_standin.comments(7)[0].id
    assert len(github_standin.requests_to("POST", r"/issues/7/comments$")) == 1
    # Control: a POST that GitHub did not act on is sent again, once.
    github_standin.fail_next("POST", r"/issues/7/comments$", 502)
    gateway.create_comment(7, "second")
    assert [x.body for x in github_standin.comments(7)][-1] == "second"
    assert [r.status for r in github_standin.requests_to("POST", r"/issues/7/comments$")][1:] == [
        502,
        201,
    ]


def test_a_dispatch_is_never_sent_twice_on_a_server_error(
    github_standin: GitHubStandIn, gateway: PyGithubGateway
) -> None:
    """GitHub may have started the run before its 5xx: a second POST could start another."""
    github_standin.add_workflow("qnn-device-tests.yml")
    github_standin.fail_next("POST", r"/dispatches$", 502, after=True)
    with pytest.raises(GatewayError, match="HTTP 502"):
        gateway.dispatch("qnn-device-tests.yml", "main", {})
    assert len(github_standin.runs()) == 1
    assert len(github_standin.requests_to("POST", r"/dispatches$")) == 1


def test_a_reaction_whose_reply_was_lost_still_counts_as_new(
    github_standin: GitHubStandIn, gateway: PyGithubGateway
) -> None:
    """The retry finds the reaction (200) that the first POST made: it is this call's own."""
    github_standin.add_pull(7, author="maint", head_sha=HEAD)
    c = github_standin.add_comment(7, "maint", "/qnn test x")
    github_standin.fail_next("POST", r"/reactions$", 502, after=True)
    assert gateway.add_reaction(c.id, "eyes") is True
    assert gateway.add_reaction(c.id, "eyes") is False  # a redelivered event: already handled


def test_compare_gives_the_merge_base_and_at_most_300_files(
    github_standin: GitHubStandIn, gateway: PyGithubGateway
) -> None:
    gh = github_standin
    gh.add_commit("1" * 40, branch="main")
    gh.add_commit("2" * 40, ["1" * 40], files=[f"exir/f{i}.py" for i in range(299)])
    gh.add_commit("3" * 40, ["2" * 40], files=["exir/g.py", "exir/h.py"])
    gh.add_commit(HEAD, ["1" * 40], files=["backends/qualcomm/x.py"])
    mine = gateway.compare("main", HEAD)
    assert (mine.status, mine.merge_base, mine.files) == (
        "ahead",
        "1" * 40,
        ("backends/qualcomm/x.py",),
    )
    under = gateway.compare("1" * 40, "2" * 40)
    assert (len(under.files), under.capped) == (299, False)  # the control: all of them
    over = gateway.compare("1" * 40, "3" * 40)
    assert (len(over.files), over.capped) == (300, True)  # 301 changed; GitHub lists 300
    assert gateway.compare("3" * 40, "1" * 40).status == "behind"
    with pytest.raises(GatewayError) as gone:
        gateway.compare("d" * 40, HEAD)
    assert gone.value.status == 404 and f"compare/{'d' * 40}...{HEAD}" in str(gone.value)
