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
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata

from qnn_migrate.bot.github.gateway import (
    FileBlob,
    GatewayError,
    GitHubGateway,
    PullFile,
    ReviewComment,
)
from qnn_migrate.bot.pr.commands import MIGRATE_ROLES, Command
from qnn_migrate.bot.pr.suggestions import Hunk, anchored, apply, diff_ranges, hunks, parses
from qnn_migrate.bot.pr.suggestions import unified as unified_diff
from qnn_migrate.bot.text import escape
from qnn_migrate.codemods.deprecations import default_target
from qnn_migrate.codemods.engine import (
    FileResult,
    RewriteError,
    RuleOptions,
    reexport_scan,
    rewrite_code,
    rule_options,
)

MAX_FILE_BYTES = 512 * 1024
MAX_FILES = 50
MAX_COMMENTS = 60  # line comments in one review; more go to the summary's diff
MAX_BODY_CHARS = 60000  # GitHub caps a review body at 65536
MARKER = "<!-- qnn-migrate-review sha={sha} command={command} -->"
# A path the summary can show and a shell can take without quoting.
PLAIN_PATH_RE = re.compile(r"^[A-Za-z0-9_./+-]+$")
CODE_SPAN_RE = re.compile(r"(`[^`\n]+`)")
# The rewrite of one file's text: ``codemods.engine.rewrite_code``'s shape.
Rewrite = Callable[..., FileResult]

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
LEFT_COMMENT = "⚠️ **qnn-migrate left this site as it is:** {reason}"


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


@dataclass(frozen=True)
class ReviewPlan:
    """The review to post: its body and its line comments."""

    body: str
    comments: tuple[ReviewComment, ...]
    suggested: int
    left: int


def marker(sha: str, command: Command) -> str:
    return MARKER.format(sha=sha, command=command.canonical().replace("-->", ""))


def already_reviewed(bodies: Sequence[str], sha: str, command: Command) -> bool:
    """Whether one of the bot's review bodies carries this SHA's and command's marker."""
    wanted = marker(sha, command)
    return any(wanted in body for body in bodies)


def _decode(data: bytes) -> str:
    """Text of a Python source file (PEP 263 declaration or BOM, else UTF-8)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        raise ValueError(f"cannot be decoded ({error.msg})") from None
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as error:
        raise ValueError(f"is not valid {encoding} (byte {error.start})") from None


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
    name the review could not quote safely (see ``PLAIN_PATH_RE``) is left out."""
    return [
        f
        for f in files
        if f.filename.endswith(".py")
        and f.status != "removed"
        and PLAIN_PATH_RE.match(f.filename)
        and _wanted(f.filename, paths)
    ]


def _rewrite_file(item: FileInput, options: RuleOptions, cap: int, rewrite: Rewrite) -> FileOutcome:
    path, blob = item.path, item.blob
    if blob is None:
        return FileOutcome(path, "not read: not a file at the head commit")
    if blob.data is None or blob.size > cap:
        return FileOutcome(path, f"not read: {blob.size} bytes, over the {cap}-byte cap")
    try:
        old = _decode(blob.data)
    except ValueError as error:
        return FileOutcome(path, f"not read: {error}")
    try:
        result = rewrite(old, options, filename=path)
    except RewriteError as error:
        return FileOutcome(path, f"not rewritten: {error}")
    except Exception as error:  # a bug in the rule must not cost the other files their review
        return FileOutcome(path, f"not rewritten: internal error ({type(error).__name__})")
    outcome = FileOutcome(path, "", old=old, rewritten=result.sites_rewritten)
    ranges = diff_ranges(item.patch)
    for site in result.unfixable:
        in_diff = any(first <= site.line <= last for first, last in ranges)
        outcome.left.append((site.line, site.reason, in_diff))
    if not result.changed:
        outcome.note = "nothing to rewrite" if not outcome.left else ""
        return outcome
    all_hunks = hunks(old, result.code)
    if "\r" in old:  # a suggestion block cannot carry a CR line ending through markdown
        outcome.outside = all_hunks
        return outcome
    for hunk in all_hunks:
        alone = apply(old, [hunk])
        if anchored(hunk, ranges) and parses(alone, path, old):
            outcome.suggestions.append(hunk)
        else:
            outcome.outside.append(hunk)
    if outcome.suggestions and not parses(apply(old, outcome.suggestions), path, old):
        outcome.outside = all_hunks
        outcome.suggestions = []
    return outcome


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
        parts.append(_no_mentions(outcome.note))
    if outcome.suggestions:
        n = len(outcome.suggestions)
        parts.append(f"{n} suggestion{'s' if n != 1 else ''}")
    if outcome.outside:
        n = len(outcome.outside)
        parts.append(f"{n} hunk{'s' if n != 1 else ''} outside the diff (below)")
    if outcome.left:
        lines = ", ".join(str(line) for line, _, _ in outcome.left)
        parts.append(
            f"{len(outcome.left)} site{'s' if len(outcome.left) != 1 else ''} left: line {lines}"
        )
    return f"| {_code(outcome.path)} | {'; '.join(parts)} |"


def build_review(
    items: Sequence[FileInput],
    *,
    sha: str,
    command: Command,
    version: str,
    skipped: Sequence[str] = (),
    cap: int = MAX_FILE_BYTES,
    rewrite: Rewrite = rewrite_code,
) -> ReviewPlan:
    """The review for the files read at ``sha`` (pure)."""
    target = command.target or default_target()
    # A changed file that others in the PR import the old name from keeps it bound.
    readable = {
        item.path: item.blob.data
        for item in items
        if item.blob is not None and item.blob.data is not None and item.blob.size <= cap
    }
    options = rule_options(target, imported_from=reexport_scan(readable))
    outcomes = [_rewrite_file(item, options, cap, rewrite) for item in items]
    _cap_comments(outcomes)
    comments: list[ReviewComment] = []
    for outcome in outcomes:
        for hunk in outcome.suggestions:
            comments.append(
                ReviewComment(
                    outcome.path,
                    SUGGESTION_INTRO + hunk.suggestion(),
                    hunk.end,
                    hunk.start if hunk.start < hunk.end else None,
                )
            )
        for line, reason, commented in outcome.left:
            if commented:
                text = LEFT_COMMENT.format(reason=_no_mentions(reason))
                comments.append(ReviewComment(outcome.path, text, line))
    comments.sort(key=lambda c: (c.path, c.line))
    suggested = sum(len(o.suggestions) for o in outcomes)
    outside = sum(len(o.outside) for o in outcomes)
    left = sum(len(o.left) for o in outcomes)
    body = _summary(outcomes, sha, command, version, skipped, suggested, outside, left)
    return ReviewPlan(body, tuple(comments), suggested, left)


def _summary(
    outcomes: Sequence[FileOutcome],
    sha: str,
    command: Command,
    version: str,
    skipped: Sequence[str],
    suggested: int,
    outside: int,
    left: int,
) -> str:
    target = command.target or default_target()
    out = [
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
    if outcomes or skipped:
        out += ["| file | result |", "|---|---|"]
        out += [_file_row(o) for o in outcomes]
        out += [f"| {_code(path)} | {why} |" for path, why in _split_skipped(skipped)]
        out.append("")
    reasons = [(o.path, line, reason) for o in outcomes for line, reason, _ in o.left]
    if reasons:
        out.append("**Sites left as they are**")
        out += [f"- {_code(f'{p}:{line}')}: {_no_mentions(r)}" for p, line, r in reasons]
        out.append("")
    diffs = [o for o in outcomes if o.outside]
    if diffs:
        names = ", ".join(_code(o.path) for o in diffs)
        out += [
            f"<details><summary>Changes outside this PR's diff ({names})</summary>",
            "",
            "GitHub takes suggestions only on lines of the diff; apply these by hand or run "
            "the command below.",
            "",
        ]
        budget = MAX_BODY_CHARS - sum(len(x) + 1 for x in out) - 2000
        for o in diffs:
            text = unified_diff(o.path, o.old, apply(o.old, o.outside))
            fence = "`" * max(3, max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
            block = f"{fence}diff\n{text}{fence}"
            if len(block) > budget:
                out.append(f"The diff of {_code(o.path)} is too long to show; run it locally.")
                continue
            budget -= len(block)
            out += [block, ""]
        out += ["</details>", ""]
    local = sorted(
        o.path
        for o in outcomes
        if (o.suggestions or o.outside or o.left) and PLAIN_PATH_RE.match(o.path)
    )
    files = " ".join(local) if local else "."
    out += [
        f"**Run it locally** with qnn-migrate {version}, the version this bot runs (the bot "
        "itself runs nothing from this PR):",
        "",
        "```sh",
        f"qnn-migrate rewrite --diff --target {target} {files}",
        f"qnn-migrate rewrite --target {target} {files}",
        "```",
        "",
        "The first command shows the changes; the second makes them.",
    ]
    return "\n".join(out) + "\n"


def _split_skipped(skipped: Sequence[str]) -> list[tuple[str, str]]:
    return [
        (path, f"not read: more than {MAX_FILES} Python files changed; name PATHs")
        for path in skipped
    ]


def bot_version() -> str:
    """The installed qnn-migrate version: the bot and the rewrite it runs are one package."""
    try:
        return metadata.version("qnn-migrate")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def handle_migrate(
    gw: GitHubGateway,
    command: Command,
    *,
    pr: int,
    login: str,
    bot_login: str,
    comment_id: int,
    cap: int = MAX_FILE_BYTES,
) -> MigrateResult:
    """Authorize, read, rewrite in memory and post one review; see the module docstring."""
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
    chosen = select_files(gw.pull_files(pr), command.paths)
    items = [
        FileInput(f.filename, f.patch, gw.file_at(f.filename, sha, cap)) for f in chosen[:MAX_FILES]
    ]
    skipped = [f.filename for f in chosen[MAX_FILES:]]
    plan = build_review(
        items, sha=sha, command=command, version=bot_version(), skipped=skipped, cap=cap
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
