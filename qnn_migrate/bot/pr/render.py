"""Markdown the bot writes: the one results comment and its short replies (pure).

The results comment starts with ``state.MARKER`` and ends with the hidden state line. It
must stay under GitHub's 65,536-character limit, so ``render_report`` tries levels of
detail from "every test of every SoC x matrix" down to "the first N failures, see logs"
and keeps the first that fits. Text that came from a device run (failure messages, log
links) is untrusted: it is escaped, cut short, and links are kept only under the repo's
own URL.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from qnn_migrate.bot import text as text_mod
from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.model import RunsOn, Status, Verdict
from qnn_migrate.bot.pr.commands import Action, Command
from qnn_migrate.bot.pr.plan import repro_argv
from qnn_migrate.bot.pr.state import MARKER, RunState
from qnn_migrate.bot.pr.summary import Failure, Group, Summary

COMMENT_LIMIT = 65536  # GitHub's cap on a comment body
MESSAGE_CHARS = 300
ICON = {
    Status.PASS: "✅ PASS",
    Status.FAIL: "❌ FAIL",
    Status.ERROR: "💥 ERROR",
    Status.INFRA: "🔧 INFRA",
    Status.MISSING: "❓ MISSING",
    Status.SKIP: "⏭️ SKIP",
}
HEAD = {
    "success": "✅",
    "failure": "❌",
    "error": "⚠️",
    "pending": "⏳",
}


def escape(text: str, limit: int = MESSAGE_CHARS) -> str:
    """Untrusted text for one table cell (``bot.text.escape``)."""
    return text_mod.escape(text, limit)


@dataclass(frozen=True)
class Links:
    """Where the report may link: the repository's own web URL, and the run's."""

    repo_url: str  # e.g. https://github.com/pytorch/executorch
    run_url: str | None = None

    def safe(self, url: str | None) -> str | None:
        """Only links into this repository's own pages survive (log URLs come from runners).

        The path is normalised first (``..``, ``.``, ``//``, percent-encoded dots and
        slashes), so ``REPO/../../evil/phish`` cannot pass as a page of this repository.
        """
        if not url or any(ch in url for ch in " \t\n<>()[]`\"'\\"):
            return None
        parts = urlsplit(url)
        base = urlsplit(self.repo_url)
        if (parts.scheme, parts.netloc) != (base.scheme, base.netloc) or parts.query:
            return None
        path = unquote(parts.path)
        if "%" in path:  # encoded twice: nothing GitHub itself links to
            return None
        normal = posixpath.normpath(path)
        if normal != path.rstrip("/") or not normal.startswith(base.path.rstrip("/") + "/"):
            return None
        return url

    def comment(self, pr: int, comment_id: int) -> str:
        return f"{self.repo_url}/pull/{pr}#issuecomment-{comment_id}"

    def commit(self, sha: str) -> str:
        return f"{self.repo_url}/commit/{sha}"


def _place(soc: str, where: RunsOn) -> str:
    """The SoC column: the SoC, and where it ran when the results are not from a phone."""
    return soc if where is RunsOn.PHONE else f"{soc} ({where.label})"


def _modes_line(summary: Summary) -> str:
    """Where the results came from, when not only from phones (kept apart in the tables)."""
    modes = list(dict.fromkeys(g.runs_on for g in summary.groups))
    if modes in ([], [RunsOn.PHONE]):
        return ""
    names = {
        RunsOn.PHONE: "phones",
        RunsOn.SIMULATOR: "the x86 HTP simulator",
        RunsOn.COMPILE_ONLY: "compile only",
    }
    return (
        "Results from "
        + ", ".join(names[m] for m in modes)
        + (
            "; simulator results are compared with the simulator's own nightly history, never "
            "with phones'."
            if RunsOn.SIMULATOR in modes
            else ""
        )
    )


def _where_it_ran(group: Group) -> str:
    """Which phones ran the group, and whether a shard was retried after an INFRA failure."""
    text = ""
    where = group.runs_on
    if where is not RunsOn.PHONE:
        text += f" · on the {where.label}" if where is RunsOn.SIMULATOR else f" · {where.label}"
    if group.devices:
        # Serials come from result files written next to PR code, and markdown is not
        # rendered inside <summary>: keep only the characters a serial or host:port has.
        phones = ", ".join(re.sub(r"[^A-Za-z0-9._:-]", "?", d)[:40] for d in group.devices[:4])
        more = f" +{len(group.devices) - 4}" if len(group.devices) > 4 else ""
        text += f" · on {phones}{more}"
    if group.retried:
        shards = "shard" if group.retried == 1 else "shards"
        text += f" · {group.retried} {shards} retried on another phone after an infra failure"
    return text


def _origin(state: RunState, links: Links) -> str:
    if not state.requested_by:  # no record of the command (e.g. the comment was deleted)
        return "Device run (its /qnn command is not on record)"
    return (
        f"`{_command_text(state.command)}` from @{state.requested_by} "
        f"([comment]({links.comment(state.pr, state.comment_id)}))"
    )


def _command_text(command: Mapping[str, Any]) -> str:
    if isinstance(command, Mapping):
        try:
            return Command(
                action=Action(command["action"]),
                matrices=tuple(command.get("matrices", ())),
                tests=tuple(command.get("tests", ())),
                auto=bool(command.get("auto")),
                socs=tuple(command.get("socs", ())),
                backend=str(command.get("backend", "")),
                seed=int(command.get("seed", 0)),
                failed_only=bool(command.get("failed_only")),
                simulator=bool(command.get("simulator")),
                compare=str(command.get("compare", "")),
            ).canonical()
        except (KeyError, ValueError, TypeError):
            return "/qnn"
    return "/qnn"


def _pin(state: RunState, links: Links) -> str:
    return f"[`{state.sha}`]({links.commit(state.sha)})"


def render_pending(
    state: RunState, links: Links, shards: Sequence[tuple[str, str, int]], catalog: Catalog
) -> str:
    """The results comment right after dispatch: what will run, where, at which commit.

    ``shards`` holds (soc, matrix, number of tests) per shard.
    """
    by_group: dict[tuple[str, str], list[int]] = {}
    for soc, matrix, n in shards:
        by_group.setdefault((soc, matrix), []).append(n)
    rows = "\n".join(
        f"| {soc} | `{matrix}` | {sum(ns)} | {len(ns)} | ⏳ pending |"
        for (soc, matrix), ns in by_group.items()
    )
    run = f" · [workflow run]({state.run_url})" if state.run_url else ""
    total = sum(n for _, _, n in shards)
    return (
        f"{MARKER}\n"
        f"## {HEAD['pending']} QNN device tests: running\n\n"
        f"{_origin(state, links)}{f' ({state.note})' if state.note else ''}\n\n"
        f"Pinned to {_pin(state, links)} · {len(shards)} shard(s), {total} test runs{run}\n\n"
        "| SoC | matrix | tests | shards | status |\n|---|---|---:|---:|---|\n"
        f"{rows}\n\n"
        "Cancel with `/qnn cancel`. This comment is updated when the run reports.\n"
        f"{state.line()}\n"
    )


def render_closed(state: RunState, links: Links, title: str, note: str) -> str:
    """The results comment when a run was cancelled or refused to start."""
    icon = "⚠️"
    return (
        f"{MARKER}\n"
        f"## {icon} QNN device tests: {title}\n\n"
        f"{_origin(state, links)}\n\n"
        f"Pinned to {_pin(state, links)}.\n\n"
        f"{note}\n\n"
        "Start again with `/qnn retry` (or a new `/qnn test ...`).\n"
        f"{state.line()}\n"
    )


def _group_table(group: Group, with_messages: bool) -> str:
    rows = []
    for r in group.results:
        time = f"{r.duration_s:.1f}s" if r.duration_s is not None else ""
        message = escape(r.message) if with_messages and r.status.is_failure else ""
        rows.append(f"| `{r.test_id}` | {ICON[r.status]} | {time} | {message} |")
    return "| test | status | time | detail |\n|---|---|---:|---|\n" + "\n".join(rows)


def _counts_row(group: Group, links: Links, max_logs: int) -> str:
    counts = " | ".join(str(group.count(s)) for s in Status)
    urls = list(dict.fromkeys(u for u in map(links.safe, group.log_urls) if u))
    logs = " ".join(f"[{i}]({url})" for i, url in enumerate(urls[:max_logs], start=1))
    if len(urls) > max_logs:
        logs += f" +{len(urls) - max_logs}"
    mark = "✅" if group.ok else "❌"
    return (
        f"| {mark} {_place(group.soc, group.runs_on)} | `{group.matrix}` | {counts} | "
        f"{group.ran} of {group.expected} | {logs} |"
    )


def _failure_rows(failures: Sequence[Failure], links: Links, with_messages: bool) -> list[str]:
    rows = []
    for f in failures:
        log = links.safe(f.log_url)
        log_cell = f"[log]({log})" if log else ""
        message = escape(f.result.message) if with_messages else ""
        rows.append(
            f"| {_place(f.soc, f.runs_on)} | `{f.result.test_id}` | {ICON[f.result.status]} | "
            f"**{f.verdict.value}** | {log_cell} | {message} |"
        )
    return rows


def _repro(summary: Summary, catalog: Catalog, state: RunState) -> str:
    """A local command per SoC and mode that reruns exactly the failed tests (display only).

    Built from the failing shard (mode, backend, seed, build folder): no adb flags for
    the simulator, which runs on the host."""
    command = state.command
    lines = []
    by_place: dict[tuple[str, RunsOn], tuple[Failure, list[str]]] = {}
    for f in summary.failures:
        entry = by_place.setdefault((f.soc, f.runs_on), (f, []))
        entry[1].append(f.result.test_id)
    for (soc, _), (first, tests) in by_place.items():
        unique = list(dict.fromkeys(tests))
        if first.shard is not None:
            argv = repro_argv(catalog, first.shard, unique)
        else:
            argv = catalog.command_argv(
                unique,
                soc=soc,
                backend=str(command.get("backend", catalog.defaults.backend)),
                seed=int(command.get("seed", catalog.defaults.seed)),
                host="$ADB_HOST",
                device="$SERIAL",
            )
        # Every word is a validated id or catalog value, so quoting is for display only.
        lines.append(
            shlex.join(argv).replace("'$ADB_HOST'", "$ADB_HOST").replace("'$SERIAL'", "$SERIAL")
        )
    return "\n".join(lines)


def _report_body(
    summary: Summary,
    state: RunState,
    links: Links,
    catalog: Catalog,
    *,
    baseline_label: str,
    head_sha: str | None,
    level: int,
    max_failures: int | None,
    programs: str = "",
) -> str:
    out = [
        MARKER,
        f"## {HEAD[summary.state]} QNN device tests: {summary.headline}",
        "",
        _origin(state, links),
        "",
        f"Pinned to {_pin(state, links)} · ran **{summary.ran} of {summary.expected}** expected "
        f"tests on {len({g.soc for g in summary.groups})} SoC(s) · baseline: {baseline_label}"
        + (f" · [workflow run]({links.run_url})" if links.run_url else ""),
    ]
    modes = _modes_line(summary)
    if modes:
        out += ["", modes]
    if head_sha and head_sha != state.sha:
        out += [
            "",
            f"> The PR head has moved to `{head_sha}`; these results are for `{state.sha}`.",
        ]
    header = " | ".join(s.value for s in Status)
    out += [
        "",
        f"| SoC | matrix | {header} | ran | logs |",
        "|---|---|" + "---:|" * len(Status) + "---|---|",
        *(_counts_row(g, links, 8 if level <= 1 else 0) for g in summary.groups),
    ]
    if summary.failures:
        shown = summary.failures if max_failures is None else summary.failures[:max_failures]
        verdicts = ", ".join(
            f"{summary.verdicts(v)} {v.value}" for v in Verdict if summary.verdicts(v)
        )
        out += [
            "",
            f"### Failures ({len(summary.failures)}: {verdicts})",
            "",
            "| SoC | test | status | vs nightly | log | detail |",
            "|---|---|---|---|---|---|",
            *_failure_rows(shown, links, with_messages=level <= 2),
        ]
        hidden = len(summary.failures) - len(shown)
        if hidden:
            out += ["", f"…and {hidden} more failures; see the logs of the workflow run."]
    if level <= 1:
        for g in summary.groups:
            if level == 1 and g.ok:
                continue
            out += [
                "",
                f"<details><summary>{g.soc} · {g.matrix}: {g.count(Status.PASS)} of "
                f"{g.expected} passed{_where_it_ran(g)}</summary>",
                "",
                _group_table(g, with_messages=True),
                "",
                "</details>",
            ]
    if programs:
        out.append(programs)
    out += ["", "**Rerun:** `/qnn retry failed` (failed tests only) · `/qnn retry` (everything)"]
    if summary.failures and level <= 2:
        out += [
            "",
            "<details><summary>Reproduce the failures locally</summary>",
            "",
            "```sh",
            _repro(summary, catalog, state),
            "```",
            "",
            "</details>",
        ]
    out += [state.line(), ""]
    return "\n".join(out)


def render_report(
    summary: Summary,
    state: RunState,
    links: Links,
    catalog: Catalog,
    *,
    baseline_label: str,
    head_sha: str | None = None,
    limit: int = COMMENT_LIMIT,
    programs: str = "",
) -> str:
    """The results comment, folded as much as needed to fit ``limit`` UTF-8 bytes.

    ``programs`` is the Programs section (``pr.programs.render_section``, which fits its
    own budget): it is kept whole and the rest folds into what is left.
    """
    limit -= len(programs.encode("utf-8")) + 1

    def body(level: int, max_failures: int | None = None) -> str:
        return _report_body(
            summary,
            state,
            links,
            catalog,
            baseline_label=baseline_label,
            head_sha=head_sha,
            level=level,
            max_failures=max_failures,
            programs=programs,
        )

    def fits(text: str) -> bool:
        return len(text.encode("utf-8")) <= limit

    # Every level up to 3 lists every failure in a row of at least id + SoC + 30 bytes:
    # skip the levels that cannot fit without rendering them.
    floor = sum(len(f.result.test_id) + len(f.soc) + 30 for f in summary.failures)
    if floor <= limit:
        for level in range(4):
            text = body(level)
            if fits(text):
                return text
    # Keep as many failure rows as fit: measure the rows once instead of re-rendering.
    base = len(body(3, 0).encode("utf-8"))
    rows = _failure_rows(summary.failures, links, with_messages=False)
    keep, used = 0, base
    for row in rows:
        used += len(row.encode("utf-8")) + 1
        if used > limit:
            break
        keep += 1
    text = body(3, keep)
    while keep > 0 and not fits(text):  # the "…and N more" line may differ in length
        keep -= 1
        text = body(3, keep)
    return text


# Short replies to a /qnn comment. Each says what happened and what to do next.

ACCEPTED = (
    "🚀 Running `{command}` at [`{sha}`]({commit_url}) (the PR head when the command was "
    "accepted): {shards} shard(s), {tests} test runs on {socs}.{run} Results will appear in "
    "the [results comment]({results_url}). If the head moves before the run starts, the run "
    "refuses."
)
NOT_ALLOWED = (
    "😕 @{login}, device runs can be started only by collaborators with {roles} permission "
    "on {repo} (yours: `{role}`). Ask a maintainer to comment `{command}`."
)
NEEDS_SHA = (
    "😕 This PR's author (@{author}) cannot start device runs, so the command must name the "
    "commit you reviewed, or a later push could run instead. The head is now `{head}`; if "
    "that is what you reviewed, comment:\n\n```\n{command} --sha {head}\n```"
)
NEEDS_SHA_FORK = (
    "😕 The head branch lives in {repo}, whose owner cannot start device runs, so the command "
    "must name the commit you reviewed, or a later push there could run instead. The head is "
    "now `{head}`; if that is what you reviewed, comment:\n\n```\n{command} --sha {head}\n```"
)
SHA_NOT_FULL = (
    "😕 `--sha {given}` is not a full commit SHA. Name the commit you reviewed by all 40 "
    "hexadecimal digits (a short prefix can be matched by another commit), e.g. "
    "`--sha {head}` if that is it."
)
SHA_MISMATCH = (
    "😕 The command names commit `{given}`, but the PR head is `{head}`. Review the new "
    "commits, then comment again with `--sha {head}`."
)
NOT_OPEN = "😕 PR #{pr} is {state}; device runs are started only on open PRs."
COMMAND_ERROR = "😕 {error}\n\nSee `/qnn help` for the commands, or try one offline with `qnn-migrate bot parse`."
NOTHING_TO_RETRY = (
    "😕 There is no earlier device run on this PR to retry. Start one with `/qnn test`."
)
NOTHING_FAILED = "😕 Nothing failed in the last run (at `{sha}`); nothing to retry."
NOT_REPORTED = (
    "😕 The last run (at `{sha}`) has not reported yet; `/qnn retry failed` needs its results."
)
NOTHING_TO_CANCEL = "😕 No device run is in progress on this PR."
CANCELLED = "🛑 Cancelled the device run at `{sha}`{run}, as @{login} asked."
DISPATCH_FAILED = (
    "😕 GitHub refused to start the device workflow `{workflow}`: {error}. Nothing was run; "
    "try again later or ask a maintainer to check the workflow."
)
NOT_CANCELLED = (
    " The previous run{run} could not be cancelled ({error}): it runs on, and its results "
    "will not replace this run's in the results comment."
)
STATUS_REFUSED = "GitHub refused the commit status for this run ({error}), so it was not started."
INTERRUPTED = (
    "⚠️ GitHub's API failed while I handled this command: {error}. Nothing was started. {then}"
)
INTERRUPTED_RELEASED = (
    "I took my 👀 back, so re-running the failed job of this workflow run handles the "
    "command again; or post it again."
)
INTERRUPTED_KEPT = (
    "My 👀 could not be taken back, so a re-run would skip this comment: post the command "
    "again in a new comment."
)
