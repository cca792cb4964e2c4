"""What the bot needs from GitHub, as a Protocol and plain values (pure; no PyGithub here).

``github.client.PyGithubGateway`` is the real implementation; the orchestration modules
(``pr.dispatch``, ``pr.report``, ``pr.head``, ``nightly.publish``) take any object with
these methods, built in ``cli.common``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class GatewayError(RuntimeError):
    """GitHub refused or failed a request after retries; the message names the call."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status  # the HTTP status GitHub answered, if it answered


@dataclass(frozen=True)
class PullRequest:
    """The facts about a PR that decide whether and what to run."""

    number: int
    state: str  # "open" or "closed"
    head_sha: str
    head_repo: str | None  # "owner/name" of the head branch's repository; None if deleted
    base_repo: str
    author: str
    draft: bool = False
    base_ref: str = ""  # the branch the PR merges into (its merge base is taken against it)

    @property
    def is_fork(self) -> bool:
        return self.head_repo != self.base_repo


@dataclass(frozen=True)
class IssueComment:
    """A comment on a PR's conversation."""

    id: int
    author: str
    body: str
    html_url: str = ""


@dataclass(frozen=True)
class DispatchedRun:
    """What GitHub says about a workflow run it just created (ids may be unknown)."""

    run_id: int | None
    html_url: str | None


@dataclass(frozen=True)
class PullFile:
    """One file of a PR's diff: its name, GitHub's status for it and its patch (None when
    GitHub leaves the patch out: binary files and very large diffs)."""

    filename: str
    status: str  # added, removed, modified, renamed, copied, changed, unchanged
    patch: str | None


# GitHub's compare API lists at most this many changed files, and says nothing when it cuts.
COMPARE_FILES_CAP = 300


@dataclass(frozen=True)
class Comparison:
    """GitHub's compare of ``base...head``: their merge base and the files changed from it to head.

    ``files`` holds at most ``COMPARE_FILES_CAP`` names; a list of that length may be cut
    (``capped``). ``status`` is GitHub's: ``ahead`` (base is an ancestor of head),
    ``behind`` (head is an ancestor of base), ``diverged`` or ``identical``.
    """

    status: str
    merge_base: str
    files: tuple[str, ...]

    @property
    def capped(self) -> bool:
        return len(self.files) >= COMPARE_FILES_CAP


@dataclass(frozen=True)
class FileBlob:
    """A file's bytes at one commit; ``data`` is None when ``size`` is over the reader's cap."""

    path: str
    size: int
    data: bytes | None


@dataclass(frozen=True)
class ReviewComment:
    """A comment of a PR review on head-side lines ``start_line..line`` of ``path``."""

    path: str
    body: str
    line: int
    start_line: int | None = None


@dataclass(frozen=True)
class Review:
    """A pull-request review as GitHub lists it."""

    id: int
    author: str
    body: str
    commit_id: str
    html_url: str = ""


class GitHubGateway(Protocol):
    """The GitHub calls the bot makes, on one repository."""

    @property
    def repo(self) -> str:
        """``owner/name``."""
        ...

    def pull(self, number: int) -> PullRequest | None:
        """The PR, or None when ``number`` is an issue or does not exist."""
        ...

    def role(self, login: str) -> str:
        """The user's repository role (admin, maintain, write, triage, read) or ``none``."""
        ...

    def add_reaction(self, comment_id: int, content: str) -> bool:
        """React as the bot; True if the reaction is new, False if the bot had already left it."""
        ...

    def remove_reaction(self, comment_id: int, content: str) -> None:
        """Take the bot's reaction back (gone already: nothing to do)."""
        ...

    def comments(self, issue: int) -> list[IssueComment]:
        """All comments on the PR's conversation, oldest first."""
        ...

    def create_comment(self, issue: int, body: str) -> IssueComment: ...

    def edit_comment(self, comment_id: int, body: str) -> None: ...

    def changed_files(self, number: int) -> list[str]: ...

    def default_branch(self) -> str: ...

    def dispatch(self, workflow: str, ref: str, inputs: dict[str, str]) -> DispatchedRun: ...

    def cancel_run(self, run_id: int) -> bool:
        """Ask GitHub to cancel a run; False if it had already finished."""
        ...

    def set_status(
        self, sha: str, state: str, context: str, description: str, target_url: str | None
    ) -> None: ...

    def pull_files(self, number: int) -> list[PullFile]:
        """The PR's changed files with their patches."""
        ...

    def file_at(self, path: str, ref: str, max_bytes: int) -> FileBlob | None:
        """``path`` at commit ``ref`` (None if it is not a file there); bytes only up to the cap."""
        ...

    def reviews(self, number: int) -> list[Review]:
        """The PR's reviews, oldest first."""
        ...

    def compare(self, base: str, head: str) -> Comparison:
        """GitHub's compare of ``base...head`` (commits or branches); GatewayError when GitHub
        cannot (404: a commit is gone or unknown; its ``status`` says which)."""
        ...

    def create_review(
        self, number: int, commit_id: str, body: str, comments: list[ReviewComment]
    ) -> Review:
        """Post one review (event ``COMMENT``) on ``commit_id`` with its line comments."""
        ...


class NotFastForward(GatewayError):
    """A branch update lost a race: the branch moved since its tip was read."""


@dataclass(frozen=True)
class Issue:
    """An open issue (not a PR) as the nightly needs it."""

    number: int
    author: str
    body: str
    title: str = ""


class NightlyGateway(Protocol):
    """The GitHub calls of the nightly run: its issue, its label, its baselines branch."""

    @property
    def repo(self) -> str: ...

    def run_created_at(self, run_id: int) -> str | None:
        """When workflow run ``run_id`` was created (``2026-11-29T02:13:00Z``); a re-run of
        its jobs keeps it. None when the run is unknown."""
        ...

    def open_issues(self, label: str) -> list[Issue]:
        """Open issues (not PRs) carrying ``label``, oldest first."""
        ...

    def create_issue(self, title: str, body: str, labels: list[str]) -> Issue: ...

    def edit_issue(self, number: int, body: str) -> None: ...

    def ensure_label(self, name: str, color: str, description: str) -> None:
        """Create the label unless it exists (an existing one is left as it is)."""
        ...

    def branch_tip(self, branch: str) -> str | None:
        """The commit SHA at the tip of ``branch``, or None when there is no such branch."""
        ...

    def read_directory(self, commit: str, directory: str, max_bytes: int) -> dict[str, bytes]:
        """The files directly inside ``directory`` at ``commit`` (name -> bytes, each capped)."""
        ...

    def commit_files(
        self, branch: str, parent: str | None, files: dict[str, str], message: str
    ) -> str:
        """Commit ``files`` (path -> text) on top of ``parent`` and move ``branch`` there.

        ``parent`` None creates the branch. Raises NotFastForward when the branch is no
        longer at ``parent`` (or already exists): the caller reads the new tip and retries.
        Returns the new commit's SHA.
        """
        ...


# ----- the migration campaign (``bot/campaign``): its branch, its commits, its PR


@dataclass(frozen=True)
class TreeFile:
    """A file the campaign writes: its path in the tree, its bytes and its git mode."""

    path: str
    data: bytes
    mode: str = "100644"  # "100755" for an executable file, kept as it was


@dataclass(frozen=True)
class CampaignPull:
    """A PR from the campaign's branch, as the campaign reads and writes it."""

    number: int
    state: str  # "open" or "closed"
    merged: bool
    author: str
    head_sha: str
    base_ref: str
    title: str
    body: str
    html_url: str = ""


class CampaignGateway(Protocol):
    """The GitHub calls of the migration campaign: the Git Data API for its branch (no
    checkout holds a token) and the pulls API for its one PR."""

    @property
    def repo(self) -> str: ...

    def default_branch(self) -> str: ...

    def branch_tip(self, branch: str) -> str | None:
        """The commit at the tip of ``branch``, or None when there is no such branch."""
        ...

    def commit_tree(self, commit: str) -> str:
        """The tree of ``commit`` (GatewayError 404 when GitHub does not know the commit)."""
        ...

    def pulls_from(self, branch: str) -> list[CampaignPull]:
        """PRs (open and closed) whose head is ``branch`` of this repository, newest first."""
        ...

    def create_commit(self, parent: str, files: list[TreeFile], message: str) -> str:
        """A commit of ``files`` laid over ``parent``'s tree, with ``parent`` as its only
        parent; the commit's SHA. No branch moves."""
        ...

    def move_branch(self, branch: str, sha: str, *, create: bool, force: bool) -> None:
        """Create ``branch`` at ``sha``, or move it there (``force``: even when that is not a
        fast-forward). NotFastForward when GitHub refuses: it exists, or it moved."""
        ...

    def delete_branch(self, branch: str) -> None:
        """Delete ``branch`` (gone already: nothing to do)."""
        ...

    def create_pull(self, *, title: str, body: str, head: str, base: str) -> CampaignPull: ...

    def update_pull(
        self,
        number: int,
        *,
        title: str | None = None,
        body: str | None = None,
        state: str | None = None,
    ) -> CampaignPull: ...
