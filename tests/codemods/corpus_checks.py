"""The checks a corpus of real files runs through, on both targets (issue 28's "Done when").

For one file and one target, :func:`check_file` rewrites the text and measures:

- **broken**: the rewrite raised, or what it wrote does not compile although the input did;
- **silent**: calls of the old function in the input (counted with libcst, whatever the
  receiver) that were neither rewritten nor reported with a code at the call;
- **new pyflakes messages**: ruff's F rules (pyflakes) on the output, minus those on the
  input (compared without line numbers, which the rewrite moves);
- **not a fixed point**: a second run over the output changes it, or rewrites a site;
- **a second run reports more**: per code, more sites reported on the output than on the
  input (the rewrite would be reporting its own code).

The suite runs it over the distilled corpus (tests/codemods/fixtures/corpus/, see
test_corpus.py); ``tests/codemods/run_real_corpus.py`` runs it over the real files the
manifest names. The differential checker (test_scenario_differential.py) uses
:func:`second_run_excess` for its own second-run property.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from qnn_migrate.codemods.engine import FileResult, RewriteError, rewrite_code, rule_options
from qnn_migrate.codemods.findings import Unfixable

OLD = "to_edge_transform_and_lower_to_qnn"
TARGETS = ("qnn-passes", "executorch")

# rewrite(text, target, filename) -> the engine's result; a control plants a faulty one.
Rewrite = Callable[[str, str, str], FileResult]


def real_rewrite(text: str, target: str, filename: str) -> FileResult:
    """What ``qnn-migrate rewrite --target <target>`` does to one file's text."""
    return rewrite_code(text, rule_options(target), filename=filename)


@dataclass(frozen=True)
class Span:
    """Where a call of the old function sits: from its first to its last character."""

    start: tuple[int, int]  # (line 1-based, column 0-based), as libcst and the report count
    end: tuple[int, int]

    def holds(self, line: int, column: int) -> bool:
        return self.start <= (line, column) <= self.end


class _Calls(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        self.spans: list[Span] = []

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = func.value if isinstance(func, cst.Name) else None
        if isinstance(func, cst.Attribute):
            name = func.attr.value
        if name == OLD:
            where = self.get_metadata(PositionProvider, node)
            self.spans.append(
                Span((where.start.line, where.start.column), (where.end.line, where.end.column))
            )


def old_calls(text: str) -> list[Span]:
    """Every call whose callee is the old name or an attribute of that name, in ``text``."""
    visitor = _Calls()
    MetadataWrapper(cst.parse_module(text)).visit(visitor)
    return visitor.spans


def second_run_excess(
    first: Iterable[Unfixable], second: Iterable[Unfixable]
) -> dict[str, tuple[int, int]]:
    """Codes the second run reports at more sites than the first: code -> (second, first)."""
    before = Counter(u.code for u in first)
    return {
        code: (count, before[code])
        for code, count in Counter(u.code for u in second).items()
        if count > before[code]
    }


@dataclass
class Outcome:
    """What one target did to one file."""

    name: str
    target: str
    sites: int = 0  # calls of the old function in the input
    rewritten: int = 0
    reported: Counter[str] = field(default_factory=Counter)  # code -> sites left, by code
    broken: str = ""  # why the output is broken ("" when it is not)
    silent: list[tuple[int, int]] = field(default_factory=list)  # (line, column) of each
    new_pyflakes: list[str] = field(default_factory=list)
    not_a_fixed_point: bool = False
    second_run_more: dict[str, tuple[int, int]] = field(default_factory=dict)
    output: str = ""

    @property
    def clean(self) -> bool:
        return not (
            self.broken
            or self.silent
            or self.new_pyflakes
            or self.not_a_fixed_point
            or self.second_run_more
        )

    def problems(self) -> list[str]:
        found = []
        if self.broken:
            found.append(f"broken: {self.broken}")
        if self.silent:
            found.append(f"silent sites at {self.silent}")
        if self.new_pyflakes:
            found.append(f"new pyflakes messages: {self.new_pyflakes}")
        if self.not_a_fixed_point:
            found.append("a second run changes the output")
        if self.second_run_more:
            found.append(
                f"a second run reports more (code: (second, first)): {self.second_run_more}"
            )
        return [f"{self.name} [{self.target}]: {p}" for p in found]


def check_file(name: str, text: str, target: str, rewrite: Rewrite = real_rewrite) -> Outcome:
    """Every check but pyflakes (which :func:`check_files` runs once for all files)."""
    outcome = Outcome(name, target)
    spans = old_calls(text)
    outcome.sites = len(spans)
    try:
        result = rewrite(text, target, name)
    except RewriteError as error:
        outcome.broken = f"{error.reason.code} {error.reason.text}"
        return outcome
    outcome.output = result.code
    try:
        compiled_before = compile(text, name, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError:
        compiled_before = None
    if compiled_before is not None:
        try:
            compile(result.code, name, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        except SyntaxError as error:
            outcome.broken = f"the output does not compile: line {error.lineno}: {error.msg}"
            return outcome
    left = [u for u in result.unfixable if u.kind == "unfixable"]
    outcome.rewritten = result.sites_rewritten
    outcome.reported = Counter(u.code for u in left)
    rewritten_at = set(result.rewritten_at)
    whole_file = [u for u in left if u.code == "QM207"]  # the file defines the function
    for span in spans:
        if span.start in rewritten_at or whole_file:
            continue
        if not any(u.code and span.holds(u.line, u.column) for u in left):
            outcome.silent.append(span.start)
    try:
        second = rewrite(result.code, target, name)
    except RewriteError as error:
        outcome.broken = f"the second run raised {error.reason.code} {error.reason.text}"
        return outcome
    outcome.not_a_fixed_point = second.changed or second.sites_rewritten > 0
    outcome.second_run_more = second_run_excess(result.unfixable, second.unfixable)
    return outcome


# pyflakes' checks, as ruff runs them, with no project configuration.
RUFF_F = (
    *(sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select", "F"),
    *("--output-format", "json", "--exit-zero"),
)

# Positions and the file name vary between input and output; the message is what counts.
_WHERE = re.compile(r"\bline \d+\b")


def pyflakes_messages(texts: Mapping[str, str]) -> dict[str, Counter[str]]:
    """ruff's F rules (pyflakes) on each text, without configuration: name -> Counter of
    ``CODE message``. One ruff process for all texts."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        paths = {}
        for index, (name, text) in enumerate(texts.items()):
            path = root / f"f{index}.py"
            path.write_text(text, encoding="utf-8")
            paths[str(path)] = name
        proc = subprocess.run(
            [*RUFF_F, folder],
            capture_output=True,
            text=True,
            check=True,
        )
    found: dict[str, Counter[str]] = {name: Counter() for name in texts}
    for message in json.loads(proc.stdout):
        name = paths[str(Path(message["filename"]))]
        found[name][f"{message['code']} {_WHERE.sub('line N', message['message'])}"] += 1
    return found


def check_files(
    files: Mapping[str, str], targets: Iterable[str] = TARGETS, rewrite: Rewrite = real_rewrite
) -> list[Outcome]:
    """:func:`check_file` for every file and target, then the pyflakes comparison."""
    outcomes = [
        check_file(name, text, target, rewrite)
        for name, text in files.items()
        for target in targets
    ]
    texts = dict(files)
    for outcome in outcomes:
        if outcome.output and outcome.output != files[outcome.name]:
            texts[f"{outcome.target}:{outcome.name}"] = outcome.output
    messages = pyflakes_messages(texts)
    for outcome in outcomes:
        key = f"{outcome.target}:{outcome.name}"
        if key in messages:
            new = messages[key] - messages[outcome.name]
            outcome.new_pyflakes = sorted(new.elements())
    return outcomes


def totals(outcomes: Iterable[Outcome], target: str) -> dict[str, int]:
    """The figures of one target over a corpus."""
    mine = [o for o in outcomes if o.target == target]
    return {
        "files": len(mine),
        "sites": sum(o.sites for o in mine),
        "rewritten": sum(o.rewritten for o in mine),
        "reported": sum(sum(o.reported.values()) for o in mine),
        "broken": sum(1 for o in mine if o.broken),
        "silent": sum(len(o.silent) for o in mine),
        "new pyflakes": sum(len(o.new_pyflakes) for o in mine),
        "not a fixed point": sum(1 for o in mine if o.not_a_fixed_point),
        "second run reports more": sum(1 for o in mine if o.second_run_more),
    }
