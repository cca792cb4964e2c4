"""Comment events through the real PyGithub gateway to the GitHub stand-in over HTTP.

Each test seeds the stand-in, feeds a real webhook payload (vendored from
@octokit/webhooks-examples) to ``handle_comment_event``, and asserts on what GitHub
would now hold: reactions, comments, dispatched runs and commit statuses.
"""

from __future__ import annotations

import json

import pytest
from qnn_migrate_tests.bot.pr.support import CONV_FILE, HEAD, bot_comments, send
from qnn_migrate_tests.github_standin.fixtures import BOT_LOGIN, REPO
from qnn_migrate_tests.github_standin.payloads import comment_event
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot.github.client import PyGithubGateway
from qnn_migrate.bot.github.gateway import GatewayError, IssueComment
from qnn_migrate.bot.model import At, RunsOn
from qnn_migrate.bot.pr.context import BotContext
from qnn_migrate.bot.pr.dispatch import handle_comment_event
from qnn_migrate.bot.pr.plan import Plan
from qnn_migrate.bot.pr.state import MARKER, Phase, RunState, find_results_comment


def gh_comments(gh: GitHubStandIn, number: int = 7) -> list[IssueComment]:
    return [IssueComment(c.id, c.author, c.body) for c in gh.comments(number)]


def test_dispatch_pins_the_head_and_reports_progress(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    outcome, cid = send(gh, gateway, ctx, "LGTM\n/qnn test auto --soc SM8650,SM8750")
    assert outcome.action == "dispatched"  # type: ignore[attr-defined]
    (run,) = gh.runs()
    assert run.workflow == "qnn-device-tests.yml" and run.ref == "main"
    assert set(run.inputs) == {"pr", "sha", "shards", "comment_id"}
    assert (run.inputs["pr"], run.inputs["sha"], run.inputs["comment_id"]) == ("7", HEAD, str(cid))
    plan = Plan.from_json(run.inputs["shards"])
    assert plan.socs == ("SM8650", "SM8750") and plan.matrices == ("canonicalize_conv",)
    assert all(p.shard.sha == HEAD and p.shard.pr == 7 for p in plan.shards)
    assert gh.reactions(cid) == {"eyes": [BOT_LOGIN], "rocket": [BOT_LOGIN]}
    results, reply = bot_comments(gh)
    assert results.startswith(MARKER) and "running" in results and HEAD in results
    assert HEAD in reply and reply.startswith("🚀")
    # Pending before the dispatch (nothing can leave an older outcome showing), then
    # pending with the run's link.
    first, status = gh.statuses(HEAD)
    assert first["state"] == "pending" and first["context"] == "qnn / device tests"
    assert (status["state"], status["context"]) == ("pending", "qnn / device tests")
    assert status["target_url"] == f"https://github.com/{REPO}/actions/runs/{run.id}"


def test_the_same_comment_delivered_twice_dispatches_once(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    comment = gh.add_comment(7, "maint", "/qnn test canonicalize_conv")
    event = comment_event(
        repo=REPO, number=7, body=comment.body, login="maint", comment_id=comment.id
    )
    first = handle_comment_event(event, gateway, ctx)
    second = handle_comment_event(json.loads(json.dumps(event)), gateway, ctx)
    assert (first.action, second.action) == ("dispatched", "duplicate")
    assert len(gh.runs()) == 1
    assert len(gh.requests_to("POST", r"/dispatches$")) == 1


def test_a_user_without_permission_is_refused_politely(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    outcome, cid = send(gh, gateway, ctx, "/qnn test canonicalize_conv", login="reader")
    assert outcome.action == "refused"  # type: ignore[attr-defined]
    assert gh.runs() == []
    assert gh.reactions(cid) == {"eyes": [BOT_LOGIN], "confused": [BOT_LOGIN]}
    (reply,) = bot_comments(gh)
    assert "collaborators with admin, maintain, write permission" in reply
    assert "(yours: `read`)" in reply and "@reader" in reply


def test_an_unknown_user_is_refused(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    outcome, _ = send(gh, gateway, ctx, "/qnn test", login="drive-by")
    assert outcome.action == "refused"  # type: ignore[attr-defined]
    assert "(yours: `read`)" in bot_comments(gh)[0]


def test_a_bad_command_gets_a_reply_naming_it(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    outcome, cid = send(gh, gateway, ctx, "/qnn test canonicalise_conv --soc SM8651")
    assert outcome.action == "rejected"  # type: ignore[attr-defined]
    (reply,) = bot_comments(gh)
    assert "`canonicalise_conv`" in reply and "did you mean `canonicalize_conv`" in reply
    assert gh.reactions(cid)["confused"] == [BOT_LOGIN] and gh.runs() == []


def test_help_needs_no_permission(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    outcome, _ = send(gh, gateway, ctx, "/qnn help", login="reader")
    assert outcome.action == "help"  # type: ignore[attr-defined]
    assert "QNN device tests bot" in bot_comments(gh)[0]


@pytest.mark.parametrize(
    ("kwargs", "login", "reason"),
    [
        ({"action": "edited"}, "maint", "only newly created comments"),
        ({"on_pull": False}, "maint", "not a pull request"),
        ({"state": "closed"}, "maint", "not open"),
        ({"user_type": "Bot"}, "dependabot[bot]", "comment by a bot"),
        ({}, BOT_LOGIN, "comment by a bot"),
    ],
)
def test_events_that_are_ignored_make_no_request(
    gh: GitHubStandIn,
    gateway: PyGithubGateway,
    ctx: BotContext,
    kwargs: dict[str, object],
    login: str,
    reason: str,
) -> None:
    gh.add_issue(8)
    number = 8 if kwargs.get("on_pull") is False else 7
    outcome, _ = send(
        gh, gateway, ctx, "/qnn test canonicalize_conv", login=login, number=number, **kwargs
    )
    assert outcome.action == "ignored" and reason in outcome.reason  # type: ignore[attr-defined]
    assert gh.requests == []


def test_a_comment_on_a_pr_closed_since_the_event(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    gh.repos[REPO].pulls[7].state = "closed"
    outcome, _ = send(gh, gateway, ctx, "/qnn test canonicalize_conv")
    assert outcome.action == "refused" and gh.runs() == []  # type: ignore[attr-defined]
    assert "is closed" in bot_comments(gh)[0]


def test_fork_pr_by_an_outsider_needs_the_reviewed_sha(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    gh.add_pull(
        9, author="outsider", head_sha=HEAD, head_repo="outsider/executorch", files=[CONV_FILE]
    )
    outcome, _ = send(gh, gateway, ctx, "/qnn test auto", number=9)
    assert outcome.action == "refused" and gh.runs() == []  # type: ignore[attr-defined]
    assert f"--sha {HEAD}" in bot_comments(gh, 9)[0]
    outcome, _ = send(gh, gateway, ctx, f"/qnn test auto --sha {HEAD}", number=9)
    assert outcome.action == "dispatched"  # type: ignore[attr-defined]
    assert gh.runs()[0].inputs["sha"] == HEAD


def test_a_sha_prefix_is_not_a_pin(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    """A 12-hex prefix can be matched by a commit made for it: only the full SHA pins."""
    gh.add_pull(
        9, author="outsider", head_sha=HEAD, head_repo="outsider/executorch", files=[CONV_FILE]
    )
    outcome, _ = send(gh, gateway, ctx, f"/qnn test auto --sha {HEAD[:12]}", number=9)
    assert outcome.action == "rejected" and gh.runs() == []  # type: ignore[attr-defined]
    assert "full 40-hexadecimal-digit SHA" in bot_comments(gh, 9)[0]


def test_a_head_branch_in_an_outsiders_fork_needs_the_reviewed_sha(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    """The author may start runs, but the fork's owner (who can push to it) may not."""
    gh.add_user("writer", role="write", repo=REPO)
    gh.add_pull(
        9, author="writer", head_sha=HEAD, head_repo="outsider/executorch", files=[CONV_FILE]
    )
    outcome, _ = send(gh, gateway, ctx, "/qnn test auto", number=9)
    assert outcome.action == "refused" and gh.runs() == []  # type: ignore[attr-defined]
    assert "lives in outsider/executorch" in bot_comments(gh, 9)[0]
    outcome, _ = send(gh, gateway, ctx, f"/qnn test auto --sha {HEAD}", number=9)
    assert outcome.action == "dispatched"  # type: ignore[attr-defined]
    # Control: the author's own fork needs no --sha.
    gh.add_pull(
        10, author="writer", head_sha=HEAD, head_repo="writer/executorch", files=[CONV_FILE]
    )
    outcome, _ = send(gh, gateway, ctx, "/qnn test auto", number=10)
    assert outcome.action == "dispatched"  # type: ignore[attr-defined]


def test_fork_pr_whose_head_moved_after_review_is_refused(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    gh.add_pull(
        9, author="outsider", head_sha=HEAD, head_repo="outsider/executorch", files=[CONV_FILE]
    )
    gh.push(9, "b" * 40)  # pushed between the review and the bot reading the PR
    outcome, _ = send(gh, gateway, ctx, f"/qnn test auto --sha {HEAD}", number=9)
    assert outcome.action == "refused" and gh.runs() == []  # type: ignore[attr-defined]
    assert f"the PR head is `{'b' * 40}`" in bot_comments(gh, 9)[0]


def test_retry_failed_and_cancel(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    outcome, _ = send(gh, gateway, ctx, "/qnn retry failed")
    assert outcome.action == "refused"  # type: ignore[attr-defined]
    assert "no earlier device run" in bot_comments(gh)[-1]
    send(gh, gateway, ctx, "/qnn test canonicalize_conv convert_linear_to_conv2d")
    outcome, _ = send(gh, gateway, ctx, "/qnn retry failed")
    assert "has not reported yet" in bot_comments(gh)[-1]
    outcome, _ = send(gh, gateway, ctx, "/qnn cancel", login="admin")
    assert outcome.action == "cancelled"  # type: ignore[attr-defined]
    assert gh.runs()[0].conclusion == "cancelled"
    results = find_results_comment(gateway.comments(7), BOT_LOGIN)
    assert results is not None and results[1] is not None and results[1].phase is Phase.CANCELLED
    outcome, _ = send(gh, gateway, ctx, "/qnn cancel")
    assert "No device run is in progress" in bot_comments(gh)[-1]
    outcome, _ = send(gh, gateway, ctx, "/qnn retry")
    assert outcome.action == "dispatched"  # type: ignore[attr-defined]
    assert Plan.from_json(gh.runs()[-1].inputs["shards"]).matrices == (
        "canonicalize_conv",
        "convert_linear_to_conv2d",
    )


def test_a_new_command_replaces_the_pending_run_and_edits_one_comment(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    send(gh, gateway, ctx, "/qnn test canonicalize_conv")
    send(gh, gateway, ctx, "/qnn test convert_linear_to_conv2d")
    first, second = gh.runs()
    assert first.conclusion == "cancelled" and second.status == "queued"
    assert sum(MARKER in body for body in bot_comments(gh)) == 1


def test_a_forged_results_comment_is_not_trusted(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    forged = (
        f"{MARKER}\n<!-- qnn-bot:state "
        '{"v":1,"phase":"reported","pr":7,"sha":"' + HEAD + '","command":{"action":"test",'
        '"matrices":["canonicalize_conv"],"socs":["SM8650"],"backend":"htp","seed":1},'
        '"requested_by":"x","comment_id":1,"failed":[["SM8650","x","TestA.test_b"]]} -->'
    )
    gh.add_comment(7, "maint", forged)
    outcome, _ = send(gh, gateway, ctx, "/qnn retry failed")
    assert outcome.action == "refused"  # type: ignore[attr-defined]
    assert "no earlier device run" in bot_comments(gh)[-1]


def test_a_dispatch_that_fails_leaves_no_older_outcome_showing(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    """The results comment and the status name the new command, whatever fails after."""
    send(gh, gateway, ctx, "/qnn test canonicalize_conv")
    (first,) = gh.runs()
    gh.fail_next("POST", r"/dispatches$", 502)
    outcome, _ = send(gh, gateway, ctx, "/qnn test convert_linear_to_conv2d")
    assert outcome.action == "failed"  # type: ignore[attr-defined]
    assert len(gh.runs()) == 1 and first.conclusion == "cancelled"
    found = find_results_comment(gh_comments(gh), BOT_LOGIN)
    assert found is not None and found[1] is not None
    results, state = found[0].body, found[1]
    assert "did not start" in results and "HTTP 502" in results
    assert state.phase is Phase.REFUSED and state.command["matrices"] == [
        "convert_linear_to_conv2d"
    ]
    assert gh.statuses(HEAD)[-1]["state"] == "error"


def test_a_502_on_the_results_comment_is_retried_and_the_run_still_starts(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    send(gh, gateway, ctx, "/qnn test canonicalize_conv")
    gh.fail_next("PATCH", r"/issues/comments/\d+$", 502)
    outcome, _ = send(gh, gateway, ctx, "/qnn test convert_linear_to_conv2d")
    assert outcome.action == "dispatched"  # type: ignore[attr-defined]
    found = find_results_comment(gh_comments(gh), BOT_LOGIN)
    assert found is not None and found[1] is not None
    state = found[1]
    assert state.phase is Phase.PENDING and state.run_id == gh.runs()[-1].id
    assert state.command["matrices"] == ["convert_linear_to_conv2d"]


def redeliver(gh: GitHubStandIn, gw: PyGithubGateway, ctx: BotContext, cid: int) -> object:
    """The same event again, as a re-run of the failed job delivers it."""
    body = next(c.body for c in gh.comments(7) if c.id == cid)
    event = comment_event(repo=REPO, number=7, body=body, login="maint", comment_id=cid)
    return handle_comment_event(event, gw, ctx)


def test_a_transient_failure_after_the_claim_releases_it_and_says_so(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    # GitHub answers 502 to every try of the permission check, after the 👀 claim.
    gh.fail_next("GET", r"/collaborators/maint/permission$", 502, count=20)
    outcome, cid = send(gh, gateway, ctx, "/qnn test canonicalize_conv")
    assert outcome.action == "interrupted"  # type: ignore[attr-defined]
    assert gh.runs() == [] and gh.reactions(cid) == {"eyes": []}
    (reply,) = bot_comments(gh)
    assert "502" in reply and "Nothing was started" in reply and "re-running" in reply
    gh.faults.clear()
    # The re-run of the job handles the command instead of calling it a duplicate.
    again = redeliver(gh, gateway, ctx, cid)
    assert again.action == "dispatched"  # type: ignore[attr-defined]
    assert len(gh.runs()) == 1 and gh.reactions(cid)["eyes"] == [BOT_LOGIN]


def test_a_claim_that_cannot_be_released_asks_for_a_new_comment(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    gh.fail_next("GET", r"/collaborators/maint/permission$", 502, count=20)
    gh.fail_next("DELETE", r"/reactions/\d+$", 502, count=20)
    outcome, cid = send(gh, gateway, ctx, "/qnn test canonicalize_conv")
    assert outcome.action == "interrupted"  # type: ignore[attr-defined]
    assert gh.reactions(cid)["eyes"] == [BOT_LOGIN]
    (reply,) = bot_comments(gh)
    assert "post the command again in a new comment" in reply


def test_a_failure_after_the_dispatch_keeps_the_claim(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    """Once the device workflow started, a re-run must not start it again."""
    comment = gh.add_comment(7, "maint", "/qnn test canonicalize_conv")
    event = comment_event(
        repo=REPO, number=7, body=comment.body, login="maint", comment_id=comment.id
    )
    # The 🚀 after the dispatch fails: the error reaches the job, the claim stays.
    gh.before_next(
        "POST",
        r"/dispatches$",
        lambda: gh.fail_next("POST", r"/issues/comments/\d+/reactions$", 502, count=20),
    )
    with pytest.raises(GatewayError):
        handle_comment_event(event, gateway, ctx)
    assert len(gh.runs()) == 1 and gh.reactions(comment.id)["eyes"] == [BOT_LOGIN]
    gh.faults.clear()
    again = redeliver(gh, gateway, ctx, comment.id)
    assert again.action == "duplicate" and len(gh.runs()) == 1  # type: ignore[attr-defined]


def test_compare_base_reads_the_merge_base_and_a_failure_there_starts_nothing(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    # No history in the stand-in: GitHub cannot compare main with the head (404), and no
    # retry would change that: refused, with what to do.
    outcome, cid = send(gh, gateway, ctx, "/qnn test canonicalize_conv --compare base")
    assert outcome.action == "refused"  # type: ignore[attr-defined]
    assert gh.runs() == [] and gh.reactions(cid)["confused"] == [BOT_LOGIN]
    (reply,) = bot_comments(gh)
    assert "GitHub cannot give one for `aaaaaaaaaaaa` (404" in reply
    assert "run the command without `--compare base`" in reply
    # A 502 past the retries is GitHub's trouble: the claim is released for the job's re-run.
    gh.fail_next("GET", r"/compare/", 502, count=20)
    outcome, cid = send(gh, gateway, ctx, "/qnn test canonicalize_conv --compare base")
    assert outcome.action == "interrupted"  # type: ignore[attr-defined]
    assert gh.runs() == [] and gh.reactions(cid) == {"eyes": []}
    gh.faults.clear()
    # With main's history and the PR branched from it, the re-run dispatches both halves.
    gh.add_commit("1" * 40, branch="main")
    gh.add_commit(HEAD, ["1" * 40])
    again = redeliver(gh, gateway, ctx, cid)
    assert again.action == "dispatched"  # type: ignore[attr-defined]
    shards = [p.shard for p in Plan.from_json(gh.runs()[0].inputs["shards"]).shards]
    assert [(s.id[:9], s.sha, s.at) for s in shards] == [
        ("sim-sm865", HEAD, At.HEAD),
        ("sim-sm865", HEAD, At.HEAD),
        ("sim-base-", "1" * 40, At.MERGE_BASE),
        ("sim-base-", "1" * 40, At.MERGE_BASE),
    ]


def test_a_retry_of_compare_base_runs_the_merge_base_again(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    gh.add_commit("1" * 40, branch="main")
    gh.add_commit(HEAD, ["1" * 40])
    send(gh, gateway, ctx, "/qnn test canonicalize_conv --compare base")
    send(gh, gateway, ctx, "/qnn cancel", login="admin")
    outcome, _ = send(gh, gateway, ctx, "/qnn retry")
    assert outcome.action == "dispatched"  # type: ignore[attr-defined]
    retried = [p.shard for p in Plan.from_json(gh.runs()[-1].inputs["shards"]).shards]
    assert sum(s.at is At.MERGE_BASE for s in retried) == 2 and len(retried) == 4
    results = find_results_comment(gateway.comments(7), BOT_LOGIN)
    assert results is not None and results[1] is not None
    assert results[1].command["compare"] == "base"


@pytest.mark.parametrize("flags", ["", "--sim", "--compare base"])
def test_retry_failed_stays_on_the_tier_the_command_ran_on(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext, flags: str
) -> None:
    """`/qnn retry failed` of a `--sim` (or `--compare base`) run went to phones: the failed
    tests' shards dropped the simulator tier, and a compare lost its merge base's shards."""
    from qnn_migrate.bot.pr.commands import parse
    from qnn_migrate.bot.pr.verbs.retry import failed_work
    from qnn_migrate.bot.pr.verbs.test import TestCommand, plan_command

    command = parse(f"/qnn test canonicalize_conv {flags}", ctx.catalog)
    assert isinstance(command, TestCommand)
    prior = RunState(
        phase=Phase.REPORTED,
        pr=7,
        sha=HEAD,
        command=command.to_dict(),
        requested_by="maint",
        comment_id=1,
        failed=(
            ("SM8650", "canonicalize_conv", "TestQNNQuantizedOperator.test_qnn_backend_conv1d"),
        ),
        failed_total=1,
    )
    base = "1" * 40 if "compare" in flags else None
    work = failed_work(prior, ctx.catalog)
    planned = plan_command(command, ctx.catalog, sha=HEAD, pr=7, work=work, merge_base=base)
    shards = [p.shard for p in planned.shards]
    at_head = [s for s in shards if s.at is At.HEAD]
    assert [s.tests for s in at_head] == [("TestQNNQuantizedOperator.test_qnn_backend_conv1d",)]
    assert at_head[0].runs_on is (RunsOn.SIMULATOR if flags else RunsOn.PHONE)  # control: phones
    at_base = [s for s in shards if s.at is At.MERGE_BASE]
    assert [(s.sha, s.tests) for s in at_base] == ([(base, at_head[0].tests)] if base else [])


def results_state(gh: GitHubStandIn) -> tuple[str, RunState]:
    found = find_results_comment(gh_comments(gh), BOT_LOGIN)
    assert found is not None and found[1] is not None
    return found[0].body, found[1]


def test_a_previous_run_that_cannot_be_cancelled_leaves_the_new_run_tracked(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    """Issue 27: a 502 on cancelling the previous run released the claim after the results
    comment and the status already showed the new command, which then never ran, and the
    previous run's results were never shown either. The previous run is now cancelled only
    once the new one has started: a failure there leaves the comment and the status on the
    run that goes on, and the reply says the previous one could not be stopped."""
    send(gh, gateway, ctx, "/qnn test canonicalize_conv")
    (first,) = gh.runs()
    gh.fail_next("POST", r"/actions/runs/\d+/cancel$", 502, count=20)
    outcome, cid = send(gh, gateway, ctx, "/qnn test convert_linear_to_conv2d")
    assert outcome.action == "dispatched"  # type: ignore[attr-defined]
    second = gh.runs()[-1]
    assert second.id != first.id and first.conclusion is None  # it could not be stopped
    _, state = results_state(gh)
    assert (state.phase, state.run_id, state.comment_id) == (Phase.PENDING, second.id, cid)
    assert state.command["matrices"] == ["convert_linear_to_conv2d"]
    status = gh.statuses(HEAD)[-1]
    assert status["state"] == "pending" and str(status["target_url"]).endswith(f"/{second.id}")
    assert gh.reactions(cid) == {"eyes": [BOT_LOGIN], "rocket": [BOT_LOGIN]}
    reply = bot_comments(gh)[-1]
    assert reply.startswith("🚀") and "could not be cancelled" in reply and "502" in reply
    # Control: when GitHub cancels it, the reply says nothing of the kind.
    gh.faults.clear()
    send(gh, gateway, ctx, "/qnn test canonicalize_conv")
    assert second.conclusion == "cancelled"
    assert "could not be cancelled" not in bot_comments(gh)[-1]


def test_a_refused_status_puts_the_results_comment_back(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    """Issue 27: a 422 on the status POST left the results comment naming the new command
    and the status still on the previous one. The comment is now put back as it was (the
    previous run goes on and reports there), and the claim is released for a re-run."""
    send(gh, gateway, ctx, "/qnn test canonicalize_conv")
    (first,) = gh.runs()
    body_before, state_before = results_state(gh)
    statuses_before = gh.statuses(HEAD)
    gh.fail_next("POST", r"/statuses/[0-9a-f]{40}$", 422, message="Validation Failed")
    outcome, cid = send(gh, gateway, ctx, "/qnn test convert_linear_to_conv2d")
    assert outcome.action == "interrupted"  # type: ignore[attr-defined]
    body, state = results_state(gh)
    assert (body, state) == (body_before, state_before)  # names the first command and run
    assert gh.statuses(HEAD) == statuses_before
    assert len(gh.runs()) == 1 and first.conclusion is None  # still running, still tracked
    assert gh.reactions(cid) == {"eyes": []}
    reply = bot_comments(gh)[-1]
    assert "422" in reply and "Nothing was started" in reply
    # The job's re-run handles the command: comment, status and runs agree again.
    again = redeliver(gh, gateway, ctx, cid)
    assert again.action == "dispatched"  # type: ignore[attr-defined]
    second = gh.runs()[-1]
    _, state = results_state(gh)
    assert (state.run_id, state.comment_id) == (second.id, cid)
    assert str(gh.statuses(HEAD)[-1]["target_url"]).endswith(f"/{second.id}")
    assert first.conclusion == "cancelled"


def test_a_refused_status_on_a_first_run_leaves_no_running_comment(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    """With no earlier results comment, the one just made says the run did not start."""
    gh.fail_next("POST", r"/statuses/[0-9a-f]{40}$", 422, message="Validation Failed")
    outcome, cid = send(gh, gateway, ctx, "/qnn test canonicalize_conv")
    assert outcome.action == "interrupted"  # type: ignore[attr-defined]
    body, state = results_state(gh)
    assert state.phase is Phase.REFUSED and "did not start" in body and "422" in body
    assert gh.statuses(HEAD) == [] and gh.runs() == []
    assert gh.reactions(cid) == {"eyes": []}
