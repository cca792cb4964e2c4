"""Shard results -> the one PR results comment and a commit status (pure over a gateway).

Called by the device workflow's final job (``qnn-migrate bot report``, which only reads
its options and files and injects the gateway) and by the runner side's end-to-end test.
``RunShards`` splits the dispatched list into the PR's shards and the merge base's
(``--compare base``: programs to compare with, nothing else), ``gather`` reads the
Programs section's inputs, and ``report_run`` (or ``render_run_offline``) writes it all. The planned shards are the source of truth for what was
expected: a result file cannot shrink its own shard (results for ids nobody asked for
are dropped, unreported ones are MISSING), and a shard with no result file at all
counts as INFRA for every test it held. Result files are artifacts of jobs that ran PR
code, so they are untrusted: ``render`` escapes their text and keeps only links into
this repository.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.github.gateway import GitHubGateway
from qnn_migrate.bot.model import At, Baseline, Shard, ShardResult, reconcile
from qnn_migrate.bot.pr import programs, render, staleness
from qnn_migrate.bot.pr.state import Phase, RunState, find_results_comment
from qnn_migrate.bot.pr.summary import Summary, summarize
from qnn_migrate.bot.pr.verbs import VERBS


class ReportInputError(ValueError):
    """A shard list that is not one run's; the text says what to pass instead."""


@dataclass(frozen=True)
class RunShards:
    """One device run's dispatched shards: the PR's, and the merge base's."""

    planned: tuple[Shard, ...]  # at the PR's head: what the report judges
    at_base: tuple[Shard, ...] = ()  # `--compare base`: programs to compare with, no more

    @classmethod
    def of(cls, shards: Sequence[Shard], where: str) -> RunShards:
        """Split ``shards`` (read from ``where``); they must share one sha and one PR (and the
        merge base's, one sha of their own)."""
        planned = tuple(s for s in shards if s.at is At.HEAD)
        at_base = tuple(s for s in shards if s.at is At.MERGE_BASE)
        shas, prs = {s.sha for s in planned}, {s.pr for s in shards}
        if len(shas) != 1 or len(prs) != 1 or len({s.sha for s in at_base}) > 1:
            raise ReportInputError(
                f"{where}: the shards are at {len(shas)} commit(s) of {len(prs)} PR(s); one "
                "run's shards share one sha and pr (and the merge base's, one sha of their "
                "own): pass the list the run was dispatched with"
            )
        return cls(planned, at_base)

    @property
    def every(self) -> tuple[Shard, ...]:
        return self.planned + self.at_base


@dataclass(frozen=True)
class Gathered:
    """What the run's artifacts say: the PR's results and the Programs section's groups."""

    results: tuple[ShardResult, ...]
    groups: tuple[programs.ProgramGroup, ...]
    warnings: tuple[str, ...]


def gather(
    run: RunShards,
    collected: Sequence[ShardResult],
    results_dir: Path,
    baseline_dir: Path | None,
) -> Gathered:
    """``collected`` (one result per shard of ``run.every``) split into the PR's results and
    the merge base's, and each test's programs against its baseline or the merge base."""
    base_ids = {s.id for s in run.at_base}
    groups, warnings = programs.gather(
        run.planned,
        results_dir,
        baseline_dir,
        base=run.at_base,
        base_results=[r for r in collected if r.shard.id in base_ids],
    )
    results = tuple(r for r in collected if r.shard.id not in base_ids)
    return Gathered(results, tuple(groups), tuple(warnings))


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
        summary,
        state,
        links,
        catalog,
        baseline_label=label,
        head_sha=head,
        programs=programs,
        command_text=VERBS.describe(state.command),
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
        summary,
        state,
        render.Links(repo_url),
        catalog,
        baseline_label=label,
        programs=programs,
        command_text=VERBS.describe(state.command),
    )
    return summary, body


def report_run(
    gw: GitHubGateway,
    run: RunShards,
    gathered: Gathered,
    *,
    baseline: Baseline,
    catalog: Catalog,
    bot_login: str,
    links: render.Links,
    comment_id: int | None = None,
) -> ReportOutcome:
    """The report job's whole write: the stale notes (GitHub says what changed between each
    baseline and the merge base), the Programs section, then ``report``."""
    first = run.planned[0]
    groups = staleness.annotate(gw, gathered.groups, first.pr, first.sha)
    return report(
        gw,
        planned=run.planned,
        results=gathered.results,
        baseline=baseline,
        catalog=catalog,
        bot_login=bot_login,
        links=links,
        comment_id=comment_id,
        programs=programs.render_section(groups),
    )


def render_run_offline(
    run: RunShards, gathered: Gathered, baseline: Baseline, catalog: Catalog, repo_url: str
) -> tuple[Summary, str]:
    """``render_offline`` for the run: GitHub is not asked, so no stale note."""
    return render_offline(
        run.planned,
        gathered.results,
        baseline,
        catalog,
        repo_url,
        programs=programs.render_section(gathered.groups),
    )
