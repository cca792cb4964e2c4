"""The campaign PR's title, body and commit message (pure: a rewrite and facts in, text out).

The body says what the rewrite did (counts per file), lists the sites left for a person as
a task list linking to each line at the campaign's commit, says how the rewrite is being
checked (the proof section, filled in by ``proof``) and what a CHANGED program means for a
migration, and gives the command that reproduces the rewrite locally. Text that comes from
the repository (paths, the reasons quoting its code) is made inert; the body stays under
``MAX_BODY_CHARS`` whatever the rewrite found, counting what it leaves out.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from importlib import metadata
from urllib.parse import quote

from qnn_migrate.bot.campaign.marker import (
    PROOF_END,
    PROOF_START,
    REBASE_TAG,
    STOPPED,
    Marker,
    read_marker,
)
from qnn_migrate.bot.campaign.tree import FileRewrite, SiteLeft, TreeRewrite
from qnn_migrate.bot.text import escape
from qnn_migrate.codemods.deprecations import lower_to_qnn

TITLE = "Migrate off `{old}` (qnn-migrate campaign)"
# GitHub refuses a body over 65,536 characters; the notices added later need some room.
MAX_BODY_CHARS = 60000
MAX_REASON_CHARS = 300
PLAIN_PATH_RE = re.compile(r"^[A-Za-z0-9_./+-]+$")
CODE_SPAN_RE = re.compile(r"(`[^`\n]+`)")
CHANGED_MEANS = (
    "**What a CHANGED program means here.** The results comment compares each test's lowered "
    "programs (delegates and their payloads, signatures, constant inputs, operators left "
    "outside, outputs) at this PR's commit with {against}. A rewrite that keeps the code's "
    "meaning lowers the same programs, so every test reads IDENTICAL. A 🔶 CHANGED program is "
    "one the rewritten code lowers differently: for a migration that is a change of meaning "
    "until someone shows otherwise. Look at what changed (the comment lists it per test) "
    "before merging."
)
AGAINST = {
    "simulator": "the same tests at its merge base (the default branch it was built on), on "
    "the x86 simulator",
    "phones": "main's nightly on the same phones (a nightly older than the merge base may "
    "differ for reasons of its own: the comment notes when)",
}


@dataclass(frozen=True)
class Facts:
    """What the body says besides the rewrite: where, which commits, which command proves it."""

    repo_url: str  # https://github.com/owner/name
    default_branch: str
    branch: str
    base: str
    head: str  # the campaign's commit ("" before it is made: no line links)
    proof_command: str  # "/qnn test auto --sim --compare base --sha <head>"
    tier: str = "simulator"  # or "phones"
    version: str = ""
    prev: str = ""  # the branch's tip ``head`` replaces ("" : none, or it is ``head``)


def bot_version() -> str:
    """The installed qnn-migrate: the rewrite the campaign runs is this version's."""
    try:
        return metadata.version("qnn-migrate")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def title() -> str:
    return TITLE.format(old=lower_to_qnn().name)


def _code(text: str) -> str:
    """``text`` as an inline code span no backtick in it can close."""
    run = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (run + 1)
    return f"{fence} {text} {fence}" if run else f"`{text}`"


def _path(path: str) -> str:
    return _code(path) if PLAIN_PATH_RE.match(path) else escape(path, 200)


def _inert(text: str) -> str:
    """A reason from the rewrite: its code spans kept, the rest made inert (it can quote the
    repository's names: no mentions, no links, no markup)."""
    cut = text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"
    out = []
    for i, part in enumerate(CODE_SPAN_RE.split(cut)):
        if i % 2 or not part.strip():
            out.append(part)
            continue
        lead = " " if part[0].isspace() else ""
        trail = " " if part[-1].isspace() else ""
        out.append(lead + escape(part, len(part) + 1) + trail)
    return "".join(out)


def _blob(facts: Facts, path: str, line: int | None = None) -> str:
    anchor = f"#L{line}" if line else ""
    return f"{facts.repo_url}/blob/{facts.head}/{quote(path)}{anchor}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def proof_pending(facts: Facts) -> str:
    """The proof section of a body before ``prove`` has dispatched the run."""
    tier = "the x86 simulator" if facts.tier == "simulator" else "the lab's phones"
    return "\n".join(
        [
            PROOF_START,
            f"Right after this commit the campaign asks for {_code(facts.proof_command)}: the "
            f"matrices the rewritten files select run on {tier}"
            + (" at this commit and at its merge base" if facts.tier == "simulator" else "")
            + ", and the results comment compares each test's lowered programs. Its link "
            "appears here once the run is dispatched.",
            PROOF_END,
        ]
    )


def proof_done(command: str, results_url: str | None, run_url: str | None) -> str:
    """The proof section once the run is dispatched."""
    where = f"the [results comment]({results_url})" if results_url else "the results comment"
    run = f" ([workflow run]({run_url}))" if run_url else ""
    return "\n".join(
        [
            PROOF_START,
            f"{_code(command)} is running{run}: {where} shows, per test, the programs that "
            "are identical to the merge base and those that changed.",
            PROOF_END,
        ]
    )


def proof_not_run(command: str, why: str) -> str:
    """The proof section when the run could not be dispatched, and how to ask for it."""
    return "\n".join(
        [
            PROOF_START,
            f"⚠️ Not run: {_inert(why)}. A maintainer can run it by commenting {_code(command)}.",
            PROOF_END,
        ]
    )


def commit_message(rewrite: TreeRewrite, base: str, version: str) -> str:
    changed = rewrite.changed
    return (
        f"Migrate off {lower_to_qnn().name} (qnn-migrate campaign)\n\n"
        f"qnn-migrate {version} rewrote {_plural(rewrite.rewritten, 'call')} in "
        f"{_plural(len(changed), 'file')} of {base[:12]} (--target {rewrite.target} "
        f"--flow {rewrite.flow}); {_plural(rewrite.left, 'site')} left for a person.\n"
    )


def local_command(rewrite: TreeRewrite) -> str:
    paths = " ".join(shlex.quote(p) for p in rewrite.paths) or "."
    return f"qnn-migrate rewrite --diff --target {rewrite.target} --flow {rewrite.flow} -- {paths}"


class _Lines:
    """Lines within a budget of characters; what does not fit is counted in a note."""

    def __init__(self, room: int) -> None:
        self.lines: list[str] = []
        self.room = room

    def add(self, text: str) -> bool:
        if len(text) + 1 > self.room:
            return False
        self.lines.append(text)
        self.room -= len(text) + 1
        return True


def _row(facts: Facts, f: FileRewrite) -> str:
    name = f"[{_path(f.path)}]({_blob(facts, f.path)})" if f.new is not None else _path(f.path)
    if f.error:
        return f"| {name} | not rewritten: {_inert(f.error)} | {len(f.left) or '—'} |"
    return f"| {name} | {f.rewritten} | {len(f.left) or '—'} |"


def _site(facts: Facts, f: FileRewrite, site: SiteLeft) -> str:
    where = _code(f"{f.path}:{site.line}") if PLAIN_PATH_RE.match(f.path) else _path(f.path)
    commit = facts.head if f.new is not None else facts.base
    link = f"{facts.repo_url}/blob/{commit}/{quote(f.path)}#L{site.line}"
    code = f"{site.code} " if site.code else ""
    return f"- [ ] [{where}]({link}): {code}{_inert(site.reason)}"


def render(rewrite: TreeRewrite, facts: Facts, *, proof: str | None = None) -> str:
    """The PR's body for the campaign's commit ``facts.head``; ``proof``: the proof section
    to keep (a later run's, when the code did not change), else the pending one."""
    changes = rewrite.changes() or "0" * 16
    marker = Marker(facts.base, facts.head, changes, prev=facts.prev)
    changed = rewrite.changed
    old = lower_to_qnn().name
    settings = f"`--target {rewrite.target} --flow {rewrite.flow}`"
    if rewrite.config:
        settings += f", with `[tool.qnn-migrate]` of {_path(rewrite.config)}"
    head = [
        marker.line(),
        f"## Migrate off `{old}`",
        "",
        f"qnn-migrate {facts.version or bot_version()} rewrote `{facts.default_branch}` at "
        f"[`{facts.base[:12]}`]({facts.repo_url}/commit/{facts.base}) ({settings}; paths "
        f"{', '.join(_path(p) for p in rewrite.paths)}). This PR is the migration "
        "campaign's: it keeps it current, and never overwrites a commit it did not make.",
        "",
        f"**{_plural(rewrite.rewritten, 'call')} rewritten in {_plural(len(changed), 'file')}; "
        f"{_plural(rewrite.left, 'site')} left for a person** (below).",
        "",
    ]
    against = AGAINST.get(facts.tier, AGAINST["simulator"])
    tail = [
        "### Does the rewrite keep what the code lowers?",
        "",
        proof or proof_pending(facts),
        "",
        CHANGED_MEANS.format(against=against),
        "",
        "### Reproduce it locally",
        "",
        "```sh",
        f"git checkout {facts.base}",
        local_command(rewrite),
        "```",
        "",
        f"With qnn-migrate {facts.version or bot_version()} (the version this campaign runs), "
        "in a checkout of the repository: the `[tool.qnn-migrate]` settings apply as they did "
        "here; drop `--diff` to make the changes.",
        "",
        "### How the campaign keeps this PR",
        "",
        "- Each run rewrites the default branch again. When it has moved, this branch is "
        "recreated on it (one commit on top); when nothing is left to rewrite, the PR is closed "
        "with a note and the branch deleted.",
        "- If anyone else pushes to this branch, the campaign stops updating the PR and says so "
        "here: their commits are never overwritten.",
        f"- [ ] {REBASE_TAG} Tick this box to have the next run recreate the branch from the "
        "default branch anyway (that drops commits others pushed to it).",
        "",
    ]
    notes_room = 600
    room = MAX_BODY_CHARS - sum(len(x) + 1 for x in head + tail) - notes_room
    body = _Lines(room)
    rows = [f for f in rewrite.files if f.new is not None or f.error]
    if rows:
        body.add("| file | calls rewritten | sites left |\n|---|---:|---:|")
        for index, f in enumerate(rows):
            if not body.add(_row(facts, f)):
                body.lines.append(
                    f"| … | {len(rows) - index} more files not shown (the body's size limit): "
                    "the command below lists them | |"
                )
                break
        body.lines.append("")
    sites = [(f, s) for f in rewrite.files for s in f.left]
    if sites:
        body.lines += ["### Sites left for a person", ""]
        for index, (f, s) in enumerate(sites):
            if not body.add(_site(facts, f, s)):
                body.lines.append(
                    f"- … {len(sites) - index} more sites not listed (the body's size limit): "
                    "the command below with `--check -v` lists them all"
                )
                break
        body.lines.append("")
    return "\n".join([*head, *body.lines, *tail])


def with_stop_notice(body: str, *, branch: str, tip: str | None, marker: Marker | None) -> str:
    """``body`` with the notice that the campaign stopped, after its heading (once)."""
    if STOPPED in body:
        return body
    what = (
        f"its tip is `{(tip or 'gone')[:12]}`, not the campaign's last commit `{marker.head[:12]}`"
        if marker is not None
        else "and the campaign's marker is gone from this description"
    )
    notice = (
        f"{STOPPED}\n> ⚠️ **The campaign stopped updating this PR**: someone pushed to "
        f"`{branch}` ({what}). Those commits are kept: the campaign will not move the branch "
        "again. Tick the box at the end to have the next run recreate the branch from the "
        "default branch (that drops the pushed commits), or close the PR.\n"
    )
    lines = body.split("\n")
    at = next((i + 1 for i, line in enumerate(lines) if line.startswith("## ")), 0)
    return "\n".join([*lines[:at], "", notice, *lines[at:]])


def closed_body(body: str, *, default_branch: str, base: str, version: str) -> str:
    """The body of a PR the campaign closes because nothing is left to rewrite."""
    marker = read_marker(body)
    note = (
        f"> ✅ **Closed by the campaign: nothing is left to rewrite** on `{default_branch}` at "
        f"`{base[:12]}` (qnn-migrate {version}): the calls this PR rewrote are gone or were "
        "rewritten there. Its branch was deleted; a new PR opens if the old calls come back.\n"
    )
    if marker is not None:
        closed = Marker(marker.base, marker.head, marker.changes, closed=True)
        body = body.replace(marker.line(), closed.line(), 1)
        first, _, rest = body.partition("\n")
        return f"{first}\n{note}\n{rest}"
    return f"{note}\n{body}"
