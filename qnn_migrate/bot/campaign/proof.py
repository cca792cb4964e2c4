"""Proof on the campaign's PR: the matrices its files select, run with ``--compare base``.

``prove`` runs after the campaign made a commit (in its own job, with the permissions of
the command workflow's job: see .github/workflows/qnn-bot-campaign.yml). It checks that
the PR is still the campaign's own and untouched (opened by the bot's login from the
campaign's branch, its head the commit the campaign wrote, as its marker says), then
dispatches the device workflow through the very code a maintainer's ``/qnn test`` goes
through, with ``--sha`` pinning the campaign's commit: the run refuses if anyone pushed
since (the device workflow's head check), the code that runs is the default branch plus
the rewrite, and the merge base's shards run main's code as for any PR. Finally the PR's
proof section links the results comment.

``dispatch_proof`` is the campaign's one call into the PR side (``bot/pr``): the ``test``
verb's handler, given a parsed command and a ``Turn``. Nothing else in ``bot/campaign``
imports ``bot/pr``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from qnn_migrate.bot.campaign import body as body_mod
from qnn_migrate.bot.campaign.marker import proof_section, read_marker, with_proof
from qnn_migrate.bot.github.gateway import (
    CampaignGateway,
    CampaignPull,
    GatewayError,
    GitHubGateway,
)

REQUEST = (
    "🔬 **qnn-migrate campaign**: does this migration keep what the code lowers? Asking for\n\n"
    "```\n{command}\n```\n\n"
    "at the campaign's commit [`{sha}`]({commit_url}). The results comment follows."
)


class ProofGateway(GitHubGateway, CampaignGateway, Protocol):
    """The calls ``prove`` makes: the PR side's dispatch, and the campaign PR's body."""


@dataclass(frozen=True)
class Dispatched:
    """What the PR side's dispatch did with the proof's command."""

    action: str  # dispatched | refused | failed
    reason: str
    run_url: str | None = None
    results_url: str | None = None


@dataclass(frozen=True)
class ProofResult:
    """What ``prove`` did, for the log and the organization's table."""

    repository: str
    pr: int
    action: str  # dispatched | refused | failed | skipped
    reason: str
    command: str = ""
    run_url: str | None = None
    results_url: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": 1,
            "kind": "proof",
            "repository": self.repository,
            "pr": self.pr,
            "action": self.action,
            "reason": self.reason,
            "command": self.command,
            "run_url": self.run_url,
            "results_url": self.results_url,
        }


def dispatch_proof(gw: GitHubGateway, ctx: Any, *, pr: int, command_line: str) -> Dispatched:
    """Dispatch ``command_line`` (a ``/qnn test ... --sha S``) on PR ``pr`` the way a
    maintainer's comment is dispatched, with ``ctx`` (``pr.context.BotContext``).

    The campaign's one call into the PR side: the command is parsed by the verbs' table, a
    comment on the PR carries it (its id is the run's identity, as a /qnn comment's is), and
    the ``test`` verb's handler for a trusted caller runs it (``pr.verbs.test.handle_trusted``:
    a person's comment's path without the commenter's permission check, since the bot's
    login is no collaborator; the campaign's workflow is the authority). The campaign's own
    checks (``prove``) come first, and ``--sha`` pins the commit, as the pin rules require
    of anyone whose push could race the read.
    """
    from qnn_migrate.bot.pr.context import Turn
    from qnn_migrate.bot.pr.grammar import CommandError
    from qnn_migrate.bot.pr.state import find_results_comment
    from qnn_migrate.bot.pr.verbs import table_of
    from qnn_migrate.bot.pr.verbs.test import TestCommand, handle_trusted

    verbs = table_of(ctx)
    try:
        command = verbs.parse_line(command_line, ctx.catalog)
    except CommandError as exc:
        return Dispatched("refused", f"the proof's command does not parse: {exc}")
    if not isinstance(command, TestCommand) or command.sha is None:
        return Dispatched("refused", f"{command_line!r} is not a /qnn test pinned with --sha")
    try:
        pull = gw.pull(pr)
        if pull is None:
            return Dispatched("refused", f"#{pr} is not a pull request")
        request = gw.create_comment(
            pr,
            REQUEST.format(
                command=command_line,
                sha=command.sha,
                commit_url=ctx.links.commit(command.sha),
            ),
        )
        turn = Turn(gw, ctx, verbs, pr, request.id, ctx.bot_login)
        outcome = handle_trusted(turn, command)
        found = find_results_comment(gw.comments(pr), ctx.bot_login)
    except GatewayError as exc:
        return Dispatched("failed", f"GitHub's API failed while dispatching: {exc}")
    results = (found[0].html_url or ctx.links.comment(pr, found[0].id)) if found else None
    run = outcome.run.html_url if outcome.run is not None else None
    action = {"dispatched": "dispatched", "failed": "failed"}.get(outcome.action, "refused")
    return Dispatched(action, outcome.reason, run, results)


def context(catalog: Any, settings: Any, links: Any) -> Any:
    """The PR side's ``BotContext`` for the dispatch."""
    from qnn_migrate.bot.pr.context import BotContext

    return BotContext(
        catalog=catalog,
        bot_login=settings.bot_login,
        links=links,
        dispatch_ref=settings.dispatch_ref,
    )


def _campaign_pull(gw: CampaignGateway, branch: str, pr: int) -> CampaignPull | None:
    return next((p for p in gw.pulls_from(branch) if p.number == pr), None)


def prove(
    gw: ProofGateway,
    ctx: Any,
    *,
    pr: int,
    sha: str,
    branch: str,
    command_line: str,
) -> ProofResult:
    """Check the PR is the campaign's and untouched, dispatch, link the results comment."""
    pull = _campaign_pull(gw, branch, pr)
    marker = read_marker(pull.body) if pull is not None else None
    problem = None
    if pull is None:
        problem = f"#{pr} is not a PR from the campaign's branch {branch}"
    elif pull.state != "open":
        problem = f"#{pr} is {pull.state}"
    elif pull.author != ctx.bot_login:
        problem = f"#{pr} was opened by @{pull.author}, not by the campaign ({ctx.bot_login})"
    elif pull.head_sha != sha or marker is None or marker.head != sha:
        problem = (
            f"#{pr}'s head is {pull.head_sha[:12]}, not the campaign's commit {sha[:12]} "
            "(someone pushed, or a newer run replaced it): the proof runs only on the "
            "campaign's own commit"
        )
    if problem is not None or pull is None:
        return ProofResult(gw.repo, pr, "skipped", problem or "", command_line)
    done = dispatch_proof(gw, ctx, pr=pr, command_line=command_line)
    if done.action == "dispatched":
        section = body_mod.proof_done(command_line, done.results_url, done.run_url)
    else:
        section = body_mod.proof_not_run(command_line, done.reason)
    reason = done.reason
    try:
        now = _campaign_pull(gw, branch, pr)
        if now is not None and proof_section(now.body) is not None:
            text = with_proof(now.body, section)
            if text != now.body:
                gw.update_pull(pr, body=text)
    except GatewayError as exc:  # the run is what matters; the link can wait for the next run
        reason += f" (the PR's description could not be updated: {exc})"
    return ProofResult(
        gw.repo, pr, done.action, reason, command_line, done.run_url, done.results_url
    )
