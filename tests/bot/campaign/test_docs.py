"""docs/adopting.md's campaign section: its commands run as written (placeholders filled in).

The section's ``sh`` blocks run in a git checkout of a fork-shaped repository whose commit
the stand-in holds under the same SHA, with the environment a person's shell would have
(``GITHUB_API_URL`` pointing at the stand-in). The dry run must list the PR it would open
and write nothing; the summary must print its row.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from qnn_migrate_tests.bot.campaign.support import fork_files
from qnn_migrate_tests.bot.support import standin_env
from qnn_migrate_tests.github_standin.fixtures import REPO, TOKEN
from qnn_migrate_tests.github_standin.server import GitHubStandIn

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def section_blocks() -> list[str]:
    docs = (ROOT / "docs" / "adopting.md").read_text(encoding="utf-8")
    section = docs.split("## A migration campaign", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def test_the_campaign_section_runs_as_written(
    github_standin: GitHubStandIn, tmp_path: Path
) -> None:
    gh = github_standin
    blocks = section_blocks()
    assert len(blocks) == 2 and "--dry-run" in blocks[0] and "campaign summary" in blocks[1]
    checkout = tmp_path / "fork"
    for path, data in fork_files().items():
        (checkout / path).parent.mkdir(parents=True, exist_ok=True)
        (checkout / path).write_bytes(data)
    git = ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "fork"], check=True)
    head = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    gh.commit_as(head, fork_files(), "main")
    script = "set -euo pipefail\n" + "\n".join(blocks)
    script = script.replace("<owner>/<repo>", REPO).replace("<a token that can read it>", TOKEN)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env |= {
        k: v for k, v in standin_env(gh).items() if k not in ("GITHUB_TOKEN", "GITHUB_REPOSITORY")
    }
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        ["bash", "-c", script], cwd=checkout, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"POST   /repos/{REPO}/pulls  (open qnn-migrate/campaign -> main" in done.stderr
    assert "PATCH" not in done.stderr and gh.writes() == []
    assert f"| `{REPO}` | — | opened | — | opened a PR with the rewrite |" in done.stdout
