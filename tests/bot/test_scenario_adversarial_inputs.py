"""Every reader of text another party wrote does work linear in its size.

The five readers, each fed shapes that made some parser superlinear (strings left open,
one line repeated, deep nesting, runs of openers that never close):

- the artifact reader (``artifacts.parse_json``; a ``result.json`` PR code can write), at its
  8 MiB cap: its string scan is a C regex, so its work is the model ``string_scan_reads``;
- the comment grammar (``commands.parse``; cap 64 KiB), at 1 and 2 KiB: markdown-it is pure
  Python at up to ~700 lines a character, so the cap itself would cost a minute traced;
- the re-export scan (``reexport_scan``; 512 KiB per file), at the cap and at 16 and 32 KiB;
- the hunk diff (``suggestions.hunks``) and the review renderer (``migrate.build_review``:
  a file, its rewrite, a site left on every line and a patch hunk on every other one), at 16
  and 32 KiB for every shape, and at the 512 KiB cap for the worst one known.

Work is counted, never timed: Python lines run (the ``python_lines`` fixture) must stay under
``PER_CHAR`` times the input's size (plus the diff's fixed budget where a diff runs), and
doubling the size may at most about double it; the count is stopped past the bound, so a
quadratic path fails fast instead of hanging. The control runs 5aad75f's anchoring of sites
on the patch (ranges x sites) on the same kind of input: it goes past the bound. The
regexes' own work (C code) is checked structurally in tests/codemods/test_reexports.py and
by the model here. ``benchmarks/bench_inputs.py`` times the same shapes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from qnn_migrate_tests.bot.support import string_scan_reads

from qnn_migrate.bot import artifacts
from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.github.gateway import FileBlob
from qnn_migrate.bot.pr import migrate
from qnn_migrate.bot.pr.commands import parse
from qnn_migrate.bot.pr.grammar import CommandError
from qnn_migrate.bot.pr.suggestions import hunks, split_lines
from qnn_migrate.bot.pr.verbs.migrate import MigrateCommand
from qnn_migrate.codemods.engine import FileResult, RuleOptions
from qnn_migrate.codemods.findings import Unfixable
from qnn_migrate.codemods.line_diff import MAX_DIFF_STEPS
from qnn_migrate.codemods.reexports import reexport_scan

Lines = Callable[[Callable[[], object], int], int]
KIB = 1024
COMMENT_CAP = 64 * KIB  # [limits] max_comment_chars
FILE_CAP = migrate.MAX_FILE_BYTES
# Python lines per character allowed; the worst shape measured is about a third of each.
PER_CHAR = {"grammar": 2000, "reexports": 2, "hunks": 48, "review": 96}
# The comment grammar runs markdown-it (pure Python, ~1,000 lines per character on runs of
# `![`): its linearity is shown at two sizes below the cap (the ratio) and its bound per
# character at the larger, so that the test stays cheap; the other readers run at the cap.
GRAMMAR_SIZES = (1 * KIB, 2 * KIB)
# The file readers likewise at two sizes in the property, and the worst shape at the cap.
FILE_SIZES = (16 * KIB, 32 * KIB)
# The diff stops at its budget (``line_diff.MAX_DIFF_STEPS``, about ten Python lines a step):
# a constant on top of the linear part, reached by a change on many repeated lines.
DIFF_ALLOWANCE = 12 * MAX_DIFF_STEPS

# Units repeated up to the size: opened and never closed, escaped, nested, repeated.
TEXT_UNITS = ['"', "'''", '\\"', "\\", "(", "[", "{", "#", "from .", "from ", " import (", "\n"]
TEXT_UNITS += ["    x = 1\n", "from a import to_edge_transform_and_lower_to_qnn\n", ".", " "]
COMMENT_UNITS = ["[", "![", "](", "*", "_", "`", "<", "<!--", "> ", "- ", "    ", "\n", "|"]
COMMENT_UNITS += ["[^1]: ", "\\", "&#", "http://x ", "~~", "1. ", "# ", "```", "/qnn ", "\t"]
JSON_UNITS = ['\\"', "\\", '"', "[", "{", '{"a":', '["', '"\\"', "]", "}", " ", '"x"']


def shape(units: list[str], end: str = "") -> st.SearchStrategy[str]:
    """A short run of units (then ``end``); the test repeats it up to the size it needs."""
    return st.lists(st.sampled_from(units), min_size=1, max_size=5).map(lambda u: "".join(u) + end)


def grown(unit: str, size: int, head: str = "") -> str:
    return (head + unit * (size // len(unit) + 1))[:size]


def within(
    python_lines: Lines, call: Callable[[], object], size: int, per_char: int, fixed: int = 0
) -> int:
    """The lines ``call`` runs; fails (stopping it) past ``per_char * size`` plus set-up and
    ``fixed`` (the diff's budget, where one runs)."""
    ran = python_lines(call, per_char * size + 200_000 + fixed)
    return ran


def rewritten(old: str, every: int) -> str:
    """The rewrite of ``old`` a hostile file can force: a change at both ends, in the middle
    and on every ``every``-th line (one identical line repeated is the diff's worst case)."""
    lines = split_lines(old)
    changed = [
        f"# rewrite {i}\n" if every and i % every == 0 else line for i, line in enumerate(lines)
    ]
    middle = len(changed) // 2
    return (
        "# top\n"
        + "".join(changed[:middle])
        + "# middle\n"
        + "".join(changed[middle:])
        + "\n# end\n"
    )


def patch_of_every_other_line(count: int) -> str:
    """A PR patch of one-line hunks on every other line: as many ranges as the file allows."""
    return "".join(f"@@ -{i} +{i} @@\n+x\n" for i in range(1, count + 1, 2))


class SiteEveryLineRewrite:
    """A rewrite DOUBLE for the renderer: returns a given text and one site left per line
    (the renderer's cost is the claim; the rewrite's own is libcst's)."""

    def __init__(self, new: str, sites: int) -> None:
        self.new, self.sites = new, sites

    def __call__(self, code: str, options: RuleOptions, *, filename: str) -> FileResult:
        left = tuple(Unfixable(line, "kept: x") for line in range(1, self.sites + 1))
        return FileResult(self.new, True, 1, left)


@settings(
    max_examples=4,
    deadline=None,
    derandomize=True,  # the same shapes on every run: CI's cost is known
    phases=[Phase.explicit, Phase.generate],  # a failure is reported as found, not shrunk
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    json_unit=shape(JSON_UNITS),
    comment_unit=shape(COMMENT_UNITS),
    text_unit=shape(TEXT_UNITS, end="\n"),  # a file of many lines: the diff's worst case
)
def test_every_reader_does_work_linear_in_its_input(
    python_lines: Lines,
    catalog: Catalog,
    json_unit: str,
    comment_unit: str,
    text_unit: str,
) -> None:
    # The artifact reader: one read per character at most, and an answer at 8 MiB.
    text = grown(json_unit, artifacts.MAX_BYTES)
    assert string_scan_reads(text, 2 * len(text)) <= len(text)
    try:
        artifacts.parse_json(text, "result.json")
    except artifacts.ArtifactError as error:
        assert str(error).startswith("result.json: ")

    # The comment grammar: a command line first, so the whole body is parsed as markdown.
    work = []
    for size in GRAMMAR_SIZES:
        body = grown(comment_unit, size, head="/qnn cancel\n")

        def read(body: str = body) -> None:
            with contextlib.suppress(CommandError):
                parse(body, catalog)

        work.append(within(python_lines, read, size, PER_CHAR["grammar"]))
    assert work[1] <= 2.5 * work[0] + 10_000, work

    # The re-export scan at the cap; it, the hunk diff and the renderer at two sizes.
    within(python_lines, _reexports(grown(text_unit, FILE_CAP), 0), FILE_CAP, PER_CHAR["reexports"])
    for reader, run in (("reexports", _reexports), ("hunks", _hunks), ("review", _review)):
        fixed = 0 if reader == "reexports" else 2 * DIFF_ALLOWANCE  # the review diffs twice
        work = [
            within(python_lines, run(grown(text_unit, size), 0), size, PER_CHAR[reader], fixed)
            for size in FILE_SIZES
        ]
        assert work[1] <= 2.5 * work[0] + 10_000, (reader, work)


def _reexports(old: str, every: int) -> Callable[[], object]:
    return lambda: reexport_scan({"a/b.py": old})


def _hunks(old: str, every: int) -> Callable[[], object]:
    new = rewritten(old, every)
    return lambda: hunks(old, new)


def _review(old: str, every: int) -> Callable[[], object]:
    count = len(split_lines(old))
    item = migrate.FileInput(
        "a/b.py", patch_of_every_other_line(count), FileBlob("a/b.py", len(old), old.encode())
    )
    command = MigrateCommand(target="qnn-passes")
    rewrite = SiteEveryLineRewrite(rewritten(old, every), count)

    def review() -> None:
        plan = migrate.build_review(
            [item], sha="c" * 40, command=command, version="0", rewrite=rewrite
        )
        assert len(plan.body) <= migrate.MAX_BODY_CHARS

    return review


def test_the_review_of_the_worst_known_file_at_the_cap_is_linear(python_lines: Lines) -> None:
    """The renderer (the re-export scan and the diff inside it) on a file of 512 KiB: one
    short line repeated, every line rewritten, a site left on each line and a patch hunk on
    every other one."""
    old = grown("    x = 1\n", FILE_CAP)
    within(python_lines, _review(old, 1), FILE_CAP, PER_CHAR["review"], 2 * DIFF_ALLOWANCE)


def test_control_the_bound_catches_the_old_anchoring(python_lines: Lines) -> None:
    """Control: 5aad75f asked each patch range in turn for each site left (and each hunk);
    on a file of short lines that goes past the renderer's bound at the property's size."""
    size = FILE_SIZES[1]  # where the property checks the renderer
    count = size // len("    x = 1\n")
    ranges = [(i, i) for i in range(1, count + 1, 2)]

    def old_in_diff() -> None:  # 5aad75f's _rewrite_file, verbatim in behaviour
        [any(first <= line <= last for first, last in ranges) for line in range(1, count + 1)]

    with pytest.raises(AssertionError, match="more than"):
        within(python_lines, old_in_diff, size, PER_CHAR["review"])
