"""The real ``GitHubGateway`` over PyGithub: the only module in ``bot/`` that imports ``github``.

Retries 5xx responses and secondary rate limits with PyGithub's ``GithubRetry`` (backoff
and waits come from ``Settings``), authenticates with a token or as a GitHub App
installation, and turns every ``GithubException`` into a ``GatewayError`` that names the
call that failed.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import quote

import github
import requests
from github import Auth, Github, GithubException, GithubRetry

from qnn_migrate.bot.github.gateway import (
    COMPARE_FILES_CAP,
    CampaignPull,
    Comparison,
    DispatchedRun,
    FileBlob,
    GatewayError,
    Issue,
    IssueComment,
    NotFastForward,
    PullFile,
    PullRequest,
    Review,
    ReviewComment,
    TreeFile,
)
from qnn_migrate.bot.github.settings import Settings

T = TypeVar("T")
MAX_PAGES = 20  # open issues carrying one label: a handful in practice


# Methods whose repetition changes nothing: retried on any 5xx by the HTTP layer.
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "PATCH"})
# GitHub answers these before it acts: a request refused with them can be sent again as is.
NOT_ACTED_ON = frozenset({403, 429})


class WriteSafeRetry(GithubRetry):
    """PyGithub's ``GithubRetry`` (urllib3's ``Retry``: backoff, Retry-After, secondary rate
    limits) with the methods set for writes: PATCH is retried like GET (PyGithub leaves it
    out, so one 502 on editing a comment failed the report); POST only when GitHub refused
    it before acting (a rate limit), never on a 5xx, which may come after the comment or the
    dispatch was made. Those are retried by the gateway, which looks before it posts again.
    """

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        if method.upper() == "POST" and status_code not in NOT_ACTED_ON:
            return False
        return bool(super().is_retry(method, status_code, has_retry_after))


def make_client(settings: Settings) -> Github:
    """A PyGithub client for ``settings`` (retries, auth, API URL, write spacing)."""
    retry = WriteSafeRetry(
        total=settings.retries,
        backoff_factor=settings.backoff_factor,
        secondary_rate_wait=settings.secondary_rate_wait,
        allowed_methods=IDEMPOTENT_METHODS | {"POST"},
    )
    auth: Auth.Auth
    if settings.app is not None:
        auth = Auth.AppAuth(
            settings.app.app_id, settings.app.private_key.reveal()
        ).get_installation_auth(settings.app.installation_id)
    elif settings.token is not None:
        auth = Auth.Token(settings.token.reveal())
    else:  # Settings.from_env guarantees one of the two
        raise GatewayError("no GitHub credentials: set GITHUB_TOKEN or the QNN_BOT_APP_* variables")
    return Github(
        auth=auth,
        base_url=settings.api_url,
        retry=retry,
        timeout=settings.timeout_s,
        seconds_between_requests=None,
        seconds_between_writes=settings.write_interval_s or None,
        lazy=True,
    )


@contextmanager
def _call(what: str) -> Iterator[None]:
    try:
        yield
    except GithubException as exc:
        message = exc.data.get("message") if isinstance(exc.data, dict) else exc.data
        raise GatewayError(
            f"GitHub API {what} failed with HTTP {exc.status}: {message}", exc.status
        ) from exc
    except requests.RequestException as exc:  # retries exhausted, connection refused, timeout
        raise GatewayError(f"GitHub API {what} failed: {exc}") from exc


def _check(what: str, status: int, body: str) -> None:
    """A GatewayError for an answer of 400 or more to a raw request, with GitHub's message."""
    if status < 400:
        return
    try:
        message = json.loads(body).get("message", body)
    except (ValueError, AttributeError):
        message = body
    raise GatewayError(f"GitHub API {what} failed with HTTP {status}: {message}", status)


class PyGithubGateway:
    """``GitHubGateway`` for one repository, over a PyGithub client built in ``cli``."""

    def __init__(
        self,
        client: Github,
        repository: str,
        *,
        post_attempts: int = 3,
        backoff_s: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._gh = client
        self._name = repository
        self._repo = client.get_repo(repository)
        self._post_attempts = max(1, post_attempts)
        self._backoff_s = backoff_s
        self._sleep = sleep

    def _post(self, what: str, send: Callable[[], T], landed: Callable[[], T | None]) -> T:
        """POST with retries that cannot duplicate: after a failure that may have come after
        GitHub acted (a 5xx, a lost connection), ``landed`` looks for what the POST would
        have made, and only if it is not there is the POST sent again."""
        for attempt in range(1, self._post_attempts + 1):
            try:
                return send()
            except GatewayError as exc:
                if (exc.status is not None and exc.status < 500) or attempt == self._post_attempts:
                    raise
            self._sleep(self._backoff_s * 2 ** (attempt - 1))
            found = landed()
            if found is not None:
                return found
        raise AssertionError(f"unreachable: {what}")

    @property
    def repo(self) -> str:
        return self._name

    def close(self) -> None:
        self._gh.close()

    def _path(self, tail: str) -> str:
        return f"/repos/{self._name}{tail}"

    def _maybe(self, what: str, fn: Callable[[], T], missing: T) -> T:
        try:
            return fn()
        except GithubException as exc:
            if exc.status == 404:
                return missing
            raise GatewayError(f"GitHub API {what} failed with HTTP {exc.status}") from exc
        except requests.RequestException as exc:
            raise GatewayError(f"GitHub API {what} failed: {exc}") from exc

    def pull(self, number: int) -> PullRequest | None:
        def fetch() -> PullRequest:
            pr = self._repo.get_pull(number)
            head_repo = pr.head.repo.full_name if pr.head.repo is not None else None
            return PullRequest(
                number=pr.number,
                state=pr.state,
                head_sha=pr.head.sha,
                head_repo=head_repo,
                base_repo=pr.base.repo.full_name,
                author=pr.user.login,
                draft=bool(pr.draft),
                base_ref=pr.base.ref,
            )

        return self._maybe(f"GET pulls/{number}", fetch, None)

    def role(self, login: str) -> str:
        return self._maybe(
            f"GET collaborators/{login}/permission",
            lambda: str(self._repo.get_collaborator_role_name(login)),
            "none",
        )

    def add_reaction(self, comment_id: int, content: str) -> bool:
        # A retry after an unanswered POST finds the reaction there (200): it is this
        # call's own, so it counts as new; only a first answer of 200 means "already handled".
        return self._post(
            f"POST issues/comments/{comment_id}/reactions",
            lambda: self._react(comment_id, content),
            lambda: True if self._react(comment_id, content) is not None else None,
        )

    def _react(self, comment_id: int, content: str) -> bool:
        return self._reaction(comment_id, content)[0]

    def _reaction(self, comment_id: int, content: str) -> tuple[bool, int | None]:
        # PyGithub hides the status code, and it is the point here: GitHub answers 201 for a
        # new reaction and 200 when this user had already left it (a redelivered event).
        with _call(f"POST issues/comments/{comment_id}/reactions"):
            status, _, body = self._gh.requester.requestJson(
                "POST",
                self._path(f"/issues/comments/{comment_id}/reactions"),
                input={"content": content},
            )
        _check("POST reactions", status, body)
        try:
            rid = json.loads(body).get("id")
        except (ValueError, AttributeError):
            rid = None
        return status == 201, rid if isinstance(rid, int) else None

    def remove_reaction(self, comment_id: int, content: str) -> None:
        # GitHub deletes a reaction by its id. Posting the same reaction again answers the
        # bot's own (200, with its id), or makes it (201) when it is gone: either way the
        # delete that follows leaves none.
        _, rid = self._reaction(comment_id, content)
        if rid is None:
            raise GatewayError(f"GitHub API POST reactions on {comment_id} gave no reaction id")
        with _call(f"DELETE issues/comments/{comment_id}/reactions/{rid}"):
            status, _, body = self._gh.requester.requestJson(
                "DELETE", self._path(f"/issues/comments/{comment_id}/reactions/{rid}")
            )
        if status != 404:
            _check("DELETE reactions", status, body)

    def comments(self, issue: int) -> list[IssueComment]:
        with _call(f"GET issues/{issue}/comments"):
            return [
                IssueComment(c.id, c.user.login, c.body or "", c.html_url)
                for c in self._repo.get_issue(issue).get_comments()
            ]

    def create_comment(self, issue: int, body: str) -> IssueComment:
        def send() -> IssueComment:
            with _call(f"POST issues/{issue}/comments"):
                c = self._repo.get_issue(issue).create_comment(body)
                return IssueComment(c.id, c.user.login, c.body or "", c.html_url)

        def landed() -> IssueComment | None:
            # The bot's texts carry a SHA, a comment id or its hidden state: a comment with
            # exactly this body is the one the failed POST made.
            return next((c for c in reversed(self.comments(issue)) if c.body == body), None)

        return self._post(f"POST issues/{issue}/comments", send, landed)

    def edit_comment(self, comment_id: int, body: str) -> None:
        with _call(f"PATCH issues/comments/{comment_id}"):
            url = f"{self._repo.url}/issues/comments/{comment_id}"
            github.IssueComment.IssueComment(self._gh.requester, url=url).edit(body)

    def changed_files(self, number: int) -> list[str]:
        with _call(f"GET pulls/{number}/files"):
            return [f.filename for f in self._repo.get_pull(number).get_files()]

    def default_branch(self) -> str:
        with _call("GET repository"):
            return str(self._gh.get_repo(self._name).default_branch)

    def dispatch(self, workflow: str, ref: str, inputs: dict[str, str]) -> DispatchedRun:
        with _call(f"POST actions/workflows/{workflow}/dispatches"):
            run: Any = self._repo.get_workflow(workflow).create_dispatch(
                ref, inputs, throw=True, return_run_details=True
            )
        if isinstance(run, bool):  # a server that answers 204 without run details
            return DispatchedRun(None, None)
        return DispatchedRun(int(run.id), str(run.html_url) if run.html_url else None)

    def cancel_run(self, run_id: int) -> bool:
        def landed() -> bool | None:
            run = self._json("GET", f"/actions/runs/{run_id}", f"GET actions/runs/{run_id}")
            return True if run.get("conclusion") == "cancelled" else None

        return self._post(
            f"POST actions/runs/{run_id}/cancel", lambda: self._cancel(run_id), landed
        )

    def _cancel(self, run_id: int) -> bool:
        with _call(f"POST actions/runs/{run_id}/cancel"):
            status, _, body = self._gh.requester.requestJson(
                "POST", self._path(f"/actions/runs/{run_id}/cancel")
            )
        if status == 409:  # the run had already finished
            return False
        if status >= 400:
            raise GatewayError(
                f"GitHub API POST actions/runs/{run_id}/cancel failed with HTTP {status}: {body}",
                status,
            )
        return True

    def set_status(
        self, sha: str, state: str, context: str, description: str, target_url: str | None
    ) -> None:
        kwargs: dict[str, str] = {"description": description, "context": context}
        if target_url:
            kwargs["target_url"] = target_url

        def send() -> bool:
            with _call(f"POST statuses/{sha}"):
                self._repo.get_commit(sha).create_status(state, **kwargs)
            return True

        # Statuses are a log whose latest entry counts: sending one twice changes nothing.
        self._post(f"POST statuses/{sha}", send, lambda: None)

    def pull_files(self, number: int) -> list[PullFile]:
        with _call(f"GET pulls/{number}/files"):
            return [
                PullFile(f.filename, f.status, f.patch)
                for f in self._repo.get_pull(number).get_files()
            ]

    def file_at(self, path: str, ref: str, max_bytes: int) -> FileBlob | None:
        def fetch() -> FileBlob | None:
            _, doc = self._gh.requester.requestJsonAndCheck(
                "GET", self._path(f"/contents/{quote(path)}"), parameters={"ref": ref}
            )
            if not isinstance(doc, dict) or doc.get("type") != "file":
                return None  # a directory, symlink or submodule: not a file to read
            size = int(doc.get("size") or 0)
            # GitHub leaves `content` empty (encoding "none") for files over 1 MB.
            if size > max_bytes or doc.get("encoding") != "base64":
                return FileBlob(path, size, None)
            try:
                data = base64.b64decode(str(doc.get("content") or ""), validate=False)
            except (binascii.Error, ValueError) as exc:
                raise GatewayError(f"GitHub API GET contents/{path}: bad base64: {exc}") from exc
            return FileBlob(path, size, data[: max_bytes + 1])

        return self._maybe(f"GET contents/{path}", fetch, None)

    def reviews(self, number: int) -> list[Review]:
        with _call(f"GET pulls/{number}/reviews"):
            return [
                Review(
                    r.id,
                    r.user.login if r.user is not None else "",
                    r.body or "",
                    r.commit_id or "",
                    r.html_url or "",
                )
                for r in self._repo.get_pull(number).get_reviews()
            ]

    def compare(self, base: str, head: str) -> Comparison:
        with _call(f"GET compare/{base}...{head}"):
            found = self._repo.compare(base, head)
            return Comparison(
                status=str(found.status),
                merge_base=str(found.merge_base_commit.sha),
                # Only the first page holds files, and at most COMPARE_FILES_CAP of them.
                files=tuple(f.filename for f in (found.files or [])[:COMPARE_FILES_CAP]),
            )

    def create_review(
        self, number: int, commit_id: str, body: str, comments: list[ReviewComment]
    ) -> Review:
        items: list[dict[str, Any]] = []
        for c in comments:
            item: dict[str, Any] = {"path": c.path, "body": c.body, "line": c.line, "side": "RIGHT"}
            if c.start_line is not None and c.start_line < c.line:
                item |= {"start_line": c.start_line, "start_side": "RIGHT"}
            items.append(item)
        payload = {"commit_id": commit_id, "body": body, "event": "COMMENT", "comments": items}

        def landed() -> Review | None:
            return next(
                (r for r in self.reviews(number) if r.commit_id == commit_id and r.body == body),
                None,
            )

        what = f"POST pulls/{number}/reviews"
        doc = self._json("POST", f"/pulls/{number}/reviews", what, payload, landed)
        if isinstance(doc, Review):
            return doc
        user = doc.get("user") or {}
        return Review(
            int(doc["id"]),
            str(user.get("login", "")),
            str(doc.get("body") or ""),
            str(doc.get("commit_id") or ""),
            str(doc.get("html_url") or ""),
        )

    # ----- the nightly: its issue, its label, its baselines branch (``NightlyGateway``)

    def _json(
        self,
        verb: str,
        tail: str,
        what: str,
        body: dict[str, Any] | None = None,
        landed: Callable[[], Any] | None = None,
        **query: Any,
    ) -> Any:
        """One REST call; a POST goes through ``_post`` (``landed`` None: safe to repeat)."""

        def send() -> Any:
            with _call(what):
                _, doc = self._gh.requester.requestJsonAndCheck(
                    verb, self._path(tail), parameters=query or None, input=body
                )
            return doc

        if verb != "POST":
            return send()
        return self._post(what, send, landed or (lambda: None))

    def _get_or_none(self, tail: str, what: str) -> Any:
        """GET one object; None when GitHub answers 404."""
        return self._maybe(
            what,
            lambda: self._gh.requester.requestJsonAndCheck("GET", self._path(tail))[1],
            None,
        )

    def run_created_at(self, run_id: int) -> str | None:
        doc = self._get_or_none(f"/actions/runs/{run_id}", f"GET actions/runs/{run_id}")
        created = doc.get("created_at") if isinstance(doc, dict) else None
        return str(created) if created else None

    def open_issues(self, label: str) -> list[Issue]:
        out: list[Issue] = []
        for page in range(1, MAX_PAGES + 1):
            docs = self._json(
                "GET",
                "/issues",
                f"GET issues?labels={label}",
                state="open",
                labels=label,
                direction="asc",
                per_page=100,
                page=page,
            )
            for doc in docs:
                if "pull_request" not in doc:  # the issues list holds PRs too
                    user = doc.get("user") or {}
                    out.append(
                        Issue(
                            int(doc["number"]),
                            str(user.get("login", "")),
                            str(doc.get("body") or ""),
                            str(doc.get("title") or ""),
                        )
                    )
            if len(docs) < 100:
                break
        return out

    def create_issue(self, title: str, body: str, labels: list[str]) -> Issue:
        def landed() -> dict[str, Any] | None:
            for label in labels[:1]:
                for i in self.open_issues(label):
                    if i.title == title and i.body == body:
                        return {"number": i.number, "user": {"login": i.author}, "body": i.body}
            return None

        doc = self._json(
            "POST",
            "/issues",
            "POST issues",
            {"title": title, "body": body, "labels": labels},
            landed=landed,
        )
        user = doc.get("user") or {}
        return Issue(int(doc["number"]), str(user.get("login", "")), str(doc.get("body") or ""))

    def edit_issue(self, number: int, body: str) -> None:
        self._json("PATCH", f"/issues/{number}", f"PATCH issues/{number}", {"body": body})

    def ensure_label(self, name: str, color: str, description: str) -> None:
        found = self._get_or_none(f"/labels/{quote(name, safe='')}", f"GET labels/{name}")
        if found is None:
            payload = {"name": name, "color": color, "description": description}
            try:
                self._json("POST", "/labels", "POST labels", payload)
            except GatewayError as exc:
                # Created by a concurrent run between the two calls: that is the goal.
                if exc.status != 422:
                    raise

    def branch_tip(self, branch: str) -> str | None:
        doc = self._get_or_none(f"/git/ref/heads/{quote(branch)}", f"GET git/ref/heads/{branch}")
        return None if doc is None else str(doc["object"]["sha"])

    def read_directory(self, commit: str, directory: str, max_bytes: int) -> dict[str, bytes]:
        tree = self._json("GET", f"/git/commits/{commit}", f"GET git/commits/{commit}")["tree"]
        listing = self._json(
            "GET", f"/git/trees/{tree['sha']}", f"GET git/trees/{tree['sha']}", recursive="1"
        )
        out: dict[str, bytes] = {}
        prefix = directory.strip("/") + "/"
        for entry in listing.get("tree", []):
            path = str(entry.get("path", ""))
            name = path.removeprefix(prefix)
            if entry.get("type") != "blob" or not path.startswith(prefix) or "/" in name:
                continue
            if int(entry.get("size") or 0) > max_bytes:
                out[name] = b""  # over the cap: the reader refuses it by name
                continue
            blob = self._json("GET", f"/git/blobs/{entry['sha']}", f"GET git/blobs/{entry['sha']}")
            try:
                out[name] = base64.b64decode(str(blob.get("content") or ""))[: max_bytes + 1]
            except (binascii.Error, ValueError) as exc:
                raise GatewayError(f"GitHub API GET git/blobs: bad base64: {exc}") from exc
        return out

    def commit_files(
        self, branch: str, parent: str | None, files: dict[str, str], message: str
    ) -> str:
        entries = []
        for path, text in sorted(files.items()):
            blob = self._json(
                "POST", "/git/blobs", "POST git/blobs", {"content": text, "encoding": "utf-8"}
            )
            entries.append({"path": path, "mode": "100644", "type": "blob", "sha": blob["sha"]})
        tree_body: dict[str, Any] = {"tree": entries}
        if parent is not None:
            base = self._json("GET", f"/git/commits/{parent}", f"GET git/commits/{parent}")
            tree_body["base_tree"] = base["tree"]["sha"]
        tree = self._json("POST", "/git/trees", "POST git/trees", tree_body)
        commit = self._json(
            "POST",
            "/git/commits",
            "POST git/commits",
            {"message": message, "tree": tree["sha"], "parents": [parent] if parent else []},
        )
        sha = str(commit["sha"])
        try:
            if parent is None:
                self._json(
                    "POST",
                    "/git/refs",
                    "POST git/refs",
                    {"ref": f"refs/heads/{branch}", "sha": sha},
                )
            else:
                self._json(
                    "PATCH",
                    f"/git/refs/heads/{quote(branch)}",
                    f"PATCH git/refs/heads/{branch}",
                    {"sha": sha, "force": False},
                )
        except GatewayError as exc:
            # 422: "Update is not a fast forward" / "Reference already exists".
            if exc.status == 422:
                raise NotFastForward(f"{branch} moved while this run wrote it: {exc}") from exc
            raise
        return sha

    # ----- the migration campaign (``CampaignGateway``): its branch and its one PR

    def commit_tree(self, commit: str) -> str:
        doc = self._json("GET", f"/git/commits/{commit}", f"GET git/commits/{commit}")
        return str(doc["tree"]["sha"])

    def _campaign_pull(self, doc: dict[str, Any]) -> CampaignPull:
        head = doc.get("head") or {}
        base = doc.get("base") or {}
        user = doc.get("user") or {}
        return CampaignPull(
            number=int(doc["number"]),
            state=str(doc.get("state") or ""),
            merged=bool(doc.get("merged") or doc.get("merged_at")),
            author=str(user.get("login", "")),
            head_sha=str(head.get("sha", "")),
            base_ref=str(base.get("ref", "")),
            title=str(doc.get("title") or ""),
            body=str(doc.get("body") or ""),
            html_url=str(doc.get("html_url") or ""),
        )

    def pulls_from(self, branch: str) -> list[CampaignPull]:
        owner = self._name.split("/")[0]
        # One page, newest first: a campaign's branch has had a handful of PRs.
        docs = self._json(
            "GET",
            "/pulls",
            f"GET pulls?head={owner}:{branch}",
            state="all",
            head=f"{owner}:{branch}",
            per_page=100,
        )
        return [self._campaign_pull(doc) for doc in docs]

    def create_commit(self, parent: str, files: list[TreeFile], message: str) -> str:
        # Blobs, trees and commits are content-addressed: a POST repeated after a lost
        # reply makes the same object again (a commit at most another orphan), never harm.
        entries = []
        for f in sorted(files, key=lambda f: f.path):
            blob = self._json(
                "POST",
                "/git/blobs",
                "POST git/blobs",
                {"content": base64.b64encode(f.data).decode("ascii"), "encoding": "base64"},
            )
            entries.append({"path": f.path, "mode": f.mode, "type": "blob", "sha": blob["sha"]})
        tree = self._json(
            "POST",
            "/git/trees",
            "POST git/trees",
            {"base_tree": self.commit_tree(parent), "tree": entries},
        )
        commit = self._json(
            "POST",
            "/git/commits",
            "POST git/commits",
            {"message": message, "tree": tree["sha"], "parents": [parent]},
        )
        return str(commit["sha"])

    def move_branch(self, branch: str, sha: str, *, create: bool, force: bool) -> None:
        try:
            if create:
                self._json(
                    "POST",
                    "/git/refs",
                    "POST git/refs",
                    {"ref": f"refs/heads/{branch}", "sha": sha},
                    landed=lambda: True if self.branch_tip(branch) == sha else None,
                )
            else:
                self._json(
                    "PATCH",
                    f"/git/refs/heads/{quote(branch)}",
                    f"PATCH git/refs/heads/{branch}",
                    {"sha": sha, "force": force},
                )
        except GatewayError as exc:
            if exc.status == 422:  # "Reference already exists" / "not a fast forward"
                raise NotFastForward(f"{branch} was not moved to {sha[:12]}: {exc}") from exc
            raise

    def delete_branch(self, branch: str) -> None:
        with _call(f"DELETE git/refs/heads/{branch}"):
            status, _, body = self._gh.requester.requestJson(
                "DELETE", self._path(f"/git/refs/heads/{quote(branch)}")
            )
        if status not in (404, 422):  # gone already
            _check(f"DELETE git/refs/heads/{branch}", status, body)

    def create_pull(self, *, title: str, body: str, head: str, base: str) -> CampaignPull:
        def landed() -> dict[str, Any] | None:
            found = [p for p in self.pulls_from(head) if p.state == "open"]
            if not found:
                return None
            doc: dict[str, Any] = self._json(
                "GET", f"/pulls/{found[0].number}", f"GET pulls/{found[0].number}"
            )
            return doc

        doc = self._json(
            "POST",
            "/pulls",
            "POST pulls",
            {"title": title, "body": body, "head": head, "base": base},
            landed=landed,
        )
        return self._campaign_pull(doc)

    def update_pull(
        self,
        number: int,
        *,
        title: str | None = None,
        body: str | None = None,
        state: str | None = None,
    ) -> CampaignPull:
        changes = {
            k: v for k, v in (("title", title), ("body", body), ("state", state)) if v is not None
        }
        doc = self._json("PATCH", f"/pulls/{number}", f"PATCH pulls/{number}", changes)
        return self._campaign_pull(doc)


def gateway_for(settings: Settings) -> PyGithubGateway:
    """The real gateway for ``settings``: client, retries of every write, backoff."""
    return PyGithubGateway(
        make_client(settings),
        settings.repository,
        post_attempts=settings.retries + 1,
        backoff_s=settings.backoff_factor,
    )
