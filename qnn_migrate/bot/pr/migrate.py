"""``/qnn migrate``: the rewrite of a PR's changed files, posted as one review of suggestions.

Pure over a gateway. The order is the safety argument:

1. **Who.** The PR's author, or a commenter with write permission or more (the REST
   permission API, never ``author_association``): the command only proposes text.
2. **What is read.** The PR's changed ``.py`` files (``PATH`` arguments narrow them), each
   at the pinned head SHA through the contents API, at most ``MAX_FILE_BYTES`` each and
   ``MAX_FILES`` in all. Nothing is checked out and nothing from the PR runs: the rewrite
   (``codemods.engine.rewrite_code``, from the bot's own installed version) only parses text.
3. **Once per SHA.** The review body carries a hidden marker with the SHA and the command;
   if the bot already left that review, nothing is posted again.
4. **What is posted.** One review (event ``COMMENT``): a ``suggestion`` per changed hunk whose
   lines all lie in one hunk of the PR's diff, a comment on each site the rewrite left (with
   its reason) when that line is in the diff, and a summary: counts, per-file results,
   reasons, the hunks outside the diff as a collapsed unified diff, and the local command.
   Each suggestion is applied to the file and parsed again before it is posted (alone, and
   all of a file's together); one that does not parse goes to the summary's diff instead.
5. **Bounded.** The PR's author controls the files, so every step is bounded: the diff
   (``codemods.line_diff``), the re-export scan, at most ``MAX_COMMENTS`` parse checks in
   all, a time budget (``TIME_BUDGET_SECONDS``, checked between files: past it the files
   left are listed as not rewritten), and a review GitHub accepts (a body of at most
   ``MAX_BODY_CHARS``, comments of at most ``MAX_COMMENT_CHARS``): what does not fit is
   counted and the summary says so and gives the command that shows all of it.
"""

from __future__ import annotations

import codecs
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Protocol, TypeVar

from qnn_migrate.bot.github.gateway import (
    FileBlob,
    GatewayError,
    GitHubGateway,
    PullFile,
    ReviewComment,
)
from qnn_migrate.bot.pr.suggestions import DiffLines, Hunk, apply, diff_ranges, hunks, parses
from qnn_migrate.bot.pr.suggestions import unified as unified_diff
from qnn_migrate.bot.text import escape
from qnn_migrate.codemods.decoding import SourceDecodeError, decode_source
from qnn_migrate.codemods.deprecations import default_target
from qnn_migrate.codemods.engine import (
    FileResult,
    RewriteError,
    RuleOptions,
    reexport_scan,
    rewrite_code,
    rule_options,
)

# Who may ask for `/qnn migrate` besides the PR's author: it only proposes text.
MIGRATE_ROLES = ("admin", "maintain", "write")
MAX_FILE_BYTES = 512 * 1024
MAX_FILES = 50
MAX_COMMENTS = 60  # line comments in one review; more go to the summary's diff
# GitHub answers 422 to a review whose body, or one of whose comments, is over 65,536
# characters (1,500 sites left or 1,200 files listed were enough); these leave room.
MAX_BODY_CHARS = 60000
MAX_COMMENT_CHARS = 20000  # a longer suggestion goes to the summary's diff
MAX_REASON_CHARS = 500  # a reason or a note quotes the PR's code: cut to this
MAX_LINES_LISTED = 20  # line numbers of sites left, per file row
# Reading and rewriting stop at the first file past this many seconds (the command's job
# has 10 minutes, its set-up included); the files left are listed as not rewritten.
TIME_BUDGET_SECONDS = 300.0
MAX_LOCAL_PATHS_CHARS = 2000  # longer, the local command names `.` instead of each file
MARKER = "<!-- qnn-migrate-review sha={sha} command={command} -->"
# A path the summary can show and a shell can take without quoting.
PLAIN_PATH_RE = re.compile(r"^[A-Za-z0-9_./+-]+$")
CODE_SPAN_RE = re.compile(r"(`[^`\n]+`)")
# The rewrite of one file's text: ``codemods.engine.rewrite_code``'s shape.
Rewrite = Callable[..., FileResult]
Clock = Callable[[], float]  # seconds, monotonic
T = TypeVar("T")

NOT_ALLOWED = (
    "😕 @{login}, `/qnn migrate` may be asked for by the PR's author (@{author}) or by "
    "collaborators with {roles} permission on {repo}; your role is `{role}`. Ask the author or "
    "a maintainer to comment `/qnn migrate`, or run `qnn-migrate rewrite` locally."
)
NOT_OPEN = "😕 PR #{pr} is {state}; `/qnn migrate` reviews open pull requests only."
HEAD_MOVED = (
    "😕 The PR's head moved from {old} to {new} while `/qnn migrate` read its files, so the "
    "suggestions could land on the wrong lines; nothing was posted. Comment `/qnn migrate` again."
)
REVIEW_FAILED = (
    "😕 GitHub refused the `/qnn migrate` review at {sha}: {error}. Nothing was posted; "
    "comment `/qnn migrate` again, or run `qnn-migrate rewrite --diff` locally."
)
SUGGESTION_INTRO = "**qnn-migrate** suggests this rewrite (commit it with one click):\n\n"
ODD_NAME = (
    "not read: its name has characters other than `A-Z a-z 0-9 _ . / + -`, which this "
    "review cannot quote safely; the command below covers it"
)
FOREIGN_ENCODING = (
    "{n} hunk(s) with non-ASCII text in the diff below, not suggested: the file is {encoding} "
    "and GitHub commits a suggestion as UTF-8; apply them by hand or run the command below"
)
LEFT_COMMENT = "⚠️ **qnn-migrate left this site as it is:** {reason}"
LATE = (
    "not {verb}: the time budget of `/qnn migrate` ran out first; run the command below "
    "(or `/qnn migrate PATH` for fewer files)"
)
TABLE_CUT = (
    "| … | {n} more rows not shown: the review would be over GitHub's size limit; the "
    "command below covers every file |"
)
SITES_CUT = (
    "- … {n} more sites left, not listed: the review would be over GitHub's size limit; "
    "the command below with `--check -v` lists them all"
)
DIFFS_CUT = (
    "The diffs of {n} more files are not shown: the review would be over GitHub's size "
    "limit; run the command below."
)


class Ask(Protocol):
    """What the review needs of the command that asked for it (``verbs.migrate``'s)."""

    @property
    def target(self) -> str: ...

    @property
    def paths(self) -> tuple[str, ...]: ...

    def canonical(self) -> str: ...


@dataclass(frozen=True)
class MigrateResult:
    """What ``/qnn migrate`` did; ``action`` is stable for tests and logs."""

    action: str  # refused | duplicate | failed | reviewed
    reason: str
    sha: str | None = None


@dataclass(frozen=True)
class FileInput:
    """One changed file as read from the PR: its patch and its bytes at the head SHA."""

    path: str
    patch: str | None
    blob: FileBlob | None


@dataclass
class FileOutcome:
    """What the review says about one file."""

    path: str
    note: str
    suggestions: list[Hunk] = field(default_factory=list)
    outside: list[Hunk] = field(default_factory=list)
    left: list[tuple[int, str, bool]] = field(default_factory=list)  # line, reason, commented
    old: str = ""
    rewritten: int = 0
    late: bool = False  # not rewritten: the time budget ran out first
    tried: int = 0  # hunks parsed as lone suggestions (each parse reads the whole file)
    odd: bool = False  # not read: a name the review cannot quote as code or a shell word


@dataclass(frozen=True)
class ReviewPlan:
    """The review to post: its body and its line comments."""

    body: str
    comments: tuple[ReviewComment, ...]
    suggested: int
    left: int


def marker(sha: str, command: Ask) -> str:
    return MARKER.format(sha=sha, command=command.canonical().replace("-->", ""))


def already_reviewed(bodies: Sequence[str], sha: str, command: Ask) -> bool:
    """Whether one of the bot's review bodies carries this SHA's and command's marker."""
    wanted = marker(sha, command)
    return any(wanted in body for body in bodies)


def _code(text: str) -> str:
    """``text`` as an inline code span that no backtick in it can close."""
    shown = text.replace("\n", "\\n").replace("\r", "\\r")
    run = max((len(m) for m in re.findall(r"`+", shown)), default=0)
    fence = "`" * (run + 1)
    return f"{fence} {shown} {fence}" if run else f"`{shown}`"


def _no_mentions(text: str) -> str:
    """Markdown for a reason or a note: its code spans kept, the rest made inert by the
    bot's one escaper (reasons can quote names from the PR's code; no mentions, no links)."""
    out: list[str] = []
    for i, part in enumerate(CODE_SPAN_RE.split(text)):
        if i % 2 or not part.strip():
            out.append(part)
            continue
        lead = " " if part[0].isspace() else ""
        trail = " " if part[-1].isspace() else ""
        out.append(lead + escape(part, len(part) + 1) + trail)
    return "".join(out)


def _wanted(path: str, paths: Sequence[str]) -> bool:
    return not paths or any(path == p or path.startswith(p + "/") for p in paths)


def select_files(files: Sequence[PullFile], paths: Sequence[str]) -> list[PullFile]:
    """The PR's changed ``.py`` files still present at the head, narrowed to ``paths``; a
    name the review could not quote safely (see ``PLAIN_PATH_RE``) is left out (and listed
    by ``odd_names``)."""
    return [f for f in _changed_py(files, paths) if PLAIN_PATH_RE.match(f.filename)]


def odd_names(files: Sequence[PullFile], paths: Sequence[str]) -> list[str]:
    """The changed ``.py`` files ``select_files`` leaves out for their names: the review
    lists them (made inert) and its local command then covers the whole checkout."""
    return [f.filename for f in _changed_py(files, paths) if not PLAIN_PATH_RE.match(f.filename)]


def _changed_py(files: Sequence[PullFile], paths: Sequence[str]) -> list[PullFile]:
    return [
        f
        for f in files
        if f.filename.endswith(".py") and f.status != "removed" and _wanted(f.filename, paths)
    ]


def _rewrite_file(
    item: FileInput, options: RuleOptions, cap: int, rewrite: Rewrite, room: int
) -> FileOutcome:
    """The review's part for one file; at most ``room`` hunks are tried as suggestions (each
    try parses the file: the rest go to the summary's diff untried, whether the tries made
    suggestions or not, so a file of hunks that do not parse alone costs ``room`` parses)."""
    path, blob = item.path, item.blob
    if blob is None:
        return FileOutcome(path, "not read: not a file at the head commit")
    if blob.data is None or blob.size > cap:
        return FileOutcome(path, f"not read: {blob.size} bytes, over the {cap}-byte cap")
    try:
        old, encoding = decode_source(blob.data)
    except SourceDecodeError as error:
        return FileOutcome(path, f"skipped: {error}")
    try:
        result = rewrite(old, options, filename=path)
    except RewriteError as error:
        return FileOutcome(path, f"not rewritten: {error}")
    except Exception as error:  # a bug in the rule must not cost the other files their review
        return FileOutcome(path, f"not rewritten: internal error ({type(error).__name__})")
    outcome = FileOutcome(path, "", old=old, rewritten=result.sites_rewritten)
    ranges = DiffLines(diff_ranges(item.patch))
    for site in result.unfixable:
        outcome.left.append((site.line, site.reason, ranges.holds(site.line, site.line)))
    if not result.changed:
        outcome.note = "nothing to rewrite" if not outcome.left else ""
        return outcome
    all_hunks = hunks(old, result.code)
    if "\r" in old:  # a suggestion block cannot carry a CR line ending through markdown
        outcome.outside = all_hunks
        return outcome
    # GitHub commits a suggestion's text as UTF-8: in a file of another encoding only a hunk
    # that is ASCII on both sides (the same bytes in that encoding) can be one.
    foreign = codecs.lookup(encoding).name not in ("utf-8", "utf-8-sig")
    kept_back = 0
    for hunk in all_hunks:
        if foreign and not all(line.isascii() for line in (*hunk.old, *hunk.new)):
            kept_back += 1
            outcome.outside.append(hunk)
            continue
        if (
            outcome.tried < room
            and ranges.anchors(hunk)
            and len(_suggestion_body(hunk)) <= MAX_COMMENT_CHARS
        ):
            outcome.tried += 1
            if parses(apply(old, [hunk]), path, old):
                outcome.suggestions.append(hunk)
                continue
        outcome.outside.append(hunk)
    if outcome.suggestions and not parses(apply(old, outcome.suggestions), path, old):
        outcome.outside = all_hunks
        outcome.suggestions = []
    if kept_back:
        outcome.note = FOREIGN_ENCODING.format(n=kept_back, encoding=encoding)
    return outcome


def _suggestion_body(hunk: Hunk) -> str:
    return SUGGESTION_INTRO + hunk.suggestion()


def _cut(text: str, limit: int = MAX_REASON_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cap_comments(outcomes: list[FileOutcome]) -> None:
    budget = MAX_COMMENTS
    for outcome in outcomes:
        keep = outcome.suggestions[: max(budget, 0)]
        budget -= len(keep)
        moved = outcome.suggestions[len(keep) :]
        if moved:
            outcome.outside = sorted([*outcome.outside, *moved], key=lambda h: h.start)
            outcome.suggestions = keep
        for i, (line, reason, commented) in enumerate(outcome.left):
            if commented:
                if budget <= 0:
                    outcome.left[i] = (line, reason, False)
                budget -= 1


def _file_row(outcome: FileOutcome) -> str:
    parts: list[str] = []
    if outcome.note:
        parts.append(_no_mentions(_cut(outcome.note)))
    if outcome.suggestions:
        n = len(outcome.suggestions)
        parts.append(f"{n} suggestion{'s' if n != 1 else ''}")
    if outcome.outside:
        n = len(outcome.outside)
        parts.append(f"{n} hunk{'s' if n != 1 else ''} outside the diff (below)")
    if outcome.left:
        shown = [str(line) for line, _, _ in outcome.left[:MAX_LINES_LISTED]]
        more = len(outcome.left) - len(shown)
        lines = ", ".join(shown) + (f" and {more} more" if more else "")
        parts.append(
            f"{len(outcome.left)} site{'s' if len(outcome.left) != 1 else ''} left: line {lines}"
        )
    return f"| {_path_cell(outcome.path)} | {'; '.join(parts)} |"


def _path_cell(path: str) -> str:
    """A path for the table: as code when plain, else made inert by the bot's escaper (a
    code span would let ``|`` end the cell)."""
    return _code(path) if PLAIN_PATH_RE.match(path) else escape(path, 200)


def build_review(
    items: Sequence[FileInput],
    *,
    sha: str,
    command: Ask,
    version: str,
    skipped: Sequence[str] = (),
    late: Sequence[str] = (),
    odd: Sequence[str] = (),
    cap: int = MAX_FILE_BYTES,
    rewrite: Rewrite = rewrite_code,
    deadline: float | None = None,
    clock: Clock = time.monotonic,
) -> ReviewPlan:
    """The review for the files read at ``sha`` (pure but for ``clock``).

    ``skipped``: files past ``MAX_FILES``; ``late``: files not read because the time budget
    ran out; ``odd``: files not read for their names (``odd_names``). Past ``deadline`` (a
    ``clock()`` reading) the files left are not rewritten.
    """
    target = command.target or default_target()
    # A changed file that others in the PR import the old name from keeps it bound.
    readable = {
        item.path: item.blob.data
        for item in items
        if item.blob is not None and item.blob.data is not None and item.blob.size <= cap
    }
    options = rule_options(target, imported_from=reexport_scan(readable))
    outcomes: list[FileOutcome] = []
    room = MAX_COMMENTS
    for item in items:
        if deadline is not None and clock() >= deadline:
            outcomes.append(FileOutcome(item.path, LATE.format(verb="rewritten"), late=True))
            continue
        outcome = _rewrite_file(item, options, cap, rewrite, room)
        room -= outcome.tried + sum(1 for _, _, commented in outcome.left if commented)
        room = max(room, 0)
        outcomes.append(outcome)
    outcomes += [FileOutcome(path, LATE.format(verb="read"), late=True) for path in late]
    outcomes += [FileOutcome(path, ODD_NAME, odd=True) for path in odd]
    _cap_comments(outcomes)
    comments: list[ReviewComment] = []
    for outcome in outcomes:
        for hunk in outcome.suggestions:
            comments.append(
                ReviewComment(
                    outcome.path,
                    _suggestion_body(hunk),
                    hunk.end,
                    hunk.start if hunk.start < hunk.end else None,
                )
            )
        for line, reason, commented in outcome.left:
            if commented:
                text = LEFT_COMMENT.format(reason=_no_mentions(_cut(reason)))
                comments.append(ReviewComment(outcome.path, text, line))
    comments.sort(key=lambda c: (c.path, c.line))
    suggested = sum(len(o.suggestions) for o in outcomes)
    outside = sum(len(o.outside) for o in outcomes)
    left = sum(len(o.left) for o in outcomes)
    body = _summary(outcomes, sha, command, version, skipped, suggested, outside, left)
    return ReviewPlan(body, tuple(comments), suggested, left)


class _Body:
    """The review body's lines within ``room`` characters. Notes (the few fixed lines that say
    what was left out, blank lines and closing tags) are always added: the caller sets
    ``NOTES_ROOM`` aside for them."""

    NOTES_ROOM = 1500  # at most five notes of at most 250 characters

    def __init__(self, room: int) -> None:
        self.lines: list[str] = []
        self.room = room

    def add(self, text: str) -> bool:
        if len(text) + 1 > self.room:
            return False
        self.note(text)
        return True

    def note(self, text: str) -> None:
        self.lines.append(text)
        self.room -= len(text) + 1

    def section(
        self, header: Sequence[str], items: Sequence[T], show: Callable[[T], str], note: str
    ) -> None:
        """``header`` and ``show(item)`` for the items that fit, in order; then ``note``
        (``{n}``: how many did not). Items past the first that does not fit are not shown."""
        if not self.add("\n".join(header)):
            self.note(note.format(n=len(items)))
            return
        for index, item in enumerate(items):
            if not self.add(show(item)):
                self.note(note.format(n=len(items) - index))
                return


def _size(lines: Sequence[str]) -> int:
    return sum(len(line) + 1 for line in lines)


def _summary(
    outcomes: Sequence[FileOutcome],
    sha: str,
    command: Ask,
    version: str,
    skipped: Sequence[str],
    suggested: int,
    outside: int,
    left: int,
) -> str:
    """The review body: at most ``MAX_BODY_CHARS``; what does not fit is counted in a note."""
    target = command.target or default_target()
    head = [
        marker(sha, command),
        f"### qnn-migrate at {sha[:12]} (`--target {target}`)",
        "",
        f"**{suggested} rewrite{'s' if suggested != 1 else ''} suggested**"
        + (f", {outside} more outside this PR's diff" if outside else "")
        + f"; **{left} site{'s' if left != 1 else ''} left** with reasons. "
        + (
            "Commit the suggestions from the *Files changed* tab (*Add suggestion to batch* "
            "commits several at once)."
            if suggested
            else "Nothing to commit from this review."
        ),
        "",
    ]
    late = sum(1 for o in outcomes if o.late)
    if late:
        head += [
            f"⏱️ **Stopped at the time budget** ({TIME_BUDGET_SECONDS:.0f} s): {late} "
            f"file{'s' if late != 1 else ''} not rewritten (in the table); the command at "
            "the end rewrites them locally.",
            "",
        ]
    local = sorted(
        o.path
        for o in outcomes
        if (o.suggestions or o.outside or o.left or o.late) and PLAIN_PATH_RE.match(o.path)
    )
    files = " ".join(local) if local else "."
    if len(files) > MAX_LOCAL_PATHS_CHARS or any(o.odd for o in outcomes):
        files = "."  # the whole checkout: the files are too many, or not all nameable, here
    tail = [
        f"**Run it locally** with qnn-migrate {version}, the version this bot runs (the bot "
        "itself runs nothing from this PR):",
        "",
        "```sh",
        f"qnn-migrate rewrite --diff --target {target} -- {files}",
        f"qnn-migrate rewrite --target {target} -- {files}",
        "```",
        "",
        "The first command shows the changes; the second makes them.",
    ]
    body = _Body(MAX_BODY_CHARS - _size(head) - _size(tail) - _Body.NOTES_ROOM)
    if outcomes or skipped:
        rows: list[FileOutcome | str] = [*outcomes, *skipped]
        body.section(["| file | result |", "|---|---|"], rows, _row, TABLE_CUT)
        body.note("")
    reasons = [(o.path, line, reason) for o in outcomes for line, reason, _ in o.left]
    if reasons:
        body.section(["**Sites left as they are**"], reasons, _reason_item, SITES_CUT)
        body.note("")
    diffs = [o for o in outcomes if o.outside]
    names = ", ".join(_code(o.path) for o in diffs)
    if len(names) > 1000:
        names = f"{len(diffs)} files"
    details = [
        f"<details><summary>Changes outside this PR's diff ({names})</summary>",
        "",
        "GitHub takes suggestions only on lines of the diff; apply these by hand or run the "
        "command below.",
        "",
    ]
    if diffs and not body.add("\n".join(details)):
        body.note(DIFFS_CUT.format(n=len(diffs)) + "\n")
    elif diffs:
        for index, o in enumerate(diffs):
            text = unified_diff(o.path, o.old, apply(o.old, o.outside))
            fence = "`" * max(3, max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
            if body.add(f"{fence}diff\n{text}{fence}\n"):
                continue
            if not body.add(f"The diff of {_code(o.path)} is too long to show; run it locally."):
                body.note(DIFFS_CUT.format(n=len(diffs) - index))
                break
        body.note("</details>\n")
    return "\n".join([*head, *body.lines, *tail]) + "\n"


def _row(item: FileOutcome | str) -> str:
    """A file's table row; a bare path is a file past ``MAX_FILES``."""
    if isinstance(item, FileOutcome):
        return _file_row(item)
    return f"| {_code(item)} | not read: more than {MAX_FILES} Python files changed; name PATHs |"


def _reason_item(site: tuple[str, int, str]) -> str:
    path, line, reason = site
    return f"- {_code(f'{path}:{line}')}: {_no_mentions(_cut(reason))}"


def bot_version() -> str:
    """The installed qnn-migrate version: the bot and the rewrite it runs are one package."""
    try:
        return metadata.version("qnn-migrate")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def handle_migrate(
    gw: GitHubGateway,
    command: Ask,
    *,
    pr: int,
    login: str,
    bot_login: str,
    comment_id: int,
    cap: int = MAX_FILE_BYTES,
    time_budget: float = TIME_BUDGET_SECONDS,
    clock: Clock = time.monotonic,
    rewrite: Rewrite = rewrite_code,
) -> MigrateResult:
    """Authorize, read, rewrite in memory and post one review; see the module docstring."""
    deadline = clock() + time_budget
    pull = gw.pull(pr)
    if pull is None or pull.state != "open":
        state = "not a pull request" if pull is None else pull.state
        return _refuse(gw, pr, comment_id, NOT_OPEN.format(pr=pr, state=state))
    if login != pull.author:
        role = gw.role(login)
        if role not in MIGRATE_ROLES:
            text = NOT_ALLOWED.format(
                login=login,
                author=pull.author,
                roles=", ".join(MIGRATE_ROLES),
                repo=gw.repo,
                role=role,
            )
            return _refuse(gw, pr, comment_id, text)
    sha = pull.head_sha
    mine = [r.body for r in gw.reviews(pr) if r.author == bot_login]
    if already_reviewed(mine, sha, command):
        return MigrateResult("duplicate", f"already reviewed {sha} for {command.canonical()}", sha)
    changed = gw.pull_files(pr)
    chosen = select_files(changed, command.paths)
    items: list[FileInput] = []
    late: list[str] = []
    for f in chosen[:MAX_FILES]:
        if clock() >= deadline:
            late.append(f.filename)
        else:
            items.append(FileInput(f.filename, f.patch, gw.file_at(f.filename, sha, cap)))
    skipped = [f.filename for f in chosen[MAX_FILES:]]
    plan = build_review(
        items,
        sha=sha,
        command=command,
        version=bot_version(),
        skipped=skipped,
        late=late,
        odd=odd_names(changed, command.paths),
        cap=cap,
        rewrite=rewrite,
        deadline=deadline,
        clock=clock,
    )
    now = gw.pull(pr)
    if now is None or now.head_sha != sha:
        new = now.head_sha if now is not None else "(gone)"
        return _refuse(gw, pr, comment_id, HEAD_MOVED.format(old=sha, new=new))
    try:
        gw.create_review(pr, sha, plan.body, list(plan.comments))
    except GatewayError as error:
        text = REVIEW_FAILED.format(sha=sha, error=str(error)[:300])
        return MigrateResult("failed", _refuse(gw, pr, comment_id, text).reason, sha)
    gw.add_reaction(comment_id, "rocket")
    return MigrateResult(
        "reviewed",
        f"{plan.suggested} suggestion(s), {plan.left} site(s) left at {sha}",
        sha,
    )


def _refuse(gw: GitHubGateway, pr: int, comment_id: int, text: str) -> MigrateResult:
    gw.add_reaction(comment_id, "confused")
    gw.create_comment(pr, text)
    return MigrateResult("refused", text.splitlines()[0])
