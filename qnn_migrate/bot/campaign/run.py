"""One run of the campaign on one repository, over a ``CampaignGateway`` (effects at the edge).

1. Read the default branch's name, the campaign branch's tip and the campaign's PRs (by
   the bot's login, from its branch).
2. ``decide`` the one action from those and the rewrite's digest.
3. Apply it through the Git Data API and the pulls API: a commit of the rewritten files on
   top of the base commit (blobs, a tree over the base's tree, a commit), the branch moved
   to it, the PR opened or its body updated; or the body's notice; or the PR closed and
   its branch deleted. No checkout is written and no credential reaches one.

Before it forces the branch to a new commit, the run reads the tip again: a push that
landed after the decision stops the run instead of being overwritten. (GitHub's refs API
has no compare-and-swap for a forced update; what is left is the moment between that read
and the update.) A run that fails halfway leaves nothing the next one mistakes for a
person's work: when it recreates the branch it writes the PR's marker (naming the old tip
as ``prev``) before it moves the branch, and when GitHub refuses to open the PR it deletes
the branch it made.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Any

from qnn_migrate.bot.campaign import body as body_mod
from qnn_migrate.bot.campaign.decide import (
    Action,
    Situation,
    State,
    campaign_pulls,
    decide,
)
from qnn_migrate.bot.campaign.marker import proof_section
from qnn_migrate.bot.campaign.tree import TreeRewrite
from qnn_migrate.bot.github.gateway import CampaignGateway, GatewayError, TreeFile

DEFAULT_BRANCH = "qnn-migrate/campaign"
OPEN_FAILED = (
    "GitHub refused to open the campaign's PR, so its branch was deleted again; with "
    "GITHUB_TOKEN, Settings > Actions > General > Workflow permissions must allow GitHub "
    "Actions to create pull requests"
)
BRANCH_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./-]{0,99}$")
TIERS = ("simulator", "phones")
MATRIX_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


class CampaignError(RuntimeError):
    """The run could not go on; the message says what happened and what to do."""


@dataclass(frozen=True)
class CampaignSettings:
    """How the campaign runs on a repository (the workflow's inputs)."""

    bot_login: str
    repo_url: str  # https://github.com/owner/name
    branch: str = DEFAULT_BRANCH
    tier: str = "simulator"  # where the proof runs: the simulator (vs the merge base) or phones
    matrices: tuple[str, ...] = ()  # the proof's matrices; none: `auto`

    def __post_init__(self) -> None:
        if not BRANCH_RE.match(self.branch) or ".." in self.branch or self.branch.endswith("/"):
            raise CampaignError(
                f"branch {self.branch!r} is not a branch name the campaign uses: letters, "
                "digits, `_ . / -`, like qnn-migrate/campaign"
            )
        if self.tier not in TIERS:
            raise CampaignError(f"tier {self.tier!r}: choose {' or '.join(TIERS)}")
        bad = [m for m in self.matrices if not MATRIX_RE.match(m)]
        if bad:
            raise CampaignError(f"matrix names {bad} are malformed; name matrices of the config")


def proof_command(settings: CampaignSettings, sha: str) -> str:
    """The ``/qnn test`` the proof dispatches for the campaign's commit ``sha``."""
    what = " ".join(settings.matrices) or "auto"
    tier = " --sim --compare base" if settings.tier == "simulator" else ""
    return f"/qnn test {what}{tier} --sha {sha}"


@dataclass(frozen=True)
class CampaignResult:
    """What the run did, for the log, the job's outputs and the organization's table."""

    repository: str
    state: State
    action: Action
    reason: str
    base: str
    pr: int | None = None
    url: str | None = None
    commit: str | None = None  # the campaign's commit now at the branch's tip (new or not)
    prove: bool = False  # a new commit: the proof job dispatches the run for it

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": 1,
            "kind": "campaign",
            "repository": self.repository,
            "state": self.state.value,
            "action": self.action.value,
            "reason": self.reason,
            "base": self.base,
            "pr": self.pr,
            "url": self.url,
            "commit": self.commit,
            "prove": self.prove,
        }


def _files(rewrite: TreeRewrite) -> list[TreeFile]:
    return [TreeFile(f.path, f.new, f.mode) for f in rewrite.changed if f.new is not None]


def run_campaign(
    gw: CampaignGateway,
    rewrite: TreeRewrite,
    *,
    base: str,
    settings: CampaignSettings,
    version: str | None = None,
) -> CampaignResult:
    """Read, decide, apply; see the module docstring."""
    version = version or body_mod.bot_version()
    default = gw.default_branch()
    tip = gw.branch_tip(settings.branch)
    pulls = campaign_pulls(gw.pulls_from(settings.branch), settings.bot_login)
    decision = decide(Situation(base, rewrite.changes(), tip, pulls))

    def facts(head: str, base_sha: str = base, prev: str = "") -> body_mod.Facts:
        return body_mod.Facts(
            repo_url=settings.repo_url,
            default_branch=default,
            branch=settings.branch,
            base=base_sha,
            head=head,
            proof_command=proof_command(settings, head),
            tier=settings.tier,
            version=version,
            prev=prev if prev != head else "",
        )

    def result(**kw: Any) -> CampaignResult:
        pull = decision.pull
        fields: dict[str, Any] = {
            "repository": gw.repo,
            "state": decision.state,
            "action": decision.action,
            "reason": decision.reason,
            "base": base,
            "pr": pull.number if pull else None,
            "url": pull.html_url if pull else None,
        }
        return CampaignResult(**(fields | kw))

    message = body_mod.commit_message(rewrite, base, version)
    if decision.action is Action.OPEN:
        head = gw.create_commit(base, _files(rewrite), message)
        _move(gw, settings.branch, head, tip)
        text = body_mod.render(rewrite, facts(head))
        try:
            made = gw.create_pull(
                title=body_mod.title(), body=text, head=settings.branch, base=default
            )
        except GatewayError as exc:
            # No PR holds the marker of this commit: a branch left at it would read as a
            # stranger's to the next run. Take it away (best effort) and say what to do.
            with contextlib.suppress(GatewayError):
                gw.delete_branch(settings.branch)
            raise CampaignError(f"{OPEN_FAILED} ({exc})") from exc
        return result(pr=made.number, url=made.html_url, commit=head, prove=True)
    if decision.action is Action.RECREATE:
        assert decision.pull is not None
        head = gw.create_commit(base, _files(rewrite), message)
        # The marker first, then the branch: a run that stops in between leaves the branch
        # at the marker's `prev`, which the next run knows for its own.
        text = body_mod.render(rewrite, facts(head, prev=tip or ""))
        gw.update_pull(decision.pull.number, title=body_mod.title(), body=text)
        _move(gw, settings.branch, head, tip)
        return result(commit=head, prove=True)
    pull, marker = decision.pull, decision.marker
    if decision.action is Action.REFRESH:
        assert pull is not None and marker is not None
        text = body_mod.render(
            rewrite, facts(marker.head, marker.base, marker.prev), proof=proof_section(pull.body)
        )
        if text != pull.body:
            gw.update_pull(pull.number, body=text)
        return result(commit=marker.head)
    if decision.action is Action.STOP:
        assert pull is not None
        if decision.say_stop:
            noticed = body_mod.with_stop_notice(
                pull.body, branch=settings.branch, tip=tip, marker=marker
            )
            gw.update_pull(pull.number, body=noticed)
        return result()
    if decision.action is Action.CLOSE:
        assert pull is not None
        text = body_mod.closed_body(pull.body, default_branch=default, base=base, version=version)
        gw.update_pull(pull.number, body=text, state="closed")
        if marker is not None and tip == marker.head:
            gw.delete_branch(settings.branch)
        return result()
    return result(commit=None)


def _move(gw: CampaignGateway, branch: str, head: str, tip: str | None) -> None:
    """Set the branch to the campaign's new commit, unless it moved since it was read."""
    now = gw.branch_tip(branch)
    if now != tip:
        raise CampaignError(
            f"{branch} moved while the campaign ran ({(tip or 'none')[:12]} -> "
            f"{(now or 'none')[:12]}): nothing was overwritten; the next run sees the new "
            "commit (and stops if a person made it)"
        )
    try:
        gw.move_branch(branch, head, create=tip is None, force=tip is not None)
    except GatewayError as exc:
        raise CampaignError(
            f"GitHub refused to set {branch} to the campaign's commit {head[:12]}: {exc}. "
            "Check that the branch is not protected against the bot"
        ) from exc
