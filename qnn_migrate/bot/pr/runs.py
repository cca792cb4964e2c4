"""A device run for a PR: who may start or stop one, and starting it (pure over a gateway).

The verbs that start runs (``test``, ``retry``) and the one that stops them (``cancel``)
share this; the order of checks is the security argument:

1. The commenter must be allowed to start runs (``auth``: the REST permission API);
   otherwise 😕 and a reply saying who may run (``admit``).
2. The PR is read now and must be open; its results comment (the bot's, by marker and
   login) says what the last run was.
3. The head SHA is pinned (``pin``, ``auth.pin_problem``): a ``--sha`` must be the full
   head SHA, and it is required when someone who may not start runs could have pushed to
   the head branch (the PR's author, or the owner of the fork it lives in).
4. The verb plans and checks the caps; then ``start``: the results comment is set to
   "running" and then the commit status to pending, so that they never show an older
   command's outcome for this one; if GitHub refuses the status, the comment is put back as
   it was and the claim released. Then ``workflow_dispatch`` the device workflow on the
   default branch with inputs ``pr``, ``sha``, ``shards`` (JSON), ``comment_id``; 🚀; the
   run it replaces is cancelled (only now: if that fails, the comment and the status
   still follow a run that goes on, and the reply says so); a reply that echoes the SHA.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from qnn_migrate.bot.github.gateway import GatewayError, GitHubGateway, IssueComment, PullRequest
from qnn_migrate.bot.model import At
from qnn_migrate.bot.pr import auth, render
from qnn_migrate.bot.pr.context import Outcome, Turn
from qnn_migrate.bot.pr.plan import Plan, PlanError
from qnn_migrate.bot.pr.state import Phase, RunState, find_results_comment

NOT_OPEN = "😕 PR #{pr} is {state}; device runs are started only on open PRs."
ACCEPTED = (
    "🚀 Running `{command}` at [`{sha}`]({commit_url}) (the PR head when the command was "
    "accepted): {shards} shard(s), {tests} test runs on {socs}.{run} Results will appear in "
    "the [results comment]({results_url}). If the head moves before the run starts, the run "
    "refuses."
)
DISPATCH_FAILED = (
    "😕 GitHub refused to start the device workflow `{workflow}`: {error}. Nothing was run; "
    "try again later or ask a maintainer to check the workflow."
)
NOT_CANCELLED = (
    " The previous run{run} could not be cancelled ({error}): it runs on, and its results "
    "will not replace this run's in the results comment."
)
STATUS_REFUSED = "GitHub refused the commit status for this run ({error}), so it was not started."


@dataclass(frozen=True)
class Admitted:
    """A commenter who may start runs, on an open PR, and what its results comment says."""

    pull: PullRequest
    previous: tuple[IssueComment, RunState | None] | None

    @property
    def prior(self) -> RunState | None:
        """The last run's state, when the results comment has a readable one."""
        return self.previous[1] if self.previous else None


def admit(turn: Turn, command: str, *, check_permission: bool = True) -> Admitted | Outcome:
    """Steps 1 and 2: the PR and its results comment, or the refusal (``command``: the
    canonical text a maintainer may be asked to comment). ``check_permission=False`` is for
    a caller that is itself the authority (the campaign: a workflow of the default branch,
    started by its schedule or by a maintainer), whose bot login is no collaborator."""
    gw, catalog = turn.gw, turn.ctx.catalog
    refused = auth.refusal(gw, catalog.policy, turn.login, command) if check_permission else None
    if refused is not None:
        return turn.refuse("refused", refused)
    pull = gw.pull(turn.pr)
    if pull is None or pull.state != "open":
        state = "not a pull request" if pull is None else pull.state
        return turn.refuse("refused", NOT_OPEN.format(pr=turn.pr, state=state))
    return Admitted(pull, find_results_comment(gw.comments(turn.pr), turn.ctx.bot_login))


def pin(turn: Turn, admitted: Admitted, given_sha: str | None, command: str) -> Outcome | None:
    """Step 3: None when the head is pinned, else the refusal."""
    problem = auth.pin_problem(
        turn.gw,
        turn.ctx.catalog.policy,
        given_sha=given_sha,
        login=turn.login,
        pull=admitted.pull,
        command=command,
    )
    return turn.refuse("refused", problem) if problem else None


def merge_base(gw: GitHubGateway, pull: PullRequest) -> str:
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


def start(
    turn: Turn,
    admitted: Admitted,
    the_plan: Plan,
    *,
    stored: Mapping[str, Any],
    asked: str,
    note: str = "",
) -> Outcome:
    """Step 4: dispatch ``the_plan`` (checked against the caps) at the pinned head.

    ``stored`` is the command the run carries out, as the results comment keeps it (what
    ``/qnn retry`` runs again); ``asked`` is the command as the commenter gave it, for the
    reply; ``note`` goes to the results comment (a retry's "the first N failed")."""
    gw, ctx, pull = turn.gw, turn.ctx, admitted.pull
    catalog, sha, prior = ctx.catalog, pull.head_sha, admitted.prior
    state = RunState(
        phase=Phase.PENDING,
        pr=pull.number,
        sha=sha,
        command=dict(stored),
        requested_by=turn.login,
        comment_id=turn.comment_id,
        expected=the_plan.expected,
        note=note,
    )
    shown = turn.verbs.describe(stored)
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
    previous = admitted.previous
    results = _write_results(turn, previous, state, shown, shards)
    context = catalog.policy.status_context
    running = f"{the_plan.expected} tests on {', '.join(the_plan.socs)}: running"[:140]
    try:
        gw.set_status(sha, "pending", context, running, ctx.links.run_url)
    except GatewayError as exc:
        # The status still shows what it showed: so must the comment (the claim is released).
        _put_back(turn, previous, results, state, shown, exc)
        raise
    ref = ctx.dispatch_ref or gw.default_branch()
    inputs = {
        "pr": str(pull.number),
        "sha": sha,
        "shards": the_plan.to_json(),
        "comment_id": str(turn.comment_id),
    }
    try:
        run = gw.dispatch(catalog.policy.device_workflow, ref, inputs)
    except GatewayError as exc:
        _stop_previous(gw, prior)  # the comment no longer tracks it
        text = DISPATCH_FAILED.format(workflow=catalog.policy.device_workflow, error=exc)
        closed = state.with_phase(Phase.REFUSED, text)
        body = render.render_closed(closed, ctx.links, "did not start", text, command_text=shown)
        gw.edit_comment(results.id, body)
        gw.set_status(sha, "error", context, "the device workflow did not start", None)
        refused = turn.refuse("failed", text)
        return Outcome("failed", refused.reason, the_plan, None, sha)
    turn.started = True
    turn.react("rocket")
    # One results comment tracks one run: the new run replaces the one in progress. Only
    # now, so that a failure here leaves the comment and the status on a run that goes on.
    not_stopped = _stop_previous(gw, prior)
    if run.run_id is not None or run.html_url:
        state = replace(state, run_id=run.run_id, run_url=run.html_url)
        results = _write_results(turn, (results, None), state, shown, shards)
        gw.set_status(sha, "pending", context, running, run.html_url or ctx.links.run_url)
    turn.reply(
        ACCEPTED.format(
            command=asked,
            sha=sha,
            commit_url=ctx.links.commit(sha),
            shards=len(the_plan.shards),
            tests=the_plan.expected,
            socs=", ".join(the_plan.socs),
            run=f" [Workflow run]({run.html_url})." if run.html_url else "",
            results_url=results.html_url or ctx.links.comment(pull.number, results.id),
        )
        + not_stopped
    )
    return Outcome("dispatched", f"{len(the_plan.shards)} shard(s) at {sha}", the_plan, run, sha)


def _write_results(
    turn: Turn,
    previous: tuple[IssueComment, RunState | None] | None,
    state: RunState,
    shown: str,
    shards: list[tuple[str, str, int]],
) -> IssueComment:
    """The results comment showing ``state`` (edited in place, or created)."""
    body = render.render_pending(state, turn.ctx.links, shards, command_text=shown)
    if previous is None:
        return turn.gw.create_comment(turn.pr, body)
    comment = previous[0]
    if comment.body != body:
        turn.gw.edit_comment(comment.id, body)
    return IssueComment(comment.id, comment.author, body, comment.html_url)


def _stop_previous(gw: GitHubGateway, prior: RunState | None) -> str:
    """Cancel the run the results comment tracked before; "" or the sentence saying it could
    not be (it runs on, and its report finds the comment taken by a newer command)."""
    if prior is None or prior.phase is not Phase.PENDING or prior.run_id is None:
        return ""
    try:
        gw.cancel_run(prior.run_id)
    except GatewayError as exc:
        run = f" ([run]({prior.run_url}))" if prior.run_url else ""
        return NOT_CANCELLED.format(run=run, error=str(exc)[:300])
    return ""


def _put_back(
    turn: Turn,
    previous: tuple[IssueComment, RunState | None] | None,
    results: IssueComment,
    state: RunState,
    shown: str,
    exc: GatewayError,
) -> None:
    """The results comment as it was before this command (or, if there was none, saying the
    run did not start), after GitHub refused the status that goes with the new one."""
    if previous is not None:
        body = previous[0].body
    else:
        text = STATUS_REFUSED.format(error=str(exc)[:300])
        closed = state.with_phase(Phase.REFUSED, text)
        body = render.render_closed(
            closed, turn.ctx.links, "did not start", text, command_text=shown
        )
    if body != results.body:
        with contextlib.suppress(GatewayError):  # still failing: the reply and job log say it
            turn.gw.edit_comment(results.id, body)
