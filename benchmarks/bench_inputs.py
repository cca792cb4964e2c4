"""Benchmark: the readers of untrusted input against adversarial shapes, time vs size.

    python benchmarks/bench_inputs.py            # 16, 64, 512 KiB, 1 MiB, 8 MiB
    python benchmarks/bench_inputs.py --quick    # 16 and 64 KiB only

Each reader that takes text another party wrote (a job running PR code, a PR's author) is
timed on the shapes that made the old code quadratic, and on an ordinary input, at each size:

- ``artifacts.parse_json`` (a ``result.json``; cap 8 MiB): a string left open followed by
  ``\\"`` runs, backslash runs, deep nesting, and a well-formed result list;
- ``reexports.reexport_scan`` (``/qnn migrate`` and the PR check; 512 KiB per file in the
  bot): a long ``from ....`` line, ``from`` and blanks, ``from a import (`` lines with no
  ``)``, and ordinary imports;
- ``suggestions.hunks`` (``/qnn migrate``'s diff): identical lines with a change at each end
  and in the middle, a change every 7 lines among identical ones (the diff's step budget
  then makes it coarse), and ordinary unique lines;
- ``commands.parse`` (a PR comment; cap 64 KiB, so only sizes up to it): runs of ``![`` and
  ``[`` (markdown-it's costliest shapes per character), emphasis runs, and plain text; it
  has no old version (the grammar was already markdown-it), so its old column is ``n/a``;
- ``migrate.build_review`` (``/qnn migrate``'s review; files of up to 512 KiB): one short
  line repeated, every line rewritten, a site left on each line and a patch hunk on every
  other line; its old column is 5aad75f's anchoring of those sites on the patch alone.

The old code (kept below, verbatim in behaviour) is timed on the same inputs in a child
process stopped after ``OLD_LIMIT_S`` (``> 60 s``); once it was stopped at a size, larger
sizes are not tried (``-``). Times are the best of ``REPEATS`` runs (the old code: one).
Nothing here is a test: the unit tests count work instead.
"""

from __future__ import annotations

import argparse
import difflib
import multiprocessing
import re
import sys
import time
from collections.abc import Callable
from itertools import accumulate
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from qnn_migrate.bot import artifacts
from qnn_migrate.bot.catalog import load as load_catalog
from qnn_migrate.bot.github.gateway import FileBlob
from qnn_migrate.bot.pr import migrate, suggestions
from qnn_migrate.bot.pr.commands import parse
from qnn_migrate.bot.pr.grammar import CommandError
from qnn_migrate.bot.pr.verbs.migrate import MigrateCommand
from qnn_migrate.codemods import reexports
from qnn_migrate.codemods.engine import FileResult, RuleOptions
from qnn_migrate.codemods.findings import Unfixable

KIB = 1024
SIZES = [16 * KIB, 64 * KIB, 512 * KIB, 1024 * KIB, 8 * 1024 * KIB]
# A reader timed only up to the most the bot lets in.
CAPS = {"commands.parse": 64 * KIB, "build_review": migrate.MAX_FILE_BYTES}
REPEATS = 3
OLD_LIMIT_S = 60.0
NAME = "to_edge_transform_and_lower_to_qnn"

# ------------------------------------------------------------------- the old readers
_OLD_STRING_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_OLD_NOT_BRACKET_RE = re.compile(r"[^\[\]{}]+")
_OLD_STEP = str.maketrans({"[": "1", "{": "1", "]": "2", "}": "2"})
_OLD_FROM_IMPORT = re.compile(
    r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]*(\([^)]*\)|[^\n#;]*(?:\\\n[^\n#;]*)*)",
    re.MULTILINE,
)


def old_depth(text: str) -> int:
    brackets = _OLD_NOT_BRACKET_RE.sub("", _OLD_STRING_RE.sub('""', text))
    steps = (1 if c == "1" else -1 for c in brackets.translate(_OLD_STEP))
    return max(accumulate(steps, initial=0))


def old_scan(text: str) -> int:
    return sum(1 for _ in _OLD_FROM_IMPORT.finditer(text))


def old_hunks(old: str, new: str) -> int:
    a, b = suggestions.split_lines(old), suggestions.split_lines(new)
    return len(difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes())


def old_anchoring(old: str, new: str) -> int:
    """5aad75f's test of each site left against each patch range, in turn."""
    count = len(suggestions.split_lines(old))
    ranges = [(i, i) for i in range(1, count + 1, 2)]
    return sum(any(a <= line <= b for a, b in ranges) for line in range(1, count + 1))


CATALOG = load_catalog()  # once: the bot loads it once per event, before it reads the comment


def new_comment(body: str) -> object:
    try:
        return parse(body, CATALOG)
    except CommandError as error:
        return error


class SiteEveryLineRewrite:
    """A rewrite double: a given text, one site left per line (the renderer is timed)."""

    def __init__(self, new: str, sites: int) -> None:
        self.new, self.sites = new, sites

    def __call__(self, code: str, options: RuleOptions, *, filename: str) -> FileResult:
        left = tuple(Unfixable(line, "kept: x") for line in range(1, self.sites + 1))
        return FileResult(self.new, True, 1, left)


def new_review(old: str, new: str) -> object:
    count = len(suggestions.split_lines(old))
    patch = "".join(f"@@ -{i} +{i} @@\n+x\n" for i in range(1, count + 1, 2))
    item = migrate.FileInput("a/b.py", patch, FileBlob("a/b.py", len(old), old.encode()))
    return migrate.build_review(
        [item],
        sha="c" * 40,
        command=MigrateCommand(target="qnn-passes"),
        version="0",
        rewrite=SiteEveryLineRewrite(new, count),
    )


def every_line_rewritten(size: int) -> tuple[str, str]:
    lines = ["    x = 1\n"] * (size // 10)
    return "".join(lines), "".join(f"    y{i} = 2\n" for i in range(len(lines)))


def new_parse(text: str) -> object:
    try:
        return artifacts.parse_json(text, "result.json")
    except artifacts.ArtifactError as error:
        return error


# ------------------------------------------------------------------------- the inputs
def fill(unit: str, size: int, head: str = "") -> str:
    return (head + unit * (size // len(unit) + 1))[:size]


def json_result(size: int) -> str:
    row = '{"id": "TestQNN.test_qnn_backend_%d", "status": "PASS", "message": "ok"}, '
    rows = "".join(row % i for i in range(size // len(row) + 1))
    return ('{"results": [' + rows)[: size - 4].rstrip(", ") + "]}"


def imports(size: int) -> str:
    unit = "from mypkg.sub import a, b  # x\nimport os\nx = 1\n"
    return NAME + "\n" + fill(unit, size)


def repeated_lines(size: int) -> tuple[str, str]:
    n = size // 20
    body = "    x = 1\n" * n
    old = f"a = 1\n{body}b = 1\n{body}c = 1\n"
    return old, old.replace("a = 1", "a = 2").replace("b = 1", "b = 2").replace("c = 1", "c = 2")


def changes_among_repeats(size: int) -> tuple[str, str]:
    lines = ["    x = 1\n"] * (size // 10)
    new = [f"    y{i} = 2\n" if i % 7 == 0 else line for i, line in enumerate(lines)]
    return "".join(lines), "".join(new)


def unique_lines(size: int) -> tuple[str, str]:
    lines = [f"value_{i} = compute({i})\n" for i in range(size // 26)]
    new = [
        line.replace("compute", "evaluate") if i % 40 == 0 else line for i, line in enumerate(lines)
    ]
    return "".join(lines), "".join(new)


Case = tuple[
    str, str, Callable[[int], object], Callable[[object], object], Callable[[object], object] | None
]


def cases() -> list[Case]:
    """(reader, shape, make input of a size, new reader, old reader)."""

    def pair(f: Callable[[str, str], object]) -> Callable[[object], object]:
        return lambda texts: f(*texts)

    def one(f: Callable[[str], object]) -> Callable[[object], object]:
        return f

    scan = one(lambda t: reexports.reexport_scan({"pkg/mod.py": t}))
    return [
        (
            "parse_json",
            '" then \\" runs, open',
            lambda s: fill('\\"', s, '"'),
            one(new_parse),
            one(old_depth),
        ),
        (
            "parse_json",
            "backslash runs, open",
            lambda s: fill("\\", s, '["'),
            one(new_parse),
            one(old_depth),
        ),
        ("parse_json", "[ x size (deep)", lambda s: "[" * s, one(new_parse), one(old_depth)),
        ("parse_json", "a result list (ok)", json_result, one(new_parse), one(old_depth)),
        (
            "reexport_scan",
            "from + dots",
            lambda s: fill(".", s, NAME + "\nfrom "),
            scan,
            one(old_scan),
        ),
        (
            "reexport_scan",
            "from + blanks",
            lambda s: fill(" ", s, NAME + "\nfrom"),
            scan,
            one(old_scan),
        ),
        (
            "reexport_scan",
            "'from a import (' lines",
            lambda s: fill("from a import (\n", s, NAME + "\n"),
            scan,
            one(old_scan),
        ),
        ("reexport_scan", "ordinary imports (ok)", imports, scan, one(old_scan)),
        (
            "hunks",
            "repeated lines, 3 changes",
            repeated_lines,
            pair(suggestions.hunks),
            pair(old_hunks),
        ),
        (
            "hunks",
            "repeats, a change every 7",
            changes_among_repeats,
            pair(suggestions.hunks),
            pair(old_hunks),
        ),
        ("hunks", "unique lines (ok)", unique_lines, pair(suggestions.hunks), pair(old_hunks)),
        *(
            ("commands.parse", shape, make, one(new_comment), None)
            for shape, make in (
                ("![ runs", lambda s: fill("![", s, "/qnn cancel\n")),
                ("[ runs", lambda s: fill("[", s, "/qnn cancel\n")),
                ("*a_ runs", lambda s: fill("*a_", s, "/qnn cancel\n")),
                ("plain text (ok)", lambda s: fill("some words here\n", s, "/qnn cancel\n")),
            )
        ),
        (
            "build_review",
            "every repeated line rewritten, a site each",
            every_line_rewritten,
            pair(new_review),
            pair(old_anchoring),
        ),
    ]


# ---------------------------------------------------------------------------- timing
def best(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def _timed(run: Callable[[], object], out: multiprocessing.SimpleQueue[float]) -> None:
    out.put(best(run, 1))


def bounded(run: Callable[[], object], limit: float) -> float | None:
    """``best(run, 1)`` in a child process (forked: ``run`` needs no pickling); None when it
    had not finished after ``limit`` seconds (it is then stopped)."""
    context = multiprocessing.get_context("fork")
    out: multiprocessing.SimpleQueue[float] = context.SimpleQueue()
    child = context.Process(target=_timed, args=(run, out))
    child.start()
    child.join(limit)
    if child.is_alive():
        child.terminate()
        child.join()
        return None
    return out.get()


def show(seconds: float) -> str:
    return f"{seconds:.3f} s" if seconds < 10 else f"{seconds:.0f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16 and 64 KiB only")
    sizes = SIZES[:2] if parser.parse_args().quick else SIZES
    header = ["reader", "input", *(f"{s // KIB} KiB new / old" for s in sizes)]
    rows = [header]
    for reader, shape, make, new, old in cases():
        cells = [reader, shape]
        stopped = False
        for size in sizes:
            if size > CAPS.get(reader, size):
                cells.append("over its cap")
                continue
            data = make(size)
            new_s = best(lambda: new(data), REPEATS)  # noqa: B023
            if old is None:
                cells.append(f"{show(new_s)} / n/a")
                continue
            old_s = None if stopped else bounded(lambda: old(data), OLD_LIMIT_S)  # noqa: B023
            if old_s is None:
                old_text = "-" if stopped else f"> {OLD_LIMIT_S:.0f} s"
                stopped = True
            else:
                old_text = show(old_s)
            cells.append(f"{show(new_s)} / {old_text}")
        rows.append(cells)
        print(" | ".join(cells), flush=True, file=sys.stderr)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    lines.insert(1, "-|-".join("-" * w for w in widths))
    print("\n".join(lines))
    print(
        f"\nnew: best of {REPEATS}; old: one run, stopped after {OLD_LIMIT_S:.0f} s "
        "(-: not tried, it was stopped at a smaller size)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
