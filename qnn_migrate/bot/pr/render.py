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
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from qnn_migrate.bot import text as text_mod
from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.model import RunsOn, Status, Verdict
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


def _origin(state: RunState, links: Links, command_text: str) -> str:
    if not state.requested_by:  # no record of the command (e.g. the comment was deleted)
        return "Device run (its /qnn command is not on record)"
    return (
        f"`{command_text}` from @{state.requested_by} "
        f"([comment]({links.comment(state.pr, state.comment_id)}))"
    )


def _pin(state: RunState, links: Links) -> str:
    return f"[`{state.sha}`]({links.commit(state.sha)})"


def render_pending(
    state: RunState, links: Links, shards: Sequence[tuple[str, str, int]], *, command_text: str
) -> str:
    """The results comment right after dispatch: what will run, where, at which commit.

    ``shards`` holds (soc, matrix, number of tests) per shard; ``command_text`` is the
    stored command as it reads (``VerbTable.describe``), in this and every renderer below.
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
        f"{_origin(state, links, command_text)}{f' ({state.note})' if state.note else ''}\n\n"
        f"Pinned to {_pin(state, links)} · {len(shards)} shard(s), {total} test runs{run}\n\n"
        "| SoC | matrix | tests | shards | status |\n|---|---|---:|---:|---|\n"
        f"{rows}\n\n"
        "Cancel with `/qnn cancel`. This comment is updated when the run reports.\n"
        f"{state.line()}\n"
    )


def render_closed(
    state: RunState, links: Links, title: str, note: str, *, command_text: str
) -> str:
    """The results comment when a run was cancelled or refused to start."""
    icon = "⚠️"
    return (
        f"{MARKER}\n"
        f"## {icon} QNN device tests: {title}\n\n"
        f"{_origin(state, links, command_text)}\n\n"
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
    command_text: str,
) -> str:
    out = [
        MARKER,
        f"## {HEAD[summary.state]} QNN device tests: {summary.headline}",
        "",
        _origin(state, links, command_text),
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
    command_text: str,
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
            command_text=command_text,
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
