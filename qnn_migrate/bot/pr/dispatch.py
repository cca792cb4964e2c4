"""``issue_comment`` event -> parse, authorize, pin, plan, dispatch (pure over a gateway).

The order of checks is the security argument, so it is spelled out here:

1. Only ``created`` comments, on an **open pull request**, of this repository, by a
   person (not this bot, not any ``[bot]``/``Bot`` account). Otherwise: nothing, no call.
2. The body is parsed offline; no ``/qnn`` line means nothing happens.
3. Claim the comment with the bot's 👀 reaction. GitHub answers 201 when the reaction is
   new and 200 when this login already left it, atomically on its side: a redelivered
   or re-run event gets 200 and stops here, so one comment dispatches at most once.
   A GitHub API failure after the claim and before anything was started (the device
   workflow dispatched, a run cancelled) releases the claim (the 👀 is taken back) and
   says so on the PR, so a re-run of the job handles the command instead of calling it a
   duplicate; past that point the claim stays, as a re-run would start the work twice.
4. A malformed command gets 😕 and a reply naming the problem; ``help`` gets the help.
5. The commenter must be allowed to start runs (``auth``: the REST permission API);
   otherwise 😕 and a reply saying who may run.
6. The PR is read now and its head SHA pinned (``auth.pin_problem``): a ``--sha`` must be
   the full head SHA, and it is required when someone who may not start runs could have
   pushed to the head branch (the PR's author, or the owner of the fork it lives in).
7. Plan and check the caps. The results comment is set to "running" and then the commit
   status to pending, so that they never show an older command's outcome for this one; if
   GitHub refuses the status, the comment is put back as it was and the claim released.
   Then ``workflow_dispatch`` the device workflow on the default branch with inputs
   ``pr``, ``sha``, ``shards`` (JSON), ``comment_id``; 🚀; the run it replaces is
   cancelled (only now: if that fails, the comment and the status still follow a run that
   goes on, and the reply says so); a reply that echoes the SHA.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.github.gateway import (
    DispatchedRun,
    GatewayError,
    GitHubGateway,
    IssueComment,
    PullRequest,
)
from qnn_migrate.bot.model import At
from qnn_migrate.bot.pr import auth, render
from qnn_migrate.bot.pr.commands import (
    Action,
    Command,
    CommandError,
    command_from_dict,
    help_text,
    parse,
)
from qnn_migrate.bot.pr.migrate import handle_migrate
from qnn_migrate.bot.pr.plan import (
    Plan,
    PlanError,
    Selection,
    check_limits,
    plan_at_head_and_base,
    plan_command,
    select,
)
from qnn_migrate.bot.pr.state import Phase, RunState, find_results_comment


@dataclass(frozen=True)
class BotContext:
    """What every handler needs besides the event and the gateway."""

    catalog: Catalog
    bot_login: str
    links: render.Links
    dispatch_ref: str | None = None  # None: the repository's default branch
    durations: Mapping[str, float] | None = None


@dataclass(frozen=True)
class Outcome:
    """What the bot did with one event; ``action`` is stable for tests and logs."""

    # ignored | duplicate | help | rejected | refused | dispatched | cancelled | failed
    # | interrupted (a GitHub API failure before anything started; the claim released)
    action: str
    reason: str
    plan: Plan | None = None
    run: DispatchedRun | None = None
    sha: str | None = None


def _is_bot(user: Mapping[str, Any], bot_login: str) -> bool:
    login = str(user.get("login", ""))
    return login == bot_login or user.get("type") == "Bot" or login.endswith("[bot]")


class _Conversation:
    """Replies and reactions on one /qnn comment."""

    def __init__(self, gw: GitHubGateway, pr: int, comment_id: int) -> None:
        self.gw, self.pr, self.comment_id = gw, pr, comment_id
        # Set once something was started that a re-run of the job must not start again.
        self.started = False

    def refuse(self, action: str, text: str) -> Outcome:
        self.gw.add_reaction(self.comment_id, "confused")
        self.gw.create_comment(self.pr, text)
        return Outcome(action, text.splitlines()[0])


def handle_comment_event(event: Mapping[str, Any], gw: GitHubGateway, ctx: BotContext) -> Outcome:
    """Act on one ``issue_comment`` webhook payload; see the module docstring for the order."""
    if event.get("action") != "created":
        return Outcome("ignored", "only newly created comments are read")
    issue = event.get("issue") or {}
    comment = event.get("comment") or {}
    repository = (event.get("repository") or {}).get("full_name")
    if "pull_request" not in issue:
        return Outcome("ignored", "not a pull request")
    if issue.get("state") != "open":
        return Outcome("ignored", "the pull request is not open")
    if repository != gw.repo:
        return Outcome("ignored", f"event for {repository}, not {gw.repo}")
    user = comment.get("user") or {}
    if _is_bot(user, ctx.bot_login):
        return Outcome("ignored", "comment by a bot")
    login = str(user.get("login", ""))
    number = int(issue["number"])
    comment_id = int(comment["id"])
    body = comment.get("body") or ""
    error: CommandError | None = None
    command: Command | None = None
    try:
        command = parse(str(body), ctx.catalog)
    except CommandError as exc:
        error = exc
    if command is None and error is None:
        return Outcome("ignored", "no /qnn command")

    if not gw.add_reaction(comment_id, "eyes"):
        return Outcome("duplicate", f"comment {comment_id} was already handled")
    talk = _Conversation(gw, number, comment_id)
    try:
        return _claimed(gw, ctx, talk, login, command, error)
    except GatewayError as exc:
        if talk.started:
            raise
        return _release(talk, exc)


def _release(talk: _Conversation, exc: GatewayError) -> Outcome:
    """Take the claim back after a failure that started nothing, and say so if GitHub lets us."""
    gw = talk.gw
    try:
        gw.remove_reaction(talk.comment_id, "eyes")
        then = render.INTERRUPTED_RELEASED
    except GatewayError:
        then = render.INTERRUPTED_KEPT
    text = render.INTERRUPTED.format(error=str(exc)[:300], then=then)
    with contextlib.suppress(GatewayError):  # still failing: the job log (outcome) says it
        gw.create_comment(talk.pr, text)
    return Outcome("interrupted", f"{exc}; {then}")


def _claimed(
    gw: GitHubGateway,
    ctx: BotContext,
    talk: _Conversation,
    login: str,
    command: Command | None,
    error: CommandError | None,
) -> Outcome:
    """Everything after the claim (steps 4 to 7)."""
    number, comment_id = talk.pr, talk.comment_id
    if error is not None:
        return talk.refuse("rejected", render.COMMAND_ERROR.format(error=error))
    assert command is not None
    if command.action is Action.HELP:
        gw.create_comment(number, help_text(ctx.catalog))
        return Outcome("help", "help sent")
    if command.action is Action.MIGRATE:  # its own authorization: it only proposes text
        # Releasing its claim is always safe: a review already posted at the head SHA
        # makes the re-run a duplicate (``migrate.already_reviewed``).
        done = handle_migrate(
            gw, command, pr=number, login=login, bot_login=ctx.bot_login, comment_id=comment_id
        )
        return Outcome(done.action, done.reason, sha=done.sha)

    refused = auth.refusal(gw, ctx.catalog.policy, login, command.canonical())
    if refused is not None:
        return talk.refuse("refused", refused)
    pull = gw.pull(number)
    if pull is None or pull.state != "open":
        state = "not a pull request" if pull is None else pull.state
        return talk.refuse("refused", render.NOT_OPEN.format(pr=number, state=state))

    previous = find_results_comment(gw.comments(number), ctx.bot_login)
    if command.action is Action.CANCEL:
        return _cancel(gw, ctx, talk, login, previous)
    return _run(gw, ctx, talk, command, login, pull, previous)


def _run(
    gw: GitHubGateway,
    ctx: BotContext,
    talk: _Conversation,
    command: Command,
    login: str,
    pull: PullRequest,
    previous: tuple[IssueComment, RunState | None] | None,
) -> Outcome:
    catalog = ctx.catalog
    problem = auth.pin_problem(
        gw,
        catalog.policy,
        given_sha=command.sha,
        login=login,
        pull=pull,
        command=command.canonical(),
    )
    if problem:
        return talk.refuse("refused", problem)
    sha = pull.head_sha
    prior = previous[1] if previous else None
    note = ""
    try:
        if command.action is Action.TEST:
            files = gw.changed_files(pull.number) if command.auto else None
            ran = command
            base = _merge_base(gw, pull) if command.compare else None
            the_plan = plan_command(
                command,
                select(command, catalog, files),
                catalog=catalog,
                sha=sha,
                pr=pull.number,
                durations=ctx.durations,
                merge_base=base,
            )
        else:
            if prior is None:
                return talk.refuse("refused", render.NOTHING_TO_RETRY)
            try:
                ran = command_from_dict(prior.command, catalog)
            except CommandError:
                return talk.refuse("refused", render.NOTHING_TO_RETRY)
            if command.failed_only:
                if prior.phase is not Phase.REPORTED:
                    return talk.refuse("refused", render.NOT_REPORTED.format(sha=prior.sha))
                if not prior.failed:
                    return talk.refuse("refused", render.NOTHING_FAILED.format(sha=prior.sha))
                base = _merge_base(gw, pull) if ran.compare else None
                the_plan = _plan_failed(prior, ctx, ran, sha, pull.number, base)
                note = f"retry of {len(prior.failed)} failed test run(s)"
                if prior.failed_total > len(prior.failed):
                    note += f" (the first {len(prior.failed)} of {prior.failed_total})"
            else:
                files = gw.changed_files(pull.number) if ran.auto else None
                base = _merge_base(gw, pull) if ran.compare else None
                the_plan = plan_command(
                    ran,
                    select(ran, catalog, files),
                    catalog=catalog,
                    sha=sha,
                    pr=pull.number,
                    durations=ctx.durations,
                    merge_base=base,
                )
        check_limits(the_plan, catalog.limits)
    except PlanError as exc:
        return talk.refuse("refused", f"😕 {exc}")

    # The results comment and the status name this command before anything runs, so
    # that whatever fails later, they never show the previous command's outcome for it.
    state = RunState(
        phase=Phase.PENDING,
        pr=pull.number,
        sha=sha,
        command=ran.to_dict(),
        requested_by=login,
        comment_id=talk.comment_id,
        expected=the_plan.expected,
        note=note,
    )
    shards = [
        (
            f"{p.shard.soc} (merge base `{p.shard.sha[:7]}`)"
            if p.shard.at is At.MERGE_BASE
            else p.shard.soc,
            p.shard.matrix,
            len(p.shard.tests),
        )
        for p in the_plan.shards
    ]
    results = _write_results(gw, pull.number, previous, state, ctx, shards)
    context = catalog.policy.status_context
    running = f"{the_plan.expected} tests on {', '.join(the_plan.socs)}: running"[:140]
    try:
        gw.set_status(sha, "pending", context, running, ctx.links.run_url)
    except GatewayError as exc:
        # The status still shows what it showed: so must the comment (the claim is released).
        _put_back(gw, ctx, previous, results, state, exc)
        raise
    ref = ctx.dispatch_ref or gw.default_branch()
    inputs = {
        "pr": str(pull.number),
        "sha": sha,
        "shards": the_plan.to_json(),
        "comment_id": str(talk.comment_id),
    }
    try:
        run = gw.dispatch(catalog.policy.device_workflow, ref, inputs)
    except GatewayError as exc:
        _stop_previous(gw, prior)  # the comment no longer tracks it
        text = render.DISPATCH_FAILED.format(workflow=catalog.policy.device_workflow, error=exc)
        closed = state.with_phase(Phase.REFUSED, text)
        gw.edit_comment(results.id, render.render_closed(closed, ctx.links, "did not start", text))
        gw.set_status(sha, "error", context, "the device workflow did not start", None)
        outcome = talk.refuse("failed", text)
        return Outcome("failed", outcome.reason, the_plan, None, sha)
    talk.started = True
    gw.add_reaction(talk.comment_id, "rocket")
    # One results comment tracks one run: the new run replaces the one in progress. Only
    # now, so that a failure here leaves the comment and the status on a run that goes on.
    not_stopped = _stop_previous(gw, prior)
    if run.run_id is not None or run.html_url:
        state = replace(state, run_id=run.run_id, run_url=run.html_url)
        results = _write_results(gw, pull.number, (results, None), state, ctx, shards)
        gw.set_status(sha, "pending", context, running, run.html_url or ctx.links.run_url)
    gw.create_comment(
        pull.number,
        render.ACCEPTED.format(
            command=command.canonical(),
            sha=sha,
            commit_url=ctx.links.commit(sha),
            shards=len(the_plan.shards),
            tests=the_plan.expected,
            socs=", ".join(the_plan.socs),
            run=f" [Workflow run]({run.html_url})." if run.html_url else "",
            results_url=results.html_url or ctx.links.comment(pull.number, results.id),
        )
        + not_stopped,
    )
    return Outcome("dispatched", f"{len(the_plan.shards)} shard(s) at {sha}", the_plan, run, sha)


def _stop_previous(gw: GitHubGateway, prior: RunState | None) -> str:
    """Cancel the run the results comment tracked before; "" or the sentence saying it could
    not be (it runs on, and its report finds the comment taken by a newer command)."""
    if prior is None or prior.phase is not Phase.PENDING or prior.run_id is None:
        return ""
    try:
        gw.cancel_run(prior.run_id)
    except GatewayError as exc:
        run = f" ([run]({prior.run_url}))" if prior.run_url else ""
        return render.NOT_CANCELLED.format(run=run, error=str(exc)[:300])
    return ""


def _put_back(
    gw: GitHubGateway,
    ctx: BotContext,
    previous: tuple[IssueComment, RunState | None] | None,
    results: IssueComment,
    state: RunState,
    exc: GatewayError,
) -> None:
    """The results comment as it was before this command (or, if there was none, saying the
    run did not start), after GitHub refused the status that goes with the new one."""
    if previous is not None:
        body = previous[0].body
    else:
        text = render.STATUS_REFUSED.format(error=str(exc)[:300])
        closed = state.with_phase(Phase.REFUSED, text)
        body = render.render_closed(closed, ctx.links, "did not start", text)
    if body != results.body:
        with contextlib.suppress(GatewayError):  # still failing: the reply and job log say it
            gw.edit_comment(results.id, body)


def _merge_base(gw: GitHubGateway, pull: PullRequest) -> str:
    """The PR head's merge base with its base branch, for ``--compare base`` (read from GitHub's
    compare API: nothing is checked out here, so no PR code runs where the token is).

    A 404 will not pass by itself (no common history, a base branch that is gone): the
    command is refused with why. Any other failure is a GatewayError, and the claim is
    released so that a re-run of the job tries again."""
    branch = pull.base_ref or gw.default_branch()
    try:
        return gw.compare(branch, pull.head_sha).merge_base
    except GatewayError as exc:
        if exc.status != 404:
            raise
        raise PlanError(
            f"`--compare base` runs the tests again at this PR's merge base with `{branch}`, "
            f"and GitHub cannot give one for `{pull.head_sha[:12]}` (404: no common history, or "
            "the branch is gone). Nothing was started; run the command without `--compare base`."
        ) from exc


def _write_results(
    gw: GitHubGateway,
    pr: int,
    previous: tuple[IssueComment, RunState | None] | None,
    state: RunState,
    ctx: BotContext,
    shards: list[tuple[str, str, int]],
) -> IssueComment:
    """The results comment showing ``state`` (edited in place, or created)."""
    body = render.render_pending(state, ctx.links, shards, ctx.catalog)
    if previous is None:
        return gw.create_comment(pr, body)
    comment = previous[0]
    if comment.body != body:
        gw.edit_comment(comment.id, body)
    return IssueComment(comment.id, comment.author, body, comment.html_url)


def _plan_failed(
    prior: RunState, ctx: BotContext, ran: Command, sha: str, pr: int, merge_base: str | None
) -> Plan:
    """Shards for exactly the failed (SoC, matrix, test) runs of the last report, on the
    tier the command ran on; for ``--compare base``, again at the (new) ``merge_base``."""
    catalog = ctx.catalog
    work: dict[str, list[Selection]] = {}
    grouped: dict[tuple[str, str], list[str]] = {}
    for soc, matrix, test in prior.failed:
        if soc not in catalog.socs or not catalog.socs[soc].in_lab:
            continue
        if not catalog.knows(matrix, test):
            continue  # the registry changed since; such an id can no longer run
        grouped.setdefault((soc, matrix), []).append(test)
    for (soc, matrix), tests in grouped.items():
        work.setdefault(soc, []).append(Selection(matrix, tuple(dict.fromkeys(tests))))
    if not work:
        raise PlanError("none of the failed tests can run any more (SoCs or ids left the catalog)")
    return plan_at_head_and_base(
        work, ran, catalog=catalog, sha=sha, pr=pr, durations=ctx.durations, merge_base=merge_base
    )


def _cancel(
    gw: GitHubGateway,
    ctx: BotContext,
    talk: _Conversation,
    login: str,
    previous: tuple[IssueComment, RunState | None] | None,
) -> Outcome:
    state = previous[1] if previous else None
    if previous is None or state is None or state.phase is not Phase.PENDING:
        return talk.refuse("refused", render.NOTHING_TO_CANCEL)
    if state.run_id is not None and not gw.cancel_run(state.run_id):
        return talk.refuse("refused", render.NOTHING_TO_CANCEL)
    talk.started = True
    note = f"Cancelled by @{login}."
    closed = state.with_phase(Phase.CANCELLED, note)
    gw.edit_comment(previous[0].id, render.render_closed(closed, ctx.links, "cancelled", note))
    gw.set_status(
        state.sha,
        "error",
        ctx.catalog.policy.status_context,
        f"cancelled by @{login}"[:140],
        state.run_url,
    )
    gw.add_reaction(talk.comment_id, "rocket")
    run = f" ([run]({state.run_url}))" if state.run_url else ""
    gw.create_comment(talk.pr, render.CANCELLED.format(sha=state.sha, run=run, login=login))
    return Outcome("cancelled", f"run {state.run_id} cancelled", sha=state.sha)
