"""What a run prints: text for people, JSON for programs, workflow commands for GitHub.

Pure: a :class:`RunReport` in, text out. The format chosen never changes what is written to
the files, only what is printed. Every diagnostic reads ``path:line:col: message`` (1-based
line and column, as editors and CI logs link them).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Literal, NamedTuple

# "suppressed": a finding a noqa comment on its line names (a call it names with QM001 is
# not rewritten); shown with -v and in JSON, never as an annotation, never in the exit code.
Kind = Literal["rewritten", "unfixable", "error", "info", "suppressed"]
Mode = Literal["write", "diff", "check"]
FORMATS = ("text", "json", "github")


class Site(NamedTuple):
    """One place the run has something to say about: 1-based line and column."""

    path: str
    line: int
    column: int
    kind: Kind
    reason: str
    code: str = ""  # the reason's stable code (QM101); sites are counted per code when folded
    cell: int = 0  # in a notebook: the code cell (from 1) that line and column are in

    def render(self) -> str:
        """``path:line:col: [error: |info: ]CODE message``, as ruff prints its diagnostics
        (``path:cell N:line:col: ...`` in a notebook, as ruff's)."""
        prefix = {"error": "error: ", "info": "info: ", "suppressed": "suppressed: "}.get(
            self.kind, ""
        )
        code = f"{self.code} " if self.code else ""
        return f"{self.where()}:{self.line}:{self.column}: {prefix}{code}{self.reason}"

    def where(self) -> str:
        """The path, and the cell in a notebook."""
        return f"{self.path}:cell {self.cell}" if self.cell else self.path


class RunReport:
    """Everything a run found, in the order the files were given."""

    def __init__(
        self, mode: Mode, target: str, scanned: int = 0, changed: list[str] | None = None
    ) -> None:
        self.mode = mode
        self.target = target
        self.scanned = scanned
        self.changed: list[str] = changed or []
        self.sites: list[Site] = []
        self.links: list[str] = []  # symbolic links not followed

    def of_kind(self, kind: Kind) -> list[Site]:
        return [s for s in self.sites if s.kind == kind]


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def summary(report: RunReport) -> str:
    """The one-line summary."""
    verb = {"write": "rewritten", "diff": "would change", "check": "would change"}[report.mode]
    rewritten = len(report.of_kind("rewritten"))
    parts = [
        f"{_plural(report.scanned, 'file')} scanned",
        f"{len(report.changed)} {verb} ({_plural(rewritten, 'call site')})",
        f"{_plural(len(report.of_kind('unfixable')), 'site')} left for you",
        _plural(len(report.of_kind("error")), "error"),
    ]
    suppressed = len(report.of_kind("suppressed"))
    if suppressed:
        parts.append(f"{suppressed} suppressed by # noqa")
    return "qnn-migrate rewrite: " + ", ".join(parts)


def text(report: RunReport, verbosity: int) -> list[str]:
    """The lines for standard error. ``verbosity``: -2 nothing, -1 the summary only, 0 the
    files, the errors and the sites left for you counted per reason, 1 every site."""
    if verbosity <= -2:
        return []
    if verbosity == -1:
        return [summary(report)]
    verb = "rewrote" if report.mode == "write" else "would rewrite"
    lines = [f"{verb}: {path}" for path in report.changed]
    lines += [s.render() for s in report.of_kind("error")]
    kinds: tuple[Kind, ...] = ("unfixable", "info")
    for kind in kinds:
        sites = report.of_kind(kind)
        if verbosity >= 1:
            lines += [s.render() for s in sites]
        elif sites:
            lines += _folded(sites, kind)
    if verbosity >= 1:
        lines += [s.render() for s in report.of_kind("suppressed")]
    if verbosity >= 1:
        lines += [f"{link}: symbolic link, not followed" for link in report.links]
    lines.append(summary(report))
    return lines


def _folded(sites: list[Site], kind: str) -> list[str]:
    counts = Counter(s.code or s.reason for s in sites)
    first: dict[str, str] = {}
    for s in sites:
        key = s.code or s.reason
        if key not in first:
            first[key] = s.reason
        elif s.reason != first[key] and not first[key].startswith("e.g. "):
            first[key] = "e.g. " + first[key]  # the group's sites differ in their details
    what = "left for you" if kind == "unfixable" else "noted"
    lines = [f"{_plural(len(sites), 'site')} {what}, by reason (-v lists each, as path:line:col):"]
    width = len(str(max(counts.values())))
    lines += [
        f"  {n:>{width}} x {key + ' ' if key != first[key] else ''}{first[key]}"
        for key, n in counts.most_common()
    ]
    return lines


def as_json(report: RunReport) -> str:
    """One record per site (path, line, column, kind, code, reason, target), and the totals."""
    return json.dumps(
        {
            "files_scanned": report.scanned,
            "files_changed": report.changed,
            "target": report.target,
            "sites": [
                {
                    "path": s.path,
                    **({"cell": s.cell} if s.cell else {}),  # a notebook's code cell, from 1
                    "line": s.line,
                    "column": s.column,
                    "kind": s.kind,
                    "code": s.code,
                    "reason": s.reason,
                    "target": report.target,
                }
                for s in report.sites
            ],
        },
        indent=2,
    )


def escape_data(value: str) -> str:
    """A workflow command's message, escaped as GitHub's runner unescapes it."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """A workflow command's property value: the message's escapes, and ``:`` and ``,``."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def github(report: RunReport, base: str | None = None) -> list[str]:
    """``::error``/``::warning``/``::notice`` workflow commands, one per site, so GitHub
    shows them as annotations on the pull request. ``base``: the directory (the workspace)
    that ``file=`` is made relative to, as GitHub matches it against the repository's paths
    (``./src/a.py`` or an absolute path would match nothing)."""
    level = {
        "rewritten": "error" if report.mode != "write" else "notice",
        "unfixable": "warning",
        "error": "error",
        "info": "notice",
    }
    title = {
        "rewritten": "qnn-migrate: would rewrite" if report.mode != "write" else "qnn-migrate",
        "unfixable": "qnn-migrate: left for you",
        "error": "qnn-migrate: error",
        "info": "qnn-migrate",
    }
    lines = []
    for s in report.sites:
        if s.kind == "suppressed":
            continue  # the author said so, on that line
        properties = ",".join(
            f"{key}={escape_property(value)}"
            for key, value in (
                ("file", _relative(s.path, base)),
                ("line", str(s.line)),
                ("col", str(s.column)),
                ("title", f"{title[s.kind]} ({s.code})" if s.code else title[s.kind]),
            )
        )
        message = f"{s.code} {s.reason}" if s.code else s.reason
        if s.cell:
            message = f"cell {s.cell}: {message}"
        lines.append(f"::{level[s.kind]} {properties}::{escape_data(message)}")
    return lines


def _relative(path: str, base: str | None) -> str:
    if base is None or path == "-":
        return path
    relative = os.path.relpath(path, base) if os.path.isabs(path) else os.path.normpath(path)
    return path if relative.startswith("..") else relative.replace(os.sep, "/")
