"""campaign/summary.py: one row per repository, every failure with its reason, nothing missing."""

from __future__ import annotations

from typing import Any

import pytest

from qnn_migrate.bot.campaign.summary import NO_RESULT, SummaryError, failed, merge, render


def campaign(repo: str, state: str, reason: str = "", pr: int | None = None) -> dict[str, Any]:
    return {
        "schema": 1,
        "kind": "campaign",
        "repository": repo,
        "state": state,
        "reason": reason,
        "pr": pr,
        "url": f"https://github.com/{repo}/pull/{pr}" if pr else None,
    }


def proof(repo: str, action: str, reason: str = "") -> dict[str, Any]:
    return {
        "schema": 1,
        "kind": "proof",
        "repository": repo,
        "pr": 3,
        "action": action,
        "reason": reason,
        "results_url": f"https://github.com/{repo}/pull/3#issuecomment-9",
    }


def test_every_state_and_the_proof_are_one_row_each() -> None:
    docs = [
        ("a", campaign("o/a", "opened", "opened a PR", 3)),
        ("a2", proof("o/a", "dispatched")),
        ("b", campaign("o/b", "updated", "main moved", 4)),
        ("c", campaign("o/c", "unchanged", "up to date", 5)),
        ("d", campaign("o/d", "merged", "PR #6 was merged", 6)),
        ("e", campaign("o/e", "nothing to do", "nothing to rewrite")),
        ("f", campaign("o/f", "failed", "GitHub API POST git/trees failed with HTTP 500")),
        ("g", campaign("o/g", "updated", "main moved", 7)),
        ("g2", proof("o/g", "failed", "GitHub refused to start the device workflow")),
    ]
    rows = merge(docs, expected=["o/g", "o/a"])
    assert [r.repository for r in rows] == ["o/g", "o/a", "o/b", "o/c", "o/d", "o/e", "o/f"]
    table = render(rows)
    assert (
        "| `o/a` | [#3](https://github.com/o/a/pull/3) | opened | [dispatched](https://github.com/o/a/pull/3#issuecomment-9) | opened a PR |"
        in table
    )
    assert "| `o/f` | — | ❌ failed | — | GitHub API POST git/trees failed with HTTP 500 |" in table
    assert "❌ [failed](" in table and "proof failed: GitHub refused" in table
    assert failed(rows)
    assert not failed(rows[1:6])  # control: no row there failed


def test_a_repository_without_a_result_is_a_failure_not_a_missing_row() -> None:
    rows = merge([("a", campaign("o/a", "opened", pr=1))], expected=["o/a", "o/z"])
    (z,) = [r for r in rows if r.repository == "o/z"]
    assert (z.state, z.note) == ("failed", NO_RESULT)
    assert failed(rows)


def test_text_from_a_result_is_inert_and_links_stay_on_https() -> None:
    doc = campaign("o/a", "failed", "<img src=x> @org/team [x](javascript:alert(1))")
    doc["url"] = "javascript:alert(1)"
    doc["pr"] = 2
    table = render(merge([("a", doc)]))
    assert (
        "<img" not in table
        and "@\u200dorg" in table
        and "javascript:alert(1))" not in table.split("|")[2]
    )
    assert "| #2 |" in table


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        ({"schema": 2}, "schema 1"),
        ([1, 2], "schema 1"),
        (campaign("not a repo", "opened"), "owner/name"),
        (campaign("o/a", "exploded"), "is not one of"),
        (campaign("o/a", "opened") | {"kind": "other"}, "kind"),
        (campaign("o/a", "opened") | {"pr": "7"}, "PR number"),
        (proof("o/a", "teleported"), "unknown"),
        (campaign("o/a", "opened") | {"reason": 5}, "string"),
    ],
)
def test_a_result_that_is_not_the_campaigns_is_refused_by_name(doc: Any, match: str) -> None:
    with pytest.raises(SummaryError, match=match):
        merge([("results/x/campaign.json", doc)])
