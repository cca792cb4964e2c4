"""pr/render.py: golden markdown, escaping of untrusted text, and the size limit."""

from __future__ import annotations

import pytest
from qnn_migrate_tests.bot.pr.support import LINKS, reported_state
from qnn_migrate_tests.bot.support import RUN, SHA, baseline_for, check_golden, results_for
from qnn_migrate_tests.bot.support import planned_shards as _shards

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.model import Baseline, ShardResult, Status, TestResult
from qnn_migrate.bot.pr.plan import PlanRequest, Selection, plan
from qnn_migrate.bot.pr.render import COMMENT_LIMIT, escape, render_pending, render_report
from qnn_migrate.bot.pr.state import MARKER, STATE_RE, Phase
from qnn_migrate.bot.pr.summary import summarize
from qnn_migrate.bot.pr.verbs import VERBS


def test_report_golden(catalog: Catalog) -> None:
    shards = _shards(catalog)
    summary = summarize(results_for(shards), baseline_for(shards, catalog))
    body = render_report(
        summary,
        reported_state(catalog).with_phase(Phase.REPORTED),
        LINKS,
        catalog,
        baseline_label="nightly at `babe11111111`",
        head_sha="d" * 40,
        command_text=VERBS.describe(reported_state(catalog).command),
    )
    check_golden("report.md", body)
    assert body.startswith(MARKER)
    assert "ran **30 of 32** expected" in body
    assert "&lt;b&gt;@\u200dhere&lt;/b&gt;" in body and "@here" not in body


def test_pending_golden(catalog: Catalog) -> None:
    shards = _shards(catalog)
    state = reported_state(catalog).with_phase(Phase.PENDING)
    rows = [(s.soc, s.matrix, len(s.tests)) for s in shards]
    body = render_pending(state, LINKS, rows, command_text=VERBS.describe(state.command))
    check_golden("pending.md", body)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a|b", "a\\|b"),
        ("line1\nline2\r\n", "line1 line2"),
        ("[x](javascript:alert(1))", "\\[x\\](javascript:alert(1))"),
        (
            "@org/team #12 `code` <img src=x>",
            "@\u200dorg/team #\u200d12 &#96;code&#96; &lt;img src=x&gt;",
        ),
        # GitHub decodes &#64; back to @ before it looks for mentions: an entity is no escape.
        ("cc @maintainers, see o/r#3", "cc @\u200dmaintainers, see o/r#\u200d3"),
        (
            "see https://evil.example and WWW.evil.example or mailto:x@y.z",
            "see https\u200d://evil.example and WWW\u200d.evil.example or mailto\u200d:x@\u200dy.z",
        ),
        ("x" * 400, "x" * 299 + "…"),
        # GitHub links GH-<n> (any case) to issue n; a joiner after GH breaks it.
        ("fixed in GH-12 and gh-3 (not GH-x)", "fixed in GH\u200d-12 and gh\u200d-3 (not GH-x)"),
    ],
)
def test_escape(text: str, expected: str) -> None:
    assert escape(text) == expected


def test_log_links_only_into_the_repository() -> None:
    assert LINKS.safe(RUN + "/job/1") == RUN + "/job/1"
    assert LINKS.safe("https://evil.example/x") is None
    assert LINKS.safe("https://github.com/qnn-lab/executorch.evil/x") is None
    assert LINKS.safe(RUN + "/job/1)[x](https://evil") is None
    # The path is normalised before the same-repository check.
    repo = "https://github.com/qnn-lab/executorch"
    assert LINKS.safe(repo + "/../../evil/phish") is None
    assert LINKS.safe(repo + "/actions/../../../evil/phish") is None
    assert LINKS.safe(repo + "/%2e%2e/%2e%2e/evil/phish") is None
    assert LINKS.safe(repo + "/./actions") is None
    assert LINKS.safe(repo + "//evil") is None
    assert LINKS.safe("http://github.com/qnn-lab/executorch/x") is None
    assert LINKS.safe(repo + "/actions/runs/1?x=../") is None
    assert LINKS.safe(repo + "/actions/runs/1") == repo + "/actions/runs/1"


def test_full_suite_on_twenty_socs_folds_under_the_limit(catalog: Catalog) -> None:
    ids = sorted(catalog.test_ids)
    socs = list(catalog.socs)[:20]
    the_plan = plan(
        PlanRequest({s: [Selection("all", tuple(ids))] for s in socs}, "htp", 1126, SHA, 7),
        catalog=catalog,
    )
    results = [
        ShardResult.complete(
            p.shard,
            [
                TestResult(t, Status.FAIL, 3.0, "AssertionError: " + "mismatch " * 60)
                for t in p.shard.tests
            ],
            log_url=RUN + "/job/9",
        )
        for p in the_plan.shards
    ]
    summary = summarize(results, Baseline())
    assert len(summary.failures) == len(ids) * 20
    state = reported_state(catalog)
    failed = tuple((f.soc, f.matrix, f.result.test_id) for f in summary.failures)
    from dataclasses import replace

    body = render_report(
        summary,
        replace(state, failed=failed, failed_total=len(failed)),
        LINKS,
        catalog,
        baseline_label="no nightly baseline",
        command_text=VERBS.describe(reported_state(catalog).command),
    )
    assert len(body.encode("utf-8")) <= COMMENT_LIMIT
    assert body.startswith(MARKER) and STATE_RE.search(body)
    assert f"ran **{len(ids) * 20} of {len(ids) * 20}** expected" in body
    assert "more failures; see the logs" in body
