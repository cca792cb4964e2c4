"""``/qnn migrate`` through the real PyGithub gateway to the GitHub stand-in over HTTP.

The stand-in serves the PR's files with their patches, file contents at a commit, and
pull-request reviews; it refuses a review comment whose lines are not in one hunk of the
PR's diff, as GitHub does, and every request is checked against GitHub's REST description.
"""

from __future__ import annotations

import difflib
import re

import pytest
from github_standin.fixtures import BOT_LOGIN, REPO
from github_standin.payloads import comment_event
from github_standin.server import GitHubStandIn

from qnn_migrate.bot.github.client import PyGithubGateway
from qnn_migrate.bot.github.gateway import FileBlob
from qnn_migrate.bot.pr.commands import Action, Command
from qnn_migrate.bot.pr.dispatch import BotContext, Outcome, handle_comment_event
from qnn_migrate.bot.pr.migrate import (
    MAX_BODY_CHARS,
    MAX_COMMENTS,
    MAX_FILE_BYTES,
    FileInput,
    ReviewPlan,
    bot_version,
    build_review,
)
from qnn_migrate.bot.pr.suggestions import apply, apply_suggestion, hunks, split_lines
from qnn_migrate.codemods.engine import FileResult, RuleOptions, rewrite_code, rule_options

from ..support import check_golden

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


def test_a_hunk_that_does_not_parse_alone_goes_to_the_summary() -> None:
    """Control for the re-parse: the two hunks of this rewrite only parse together."""
    old = "x = (\n    1,\n)\ny = 2\n"
    new = "x = [\n    1,\n]\ny = 2\n"

    def stub_rewrite(code: str, options: RuleOptions, *, filename: str) -> FileResult:  # a DOUBLE
        return FileResult(new, True, 1, ())

    item = FileInput("a.py", "@@ -1,4 +1,4 @@\n", FileBlob("a.py", len(old), old.encode()))
    command = Command(Action.MIGRATE, target="qnn-passes")
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
    command = Command(Action.MIGRATE, target="qnn-passes")
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

    command = Command(Action.MIGRATE, target="qnn-passes")
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
