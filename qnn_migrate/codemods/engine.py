"""Run the rule on one file's text and check what it produced. Pure: text in, result out.

The CLI reads and writes files; this module decodes nothing and touches no disk. The output
of a rewrite is parsed again (by Python's own compiler, or by libcst for syntax newer than this
Python) so that a file is never written with code that does not parse.

Before a run over several files, :func:`reexport_scan` finds (from the texts of the files
that mention the name) the modules the others import the old name from; pass its result to
every :func:`rewrite_code` call as ``imported_from`` so those modules keep the name bound.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from qnn_migrate.codemods import findings
from qnn_migrate.codemods.deprecations import default_target, lower_to_qnn
from qnn_migrate.codemods.excerpt import Excerpt, cut, splice
from qnn_migrate.codemods.findings import Reason, Unfixable
from qnn_migrate.codemods.reexports import imported_here, reexport_scan
from qnn_migrate.codemods.rules.lower_to_qnn import (
    DEFAULT_FLOW,
    DEFAULT_LINE_LENGTH,
    FLOWS,
    LowerToQnn,
    RuleOptions,
    RuleResult,
)

__all__ = [
    "DEFAULT_FLOW",
    "DEFAULT_LINE_LENGTH",
    "FLOWS",
    "FileResult",
    "RewriteError",
    "RuleOptions",
    "imported_here",
    "reexport_scan",
    "rewrite_code",
    "rule_options",
]

WORD = re.compile(r"\w+")
# A `global` statement in dropped code could rebind a module-level name the rule resolves.
GLOBAL = re.compile(r"\bglobal\b")


class RewriteError(Exception):
    """A file could not be processed, for ``reason`` (it says why and what to do)."""

    def __init__(self, reason: Reason) -> None:
        super().__init__(reason.text)
        self.reason = reason


@dataclass(frozen=True)
class FileResult:
    """The outcome for one file's text."""

    code: str  # the new text (the old text when nothing changed)
    changed: bool
    sites_rewritten: int
    unfixable: tuple[Unfixable, ...]
    excerpt: bool = False  # the rule ran on an excerpt of the file (codemods/excerpt.py)
    rewritten_at: tuple[tuple[int, int], ...] = ()  # (line, 0-based column) of each rewrite


def rule_options(
    target: str | None = None,
    *,
    line_length: int = DEFAULT_LINE_LENGTH,
    flow: str | None = None,
    imported_from: frozenset[str] = frozenset(),
) -> RuleOptions:
    """The options of a run; ``target`` None is the default target (from the data file).

    ``flow`` (qnn-passes target): "qnn-export" keeps ``qnn_export(...)``, "canonical" writes
    ``torch.export.export(..., strict=True)``; None is the default.
    """
    target = target or default_target()
    lower_to_qnn().target(target)  # ValueError naming the choices
    flow = flow or DEFAULT_FLOW
    if flow not in FLOWS:
        raise ValueError(f"unknown flow {flow!r}; choose one of {', '.join(FLOWS)}")
    return RuleOptions(target, line_length, flow, imported_from)


def rewrite_code(
    code: str,
    options: RuleOptions | None = None,
    *,
    target: str | None = None,
    filename: str = "<string>",
    excerpts: bool = True,
    progress: Callable[[str], None] | None = None,
) -> FileResult:
    """Rewrite ``code`` (a whole module) and return the result; raises :class:`RewriteError`.

    ``options``: from :func:`rule_options`; or just ``target`` (default options otherwise).
    ``excerpts``: run the rule on an excerpt of the file when that gives the same result
    (see ``codemods/excerpt.py``); False always runs it on the whole file. ``progress``: told
    what the rewrite is doing, in words (for a long file; see ``codemods/runner.py``).
    """
    if options is None:
        options = rule_options(target)
    elif target is not None and target != options.target:
        raise ValueError("give the target in the options or as target=, not both")
    name = lower_to_qnn().name
    if name not in code:
        return FileResult(code, False, 0, ())
    rule = LowerToQnn(options)
    excerpt = cut(code, name) if excerpts else None
    if excerpt is not None and not _has_global(excerpt.dropped):
        result = _on_excerpt(rule, code, excerpt, filename, progress)
        if result is not None:
            return result
    outcome = _run(rule, code, None, filename, progress)
    if outcome.module is None:
        return FileResult(code, False, 0, tuple(outcome.report.unfixable))
    new_code = outcome.module.code
    if progress is not None:
        progress("checking that the new code compiles")
    _check_output(code, new_code, new_code, filename)
    report = outcome.report
    return FileResult(
        new_code,
        new_code != code,
        report.rewritten,
        tuple(report.unfixable),
        rewritten_at=tuple(report.rewritten_at),
    )


def _run(
    rule: LowerToQnn,
    code: str,
    whole: str | None,
    filename: str,
    progress: Callable[[str], None] | None = None,
) -> RuleResult:
    """Run the rule on ``code`` (an excerpt of ``whole``, if given)."""
    if progress is not None:
        progress(f"parsing {len(code) / 1e6:.1f} MB" if len(code) >= 100_000 else "parsing")
    try:
        module = cst.parse_module(code)
    except cst.ParserSyntaxError as error:
        raise RewriteError(findings.DOES_NOT_PARSE.format(error=error.message)) from None
    return rule.run(module, filename=filename, module_text=whole, source=code, progress=progress)


def _has_global(text: str) -> bool:
    return "global" in text and GLOBAL.search(text) is not None  # the substring test is faster


def _on_excerpt(
    rule: LowerToQnn,
    code: str,
    excerpt: Excerpt,
    filename: str,
    progress: Callable[[str], None] | None = None,
) -> FileResult | None:
    """The result of running on the excerpt, or None when only the whole file will do."""
    try:
        outcome = _run(rule, excerpt.text, code, filename, progress)
    except RewriteError:
        # The file parses (cut() checked), so an excerpt that does not is a flaw of the cut:
        # the whole file decides, and reports its own syntax errors at their own lines.
        return None
    footprint = outcome.footprint
    if footprint.class_level_sites:
        return None  # class-level names of dropped methods would matter
    if footprint.removed_names or footprint.keys_read or footprint.watched:
        dropped = set(WORD.findall(excerpt.dropped))
        if footprint.removed_names & dropped:
            return None  # the dropped code may still use an import the rule removed
        if (footprint.keys_read | footprint.watched) & dropped:
            return None  # the dropped code may change a dict the rule read, or patch a pass
    if footprint.import_names & excerpt.dropped_methods:
        return None  # a dropped method binds a name a new import would take, in its class
    unfixable = tuple(
        sorted(u.moved(excerpt.original_line(u.line)) for u in outcome.report.unfixable)
    )
    if outcome.module is None:
        return FileResult(code, False, 0, unfixable, excerpt=True)
    new_excerpt = outcome.module.code
    new_code = splice(code, excerpt, new_excerpt)
    if new_code is None:
        return None
    # The excerpt compiled (cut() parsed the file) and every change lies in kept, whole
    # statements, so checking the rewritten excerpt checks the file.
    _check_output(excerpt.text, new_excerpt, new_excerpt, filename)
    at = tuple(
        (excerpt.original_line(line), column) for line, column in outcome.report.rewritten_at
    )
    return FileResult(
        new_code, new_code != code, outcome.report.rewritten, unfixable, True, rewritten_at=at
    )


def _check_output(old: str, new: str, new_libcst: str, filename: str) -> None:
    """Refuse output that does not parse; the input is then left as it was.

    Python's own compiler checks the new text whenever it accepts the old one; otherwise
    (syntax newer than this Python) libcst parses ``new_libcst`` (the rewritten excerpt, or the
    whole file) instead.
    """
    try:
        ast.parse(old, filename)
    except (SyntaxError, ValueError):
        try:
            cst.parse_module(new_libcst)
        except cst.ParserSyntaxError as error:
            raise RewriteError(
                findings.INVALID_OUTPUT.format(problem=f"does not parse ({error.message})")
            ) from None
        return
    try:
        compile(new, filename, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError) as error:
        line = getattr(error, "lineno", "?")
        raise RewriteError(
            findings.INVALID_OUTPUT.format(problem=f"does not compile (line {line}: {error})")
        ) from None
