"""Shard results -> the one PR results comment and a commit status (pure over a gateway).

Called by the device workflow's final job (``qnn-migrate bot report``) and by the
runner side's end-to-end test. The planned shards are the source of truth for what was
expected: a result file cannot shrink its own shard (results for ids nobody asked for
are dropped, unreported ones are MISSING), and a shard with no result file at all
counts as INFRA for every test it held. Result files are artifacts of jobs that ran PR
code, so they are untrusted: ``render`` escapes their text and keeps only links into
this repository.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.github.gateway import GitHubGateway
from qnn_migrate.bot.model import Baseline, Shard, ShardResult, reconcile
from qnn_migrate.bot.pr import render
from qnn_migrate.bot.pr.state import Phase, RunState, find_results_comment
from qnn_migrate.bot.pr.summary import Summary, summarize


@dataclass(frozen=True)
class ReportOutcome:
    """What the report step did."""

    summary: Summary
    body: str
    comment_id: int | None  # the results comment written (None: left alone)
    created: bool
    edited: bool
    superseded: bool  # a newer command owns the results comment (and, at this SHA, the status)


def report(
    gw: GitHubGateway,
    *,
    planned: Sequence[Shard],
    results: Sequence[ShardResult],
    baseline: Baseline,
    catalog: Catalog,
    bot_login: str,
    links: render.Links,
    comment_id: int | None = None,
    baseline_label: str | None = None,
    programs: str = "",
) -> ReportOutcome:
    """Write the results of one device run to its PR comment and its commit status.

    ``planned`` is the dispatched shard list (all shards share one ``sha`` and ``pr``);
    ``results`` are ``ShardResult``s read from the shards' result files (any order, any
    subset); ``comment_id`` is the /qnn comment that started the run (the dispatch
    input), used to avoid overwriting the comment of a newer command.
    """
    if not planned:
        raise ValueError("report needs the planned shards")
    shas = {s.sha for s in planned}
    prs = {s.pr for s in planned}
    if len(shas) != 1 or len(prs) != 1:
        raise ValueError("planned shards disagree on sha or pr")
    sha, pr = shas.pop(), prs.pop()
    summary = summarize(reconcile(planned, results), baseline)
    label = baseline_label or (
        f"nightly at `{baseline.sha[:12]}`" if baseline.sha else "no nightly baseline"
    )
    failed = tuple((f.soc, f.matrix, f.result.test_id) for f in summary.failures)

    found = find_results_comment(gw.comments(pr), bot_login) if pr is not None else None
    prior = found[1] if found else None
    superseded = (
        prior is not None
        and comment_id is not None
        and (prior.comment_id != comment_id or prior.sha != sha)
    )
    if prior is not None and not superseded:
        state = RunState(
            phase=Phase.REPORTED,
            pr=prior.pr,
            sha=sha,
            command=prior.command,
            requested_by=prior.requested_by,
            comment_id=prior.comment_id,
            run_id=prior.run_id,
            run_url=prior.run_url or links.run_url,
            expected=summary.expected,
            failed=failed,
            failed_total=len(failed),
            note=prior.note,
        )
    else:
        state = RunState(
            phase=Phase.REPORTED,
            pr=pr or 0,
            sha=sha,
            command={},
            requested_by="",
            comment_id=comment_id or 0,
            run_url=links.run_url,
            expected=summary.expected,
            failed=failed,
            failed_total=len(failed),
        )
    head = None
    if pr is not None:
        pull = gw.pull(pr)
        head = pull.head_sha if pull else None
    body = render.render_report(
        summary, state, links, catalog, baseline_label=label, head_sha=head, programs=programs
    )
    written: int | None = None
    created = edited = False
    if pr is not None and not superseded:
        if found is None:
            written, created = gw.create_comment(pr, body).id, True
        else:
            written = found[0].id
            if found[0].body != body:
                gw.edit_comment(written, body)
                edited = True
    # A newer command at this SHA owns its status as it owns the comment (which shows it
    # running): this run's result there would contradict the comment, so it is not set.
    if not (superseded and prior is not None and prior.sha == sha):
        gw.set_status(
            sha, summary.state, catalog.policy.status_context, summary.description, links.run_url
        )
    return ReportOutcome(summary, body, written, created, edited, superseded)


def render_offline(
    planned: Sequence[Shard],
    results: Sequence[ShardResult],
    baseline: Baseline,
    catalog: Catalog,
    repo_url: str,
    programs: str = "",
) -> tuple[Summary, str]:
    """The comment a first report of this run would write, with no GitHub at all."""
    if not planned:
        raise ValueError("report needs the planned shards")
    summary = summarize(reconcile(planned, results), baseline)
    first = planned[0]
    failed = tuple((f.soc, f.matrix, f.result.test_id) for f in summary.failures)
    state = RunState(
        phase=Phase.REPORTED,
        pr=first.pr or 0,
        sha=first.sha,
        command={},
        requested_by="",
        comment_id=0,
        expected=summary.expected,
        failed=failed,
        failed_total=len(failed),
    )
    label = f"nightly at `{baseline.sha[:12]}`" if baseline.sha else "no nightly baseline"
    body = render.render_report(
        summary, state, render.Links(repo_url), catalog, baseline_label=label, programs=programs
    )
    return summary, body
