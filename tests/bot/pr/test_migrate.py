"""``/qnn migrate`` through the real PyGithub gateway to the GitHub stand-in over HTTP.

The stand-in serves the PR's files with their patches, file contents at a commit, and
pull-request reviews; it refuses a review comment whose lines are not in one hunk of the
PR's diff, as GitHub does, and every request is checked against GitHub's REST description.
"""

from __future__ import annotations

import difflib
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from qnn_migrate_tests.bot.support import check_golden
from qnn_migrate_tests.github_standin.fixtures import BOT_LOGIN, REPO
from qnn_migrate_tests.github_standin.payloads import comment_event
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot.github.client import PyGithubGateway
from qnn_migrate.bot.github.gateway import FileBlob
from qnn_migrate.bot.pr.context import BotContext, Outcome
from qnn_migrate.bot.pr.dispatch import handle_comment_event
from qnn_migrate.bot.pr.migrate import (
    MAX_BODY_CHARS,
    MAX_COMMENT_CHARS,
    MAX_COMMENTS,
    MAX_FILE_BYTES,
    MAX_FILES,
    TIME_BUDGET_SECONDS,
    FileInput,
    ReviewPlan,
    bot_version,
    build_review,
    handle_migrate,
)
from qnn_migrate.bot.pr.suggestions import apply, apply_suggestion, hunks, split_lines
from qnn_migrate.bot.pr.verbs.migrate import MigrateCommand
from qnn_migrate.cli import main
from qnn_migrate.codemods.engine import FileResult, RuleOptions, rewrite_code, rule_options
from qnn_migrate.codemods.findings import Unfixable

HEAD = "c" * 40
EXPORT = "examples/qualcomm/export_model.py"
WRAPPER = "examples/qualcomm/wrapper.py"
UTILS = "examples/qualcomm/utils.py"

EXPORT_BASE = """\
import torch
from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn


def helper():
    return 1
"""
EXPORT_HEAD = (
    EXPORT_BASE
    + """

def lower(model, example_inputs, compiler_specs):
    edge_program = to_edge_transform_and_lower_to_qnn(model, example_inputs, compiler_specs)
    return edge_program.to_executorch()
"""
)
WRAPPER_HEAD = """\
from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn


def lower_with_options(model, inputs, specs, options):
    return to_edge_transform_and_lower_to_qnn(model, inputs, specs, **options)
"""
UTILS_HEAD = '''\
def describe(model):
    """Name a model for the logs."""
    return type(model).__name__
'''
SUGGESTION_RE = re.compile(r"(`{3,})suggestion\n(.*?)\1", re.S)


def patch(base: str, head: str) -> str:
    """The patch GitHub lists for a file: unified hunks without the file header."""
    lines = difflib.unified_diff(split_lines(base), split_lines(head), n=3)
    return "".join(list(lines)[2:])


def seed(gh: GitHubStandIn, number: int, files: dict[str, tuple[str, str]]) -> None:
    """A PR whose files go from base to head text; head text is served at HEAD."""
    pull = gh.add_pull(number, author="author", head_sha=HEAD, files=list(files))
    for path, (base, head) in files.items():
        pull.patches[path] = patch(base, head)
        gh.add_file(HEAD, path, head.encode("utf-8"))


@pytest.fixture
def gh(github_standin: GitHubStandIn) -> GitHubStandIn:
    github_standin.add_user("maint", role="write", repo=REPO)
    github_standin.add_user("reader", role="read", repo=REPO)
    github_standin.add_user("author", role="read", repo=REPO)
    seed(
        github_standin,
        8,
        {
            EXPORT: (EXPORT_BASE, EXPORT_HEAD),
            WRAPPER: ("", WRAPPER_HEAD),
            UTILS: ("", UTILS_HEAD),
        },
    )
    return github_standin


def send(
    gh: GitHubStandIn, gw: PyGithubGateway, ctx: BotContext, body: str, login: str, number: int = 8
) -> tuple[Outcome, int]:
    comment = gh.add_comment(number, login, body)
    event = comment_event(repo=REPO, number=number, body=body, login=login, comment_id=comment.id)
    return handle_comment_event(event, gw, ctx), comment.id


def suggestions(review: dict[str, object]) -> list[tuple[str, int, int, list[str]]]:
    """(path, first line, last line, replacement lines) of each suggestion in a review."""
    out = []
    for c in review["comments"]:  # type: ignore[attr-defined]
        match = SUGGESTION_RE.search(c["body"])
        if match:
            text = match.group(2)
            lines = text[:-1].split("\n") if text != "" else []
            out.append((c["path"], c.get("start_line") or c["line"], c["line"], lines))
    return out


def test_one_review_with_the_rewrite_as_suggestions(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    outcome, cid = send(gh, gateway, ctx, "/qnn migrate", login="maint")
    assert outcome.action == "reviewed" and outcome.sha == HEAD
    (review,) = gh.reviews(8)
    assert review["user"] == BOT_LOGIN and review["commit_id"] == HEAD
    assert review["state"] == "COMMENTED"
    assert gh.reactions(cid) == {"eyes": [BOT_LOGIN], "rocket": [BOT_LOGIN]}
    # Contents were read at the pinned head, never at a branch name.
    reads = gh.requests_to("GET", r"/contents/")
    assert {r.query["ref"][0] for r in reads} == {HEAD} and len(reads) == 3

    # Hunk for hunk: the posted suggestions are the codemod's hunks that lie in the diff,
    # on the lines GitHub will replace; the rest are in the summary's diff.
    expected_code = rewrite_code(EXPORT_HEAD, filename=EXPORT).code
    expected = hunks(EXPORT_HEAD, expected_code)
    posted = suggestions(review)
    assert [p[0] for p in posted] == [EXPORT]
    in_diff = [h for h in expected if h.start >= 5]
    outside = [h for h in expected if h.start < 5]
    assert in_diff and outside  # control: the import hunk lies above the PR's diff
    assert [(s, e, lines) for _, s, e, lines in posted] == [
        (h.start, h.end, list(h.lines)) for h in in_diff
    ]
    text = EXPORT_HEAD
    for _, start, end, lines in sorted(posted, key=lambda p: p[1], reverse=True):
        text = apply_suggestion(text, start, end, lines)
    assert apply(text, outside) == expected_code
    assert "from qnn_passes import (" in review["body"] and "<details>" in review["body"]

    # The **kwargs call is left, with its reason, on its line.
    left = [c for c in review["comments"] if c["path"] == WRAPPER]
    assert [c["line"] for c in left] == [5] and "\\*\\*kwargs" in left[0]["body"]
    assert "nothing to rewrite" in review["body"] and UTILS in review["body"]
    body = str(review["body"]).replace(bot_version(), "<version>")
    check_golden("migrate-review.md", body)


def test_the_same_sha_is_reviewed_once(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    send(gh, gateway, ctx, "/qnn migrate", login="maint")
    writes = len(gh.writes())
    outcome, _ = send(gh, gateway, ctx, "please\n\n/qnn migrate", login="author")
    assert outcome.action == "duplicate"
    assert len(gh.reviews(8)) == 1
    assert [r.path for r in gh.writes()[writes:]] == [
        f"/repos/{REPO}/issues/comments/{gh.comments(8)[-1].id}/reactions"
    ]  # only the 👀 claim
    # Another target is another review; a push is another SHA.
    assert send(gh, gateway, ctx, "/qnn migrate --target executorch", "maint")[0].action == (
        "reviewed"
    )
    gh.push(8, "d" * 40)
    gh.add_file("d" * 40, EXPORT, EXPORT_HEAD.encode())
    gh.add_file("d" * 40, WRAPPER, WRAPPER_HEAD.encode())
    gh.add_file("d" * 40, UTILS, UTILS_HEAD.encode())
    assert send(gh, gateway, ctx, "/qnn migrate", login="maint")[0].action == "reviewed"
    assert [r["commit_id"] for r in gh.reviews(8)] == [HEAD, HEAD, "d" * 40]


def test_who_may_ask(gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext) -> None:
    outcome, cid = send(gh, gateway, ctx, "/qnn migrate", login="reader")
    assert outcome.action == "refused" and not gh.reviews(8)
    assert gh.reactions(cid)["confused"] == [BOT_LOGIN]
    (reply,) = [c.body for c in gh.comments(8) if c.author == BOT_LOGIN]
    assert "@reader" in reply and "PR's author (@author)" in reply and "`read`" in reply
    # The PR's author may, although their role (read) could not start device runs.
    assert send(gh, gateway, ctx, "/qnn migrate", login="author")[0].action == "reviewed"


def test_paths_narrow_the_files(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    send(gh, gateway, ctx, f"/qnn migrate {WRAPPER}", login="maint")
    (review,) = gh.reviews(8)
    assert {c["path"] for c in review["comments"]} == {WRAPPER}
    assert EXPORT not in str(review["body"])
    assert len(gh.requests_to("GET", r"/contents/")) == 1


def test_over_cap_and_unparsable_files_are_reported(
    github_standin: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    gh = github_standin
    gh.add_user("maint", role="write", repo=REPO)
    big = EXPORT_HEAD + "# padding\n" * (MAX_FILE_BYTES // 10)
    broken = "def lower(model:\n    return to_edge_transform_and_lower_to_qnn(model)\n"
    seed(gh, 9, {"big.py": ("", big), "broken.py": ("", broken), "notes.md": ("", "x\n")})
    outcome, _ = send(gh, gateway, ctx, "/qnn migrate", login="maint", number=9)
    assert outcome.action == "reviewed"
    (review,) = gh.reviews(9)
    body = str(review["body"])
    assert review["comments"] == []
    assert f"| `big.py` | not read: {len(big)} bytes, over the {MAX_FILE_BYTES}-byte cap |" in body
    assert "| `broken.py` | not rewritten: does not parse" in body
    assert "notes.md" not in body  # only Python files are read
    assert "**0 rewrites suggested**" in body


@pytest.mark.parametrize("codec", ["rot13", "hex", "zlib", "no-such-codec"])
def test_a_file_declaring_a_codec_that_is_not_text_is_skipped_with_the_reason(
    github_standin: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext, codec: str
) -> None:
    """The PR's author picks the encoding declaration: a bytes-to-bytes codec (or an unknown
    one) used to crash the command with a LookupError; the file is now listed as skipped."""
    gh = github_standin
    gh.add_user("maint", role="write", repo=REPO)
    odd = f"# -*- coding: {codec} -*-\n" + EXPORT_HEAD
    seed(gh, 9, {EXPORT: (EXPORT_BASE, EXPORT_HEAD), "odd.py": ("", odd)})
    outcome, _ = send(gh, gateway, ctx, "/qnn migrate", login="maint", number=9)
    assert outcome.action == "reviewed"
    (review,) = gh.reviews(9)
    body = str(review["body"])
    reason = "which is not a text encoding" if codec != "no-such-codec" else "does not know"
    (row,) = [line for line in body.splitlines() if line.startswith("| `odd.py` |")]
    assert row.startswith(f"| `odd.py` | skipped: cannot be processed: declares encoding {codec}")
    assert reason in row and "save it as UTF-8" in row
    assert {c["path"] for c in review["comments"]} == {EXPORT}  # the other file is reviewed


def test_a_hunk_that_does_not_parse_alone_goes_to_the_summary() -> None:
    """Control for the re-parse: the two hunks of this rewrite only parse together."""
    old = "x = (\n    1,\n)\ny = 2\n"
    new = "x = [\n    1,\n]\ny = 2\n"

    def stub_rewrite(code: str, options: RuleOptions, *, filename: str) -> FileResult:  # a DOUBLE
        return FileResult(new, True, 1, ())

    item = FileInput("a.py", "@@ -1,4 +1,4 @@\n", FileBlob("a.py", len(old), old.encode()))
    command = MigrateCommand(target="qnn-passes")
    plan = build_review([item], sha=HEAD, command=command, version="0", rewrite=stub_rewrite)
    assert len(hunks(old, new)) == 2 and plan.suggested == 0 and plan.comments == ()
    assert "<details>" in plan.body and "-x = (" in plan.body and "+x = [" in plan.body
    # Control: a rewrite whose hunks parse alone is posted, on the same path.
    new = "x = (\n    2,\n)\ny = 2\n"
    plan = build_review([item], sha=HEAD, command=command, version="0", rewrite=stub_rewrite)
    assert plan.suggested == 1 and plan.comments[0].line == 2


def test_a_push_while_reading_posts_nothing(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    original = gateway.file_at

    def file_at_then_push(path: str, ref: str, max_bytes: int) -> FileBlob | None:
        gh.push(8, "e" * 40)  # a push lands between reading the files and posting
        return original(path, ref, max_bytes)

    gateway.file_at = file_at_then_push  # type: ignore[method-assign]
    outcome, cid = send(gh, gateway, ctx, "/qnn migrate", login="maint")
    assert outcome.action == "refused" and not gh.reviews(8)
    assert "moved from" in gh.comments(8)[-1].body and "confused" in gh.reactions(cid)


def test_a_refused_review_is_reported(
    gh: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    gh.fail_next("POST", r"/pulls/8/reviews$", 422, message="Unprocessable Entity")
    outcome, cid = send(gh, gateway, ctx, "/qnn migrate", login="maint")
    assert outcome.action == "failed" and not gh.reviews(8)
    reply = gh.comments(8)[-1].body
    assert reply.startswith("😕 GitHub refused") and "HTTP 422" in reply
    assert "confused" in gh.reactions(cid)


def test_caps_on_comments_and_body() -> None:
    old = "".join(f"x{i} = {i}\n\n" for i in range(70))
    new = "".join(f"x{i} = {i + 1}\n\n" for i in range(70))

    def stub_rewrite(code: str, options: RuleOptions, *, filename: str) -> FileResult:  # a DOUBLE
        return FileResult(new, True, 70, ())

    whole = f"@@ -1,140 +1,{len(split_lines(old))} @@\n"
    item = FileInput("a.py", whole, FileBlob("a.py", len(old), old.encode()))
    command = MigrateCommand(target="qnn-passes")
    plan = build_review([item], sha=HEAD, command=command, version="0", rewrite=stub_rewrite)
    assert plan.suggested == MAX_COMMENTS == len(plan.comments)
    assert "10 more outside this PR's diff" in plan.body and "-x69 = 69" in plan.body

    # A diff too long for GitHub's body limit is left out, with a note.
    huge_old = "".join(f"y{i} = '{'a' * 80}'\n" for i in range(1000))
    huge_new = huge_old.replace("'a", "'b")

    def stub_huge(code: str, options: RuleOptions, *, filename: str) -> FileResult:  # a DOUBLE
        return FileResult(huge_new, True, 1, ())

    item = FileInput("b.py", None, FileBlob("b.py", len(huge_old), huge_old.encode()))
    plan = build_review([item], sha=HEAD, command=command, version="0", rewrite=stub_huge)
    assert plan.suggested == 0 and len(plan.body) < MAX_BODY_CHARS
    assert "too long to show; run it locally" in plan.body


def test_a_file_the_pr_imports_the_old_name_from_keeps_it() -> None:
    """Re-exports across the PR's files: the consumer's import of the old name must not break."""
    lowering = (
        "from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn\n"
        "\n\n"
        "def lower(model, inputs, specs):\n"
        "    return to_edge_transform_and_lower_to_qnn(model, inputs, specs)\n"
    )
    consumer = "from mypkg.lowering import to_edge_transform_and_lower_to_qnn\n"

    def item(path: str, text: str) -> FileInput:
        lines = len(split_lines(text))
        return FileInput(path, f"@@ -0,0 +1,{lines} @@\n", FileBlob(path, len(text), text.encode()))

    command = MigrateCommand(target="qnn-passes")
    alone = build_review(
        [item("mypkg/lowering.py", lowering)], sha=HEAD, command=command, version="0"
    )
    both = build_review(
        [item("mypkg/lowering.py", lowering), item("consumer.py", consumer)],
        sha=HEAD,
        command=command,
        version="0",
    )

    def suggested(plan: ReviewPlan) -> str:
        return "".join(c.body for c in plan.comments if c.path == "mypkg/lowering.py")

    # With its consumer in the PR the file is rewritten as a re-export point: the call is
    # still rewritten, and the suggestions equal the codemod's output for a file others import
    # the name from (on its own, the control, they differ).
    kept = rewrite_code(
        lowering,
        rule_options("qnn-passes", imported_from=frozenset({"mypkg.lowering"})),
        filename="mypkg/lowering.py",
    ).code
    assert both.suggested and "to_edge_transform_and_lower(" in suggested(both)
    assert all(h.suggestion() in suggested(both) for h in hunks(lowering, kept))
    assert not all(h.suggestion() in suggested(alone) for h in hunks(lowering, kept))


def test_a_review_of_everything_a_pr_can_hold_is_one_github_accepts(
    github_standin: GitHubStandIn, gateway: PyGithubGateway
) -> None:
    """1,201 changed files (long names), 1,500 sites left with long reasons, a hunk too long
    for one comment: each used to make GitHub answer 422 (the body over 65,536 characters).
    The review now fits, and it says what it left out and how to see it."""
    gh = github_standin
    gh.add_user("maint", role="write", repo=REPO)
    paths = [f"pkg/{'deeply_nested_' * 6}module_{i:04}.py" for i in range(1201)]
    pull = gh.add_pull(9, author="maint", head_sha=HEAD, files=paths)
    old = "x = 1\n" * 3000
    for path in paths[:MAX_FILES]:
        pull.patches[path] = "@@ -0,0 +1,3000 @@\n"
        gh.add_file(HEAD, path, old.encode())
    reason = "to_edge_transform_and_lower_to_qnn is called with **kwargs " + "x" * 5000

    def many_sites(code: str, options: RuleOptions, *, filename: str) -> FileResult:  # a DOUBLE
        sites = tuple(Unfixable(line, reason) for line in range(1, 1501))
        if filename != paths[0]:
            return FileResult(code, False, 0, sites)
        big = "".join(f"y{i} = {'0' * 100}\n" for i in range(300))  # one 30 KB hunk
        return FileResult(big + code[300 * 6 :], True, 1, sites)

    command = MigrateCommand(target="qnn-passes")
    done = handle_migrate(
        gateway,
        command,
        pr=9,
        login="maint",
        bot_login=BOT_LOGIN,
        comment_id=gh.add_comment(9, "maint", "/qnn migrate").id,
        rewrite=many_sites,
    )
    assert done.action == "reviewed", done.reason
    (review,) = gh.reviews(9)
    body = str(review["body"])
    assert len(body) <= MAX_BODY_CHARS
    assert "more rows not shown: the review would be over GitHub's size limit" in body
    assert "more sites left, not listed" in body and "**1 rewrite suggested**" not in body
    assert "qnn-migrate rewrite --diff --target qnn-passes -- .\n" in body  # too many to name
    comments = review["comments"]
    assert 0 < len(comments) <= MAX_COMMENTS
    assert all(len(c["body"]) <= MAX_COMMENT_CHARS for c in comments)
    assert not any("suggestion" in c["body"] for c in comments)  # the 30 KB hunk: summary


def test_past_the_time_budget_it_posts_what_it_has(
    gh: GitHubStandIn, gateway: PyGithubGateway
) -> None:
    """A monotonic deadline, checked between files: past it, the files left are listed as
    not rewritten and the review of the others is posted. The clock is a DOUBLE that each
    rewrite moves on by 200 s (no real time passes)."""
    now = [1000.0]

    def slow_rewrite(code: str, options: RuleOptions, *, filename: str) -> FileResult:
        now[0] += 200.0
        return rewrite_code(code, options, filename=filename)

    command = MigrateCommand(target="qnn-passes")
    done = handle_migrate(
        gateway,
        command,
        pr=8,
        login="maint",
        bot_login=BOT_LOGIN,
        comment_id=gh.add_comment(8, "maint", "/qnn migrate").id,
        rewrite=slow_rewrite,
        clock=lambda: now[0],
        time_budget=300.0,
    )
    assert done.action == "reviewed"
    assert now[0] == 1400.0  # two files rewritten; the third was not started
    (review,) = gh.reviews(8)
    body = str(review["body"])
    assert f"Stopped at the time budget** ({TIME_BUDGET_SECONDS:.0f} s): 1 file not" in body
    assert f"| `{UTILS}` | not rewritten: the time budget of `/qnn migrate` ran out" in body
    assert {c["path"] for c in review["comments"]} == {EXPORT, WRAPPER}  # what it had
    assert UTILS in body.split("```sh")[1]  # the local command covers the file left
    # Files not yet read when the time ran out are listed the same way.
    now[0] = 0.0
    ticks = iter([0.0, 10.0])  # the start, the first file; later readings are 400
    command = MigrateCommand(target="executorch")
    handle_migrate(
        gateway,
        command,
        pr=8,
        login="maint",
        bot_login=BOT_LOGIN,
        comment_id=gh.add_comment(8, "maint", "/qnn migrate --target executorch").id,
        clock=lambda: next(ticks, 400.0),
        time_budget=300.0,
    )
    body = str(gh.reviews(8)[-1]["body"])
    assert body.count("not read: the time budget of `/qnn migrate` ran out") == 2


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    files=st.integers(1, 12),
    skipped=st.integers(0, 1500),
    sites=st.integers(0, 2000),
    path_length=st.integers(1, 3000),
    reason_length=st.integers(1, 20000),
    hunk_lines=st.integers(1, 400),
)
def test_any_review_fits_what_github_accepts(
    files: int, skipped: int, sites: int, path_length: int, reason_length: int, hunk_lines: int
) -> None:
    """Property over the sizes a PR's author controls (files, names, sites left, the length
    of what a reason quotes, hunk sizes): the body and every comment stay under GitHub's
    limits, at most MAX_COMMENTS comments, and what is left out is said."""
    old = "x = 1\n" * 50

    def stub(code: str, options: RuleOptions, *, filename: str) -> FileResult:  # a DOUBLE
        new = "".join(f"y{i} = 2\n" for i in range(hunk_lines)) + code[6:]
        left = tuple(Unfixable(1 + i % 50, "r" * reason_length) for i in range(sites))
        return FileResult(new, True, 1, left)

    def path(i: int) -> str:
        return f"{'d' * path_length}/f{i}.py"

    items = [
        FileInput(path(i), "@@ -0,0 +1,50 @@\n", FileBlob(path(i), len(old), old.encode()))
        for i in range(files)
    ]
    command = MigrateCommand(target="qnn-passes")
    plan = build_review(
        items,
        sha=HEAD,
        command=command,
        version="0",
        skipped=[path(files + i) for i in range(skipped)],
        rewrite=stub,
    )
    assert len(plan.body) <= MAX_BODY_CHARS
    assert len(plan.comments) <= MAX_COMMENTS
    assert all(len(c.body) <= MAX_COMMENT_CHARS for c in plan.comments)
    # What is left out is said: fewer table rows than files, or fewer listed sites than
    # sites left, and the body says how many more there are.
    lines = plan.body.splitlines()
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| file |")]
    if sum(1 for row in rows if not row.startswith("| … |")) < files + skipped:
        assert "more rows not shown" in plan.body
    items = [line for line in lines if line.startswith(("- `", "- …"))]
    if sum(1 for item in items if item.startswith("- `")) < files * sites:
        assert "more sites left, not listed" in plan.body


def test_files_with_odd_names_are_listed_and_the_local_command_covers_them(
    github_standin: GitHubStandIn, gateway: PyGithubGateway, ctx: BotContext
) -> None:
    """5aad75f left such files out of the review without a word."""
    gh = github_standin
    gh.add_user("maint", role="write", repo=REPO)
    odd = "models/@team | x`y.py"
    seed(gh, 9, {EXPORT: (EXPORT_BASE, EXPORT_HEAD), odd: ("", EXPORT_HEAD)})
    outcome, _ = send(gh, gateway, ctx, "/qnn migrate", login="maint", number=9)
    assert outcome.action == "reviewed"
    (review,) = gh.reviews(9)
    body = str(review["body"])
    (row,) = [line for line in body.splitlines() if "team" in line]
    assert "not read: its name has characters other than" in row
    assert "@team" not in row and "\\|" in row and "`y" not in row  # inert: no mention, one cell
    assert "qnn-migrate rewrite --target qnn-passes -- .\n" in body  # the whole checkout
    assert {c["path"] for c in review["comments"]} == {EXPORT}  # the other file is reviewed


def test_the_local_command_runs_as_written_on_a_path_that_starts_with_a_dash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """5aad75f wrote the paths right after the options: ``-x.py`` was read as an option."""
    name = "-lower.py"
    item = FileInput(name, patch("", EXPORT_HEAD), FileBlob(name, 0, EXPORT_HEAD.encode()))
    command = MigrateCommand(target="qnn-passes")
    plan = build_review([item], sha=HEAD, command=command, version="0")
    (line,) = [ln for ln in plan.body.splitlines() if ln.startswith("qnn-migrate rewrite --target")]
    assert line.endswith(f" -- {name}")
    (tmp_path / name).write_text(EXPORT_HEAD)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, shlex.split(line)[1:], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert (tmp_path / name).read_text() != EXPORT_HEAD  # rewritten
    # Control: the same line without `--` is refused by the option parser.
    result = CliRunner().invoke(main, [w for w in shlex.split(line)[1:] if w != "--"])
    assert result.exit_code == 2 and "No such option" in result.output


def test_a_file_in_another_encoding_gets_suggestions_only_where_its_bytes_are_ascii() -> None:
    """GitHub commits a suggestion as UTF-8 text: 5aad75f suggested the decoded text of a
    latin-1 file, so committing it would write UTF-8 bytes into a latin-1 file."""
    head = "# -*- coding: latin-1 -*-\n" + EXPORT_HEAD.replace(
        "compiler_specs)\n", "compiler_specs)  # modèle réduit\n", 1
    )
    command = MigrateCommand(target="qnn-passes")
    diff = patch("", head)

    def review(data: bytes) -> ReviewPlan:
        item = FileInput("lower.py", diff, FileBlob("lower.py", len(data), data))
        return build_review([item], sha=HEAD, command=command, version="0")

    latin = review(head.encode("latin-1"))
    assert "non-ASCII text in the diff below, not suggested: the file is iso-8859-1" in latin.body
    assert all("réduit" not in c.body for c in latin.comments)
    assert "+        )  # modèle réduit" in latin.body  # the hunk is in the summary's diff
    # Control: the same text as UTF-8 is suggested, accent and all.
    utf8 = review(head.replace("latin-1", "utf-8").encode("utf-8"))
    assert any("réduit" in c.body for c in utf8.comments)
    assert "not suggested" not in utf8.body
