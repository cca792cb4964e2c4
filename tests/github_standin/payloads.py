"""Webhook events built from the vendored real payloads of @octokit/webhooks-examples.

The package has no ``issue_comment`` example on a pull request, so ``comment_event`` adds
the ``issue.pull_request`` object exactly as GitHub sends it for PR conversations. Only
the fields a test names are changed; everything else stays as GitHub sent it.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent / "webhooks"


@cache
def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HERE / f"{name}.json").read_text("utf-8"))
    return data


def example(name: str) -> dict[str, Any]:
    """A deep copy of a vendored payload, e.g. ``example("issue_comment.created")``."""
    return copy.deepcopy(_load(name))


def _set_repo(event: dict[str, Any], repo: str) -> None:
    owner, name = repo.split("/")
    event["repository"]["full_name"] = repo
    event["repository"]["name"] = name
    event["repository"]["owner"]["login"] = owner


def comment_event(
    *,
    repo: str,
    number: int,
    body: str,
    login: str,
    comment_id: int,
    user_type: str = "User",
    action: str = "created",
    on_pull: bool = True,
    state: str = "open",
) -> dict[str, Any]:
    """An ``issue_comment`` event (created or edited) on a PR or a plain issue."""
    event = example(f"issue_comment.{action}")
    _set_repo(event, repo)
    issue = event["issue"]
    issue["number"] = number
    issue["state"] = state
    issue["html_url"] = f"https://github.com/{repo}/{'pull' if on_pull else 'issues'}/{number}"
    if on_pull:
        issue["pull_request"] = {
            "url": f"https://api.github.com/repos/{repo}/pulls/{number}",
            "html_url": f"https://github.com/{repo}/pull/{number}",
            "diff_url": f"https://github.com/{repo}/pull/{number}.diff",
            "patch_url": f"https://github.com/{repo}/pull/{number}.patch",
            "merged_at": None,
        }
    else:
        issue.pop("pull_request", None)
    comment = event["comment"]
    comment["id"] = comment_id
    comment["body"] = body
    comment["user"]["login"] = login
    comment["user"]["type"] = user_type
    comment["html_url"] = f"{issue['html_url']}#issuecomment-{comment_id}"
    event["sender"]["login"] = login
    event["sender"]["type"] = user_type
    return event


def pull_request_event(
    *, repo: str, number: int, head_sha: str, action: str = "synchronize"
) -> dict[str, Any]:
    event = example(f"pull_request.{action}")
    _set_repo(event, repo)
    event["number"] = number
    event["pull_request"]["number"] = number
    event["pull_request"]["head"]["sha"] = head_sha
    return event


def workflow_run_event(*, repo: str, run_id: int, conclusion: str, path: str) -> dict[str, Any]:
    event = example("workflow_run.completed")
    _set_repo(event, repo)
    event["workflow_run"]["id"] = run_id
    event["workflow_run"]["conclusion"] = conclusion
    event["workflow_run"]["path"] = path
    return event
