"""Who may start a device run, and which commit it may run (pure over a gateway).

* The commenter's role comes from the REST permission API, never ``author_association``
  (which shows private org members as outsiders); below ``[policy] run_roles`` is refused.
* ``--sha`` names the commit a maintainer reviewed. It must be the full 40-hex SHA and
  equal the head: a short prefix can be matched by a commit made for the purpose (a
  birthday search over 12 hex digits takes minutes), which would then run unreviewed.
* ``--sha`` is required whenever someone who may not start runs could push to the head
  branch between the comment and the moment the head is read: when the PR's author may
  not start runs, or when the head branch lives in a fork whose owner may not.
"""

from __future__ import annotations

from dataclasses import dataclass

from qnn_migrate.bot.catalog import Policy
from qnn_migrate.bot.github.gateway import GitHubGateway, PullRequest
from qnn_migrate.bot.model import SHA_RE

# The replies: each says what happened and what to do next.
NOT_ALLOWED = (
    "😕 @{login}, device runs can be started only by collaborators with {roles} permission "
    "on {repo} (yours: `{role}`). Ask a maintainer to comment `{command}`."
)
NEEDS_SHA = (
    "😕 This PR's author (@{author}) cannot start device runs, so the command must name the "
    "commit you reviewed, or a later push could run instead. The head is now `{head}`; if "
    "that is what you reviewed, comment:\n\n```\n{command} --sha {head}\n```"
)
NEEDS_SHA_FORK = (
    "😕 The head branch lives in {repo}, whose owner cannot start device runs, so the command "
    "must name the commit you reviewed, or a later push there could run instead. The head is "
    "now `{head}`; if that is what you reviewed, comment:\n\n```\n{command} --sha {head}\n```"
)
SHA_NOT_FULL = (
    "😕 `--sha {given}` is not a full commit SHA. Name the commit you reviewed by all 40 "
    "hexadecimal digits (a short prefix can be matched by another commit), e.g. "
    "`--sha {head}` if that is it."
)
SHA_MISMATCH = (
    "😕 The command names commit `{given}`, but the PR head is `{head}`. Review the new "
    "commits, then comment again with `--sha {head}`."
)


@dataclass(frozen=True)
class Role:
    """A user's repository role and whether it may start device runs."""

    login: str
    role: str
    may_run: bool


def role_of(gw: GitHubGateway, policy: Policy, login: str) -> Role:
    role = gw.role(login)
    return Role(login, role, role in policy.run_roles)


def refusal(gw: GitHubGateway, policy: Policy, login: str, command: str) -> str | None:
    """The reply refusing ``login``, or None when they may start runs."""
    who = role_of(gw, policy, login)
    if who.may_run:
        return None
    return NOT_ALLOWED.format(
        login=login, roles=", ".join(policy.run_roles), repo=gw.repo, role=who.role, command=command
    )


def pin_problem(
    gw: GitHubGateway,
    policy: Policy,
    *,
    given_sha: str | None,
    login: str,
    pull: PullRequest,
    command: str,
) -> str | None:
    """The reply refusing to run ``pull.head_sha``, or None when it is pinned."""
    head = pull.head_sha
    if given_sha is not None:
        if not SHA_RE.match(given_sha):
            return SHA_NOT_FULL.format(given=given_sha[:40], head=head)
        if given_sha != head:
            return SHA_MISMATCH.format(given=given_sha, head=head)
        return None
    if pull.author != login and not role_of(gw, policy, pull.author).may_run:
        return NEEDS_SHA.format(author=pull.author, head=head, command=command)
    owner = (pull.head_repo or "").partition("/")[0]
    if pull.head_repo is None or (
        pull.is_fork
        and owner not in (login, pull.author)
        and not role_of(gw, policy, owner).may_run
    ):
        return NEEDS_SHA_FORK.format(
            repo=pull.head_repo or "a deleted repository", head=head, command=command
        )
    return None
