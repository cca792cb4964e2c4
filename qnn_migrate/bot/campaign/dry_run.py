"""``bot campaign run --dry-run``: every REST call the run makes, printed; no write sent.

``DryRunGateway`` wraps the real ``CampaignGateway``: its reads go to GitHub (the decision
needs them; a read-only token is enough) and are listed as made; its writes are listed as
the requests the real gateway would send (the same methods and paths, in the same order,
checked against a real run on the stand-in by tests/bot/campaign/test_dry_run.py) and
answered with stand-in values (a commit's SHA is ``0`` repeated), so the rest of the run
goes on as it would.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

from qnn_migrate.bot.github.gateway import CampaignGateway, CampaignPull, TreeFile

DRY_SHA = "0" * 40  # what a write that was not sent "made"


class DryRunGateway:
    """A ``CampaignGateway`` that reads through ``inner`` and only lists its writes."""

    def __init__(self, inner: CampaignGateway, say: Callable[[str], None]) -> None:
        self._inner = inner
        self._say = say
        self.calls: list[tuple[str, str]] = []  # (method, path) of every request listed

    @property
    def repo(self) -> str:
        return self._inner.repo

    def _call(self, method: str, tail: str, what: str, sent: bool) -> None:
        path = f"/repos/{self.repo}{tail}"
        self.calls.append((method, path.split("?")[0]))
        status = "read" if sent else "not sent"
        self._say(f"{method:<6} {path}  ({what}; {status})")

    def default_branch(self) -> str:
        self._call("GET", "", "the default branch", True)
        return self._inner.default_branch()

    def branch_tip(self, branch: str) -> str | None:
        self._call("GET", f"/git/ref/heads/{quote(branch)}", f"the tip of {branch}", True)
        return self._inner.branch_tip(branch)

    def commit_tree(self, commit: str) -> str:
        self._call("GET", f"/git/commits/{commit}", "the base commit's tree", True)
        return self._inner.commit_tree(commit)

    def pulls_from(self, branch: str) -> list[CampaignPull]:
        owner = self.repo.split("/")[0]
        self._call("GET", f"/pulls?state=all&head={owner}:{branch}", "the campaign's PRs", True)
        return self._inner.pulls_from(branch)

    def create_commit(self, parent: str, files: list[TreeFile], message: str) -> str:
        for f in sorted(files, key=lambda f: f.path):
            self._call("POST", "/git/blobs", f"{f.path}: {len(f.data)} bytes, mode {f.mode}", False)
        self.commit_tree(parent)
        self._call("POST", "/git/trees", f"{len(files)} file(s) over {parent[:12]}'s tree", False)
        first = message.splitlines()[0] if message else ""
        self._call("POST", "/git/commits", f"parent {parent[:12]}: {first!r}", False)
        return DRY_SHA

    def move_branch(self, branch: str, sha: str, *, create: bool, force: bool) -> None:
        if create:
            self._call("POST", "/git/refs", f"create refs/heads/{branch} at {sha[:12]}", False)
        else:
            how = "force" if force else "fast-forward"
            self._call("PATCH", f"/git/refs/heads/{quote(branch)}", f"{how} to {sha[:12]}", False)

    def delete_branch(self, branch: str) -> None:
        self._call("DELETE", f"/git/refs/heads/{quote(branch)}", f"delete {branch}", False)

    def create_pull(self, *, title: str, body: str, head: str, base: str) -> CampaignPull:
        self._call(
            "POST", "/pulls", f"open {head} -> {base}: {title!r}, {len(body)}-char body", False
        )
        return CampaignPull(0, "open", False, "", DRY_SHA, base, title, body)

    def update_pull(
        self,
        number: int,
        *,
        title: str | None = None,
        body: str | None = None,
        state: str | None = None,
    ) -> CampaignPull:
        parts = [f"state={state}"] if state else []
        parts += [f"title={title!r}"] if title is not None else []
        parts += [f"{len(body)}-char body"] if body is not None else []
        self._call("PATCH", f"/pulls/{number}", ", ".join(parts), False)
        return CampaignPull(
            number, state or "open", False, "", DRY_SHA, "", title or "", body or ""
        )
