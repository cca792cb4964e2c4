"""Run the rule on one file's text and check what it produced. Pure: text in, result out.

The CLI reads and writes files; this module decodes nothing and touches no disk. The output
of a rewrite is parsed again (by Python's own compiler, or by libcst for syntax newer than this
Python) so that a file is never written with code that does not parse.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import libcst as cst

from qnn_migrate.codemods.deprecations import lower_to_qnn
from qnn_migrate.codemods.excerpt import Excerpt, cut, splice
from qnn_migrate.codemods.findings import Unfixable
from qnn_migrate.codemods.rules.lower_to_qnn import DEFAULT_TARGET, LowerToQnn, NothingToRewrite

WORD = re.compile(r"\w+")
# A `global` statement in dropped code could rebind a module-level name the rule resolves.
GLOBAL = re.compile(r"\bglobal\b")


class RewriteError(Exception):
    """A file could not be processed; the message says why and what to do."""


@dataclass(frozen=True)
class FileResult:
    """The outcome for one file's text."""

    code: str  # the new text (the old text when nothing changed)
    changed: bool
    sites_rewritten: int
    unfixable: tuple[Unfixable, ...]
    excerpt: bool = False  # the rule ran on an excerpt of the file (codemods/excerpt.py)


def rewrite_code(
    code: str,
    *,
    target: str = DEFAULT_TARGET,
    filename: str = "<string>",
    excerpts: bool = True,
) -> FileResult:
    """Rewrite ``code`` (a whole module) and return the result; raises :class:`RewriteError`.

    ``excerpts``: run the rule on an excerpt of the file when that gives the same result
    (see ``codemods/excerpt.py``); False always runs it on the whole file.
    """
    name = lower_to_qnn().name
    if name not in code:
        return FileResult(code, False, 0, ())
    excerpt = cut(code, name) if excerpts else None
    if excerpt is not None and not _has_global(excerpt.dropped):
        result = _on_excerpt(code, excerpt, target, filename)
        if result is not None:
            return result
    command, new_code = _run(code, None, target, filename)
    if new_code is None:
        return FileResult(code, False, 0, tuple(command.report.unfixable))
    _check_output(code, new_code, new_code, filename)
    return FileResult(
        new_code, new_code != code, command.report.rewritten, tuple(command.report.unfixable)
    )


def _run(code: str, whole: str | None, target: str, filename: str) -> tuple[LowerToQnn, str | None]:
    """Run the rule on ``code`` (an excerpt of ``whole``, if given); the new code, or None
    when the rule skipped the file."""
    try:
        module = cst.parse_module(code)
    except cst.ParserSyntaxError as error:
        raise RewriteError(
            f"does not parse ({error.message}); fix the syntax error, then run again"
        ) from None
    command = LowerToQnn(target, filename=filename, module_text=whole, source=code)
    try:
        return command, command.transform(module).code
    except NothingToRewrite:
        return command, None


def _has_global(text: str) -> bool:
    return "global" in text and GLOBAL.search(text) is not None  # the substring test is faster


def _on_excerpt(code: str, excerpt: Excerpt, target: str, filename: str) -> FileResult | None:
    """The result of running on the excerpt, or None when only the whole file will do."""
    command, new_excerpt = _run(excerpt.text, code, target, filename)
    if command.class_level_sites:
        return None  # class-level names of dropped methods would matter
    if command.removed_names and command.removed_names & set(WORD.findall(excerpt.dropped)):
        return None  # the dropped code may still use an import the rule removed
    if command.import_names & excerpt.dropped_methods:
        return None  # a dropped method binds a name a new import would take, in its class
    unfixable = tuple(
        sorted(Unfixable(excerpt.original_line(u.line), u.reason) for u in command.report.unfixable)
    )
    if new_excerpt is None:
        return FileResult(code, False, 0, unfixable, excerpt=True)
    new_code = splice(code, excerpt, new_excerpt)
    if new_code is None:
        return None
    # The excerpt compiled (cut() parsed the file) and every change lies in kept, whole
    # statements, so checking the rewritten excerpt checks the file.
    _check_output(excerpt.text, new_excerpt, new_excerpt, filename)
    return FileResult(new_code, new_code != code, command.report.rewritten, unfixable, excerpt=True)


def _check_output(old: str, new: str, new_libcst: str, filename: str) -> None:
    """Refuse output that does not parse; the input is then left as it was.

    Python's own compiler checks the new text whenever it accepts the old one; otherwise
    (syntax newer than this Python) libcst parses ``new_libcst`` (the rewritten excerpt, or the
    whole file) instead.
    """
    advice = "the file was left unchanged; please report this with the file attached"
    try:
        ast.parse(old, filename)
    except (SyntaxError, ValueError):
        try:
            cst.parse_module(new_libcst)
        except cst.ParserSyntaxError as error:
            raise RewriteError(
                f"internal error: the rewrite does not parse ({error.message}); {advice}"
            ) from None
        return
    try:
        compile(new, filename, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError) as error:
        line = getattr(error, "lineno", "?")
        raise RewriteError(
            f"internal error: the rewrite does not compile (line {line}: {error}); {advice}"
        ) from None
