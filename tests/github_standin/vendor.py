"""Regenerate the vendored GitHub REST description subset and webhook payloads.

    python tests/github_standin/vendor.py                 # runs `npm pack` in a temp dir
    python tests/github_standin/vendor.py --from-dir DIR  # DIR holds the two .tgz files

Writes ``rest-api-subset.json`` (the operations in ``OPERATIONS`` from
``@octokit/openapi`` ``generated/api.github.com.json``, with every component they
reference, and no examples) and ``webhooks/<event>.<action>.json`` (payloads from
``@octokit/webhooks-examples``). Never edit those files by hand; change this script.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OPENAPI_PACKAGE = "@octokit/openapi@23.0.2"
WEBHOOKS_PACKAGE = "@octokit/webhooks-examples@7.6.1"

# (path, method): every endpoint the bot calls, plus the App token exchange.
OPERATIONS = [
    ("/repos/{owner}/{repo}", "get"),
    ("/repos/{owner}/{repo}/pulls/{pull_number}", "get"),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/files", "get"),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/reviews", "get"),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/reviews", "post"),
    ("/repos/{owner}/{repo}/contents/{path}", "get"),
    ("/repos/{owner}/{repo}/collaborators/{username}/permission", "get"),
    ("/repos/{owner}/{repo}/issues/{issue_number}", "get"),
    ("/repos/{owner}/{repo}/issues/{issue_number}/comments", "get"),
    ("/repos/{owner}/{repo}/issues/{issue_number}/comments", "post"),
    ("/repos/{owner}/{repo}/issues/comments/{comment_id}", "get"),
    ("/repos/{owner}/{repo}/issues/comments/{comment_id}", "patch"),
    ("/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", "get"),
    ("/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", "post"),
    ("/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions/{reaction_id}", "delete"),
    ("/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches", "post"),
    ("/repos/{owner}/{repo}/actions/runs/{run_id}", "get"),
    ("/repos/{owner}/{repo}/actions/runs/{run_id}/cancel", "post"),
    ("/repos/{owner}/{repo}/statuses/{sha}", "post"),
    # The report's stale-baseline note: the PR's merge base, the files changed since a baseline.
    ("/repos/{owner}/{repo}/compare/{basehead}", "get"),
    ("/app/installations/{installation_id}/access_tokens", "post"),
    # The nightly: its issue and label, and the baselines branch by the Git Data API.
    ("/repos/{owner}/{repo}/issues", "get"),
    ("/repos/{owner}/{repo}/issues", "post"),
    ("/repos/{owner}/{repo}/issues/{issue_number}", "patch"),
    ("/repos/{owner}/{repo}/labels", "post"),
    ("/repos/{owner}/{repo}/labels/{name}", "get"),
    ("/repos/{owner}/{repo}/git/ref/{ref}", "get"),
    ("/repos/{owner}/{repo}/git/refs", "post"),
    ("/repos/{owner}/{repo}/git/refs/{ref}", "patch"),
    ("/repos/{owner}/{repo}/git/commits", "post"),
    ("/repos/{owner}/{repo}/git/commits/{commit_sha}", "get"),
    ("/repos/{owner}/{repo}/git/trees", "post"),
    ("/repos/{owner}/{repo}/git/trees/{tree_sha}", "get"),
    ("/repos/{owner}/{repo}/git/blobs", "post"),
    ("/repos/{owner}/{repo}/git/blobs/{file_sha}", "get"),
    # The migration campaign: its branch (moved, or deleted once nothing is left) and its PR.
    ("/repos/{owner}/{repo}/git/refs/{ref}", "delete"),
    ("/repos/{owner}/{repo}/pulls", "get"),
    ("/repos/{owner}/{repo}/pulls", "post"),
    ("/repos/{owner}/{repo}/pulls/{pull_number}", "patch"),
]

# (event, action, index in the package's example list for that event)
WEBHOOKS = [
    ("issue_comment", "created", 0),
    ("issue_comment", "edited", 7),
    ("pull_request", "synchronize", 22),
    ("workflow_run", "completed", 0),
]


def _npm_pack(package: str, into: Path) -> Path:
    out = subprocess.run(
        ["npm", "pack", package, "--silent"],
        cwd=into,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()[-1]
    return into / out


def _member(tgz: Path, name: str) -> Any:
    with tarfile.open(tgz) as tar:
        handle = tar.extractfile(f"package/{name}")
        if handle is None:
            raise SystemExit(f"{tgz}: no {name}")
        return json.load(io.TextIOWrapper(handle, encoding="utf-8"))


def _strip_examples(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: _strip_examples(v)
            for k, v in node.items()
            if k not in ("examples", "example", "x-github")
        }
    if isinstance(node, list):
        return [_strip_examples(v) for v in node]
    return node


def trim(spec: dict[str, Any]) -> dict[str, Any]:
    """The operations in OPERATIONS and the transitive closure of their $refs."""
    paths: dict[str, Any] = {}
    for path, method in OPERATIONS:
        item = spec["paths"][path]
        kept = {method: item[method]}
        if "parameters" in item:
            kept["parameters"] = item["parameters"]
        paths.setdefault(path, {}).update(kept)
    paths = _strip_examples(paths)
    components: dict[str, dict[str, Any]] = {}
    pending = [paths]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/"):
                _, _, kind, name = ref.split("/", 3)
                if name not in components.setdefault(kind, {}):
                    target = _strip_examples(spec["components"][kind][name])
                    components[kind][name] = target
                    pending.append(target)
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return {
        "openapi": spec["openapi"],
        "info": {
            "title": spec["info"]["title"],
            "version": spec["info"]["version"],
            "description": f"Trimmed from {OPENAPI_PACKAGE} by tests/github_standin/vendor.py",
        },
        "servers": spec["servers"],
        "paths": paths,
        "components": {k: dict(sorted(v.items())) for k, v in sorted(components.items())},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from-dir", type=Path, help="directory with the two npm tarballs")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.from_dir:
            openapi_tgz = next(args.from_dir.glob("octokit-openapi-*.tgz"))
            hooks_tgz = next(args.from_dir.glob("octokit-webhooks-examples-*.tgz"))
        else:
            openapi_tgz = _npm_pack(OPENAPI_PACKAGE, Path(tmp))
            hooks_tgz = _npm_pack(WEBHOOKS_PACKAGE, Path(tmp))
        spec = trim(_member(openapi_tgz, "generated/api.github.com.json"))
        (HERE / "rest-api-subset.json").write_text(json.dumps(spec, indent=1) + "\n", "utf-8")
        examples = {
            e["name"]: e["examples"] for e in _member(hooks_tgz, "api.github.com/index.json")
        }
        for event, action, index in WEBHOOKS:
            payload = examples[event][index]
            if payload.get("action") != action:
                raise SystemExit(f"{event}[{index}] is {payload.get('action')}, not {action}")
            out = HERE / "webhooks" / f"{event}.{action}.json"
            out.write_text(json.dumps(payload, indent=1) + "\n", "utf-8")
    print(f"wrote {HERE / 'rest-api-subset.json'} and {len(WEBHOOKS)} webhook payloads")
    return 0


if __name__ == "__main__":
    sys.exit(main())
