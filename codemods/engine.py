"""Run the rule on one file's text and check what it produced. Pure: text in, result out.

The CLI reads and writes files; this module decodes nothing and touches no disk. The output
of a rewrite is parsed again (libcst, then Python's own compiler when the input compiled) so
that a file is never written with code that does not parse.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst
from libcst.codemod import CodemodContext, SkipFile

from codemods.deprecations import lower_to_qnn
from codemods.findings import Unfixable
from codemods.rules.lower_to_qnn import DEFAULT_TARGET, RewriteLowerToQnn


class RewriteError(Exception):
    """A file could not be processed; the message says why and what to do."""


@dataclass(frozen=True)
class FileResult:
    """The outcome for one file's text."""

    code: str  # the new text (the old text when nothing changed)
    changed: bool
    sites_rewritten: int
    unfixable: tuple[Unfixable, ...]


def mentions(data: bytes) -> bool:
    """The cheap test done before any parsing: does the file mention the old name at all?"""
    return lower_to_qnn().name.encode() in data


def rewrite_code(
    code: str, *, target: str = DEFAULT_TARGET, filename: str = "<string>"
) -> FileResult:
    """Rewrite ``code`` (a whole module) and return the result; raises :class:`RewriteError`."""
    if lower_to_qnn().name not in code:
        return FileResult(code, False, 0, ())
    try:
        module = cst.parse_module(code)
    except cst.ParserSyntaxError as error:
        raise RewriteError(
            f"does not parse (line {error.raw_line}, column {error.raw_column}): "
            f"{error.message}; fix the syntax error, then run again"
        ) from None
    command = RewriteLowerToQnn(
        CodemodContext(filename=filename), target=target, mention_checked=True
    )
    try:
        new_module = command.transform_module(module)
    except SkipFile:
        return FileResult(code, False, 0, tuple(command.report.unfixable))
    new_code = new_module.code
    if new_code != code:
        _check_output(code, new_code, filename)
    return FileResult(
        new_code, new_code != code, command.report.rewritten, tuple(command.report.unfixable)
    )


def _check_output(old: str, new: str, filename: str) -> None:
    """Refuse output that does not parse; the input is then left as it was."""
    advice = "the file was left unchanged; please report this with the file attached"
    try:
        cst.parse_module(new)
    except cst.ParserSyntaxError as error:
        raise RewriteError(
            f"internal error: the rewrite does not parse ({error.message}); {advice}"
        ) from None
    try:
        ast.parse(old, filename)
    except SyntaxError:
        return  # newer syntax than this Python knows: libcst's parse above is all we can do
    try:
        compile(new, filename, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        raise RewriteError(
            f"internal error: the rewrite does not compile (line {error.lineno}: {error.msg}); "
            f"{advice}"
        ) from None
