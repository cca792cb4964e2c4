"""A local stand-in of the GitHub REST API on 127.0.0.1, for PyGithub to talk real HTTP to.

It keeps repositories, PRs, collaborators, comments, reactions, workflow runs, commit
statuses and a commit history (for the compare API: ``add_commit``; every commit made
through the Git Data API joins it) in memory, answers the endpoints the bot uses the way
GitHub documents them
(201 vs 200 on reactions, 422 on unexpected workflow inputs, 409 on cancelling a finished
run, pagination with Link headers, 401 on a bad token), and checks every request it
receives against the vendored REST description (``rest-api-subset.json``) with
openapi-core. A request that does not validate is answered 422 and recorded in
``violations``; the pytest fixture fails the test if any were recorded.

Not a test double of the bot: it is a double of GitHub, named as one.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import re
import socket
import threading
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

import jwt
from openapi_core import OpenAPI
from openapi_core.contrib.werkzeug import WerkzeugOpenAPIRequest
from werkzeug.test import EnvironBuilder

HERE = Path(__file__).resolve().parent
SPEC_PATH = HERE / "rest-api-subset.json"
GITHUB_API = "https://api.github.com"
COMMENT_LIMIT = 65536
CONTENTS_INLINE_LIMIT = 1024 * 1024  # GitHub inlines file contents up to 1 MB
HUNK_RE = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.M)


@cache
def rest_description() -> OpenAPI:
    """The vendored REST description, parsed once per process."""
    return OpenAPI.from_dict(json.loads(SPEC_PATH.read_text("utf-8")))


@cache
def _multi_segment_paths() -> list[tuple[re.Pattern[str], str]]:
    """(regex, parameter) for path templates whose parameter GitHub marks ``x-multi-segment``
    (it may hold slashes); openapi-core matches one segment per parameter, so ``_validate``
    percent-encodes the slashes of such a value first."""
    doc = json.loads(SPEC_PATH.read_text("utf-8"))
    found = []
    for template, item in doc["paths"].items():
        for operation in item.values():
            for param in operation.get("parameters", []) if isinstance(operation, dict) else []:
                if "$ref" in param:  # e.g. the git refs' shared `ref` parameter
                    param = doc["components"]["parameters"][param["$ref"].rsplit("/", 1)[1]]
                if param.get("in") == "path" and param.get("x-multi-segment"):
                    name = param["name"]
                    pattern = re.escape(template).replace(
                        re.escape("{" + name + "}"), f"(?P<{name}>.+)"
                    )
                    pattern = re.sub(r"\\\{[^}]+\\\}", "[^/]+", pattern)
                    found.append((re.compile(pattern), name))
    return found


class _EncodedPathRequest(WerkzeugOpenAPIRequest):
    """The request with its path as sent (``%2F`` kept), for one-segment matching."""

    def __init__(self, request: Any, path: str) -> None:
        super().__init__(request)
        self._encoded_path = path

    @property
    def path(self) -> str:
        return self._encoded_path


def _one_segment(path: str) -> str:
    for regex, name in _multi_segment_paths():
        match = regex.fullmatch(path)
        if match:
            start, end = match.span(name)
            return path[:start] + quote(unquote(match[name]), safe="") + path[end:]
    return path


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class RecordedRequest:
    """One request as the stand-in saw it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    status: int = 0
    login: str | None = None

    @property
    def json(self) -> Any:
        return self.body


@dataclass
class Fault:
    """Answer the next ``count`` matching requests with ``status`` instead of serving them."""

    method: str
    path_re: re.Pattern[str]
    status: int
    count: int
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=dict)
    after: bool = False  # serve the request first, then answer ``status`` (a lost reply)


@dataclass
class Pull:
    number: int
    author: str
    head_sha: str
    head_repo: str | None
    head_ref: str = "feature"
    state: str = "open"
    draft: bool = False
    files: list[str] = field(default_factory=list)
    patches: dict[str, str] = field(default_factory=dict)  # filename -> unified diff hunks
    reviews: list[dict[str, Any]] = field(default_factory=list)
    # A PR opened through the REST API (the campaign's): its head follows its branch, and
    # its files are the diff of its trees from the merge base.
    title: str = ""
    body: str | None = None
    base_ref: str | None = None  # None: the repository's default branch
    merged: bool = False
    tracked: bool = False


@dataclass
class Comment:
    id: int
    issue: int
    author: str
    body: str
    created_at: str
    updated_at: str


@dataclass
class Run:
    id: int
    workflow: str
    ref: str
    inputs: dict[str, Any]
    status: str = "queued"
    conclusion: str | None = None
    created_at: str = field(default_factory=_now)


@dataclass
class IssueDoc:
    """An issue created or edited through the REST API (the nightly's)."""

    number: int
    author: str
    title: str
    body: str
    labels: list[str]
    state: str = "open"


@dataclass
class Repo:
    full_name: str
    default_branch: str = "main"
    private: bool = False
    pulls: dict[int, Pull] = field(default_factory=dict)
    issues: set[int] = field(default_factory=set)
    roles: dict[str, str] = field(default_factory=dict)
    comments: dict[int, Comment] = field(default_factory=dict)
    reactions: dict[int, dict[str, list[str]]] = field(default_factory=dict)
    workflows: dict[str, set[str] | None] = field(default_factory=dict)
    runs: dict[int, Run] = field(default_factory=dict)
    statuses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    blobs: dict[tuple[str, str], bytes] = field(default_factory=dict)  # (commit, path) -> bytes
    issue_docs: dict[int, IssueDoc] = field(default_factory=dict)  # issues made through the API
    labels: dict[str, dict[str, Any]] = field(default_factory=dict)
    git: dict[str, tuple[str, Any]] = field(default_factory=dict)  # sha -> (type, content)
    refs: dict[str, str] = field(default_factory=dict)  # "heads/<branch>" -> commit sha
    # The code's history, for the compare API: sha -> (parents, paths the commit changed).
    history: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)


class ApiError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


class GitHubStandIn:
    """In-memory GitHub with a real HTTP server; see the module docstring and ``fixtures``."""

    def __init__(self, server_url: str = "https://github.com") -> None:
        self.server_url = server_url
        self.repos: dict[str, Repo] = {}
        self.tokens: dict[str, str] = {}  # token -> login
        self.apps: dict[
            int, tuple[str, str, int]
        ] = {}  # app id -> (public PEM, slug, installation)
        self.user_types: dict[str, str] = {}
        self.requests: list[RecordedRequest] = []
        self.violations: list[str] = []
        self.faults: list[Fault] = []
        self.hooks: list[tuple[str, re.Pattern[str], Callable[[], object]]] = []
        self._ids = itertools.count(1_000_001)
        self._lock = threading.RLock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""

    # ----- lifecycle -------------------------------------------------------------------

    def start(self) -> GitHubStandIn:
        """Listen on 127.0.0.1 at a free port; ``base_url`` is then the API root."""
        standin = self

        class Handler(_Handler):
            owner = standin

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        port = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    # ----- seeding ---------------------------------------------------------------------

    def add_repo(self, full_name: str, default_branch: str = "main", private: bool = False) -> Repo:
        with self._lock:
            repo = Repo(full_name, default_branch, private)
            self.repos[full_name] = repo
            return repo

    def add_token(self, token: str, login: str, user_type: str = "User") -> None:
        with self._lock:
            self.tokens[token] = login
            self.user_types[login] = user_type

    def add_app(self, app_id: int, public_pem: str, slug: str, installation_id: int) -> None:
        """A GitHub App; its installation tokens act as ``<slug>[bot]``."""
        with self._lock:
            self.apps[app_id] = (public_pem, slug, installation_id)
            self.user_types[f"{slug}[bot]"] = "Bot"

    def add_user(self, login: str, role: str | None = None, repo: str | None = None) -> None:
        """A user; with ``role``, a collaborator of ``repo`` (read/triage/write/maintain/admin)."""
        with self._lock:
            self.user_types.setdefault(login, "Bot" if login.endswith("[bot]") else "User")
            if role is not None:
                self._repo(repo).roles[login] = role

    def add_pull(
        self,
        number: int,
        *,
        author: str,
        head_sha: str,
        repo: str | None = None,
        head_repo: str | None = None,
        files: list[str] | None = None,
        state: str = "open",
    ) -> Pull:
        """A PR; ``head_repo`` defaults to the base repository (a fork PR names its fork)."""
        with self._lock:
            r = self._repo(repo)
            self.add_user(author)
            pull = Pull(number, author, head_sha, head_repo or r.full_name, files=files or [])
            pull.state = state
            r.pulls[number] = pull
            return pull

    def add_file(self, sha: str, path: str, data: bytes, repo: str | None = None) -> None:
        """The bytes of ``path`` at commit ``sha``, as the contents API serves them."""
        with self._lock:
            self._repo(repo).blobs[(sha, path)] = data

    def add_commit(
        self,
        sha: str,
        parents: list[str] | None = None,
        files: list[str] | None = None,
        branch: str | None = None,
        repo: str | None = None,
    ) -> str:
        """A commit of the code's history (what the compare API answers from): its parents
        and the paths it changed; ``branch`` then points at it (``main`` for the PRs' base)."""
        with self._lock:
            r = self._repo(repo)
            for parent in parents or []:
                if parent not in r.history:
                    raise KeyError(f"add the parent {parent} first")
            r.history[sha] = (list(parents or []), list(files or []))
            if branch is not None:
                r.refs[f"heads/{branch}"] = sha
            return sha

    def reviews(self, number: int, repo: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self._repo(repo).pulls[number].reviews]

    def add_issue(self, number: int, repo: str | None = None) -> None:
        with self._lock:
            self._repo(repo).issues.add(number)

    def push(self, number: int, new_sha: str, repo: str | None = None) -> None:
        """Move a PR's head, as a push (or force-push) to its branch does."""
        with self._lock:
            self._repo(repo).pulls[number].head_sha = new_sha

    def add_comment(self, issue: int, author: str, body: str, repo: str | None = None) -> Comment:
        with self._lock:
            self.add_user(author)
            now = _now()
            c = Comment(next(self._ids), issue, author, body, now, now)
            self._repo(repo).comments[c.id] = c
            return c

    def add_workflow(
        self, file: str, inputs: set[str] | None = None, repo: str | None = None
    ) -> None:
        """A workflow with a workflow_dispatch trigger; ``inputs`` are the names it declares."""
        with self._lock:
            self._repo(repo).workflows[file] = inputs

    def add_run(self, run_id: int, workflow: str, created_at: str, repo: str | None = None) -> Run:
        """A workflow run that already happened (say, last night's scheduled one)."""
        with self._lock:
            run = Run(run_id, workflow, "main", {}, "completed", "success", created_at)
            self._repo(repo).runs[run_id] = run
            return run

    def fail_next(
        self,
        method: str,
        path_pattern: str,
        status: int,
        count: int = 1,
        headers: dict[str, str] | None = None,
        message: str = "Server Error",
        after: bool = False,
    ) -> None:
        """Answer the next ``count`` requests whose path matches ``path_pattern`` with ``status``.

        ``after``: do what the request asks first, then answer ``status`` (GitHub made the
        comment, and the reply was lost on the way back).
        """
        with self._lock:
            self.faults.append(
                Fault(
                    method.upper(),
                    re.compile(path_pattern),
                    status,
                    count,
                    headers or {},
                    {"message": message, "documentation_url": "https://docs.github.com/rest"},
                    after,
                )
            )

    def before_next(self, method: str, path_pattern: str, action: Callable[[], object]) -> None:
        """Run ``action`` (say, another job's push) just before serving the next such request."""
        with self._lock:
            self.hooks.append((method.upper(), re.compile(path_pattern), action))

    def commit_on_branch(
        self,
        branch: str,
        files: Mapping[str, bytes | None],
        message: str,
        repo: str | None = None,
    ) -> str:
        """A commit of ``files`` (path -> bytes; None removes the path) on top of ``branch``
        (created if absent), as a push does; an API-made PR from the branch follows it."""
        with self._lock:
            r = self._repo(repo)
            parent = r.refs.get(f"heads/{branch}")
            tree = dict(_tree_of(r, parent)) if parent else {}
            for path, data in files.items():
                if data is None:
                    tree.pop(path, None)
                    continue
                tree[path] = _git_put(r, "blob", data)
            sha = _put_commit(r, _git_put(r, "tree", tree), [parent] if parent else [], message)
            _move_ref(r, f"heads/{branch}", sha)
            return sha

    def commit_as(
        self, sha: str, files: Mapping[str, bytes], branch: str, repo: str | None = None
    ) -> str:
        """A root commit of ``files`` under a SHA given from outside (a local clone's HEAD),
        with ``branch`` at it: what GitHub holds for a checkout made here."""
        with self._lock:
            r = self._repo(repo)
            tree = {path: _git_put(r, "blob", data) for path, data in files.items()}
            r.git[sha] = ("commit", (_git_put(r, "tree", tree), [], "the checkout's commit"))
            r.history[sha] = ([], sorted(files))
            _move_ref(r, f"heads/{branch}", sha)
            return sha

    def merge_pull(self, number: int, repo: str | None = None) -> str:
        """Merge an API-made PR as GitHub's squash merge does: one commit of its head's tree
        on top of its base branch; the PR is then closed and merged."""
        with self._lock:
            r = self._repo(repo)
            pull = r.pulls[number]
            base = pull.base_ref or r.default_branch
            parent = r.refs[f"heads/{base}"]
            tree = _git_get(r, pull.head_sha, "commit")[0]
            sha = _put_commit(r, tree, [parent], f"{pull.title} (#{number})")
            _move_ref(r, f"heads/{base}", sha)
            pull.state, pull.merged = "closed", True
            return sha

    def pulls(self, repo: str | None = None) -> list[Pull]:
        """Every PR of the repository, oldest first."""
        with self._lock:
            return [self._repo(repo).pulls[n] for n in sorted(self._repo(repo).pulls)]

    def branch_files(self, branch: str, repo: str | None = None) -> dict[str, bytes]:
        """The files at the tip of ``branch`` (path -> bytes); empty if there is no branch."""
        r = self._repo(repo)
        tip = r.refs.get(f"heads/{branch}")
        return {p: r.git[b][1] for p, b in _tree_of(r, tip).items()} if tip else {}

    def branch_log(self, branch: str, repo: str | None = None) -> list[str]:
        """Commit messages on ``branch``, newest first (first parents)."""
        r = self._repo(repo)
        out, sha = [], r.refs.get(f"heads/{branch}")
        while sha:
            _, parents, message = r.git[sha][1]
            out.append(message)
            sha = parents[0] if parents else None
        return out

    def issues_made(self, repo: str | None = None) -> list[IssueDoc]:
        return list(self._repo(repo).issue_docs.values())

    # ----- inspection ------------------------------------------------------------------

    def _repo(self, name: str | None) -> Repo:
        if name is None:
            if len(self.repos) != 1:
                raise KeyError("name the repository: the stand-in holds several")
            return next(iter(self.repos.values()))
        return self.repos[name]

    def comments(self, issue: int, repo: str | None = None) -> list[Comment]:
        with self._lock:
            return [c for c in self._repo(repo).comments.values() if c.issue == issue]

    def reactions(self, comment_id: int, repo: str | None = None) -> dict[str, list[str]]:
        with self._lock:
            return {k: list(v) for k, v in self._repo(repo).reactions.get(comment_id, {}).items()}

    def runs(self, repo: str | None = None) -> list[Run]:
        with self._lock:
            return list(self._repo(repo).runs.values())

    def statuses(self, sha: str, repo: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._repo(repo).statuses.get(sha, []))

    def requests_to(self, method: str, path_pattern: str) -> list[RecordedRequest]:
        rx = re.compile(path_pattern)
        with self._lock:
            return [r for r in self.requests if r.method == method and rx.search(r.path)]

    def writes(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.method != "GET"]

    # ----- JSON shapes (as in the REST description) ---------------------------------------

    def user_json(self, login: str) -> dict[str, Any]:
        api = f"{self.base_url}/users/{login}"
        uid = zlib.crc32(login.encode()) % 10_000_000 + 1
        return {
            "login": login,
            "id": uid,
            "node_id": base64.b64encode(f"U_{login}".encode()).decode(),
            "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4",
            "gravatar_id": "",
            "url": api,
            "html_url": f"{self.server_url}/{login}",
            "followers_url": f"{api}/followers",
            "following_url": f"{api}/following{{/other_user}}",
            "gists_url": f"{api}/gists{{/gist_id}}",
            "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{api}/subscriptions",
            "organizations_url": f"{api}/orgs",
            "repos_url": f"{api}/repos",
            "events_url": f"{api}/events{{/privacy}}",
            "received_events_url": f"{api}/received_events",
            "type": self.user_types.get(login, "User"),
            "site_admin": False,
        }

    def repo_json(self, full_name: str) -> dict[str, Any]:
        owner, name = full_name.split("/")
        known = self.repos.get(full_name)
        return {
            "id": zlib.crc32(full_name.encode()) % 10_000_000 + 1,
            "node_id": base64.b64encode(f"R_{full_name}".encode()).decode(),
            "name": name,
            "full_name": full_name,
            "owner": self.user_json(owner),
            "private": bool(known and known.private),
            "html_url": f"{self.server_url}/{full_name}",
            "url": f"{self.base_url}/repos/{full_name}",
            "fork": known is None,
            "default_branch": known.default_branch if known else "main",
        }

    def comment_json(self, repo: Repo, c: Comment) -> dict[str, Any]:
        kind = "pull" if c.issue in repo.pulls else "issues"
        return {
            "id": c.id,
            "node_id": base64.b64encode(f"IC_{c.id}".encode()).decode(),
            "url": f"{self.base_url}/repos/{repo.full_name}/issues/comments/{c.id}",
            "html_url": f"{self.server_url}/{repo.full_name}/{kind}/{c.issue}#issuecomment-{c.id}",
            "issue_url": f"{self.base_url}/repos/{repo.full_name}/issues/{c.issue}",
            "body": c.body,
            "user": self.user_json(c.author),
            "created_at": c.created_at,
            "updated_at": c.updated_at,
            "author_association": "NONE",
        }

    def pull_json(self, repo: Repo, p: Pull) -> dict[str, Any]:
        base_api = f"{self.base_url}/repos/{repo.full_name}"
        head_owner = (p.head_repo or repo.full_name).split("/")[0]
        return {
            "url": f"{base_api}/pulls/{p.number}",
            "id": p.number * 7919,
            "node_id": base64.b64encode(f"PR_{p.number}".encode()).decode(),
            "html_url": f"{self.server_url}/{repo.full_name}/pull/{p.number}",
            "number": p.number,
            "state": p.state,
            "locked": False,
            "title": p.title or f"PR {p.number}",
            "user": self.user_json(p.author),
            "body": p.body,
            "draft": p.draft,
            "merged": p.merged,
            "merged_at": "2026-01-02T00:00:00Z" if p.merged else None,
            "created_at": "2026-01-01T00:00:00Z",
            "updated_at": _now(),
            "head": {
                "label": f"{head_owner}:{p.head_ref}",
                "ref": p.head_ref,
                "sha": p.head_sha,
                "user": self.user_json(head_owner),
                "repo": self.repo_json(p.head_repo) if p.head_repo else None,
            },
            "base": {
                "label": f"{repo.full_name.split('/')[0]}:{p.base_ref or repo.default_branch}",
                "ref": p.base_ref or repo.default_branch,
                "sha": repo.refs.get(f"heads/{p.base_ref or repo.default_branch}", "0" * 40),
                "user": self.user_json(repo.full_name.split("/")[0]),
                "repo": self.repo_json(repo.full_name),
            },
        }

    # ----- request handling ----------------------------------------------------------------

    def handle(
        self, method: str, raw_path: str, headers: dict[str, str], raw_body: bytes
    ) -> tuple[int, dict[str, str], Any]:
        split = urlsplit(raw_path)
        path, query = split.path, parse_qs(split.query)
        try:
            body = json.loads(raw_body) if raw_body else None
        except json.JSONDecodeError:
            body = raw_body.decode("utf-8", "replace")
        record = RecordedRequest(method, path, query, headers, body)
        with self._lock:
            self.requests.append(record)
            problem = self._validate(method, raw_path, headers, raw_body)
            if problem:
                self.violations.append(f"{method} {path}: {problem}")
                record.status = 422
                return 422, {}, {"message": f"Invalid request: {problem}"}
            for hook in list(self.hooks):
                if hook[0] == method and hook[1].search(path):
                    self.hooks.remove(hook)
                    hook[2]()
            lost_reply: Fault | None = None
            for fault in self.faults:
                if fault.count > 0 and fault.method == method and fault.path_re.search(path):
                    fault.count -= 1
                    if fault.after:
                        lost_reply = fault
                        break
                    record.status = fault.status
                    return fault.status, dict(fault.headers), fault.body
            try:
                login = self._authenticate(path, headers)
                record.login = login
                status, out_headers, payload = self._route(method, path, query, body, login)
            except ApiError as err:
                status, out_headers = err.status, err.headers
                payload = {
                    "message": err.message,
                    "documentation_url": "https://docs.github.com/rest",
                }
            if lost_reply is not None:
                status, out_headers, payload = (
                    lost_reply.status,
                    dict(lost_reply.headers),
                    lost_reply.body,
                )
            record.status = status
            return status, out_headers, payload

    def _validate(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> str:
        builder = EnvironBuilder(
            method=method,
            base_url=GITHUB_API,
            path=urlsplit(raw_path).path,
            query_string=urlsplit(raw_path).query,
            headers={
                k: v
                for k, v in headers.items()
                if k.lower() not in ("content-type", "content-length", "host")
            },
            data=body,
            content_type=headers.get("Content-Type") or headers.get("content-type"),
        )
        try:
            request = builder.get_request()
            rest_description().validate_request(
                _EncodedPathRequest(request, _one_segment(urlsplit(raw_path).path))
            )
        except Exception as exc:  # every openapi-core error is a violation, with its reason
            cause = f" ({exc.__cause__})" if exc.__cause__ else ""
            return f"{type(exc).__name__}: {exc}{cause}"
        return ""

    def _authenticate(self, path: str, headers: dict[str, str]) -> str:
        value = headers.get("Authorization") or headers.get("authorization") or ""
        scheme, _, credential = value.partition(" ")
        if path.startswith("/app/"):
            if scheme.lower() != "bearer":
                raise ApiError(401, "A JSON web token could not be decoded")
            try:
                claims = jwt.decode(credential, options={"verify_signature": False})
                app_id = int(claims["iss"])
                public_pem = self.apps[app_id][0]
                jwt.decode(credential, public_pem, algorithms=["RS256"])
            except (jwt.PyJWTError, KeyError, ValueError) as exc:
                raise ApiError(401, f"A JSON web token could not be decoded: {exc}") from exc
            return f"app:{app_id}"
        if scheme.lower() not in ("token", "bearer") or credential not in self.tokens:
            raise ApiError(401, "Bad credentials")
        return self.tokens[credential]

    def _page(
        self, items: list[Any], query: dict[str, list[str]], path: str
    ) -> tuple[int, dict[str, str], Any]:
        per_page = min(int(query.get("per_page", ["30"])[0]), 100)
        page = int(query.get("page", ["1"])[0])
        chunk = items[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(items):
            last = (len(items) + per_page - 1) // per_page
            headers["Link"] = (
                f'<{self.base_url}{path}?per_page={per_page}&page={page + 1}>; rel="next", '
                f'<{self.base_url}{path}?per_page={per_page}&page={last}>; rel="last"'
            )
        return 200, headers, chunk

    def _route(
        self, method: str, path: str, query: dict[str, list[str]], body: Any, login: str
    ) -> tuple[int, dict[str, str], Any]:
        for verb, pattern, handler in ROUTES:
            match = re.fullmatch(pattern, path)
            if verb == method and match:
                return handler(self, match, query, body, login)
        raise ApiError(404, "Not Found")

    def repo_for(self, match: re.Match[str]) -> Repo:
        name = f"{match['owner']}/{match['repo']}"
        if name not in self.repos:
            raise ApiError(404, "Not Found")
        return self.repos[name]


# ----- the nightly: issues, labels, and the Git Data API -----------------------------------


def _issue_json(s: GitHubStandIn, repo: Repo, i: IssueDoc) -> dict[str, Any]:
    return {
        "id": i.number,
        "node_id": f"I_{i.number}",
        "number": i.number,
        "url": f"{s.base_url}/repos/{repo.full_name}/issues/{i.number}",
        "html_url": f"{s.server_url}/{repo.full_name}/issues/{i.number}",
        "state": i.state,
        "title": i.title,
        "body": i.body,
        "user": s.user_json(i.author),
        "labels": [repo.labels.get(n, {"name": n}) for n in i.labels],
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": _now(),
    }


def _list_issues(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    state = (q.get("state") or ["open"])[0]
    wanted = [n for n in (q.get("labels") or [""])[0].split(",") if n]
    found = [
        i
        for i in sorted(repo.issue_docs.values(), key=lambda i: i.number)
        if state in ("all", i.state) and all(n in i.labels for n in wanted)
    ]
    if (q.get("direction") or ["desc"])[0] == "desc":
        found.reverse()
    items = [_issue_json(s, repo, i) for i in found]
    return s._page(items, q, f"/repos/{repo.full_name}/issues")


def _create_issue(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    number = max([0, *repo.pulls, *repo.issues, *repo.issue_docs]) + 1
    labels = [str(x) for x in b.get("labels") or []]
    for name in labels:
        repo.labels.setdefault(name, {"name": name, "color": "ededed", "description": None})
    issue = IssueDoc(number, login, str(b["title"]), _check_body(b.get("body") or ""), labels)
    repo.issue_docs[number] = issue
    return 201, {}, _issue_json(s, repo, issue)


def _edit_issue(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    issue = repo.issue_docs.get(int(m["number"]))
    if issue is None:
        raise ApiError(404, "Not Found")
    if "body" in b:
        issue.body = _check_body(b["body"] or "")
    if "title" in b:
        issue.title = str(b["title"])
    return 200, {}, _issue_json(s, repo, issue)


def _get_label(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    label = repo.labels.get(unquote(m["name"]))
    if label is None:
        raise ApiError(404, "Not Found")
    return 200, {}, label | {"id": 1, "node_id": "LA_1", "url": "", "default": False}


def _create_label(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    name = str(b["name"])
    if name in repo.labels:
        raise ApiError(422, "Validation Failed: already_exists")
    repo.labels[name] = {"name": name, "color": b.get("color"), "description": b.get("description")}
    return 201, {}, repo.labels[name] | {"id": 1, "node_id": "LA_1", "url": "", "default": False}


def _git_put(repo: Repo, kind: str, content: Any) -> str:
    """Store a git object; its id is a SHA-1 of its content, as in git."""
    raw = content if isinstance(content, bytes) else json.dumps(content, sort_keys=True).encode()
    sha = hashlib.sha1(f"{kind} {len(raw)}\0".encode() + raw).hexdigest()
    repo.git[sha] = (kind, content)
    return sha


def _git_get(repo: Repo, sha: str, kind: str) -> Any:
    found = repo.git.get(sha)
    if found is None or found[0] != kind:
        raise ApiError(404, "Not Found")
    return found[1]


def _tree_of(repo: Repo, commit: str | None) -> dict[str, str]:
    """path -> blob sha of a commit's whole tree."""
    if commit is None:
        return {}
    tree_sha = _git_get(repo, commit, "commit")[0]
    return dict(_git_get(repo, tree_sha, "tree"))


def _ref_json(s: GitHubStandIn, repo: Repo, ref: str) -> dict[str, Any]:
    sha = repo.refs[ref]
    api = f"{s.base_url}/repos/{repo.full_name}/git"
    return {
        "ref": f"refs/{ref}",
        "node_id": f"REF_{ref}",
        "url": f"{api}/refs/{ref}",
        "object": {"type": "commit", "sha": sha, "url": f"{api}/commits/{sha}"},
    }


def _get_ref(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    ref = unquote(m["ref"])
    if ref not in repo.refs:
        raise ApiError(404, "Not Found")
    return 200, {}, _ref_json(s, repo, ref)


def _create_ref(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    ref = str(b["ref"]).removeprefix("refs/")
    if ref in repo.refs:
        raise ApiError(422, "Reference already exists")
    _git_get(repo, b["sha"], "commit")
    _move_ref(repo, ref, b["sha"])
    return 201, {}, _ref_json(s, repo, ref)


def _ancestors(repo: Repo, sha: str) -> set[str]:
    seen, todo = set(), [sha]
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo.extend(_git_get(repo, current, "commit")[1])
    return seen


def _update_ref(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    ref = unquote(m["ref"])
    if ref not in repo.refs:
        raise ApiError(422, "Reference does not exist")
    _git_get(repo, b["sha"], "commit")
    if not b.get("force") and repo.refs[ref] not in _ancestors(repo, b["sha"]):
        raise ApiError(422, "Update is not a fast forward")
    _move_ref(repo, ref, b["sha"])
    return 200, {}, _ref_json(s, repo, ref)


def _delete_ref(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    ref = unquote(m["ref"])
    if ref not in repo.refs:
        raise ApiError(422, "Reference does not exist")
    del repo.refs[ref]
    return 204, {}, None


def _move_ref(repo: Repo, ref: str, sha: str) -> None:
    """Point ``ref`` at ``sha``; an open PR made through the API whose head branch it is
    follows it, as a push to a PR's branch moves the PR's head."""
    repo.refs[ref] = sha
    for pull in repo.pulls.values():
        if pull.tracked and pull.state == "open" and ref == f"heads/{pull.head_ref}":
            pull.head_sha = sha


def _put_commit(repo: Repo, tree: str, parents: list[str], message: str) -> str:
    """A git commit; it joins the history the compare API answers from, with the paths
    whose blobs differ from its first parent's tree."""
    sha = _git_put(repo, "commit", (tree, parents, message))
    before = _tree_of(repo, parents[0]) if parents else {}
    after: dict[str, str] = _git_get(repo, tree, "tree")
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    repo.history[sha] = ([p for p in parents if p in repo.history], changed)
    return sha


def _pull_diff(repo: Repo, pull: Pull) -> list[str]:
    """The paths a tracked PR changes: its head's tree against the merge base's."""
    base = repo.refs.get(f"heads/{pull.base_ref or repo.default_branch}")
    if base is None or pull.head_sha not in repo.history:
        return []
    common = _history_ancestors(repo, base) & _history_ancestors(repo, pull.head_sha)
    below = set().union(*(_history_ancestors(repo, c) - {c} for c in common)) if common else set()
    merge_base = min(common - below) if common else None
    before = _tree_of(repo, merge_base) if merge_base in repo.git else {}
    after = _tree_of(repo, pull.head_sha)
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def _commit_json(s: GitHubStandIn, repo: Repo, sha: str) -> dict[str, Any]:
    tree, parents, message = _git_get(repo, sha, "commit")
    api = f"{s.base_url}/repos/{repo.full_name}/git"
    person = {"name": "github-actions[bot]", "email": "bot@example.com", "date": _now()}
    return {
        "sha": sha,
        "node_id": f"C_{sha}",
        "url": f"{api}/commits/{sha}",
        "html_url": f"{s.server_url}/{repo.full_name}/commit/{sha}",
        "author": person,
        "committer": person,
        "message": message,
        "tree": {"sha": tree, "url": f"{api}/trees/{tree}"},
        "parents": [
            {"sha": p, "url": f"{api}/commits/{p}", "html_url": f"{s.server_url}/commit/{p}"}
            for p in parents
        ],
        "verification": {
            "verified": False,
            "reason": "unsigned",
            "signature": None,
            "payload": None,
        },
    }


def _get_commit(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    return 200, {}, _commit_json(s, repo, m["sha"])


def _create_commit(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    _git_get(repo, b["tree"], "tree")
    parents = [str(p) for p in b.get("parents") or []]
    for p in parents:
        _git_get(repo, p, "commit")
    sha = _put_commit(repo, b["tree"], parents, str(b["message"]))
    return 201, {}, _commit_json(s, repo, sha)


def _get_tree(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    sha = m["sha"]
    entries: dict[str, str] = _git_get(repo, sha, "tree")
    recursive = bool((q.get("recursive") or [""])[0])
    api = f"{s.base_url}/repos/{repo.full_name}/git"
    listed: list[dict[str, Any]] = []
    dirs: set[str] = set()
    for path, blob in sorted(entries.items()):
        parts = path.split("/")
        if not recursive and len(parts) > 1:
            dirs.add(parts[0])
            continue
        dirs.update("/".join(parts[:i]) for i in range(1, len(parts)))
        data = repo.git[blob][1]
        listed.append(
            {
                "path": path,
                "mode": "100644",
                "type": "blob",
                "sha": blob,
                "size": len(data),
                "url": f"{api}/blobs/{blob}",
            }
        )
    for d in sorted(dirs):
        listed.append({"path": d, "mode": "040000", "type": "tree", "sha": "0" * 40, "url": ""})
    return 200, {}, {"sha": sha, "url": f"{api}/trees/{sha}", "tree": listed, "truncated": False}


def _create_tree(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    tree: dict[str, str] = {}
    if b.get("base_tree"):
        tree = dict(_git_get(repo, b["base_tree"], "tree"))
    for entry in b["tree"]:
        if entry.get("sha") is None:
            tree.pop(entry["path"], None)
            continue
        if entry.get("type") != "blob":
            raise ApiError(422, "only blobs are supported by the stand-in")
        _git_get(repo, entry["sha"], "blob")
        tree[entry["path"]] = entry["sha"]
    sha = _git_put(repo, "tree", tree)
    return 201, {}, {"sha": sha, "url": "", "tree": [], "truncated": False}


def _create_blob(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    if b.get("encoding", "utf-8") == "base64":
        data = base64.b64decode(b["content"])
    else:
        data = str(b["content"]).encode("utf-8")
    sha = _git_put(repo, "blob", data)
    return 201, {}, {"sha": sha, "url": f"{s.base_url}/repos/{repo.full_name}/git/blobs/{sha}"}


def _get_blob(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    data: bytes = _git_get(repo, m["sha"], "blob")
    return (
        200,
        {},
        {
            "sha": m["sha"],
            "node_id": f"B_{m['sha']}",
            "size": len(data),
            "url": f"{s.base_url}/repos/{repo.full_name}/git/blobs/{m['sha']}",
            "content": base64.encodebytes(data).decode("ascii"),
            "encoding": "base64",
        },
    )


# ----- the compare API, over the history seeded with ``add_commit`` ------------------------

COMPARE_FILES_CAP = 300  # GitHub lists at most 300 changed files, with no sign that it cut


def _resolve(repo: Repo, name: str) -> str:
    """A commit SHA or a branch name of the history; 404 as GitHub answers an unknown one."""
    sha = name if name in repo.history else repo.refs.get(f"heads/{name}")
    if sha is None or sha not in repo.history:
        raise ApiError(404, "Not Found")
    return sha


def _history_ancestors(repo: Repo, sha: str) -> set[str]:
    seen, todo = set(), [sha]
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo.extend(repo.history[current][0])
    return seen


def _history_commit_json(s: GitHubStandIn, repo: Repo, sha: str) -> dict[str, Any]:
    api = f"{s.base_url}/repos/{repo.full_name}"
    person = {"name": "dev", "email": "dev@example.com", "date": "2026-01-01T00:00:00Z"}
    return {
        "sha": sha,
        "node_id": f"C_{sha}",
        "url": f"{api}/commits/{sha}",
        "html_url": f"{s.server_url}/{repo.full_name}/commit/{sha}",
        "comments_url": f"{api}/commits/{sha}/comments",
        "commit": {
            "url": f"{api}/git/commits/{sha}",
            "author": person,
            "committer": person,
            "message": f"commit {sha[:7]}",
            "comment_count": 0,
            "tree": {"sha": "0" * 40, "url": f"{api}/git/trees/{'0' * 40}"},
        },
        "author": None,
        "committer": None,
        "parents": [
            {"sha": p, "url": f"{api}/commits/{p}", "html_url": f"{s.server_url}/commit/{p}"}
            for p in repo.history[sha][0]
        ],
    }


def _compare(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    """``base...head``: their merge base, the commits from it to head, and the paths those
    commits changed (GitHub diffs the trees; a path changed and changed back is listed here,
    which no test relies on), at most COMPARE_FILES_CAP of them."""
    repo = s.repo_for(m)
    base_name, dots, head_name = unquote(m["basehead"]).partition("...")
    if not dots:
        raise ApiError(404, "Not Found")
    base, head = _resolve(repo, base_name), _resolve(repo, head_name)
    of_base, of_head = _history_ancestors(repo, base), _history_ancestors(repo, head)
    common = of_base & of_head
    if not common:
        raise ApiError(404, f"No common ancestor between {base_name} and {head_name}.")
    # The merge base: the common ancestor that no other common ancestor descends from.
    below = set().union(*(_history_ancestors(repo, c) - {c} for c in common))
    merge_base = min(common - below)
    if base == head:
        status = "identical"
    elif merge_base == base:
        status = "ahead"
    elif merge_base == head:
        status = "behind"
    else:
        status = "diverged"
    since = sorted(  # oldest first, as GitHub lists them
        of_head - _history_ancestors(repo, merge_base),
        key=lambda c: (len(_history_ancestors(repo, c)), c),
    )
    paths = list(dict.fromkeys(p for c in since for p in repo.history[c][1]))
    api = f"{s.base_url}/repos/{repo.full_name}"
    html = f"{s.server_url}/{repo.full_name}"
    files = [
        {
            "sha": "1" * 40,
            "filename": path,
            "status": "modified",
            "additions": 1,
            "deletions": 1,
            "changes": 2,
            "blob_url": f"{html}/blob/{head}/{path}",
            "raw_url": f"{html}/raw/{head}/{path}",
            "contents_url": f"{api}/contents/{path}?ref={head}",
        }
        for path in paths[:COMPARE_FILES_CAP]
    ]
    spec = f"{base_name}...{head_name}"
    return (
        200,
        {},
        {
            "url": f"{api}/compare/{spec}",
            "html_url": f"{html}/compare/{spec}",
            "permalink_url": f"{html}/compare/{base}...{head}",
            "diff_url": f"{html}/compare/{spec}.diff",
            "patch_url": f"{html}/compare/{spec}.patch",
            "base_commit": _history_commit_json(s, repo, base),
            "merge_base_commit": _history_commit_json(s, repo, merge_base),
            "status": status,
            "ahead_by": len(of_head - of_base),
            "behind_by": len(of_base - of_head),
            "total_commits": len(since),
            "commits": [_history_commit_json(s, repo, c) for c in since[:250]],
            "files": files,
        },
    )


Handler = Callable[
    [GitHubStandIn, "re.Match[str]", dict[str, list[str]], Any, str],
    tuple[int, dict[str, str], Any],
]
REPO = r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"


def _get_repo(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    return 200, {}, s.repo_json(s.repo_for(m).full_name)


def _get_pull(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    pull = repo.pulls.get(int(m["number"]))
    if pull is None:
        raise ApiError(404, "Not Found")
    return 200, {}, s.pull_json(repo, pull)


def _get_files(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    pull = repo.pulls.get(int(m["number"]))
    if pull is None:
        raise ApiError(404, "Not Found")
    if pull.tracked:
        pull.files = _pull_diff(repo, pull)
    files = [
        {
            "sha": "1" * 40,
            "filename": f,
            "status": "modified",
            "additions": 1,
            "deletions": 1,
            "changes": 2,
            "blob_url": f"{s.server_url}/{repo.full_name}/blob/{pull.head_sha}/{f}",
            "raw_url": f"{s.server_url}/{repo.full_name}/raw/{pull.head_sha}/{f}",
            "contents_url": f"{s.base_url}/repos/{repo.full_name}/contents/{f}",
            **({"patch": pull.patches[f]} if f in pull.patches else {}),
        }
        for f in pull.files
    ]
    return s._page(files, q, f"/repos/{repo.full_name}/pulls/{pull.number}/files")


def _list_pulls(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    """``state`` (open, closed, all), ``head`` (``owner:branch``) and ``base`` filters, newest
    first (GitHub's default order, by creation)."""
    repo = s.repo_for(m)
    state = (q.get("state") or ["open"])[0]
    head = (q.get("head") or [""])[0]
    base = (q.get("base") or [""])[0]
    found = []
    for pull in sorted(repo.pulls.values(), key=lambda p: -p.number):
        owner = (pull.head_repo or repo.full_name).split("/")[0]
        if state != "all" and pull.state != state:
            continue
        if head and head != f"{owner}:{pull.head_ref}":
            continue
        if base and base != (pull.base_ref or repo.default_branch):
            continue
        found.append(s.pull_json(repo, pull))
    return s._page(found, q, f"/repos/{repo.full_name}/pulls")


def _create_pull(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    head, base = str(b["head"]).split(":")[-1], str(b.get("base") or "")
    if f"heads/{base}" not in repo.refs:
        raise ApiError(422, "Validation Failed: base: invalid")
    if f"heads/{head}" not in repo.refs:
        raise ApiError(422, "Validation Failed: head: invalid")
    for pull in repo.pulls.values():
        if pull.state == "open" and pull.head_ref == head and pull.head_repo == repo.full_name:
            raise ApiError(422, f"A pull request already exists for {head}.")
    tip = repo.refs[f"heads/{head}"]
    if tip == repo.refs[f"heads/{base}"]:
        raise ApiError(422, f"No commits between {base} and {head}")
    number = max([0, *repo.pulls, *repo.issues, *repo.issue_docs]) + 1
    pull = Pull(number, login, tip, repo.full_name, head_ref=head)
    pull.title, pull.body, pull.base_ref, pull.tracked = str(b["title"]), b.get("body"), base, True
    if pull.body is not None:
        _check_body(pull.body)
    pull.draft = bool(b.get("draft"))
    repo.pulls[number] = pull
    s.add_user(login)
    return 201, {}, s.pull_json(repo, pull)


def _update_pull(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    pull = repo.pulls.get(int(m["number"]))
    if pull is None:
        raise ApiError(404, "Not Found")
    if pull.author != login and repo.roles.get(login) not in ("admin", "maintain", "write"):
        raise ApiError(403, "Resource not accessible by integration")
    if pull.merged and b.get("state") == "open":
        raise ApiError(422, "Validation Failed: state cannot be changed, the PR was merged")
    if "body" in b:
        pull.body = None if b["body"] is None else _check_body(b["body"])
    if "title" in b:
        pull.title = str(b["title"])
    if b.get("state") in ("open", "closed"):
        pull.state = b["state"]
        if pull.tracked and pull.state == "open":
            pull.head_sha = repo.refs.get(f"heads/{pull.head_ref}", pull.head_sha)
    return 200, {}, s.pull_json(repo, pull)


def _get_permission(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    user = m["username"]
    if user not in s.user_types:
        raise ApiError(404, f"{user} is not a user")
    role = repo.roles.get(user, "none" if repo.private else "read")
    permission = {"maintain": "write", "triage": "read"}.get(role, role)
    return 200, {}, {"permission": permission, "role_name": role, "user": s.user_json(user)}


def _get_issue(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    number = int(m["number"])
    if number not in repo.issues and number not in repo.pulls:
        raise ApiError(404, "Not Found")
    out = {
        "id": number,
        "node_id": f"I_{number}",
        "number": number,
        "url": f"{s.base_url}/repos/{repo.full_name}/issues/{number}",
        "html_url": f"{s.server_url}/{repo.full_name}/issues/{number}",
        "state": repo.pulls[number].state if number in repo.pulls else "open",
        "title": f"#{number}",
        "user": s.user_json(repo.pulls[number].author if number in repo.pulls else "octocat"),
    }
    return 200, {}, out


def _list_comments(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    number = int(m["number"])
    if number not in repo.issues and number not in repo.pulls:
        raise ApiError(404, "Not Found")
    items = [s.comment_json(repo, c) for c in repo.comments.values() if c.issue == number]
    return s._page(items, q, f"/repos/{repo.full_name}/issues/{number}/comments")


def _check_body(text: Any) -> str:
    if not isinstance(text, str):
        raise ApiError(422, "Validation Failed: body is required")
    if len(text) > COMMENT_LIMIT:
        raise ApiError(422, "Validation Failed: body is too long (maximum is 65536 characters)")
    return text


def _create_comment(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    number = int(m["number"])
    if number not in repo.issues and number not in repo.pulls:
        raise ApiError(404, "Not Found")
    c = s.add_comment(number, login, _check_body(b.get("body")), repo.full_name)
    return 201, {"Location": s.comment_json(repo, c)["url"]}, s.comment_json(repo, c)


def _get_comment(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    c = repo.comments.get(int(m["comment_id"]))
    if c is None:
        raise ApiError(404, "Not Found")
    return 200, {}, s.comment_json(repo, c)


def _edit_comment(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    c = repo.comments.get(int(m["comment_id"]))
    if c is None:
        raise ApiError(404, "Not Found")
    if c.author != login and repo.roles.get(login) not in ("admin", "maintain", "write"):
        raise ApiError(403, "Resource not accessible by integration")
    c.body = _check_body(b.get("body"))
    c.updated_at = _now()
    return 200, {}, s.comment_json(repo, c)


def _reaction_json(s: GitHubStandIn, comment_id: int, login: str, content: str) -> dict[str, Any]:
    rid = zlib.crc32(f"{comment_id}/{login}/{content}".encode()) % 10_000_000 + 1
    return {
        "id": rid,
        "node_id": f"REA_{rid}",
        "user": s.user_json(login),
        "content": content,
        "created_at": _now(),
    }


def _list_reactions(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    cid = int(m["comment_id"])
    if cid not in repo.comments:
        raise ApiError(404, "Not Found")
    items = [
        _reaction_json(s, cid, who, content)
        for content, people in repo.reactions.get(cid, {}).items()
        for who in people
    ]
    return s._page(items, q, f"/repos/{repo.full_name}/issues/comments/{cid}/reactions")


def _create_reaction(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    cid = int(m["comment_id"])
    if cid not in repo.comments:
        raise ApiError(404, "Not Found")
    content = b["content"]
    people = repo.reactions.setdefault(cid, {}).setdefault(content, [])
    # GitHub: 200 "Reaction exists" when this user already left it, 201 when created.
    status = 200 if login in people else 201
    if status == 201:
        people.append(login)
    return status, {}, _reaction_json(s, cid, login, content)


def _delete_reaction(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    cid, rid = int(m["comment_id"]), int(m["reaction_id"])
    for content, people in repo.reactions.get(cid, {}).items():
        for who in people:
            if _reaction_json(s, cid, who, content)["id"] == rid:
                people.remove(who)
                return 204, {}, None
    raise ApiError(404, "Not Found")


def _dispatch(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    workflow = m["workflow_id"]
    if workflow not in repo.workflows:
        raise ApiError(404, "Not Found")
    inputs = b.get("inputs") or {}
    declared = repo.workflows[workflow]
    if declared is not None:
        unexpected = sorted(set(inputs) - declared)
        if unexpected:
            raise ApiError(422, f"Unexpected inputs provided: {unexpected}")
    if any(not isinstance(v, str | bool | int | float) for v in inputs.values()):
        raise ApiError(422, "inputs values must be strings")
    if b["ref"] not in (repo.default_branch, f"refs/heads/{repo.default_branch}"):
        raise ApiError(422, f"No ref found for: {b['ref']}")
    run = Run(next(s._ids), workflow, b["ref"], dict(inputs))
    repo.runs[run.id] = run
    if b.get("return_run_details"):
        return (
            200,
            {},
            {
                "workflow_run_id": run.id,
                "run_url": f"{s.base_url}/repos/{repo.full_name}/actions/runs/{run.id}",
                "html_url": f"{s.server_url}/{repo.full_name}/actions/runs/{run.id}",
            },
        )
    return 204, {}, None


def _get_run(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    run = repo.runs.get(int(m["run_id"]))
    if run is None:
        raise ApiError(404, "Not Found")
    return (
        200,
        {},
        {
            "id": run.id,
            "name": run.workflow,
            "status": run.status,
            "conclusion": run.conclusion,
            "created_at": run.created_at,
            "run_started_at": run.created_at,
            "html_url": f"{s.server_url}/{repo.full_name}/actions/runs/{run.id}",
            "url": f"{s.base_url}/repos/{repo.full_name}/actions/runs/{run.id}",
        },
    )


def _cancel_run(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    run = repo.runs.get(int(m["run_id"]))
    if run is None:
        raise ApiError(404, "Not Found")
    if run.status == "completed":
        raise ApiError(409, "Cannot cancel a workflow run that is completed.")
    run.status, run.conclusion = "completed", "cancelled"
    return 202, {}, {}


def _create_status(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    sha = m["sha"]
    if not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise ApiError(422, f"No commit found for SHA: {sha}")
    entry = {
        "url": f"{s.base_url}/repos/{repo.full_name}/statuses/{sha}",
        "id": next(s._ids),
        "node_id": "SC_1",
        "state": b["state"],
        "description": b.get("description"),
        "target_url": b.get("target_url"),
        "context": b.get("context", "default"),
        "created_at": _now(),
        "updated_at": _now(),
        "avatar_url": None,
        "creator": s.user_json(login),
    }
    if entry["description"] and len(entry["description"]) > 140:
        raise ApiError(422, "description is too long (maximum is 140 characters)")
    repo.statuses.setdefault(sha, []).append(entry)
    return 201, {}, entry


def _get_contents(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    path = unquote(m["path"])
    ref = (q.get("ref") or [repo.default_branch])[0]
    data = repo.blobs.get((ref, path))
    if data is None:
        raise ApiError(404, "Not Found")
    inline = len(data) <= CONTENTS_INLINE_LIMIT
    encoded = base64.encodebytes(data).decode("ascii") if inline else ""
    api = f"{s.base_url}/repos/{repo.full_name}/contents/{path}?ref={ref}"
    html = f"{s.server_url}/{repo.full_name}/blob/{ref}/{path}"
    return (
        200,
        {},
        {
            "type": "file",
            "encoding": "base64" if inline else "none",
            "size": len(data),
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            "content": encoded,
            "sha": f"{zlib.crc32(data):08x}" * 5,
            "url": api,
            "git_url": None,
            "html_url": html,
            "download_url": None,
            "_links": {"git": None, "html": html, "self": api},
        },
    )


def _review_json(
    s: GitHubStandIn, repo: Repo, pull: Pull, review: dict[str, Any]
) -> dict[str, Any]:
    html = f"{s.server_url}/{repo.full_name}/pull/{pull.number}#pullrequestreview-{review['id']}"
    api = f"{s.base_url}/repos/{repo.full_name}/pulls/{pull.number}"
    return {
        "id": review["id"],
        "node_id": f"PRR_{review['id']}",
        "user": s.user_json(review["user"]),
        "body": review["body"],
        "state": review["state"],
        "html_url": html,
        "pull_request_url": api,
        "_links": {"html": {"href": html}, "pull_request": {"href": api}},
        "submitted_at": review["submitted_at"],
        "commit_id": review["commit_id"],
        "author_association": "NONE",
    }


def _list_reviews(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    pull = repo.pulls.get(int(m["number"]))
    if pull is None:
        raise ApiError(404, "Not Found")
    items = [_review_json(s, repo, pull, r) for r in pull.reviews]
    return s._page(items, q, f"/repos/{repo.full_name}/pulls/{pull.number}/reviews")


def _hunks(patch: str) -> list[tuple[int, int]]:
    return [
        (int(first), int(first) + int(count or "1") - 1)
        for first, count in HUNK_RE.findall(patch)
        if (count or "1") != "0"
    ]


def _create_review(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    repo = s.repo_for(m)
    pull = repo.pulls.get(int(m["number"]))
    if pull is None:
        raise ApiError(404, "Not Found")
    body = b.get("body") or ""
    if len(body) > COMMENT_LIMIT:
        raise ApiError(422, "Validation Failed: body is too long (maximum is 65536 characters)")
    event = b.get("event")
    if event in ("COMMENT", "REQUEST_CHANGES") and not body:
        raise ApiError(422, "Unprocessable Entity: body is required for this event")
    commit = b.get("commit_id") or pull.head_sha
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise ApiError(422, f"No commit found for SHA: {commit}")
    comments = []
    for c in b.get("comments") or []:
        if len(c.get("body") or "") > COMMENT_LIMIT:
            raise ApiError(422, "Validation Failed: body is too long (maximum is 65536 characters)")
        if c["path"] not in pull.files:
            raise ApiError(422, f"Unprocessable Entity: Path could not be resolved: {c['path']}")
        line, start = c.get("line"), c.get("start_line")
        if line is None or c.get("side", "RIGHT") != "RIGHT":
            raise ApiError(422, "Unprocessable Entity: only RIGHT-side line comments are served")
        first = start if start is not None else line
        if start is not None and (start >= line or c.get("start_side", "RIGHT") != "RIGHT"):
            raise ApiError(422, "Unprocessable Entity: start_line must precede line")
        hunks = _hunks(pull.patches.get(c["path"], ""))
        if not any(lo <= first and line <= hi for lo, hi in hunks):
            raise ApiError(
                422,
                "Unprocessable Entity: Pull request review thread line must be part of the diff "
                "and start line must be part of the same hunk as the line.",
            )
        comments.append(dict(c))
    review = {
        "id": next(s._ids),
        "user": login,
        "body": body,
        "state": {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED"}.get(
            event or "", "COMMENTED" if event else "PENDING"
        ),
        "commit_id": commit,
        "submitted_at": _now(),
        "comments": comments,
    }
    pull.reviews.append(review)
    return 200, {}, _review_json(s, repo, pull, review)


def _app_token(s: GitHubStandIn, m: re.Match[str], q: Any, b: Any, login: str) -> Any:
    app_id = int(login.split(":")[1])
    _, slug, installation = s.apps[app_id]
    if int(m["installation_id"]) != installation:
        raise ApiError(404, "Not Found")
    token = f"ghs_standin_{app_id}_{next(s._ids)}"
    s.add_token(token, f"{slug}[bot]", "Bot")
    return (
        201,
        {},
        {
            "token": token,
            "expires_at": "2099-01-01T00:00:00Z",
            "permissions": {"issues": "write", "pull_requests": "write", "actions": "write"},
            "repository_selection": "all",
        },
    )


ROUTES: list[tuple[str, str, Handler]] = [
    ("GET", REPO, _get_repo),
    ("GET", REPO + r"/pulls", _list_pulls),
    ("POST", REPO + r"/pulls", _create_pull),
    ("GET", REPO + r"/pulls/(?P<number>\d+)", _get_pull),
    ("PATCH", REPO + r"/pulls/(?P<number>\d+)", _update_pull),
    ("GET", REPO + r"/pulls/(?P<number>\d+)/files", _get_files),
    ("GET", REPO + r"/pulls/(?P<number>\d+)/reviews", _list_reviews),
    ("POST", REPO + r"/pulls/(?P<number>\d+)/reviews", _create_review),
    ("GET", REPO + r"/contents/(?P<path>.+)", _get_contents),
    ("GET", REPO + r"/collaborators/(?P<username>[^/]+)/permission", _get_permission),
    ("GET", REPO + r"/issues/(?P<number>\d+)", _get_issue),
    ("GET", REPO + r"/issues/(?P<number>\d+)/comments", _list_comments),
    ("POST", REPO + r"/issues/(?P<number>\d+)/comments", _create_comment),
    ("GET", REPO + r"/issues/comments/(?P<comment_id>\d+)", _get_comment),
    ("PATCH", REPO + r"/issues/comments/(?P<comment_id>\d+)", _edit_comment),
    ("GET", REPO + r"/issues/comments/(?P<comment_id>\d+)/reactions", _list_reactions),
    ("POST", REPO + r"/issues/comments/(?P<comment_id>\d+)/reactions", _create_reaction),
    (
        "DELETE",
        REPO + r"/issues/comments/(?P<comment_id>\d+)/reactions/(?P<reaction_id>\d+)",
        _delete_reaction,
    ),
    ("POST", REPO + r"/actions/workflows/(?P<workflow_id>[^/]+)/dispatches", _dispatch),
    ("GET", REPO + r"/actions/runs/(?P<run_id>\d+)", _get_run),
    ("POST", REPO + r"/actions/runs/(?P<run_id>\d+)/cancel", _cancel_run),
    ("POST", REPO + r"/statuses/(?P<sha>[^/]+)", _create_status),
    ("GET", REPO + r"/compare/(?P<basehead>.+)", _compare),
    ("POST", r"/app/installations/(?P<installation_id>\d+)/access_tokens", _app_token),
    ("GET", REPO + r"/issues", _list_issues),
    ("POST", REPO + r"/issues", _create_issue),
    ("PATCH", REPO + r"/issues/(?P<number>\d+)", _edit_issue),
    ("GET", REPO + r"/labels/(?P<name>[^/]+)", _get_label),
    ("POST", REPO + r"/labels", _create_label),
    ("GET", REPO + r"/git/ref/(?P<ref>.+)", _get_ref),
    ("POST", REPO + r"/git/refs", _create_ref),
    ("PATCH", REPO + r"/git/refs/(?P<ref>.+)", _update_ref),
    ("DELETE", REPO + r"/git/refs/(?P<ref>.+)", _delete_ref),
    ("GET", REPO + r"/git/commits/(?P<sha>[0-9a-f]{40})", _get_commit),
    ("POST", REPO + r"/git/commits", _create_commit),
    ("GET", REPO + r"/git/trees/(?P<sha>[0-9a-f]{40})", _get_tree),
    ("POST", REPO + r"/git/trees", _create_tree),
    ("GET", REPO + r"/git/blobs/(?P<sha>[0-9a-f]{40})", _get_blob),
    ("POST", REPO + r"/git/blobs", _create_blob),
]


class _Handler(BaseHTTPRequestHandler):
    owner: GitHubStandIn
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; without this, Nagle's algorithm and the
        # client's delayed ACK add ~40 ms to every request.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        status, headers, payload = self.owner.handle(
            self.command, self.path, dict(self.headers.items()), raw
        )
        data = b"" if payload is None else json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-GitHub-Api-Version-Selected", "2022-11-28")
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if data:
            self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve


def iter_requests(standin: GitHubStandIn) -> Iterator[RecordedRequest]:
    """Recorded requests in arrival order (a copy, safe while the server runs)."""
    with standin._lock:
        return iter(list(standin.requests))
