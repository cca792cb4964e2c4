"""reexports.py: the cross-file scan for modules that re-export the deprecated name."""

from __future__ import annotations

import re
import re._constants
import re._parser

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qnn_migrate.codemods import reexports
from qnn_migrate.codemods.deprecations import lower_to_qnn
from qnn_migrate.codemods.reexports import imported_here, reexport_scan


def test_reexport_scan_finds_absolute_relative_and_parenthesized_imports() -> None:
    old = lower_to_qnn().name
    sources: dict[str, str | bytes] = {
        "src/app.py": f"from mypkg.lowering import {old}\n",
        "src/mypkg/consumer.py": f"from .helpers import (\n    a,\n    {old} as lower,\n)\n",
        "src/mypkg/sub/deep.py": f"from ..up import b, {old}  # comment\n",
        "src/mypkg/other.py": f"from mypkg.lowering import {old}_v2\nimport {old}\n",
        "src/bytes.py": f"from pkg.b import {old}\n".encode(),
    }
    assert reexport_scan(sources) == {
        "mypkg.lowering",
        "src.mypkg.helpers",
        "src.mypkg.up",
        "pkg.b",
    }


def test_imported_here_matches_by_the_tail_of_the_path() -> None:
    found = frozenset({"mypkg.lowering", "src.mypkg"})
    assert imported_here("/home/u/proj/src/mypkg/lowering.py", found)
    assert imported_here("src/mypkg/__init__.py", found)
    assert not imported_here("/home/u/proj/src/otherpkg/lowering2.py", found)
    assert not imported_here("/home/u/proj/src/mypkg/helpers.py", found)
    assert not imported_here(None, found)


def test_reexport_scan_leaves_out_executorchs_own_modules() -> None:
    """Every user file imports the name from ExecuTorch; that keeps no module of the run bound
    (a run's own `utils.py` would otherwise match `...qualcomm.utils.utils` by its tail)."""
    user = (
        "from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn\n"
    )
    reexport = "from mypkg.utils import to_edge_transform_and_lower_to_qnn\n"
    assert reexport_scan({"a.py": user}) == frozenset()
    assert reexport_scan({"a.py": user, "b.py": reexport}) == {"mypkg.utils"}
    assert not imported_here("src/utils.py", reexport_scan({"a.py": user}))


# The scan before it was made linear: every quantifier could give back what it took, so a
# `from ....` line with no `import` cost a try for every split of its dots (quadratic), and
# every `from x import (` with no `)` after it read the text to its end.
OLD_FROM_IMPORT = re.compile(
    r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]*(\([^)]*\)|[^\n#;]*(?:\\\n[^\n#;]*)*)",
    re.MULTILINE,
)
MAX_FILE_BYTES = 512 * 1024  # /qnn migrate's cap on a file (bot/pr/migrate.py)
OLD_NAME = lower_to_qnn().name


def backtracking_repeats(pattern: re.Pattern[str]) -> list[str]:
    """The repeats in ``pattern`` that can give back characters they took (greedy or lazy,
    of varying length): where a failing try goes back and reads the same text again."""
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, re._parser.SubPattern):  # type: ignore[attr-defined]
            for op, av in node.data:
                if op in (re._constants.MAX_REPEAT, re._constants.MIN_REPEAT):  # type: ignore[attr-defined]
                    low, high, _ = av
                    if low != high:
                        found.append(f"{op} {low}..{high}")
                walk(av)
        elif isinstance(node, (list, tuple)):
            for item in node:
                walk(item)

    walk(re._parser.parse(pattern.pattern, pattern.flags))  # type: ignore[attr-defined]
    return found


def test_the_scan_cannot_backtrack() -> None:
    """Linear structure: every pattern of the scan is possessive (a try never re-reads), and
    each try is confined to its line (a `(` list runs only to a `)` known to exist)."""
    patterns = [v for v in vars(reexports).values() if isinstance(v, re.Pattern)]
    assert len(patterns) >= 2
    for pattern in patterns:
        assert backtracking_repeats(pattern) == [], pattern.pattern
    # Control: the check sees the old pattern's backtracking repeats.
    assert len(backtracking_repeats(OLD_FROM_IMPORT)) >= 5


FRAGMENTS = ["from", "import", " ", "  ", "\t", ".", "..", "a", "b.c", "(", ")", ",", "\n"]
FRAGMENTS += ["#", ";", OLD_NAME, "x"]


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(st.sampled_from(FRAGMENTS), max_size=40))
def test_the_scan_finds_what_the_old_pattern_found(parts: list[str]) -> None:
    """Differential, on short texts where the old pattern is cheap: the same imports, with the
    same module and names, in the same order (texts without backslashes: the old pattern
    never followed a continuation line, see the next test)."""
    text = "".join(parts)
    old = [(m.group(1), m.group(2)) for m in OLD_FROM_IMPORT.finditer(text)]
    assert list(reexports._imports(text)) == old
    assert reexport_scan({"p/q.py": text}) == _old_scan({"p/q.py": text})


def _old_scan(sources: dict[str, str]) -> frozenset[str]:
    found = set()
    for path, text in sources.items():
        for m in OLD_FROM_IMPORT.finditer(text):
            if OLD_NAME in re.findall(r"\w+", m.group(2)):
                resolved = reexports._resolve(m.group(1), path)
                if resolved and not resolved.startswith("executorch."):
                    found.add(resolved)
    return frozenset(found)


def test_a_continuation_line_is_followed() -> None:
    text = f"from mypkg.lowering import helper, \\\n    {OLD_NAME}\n"
    assert reexport_scan({"a.py": text}) == {"mypkg.lowering"}
    assert reexport_scan({"a.py": text.replace("\\\n", "\n")}) == frozenset()  # control


ADVERSARIAL_LINES = [
    "from " + "." * 64,
    "from" + " " * 64,
    "from " + ". " * 32,
    "from " + "a." * 32,
    "from a import (",
    "from a import " + "\\" * 8,
    "    from .. " + "." * 40 + " imp",
]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(st.sampled_from(ADVERSARIAL_LINES), min_size=1, max_size=3))
def test_adversarial_files_at_the_cap_are_scanned(lines: list[str]) -> None:
    """Long dotted `from` lines, blanks, `(` with no `)`, at /qnn migrate's size cap, as one
    line or repeated: the scan completes, each import read once (spans in order, disjoint)."""
    unit = "\n".join(lines) + "\n"
    for text in (
        OLD_NAME + "\nfrom " + "." * MAX_FILE_BYTES,  # one long line
        OLD_NAME + "\n" + unit * (MAX_FILE_BYTES // len(unit)),  # many lines
    ):
        assert reexport_scan({"pkg/mod.py": text}) == frozenset()
        assert len(list(reexports._imports(text))) <= text.count("from")
    # Control: the same lines with the old name imported are found.
    found = f"from mypkg.lowering import {OLD_NAME}\n" + unit * 1000
    assert reexport_scan({"pkg/mod.py": found}) == {"mypkg.lowering"}
