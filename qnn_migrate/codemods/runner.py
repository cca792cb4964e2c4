"""The batch runner of ``qnn-migrate rewrite``: many files through the rule, with the result
cache and a pool of worker processes.

Files are read as bytes and searched for the old name first; only those that mention it are
looked up in the result cache (``codemods/cache.py``), and only the misses are decoded,
parsed and rewritten, in worker processes when there are several, largest first. What a run
does is one :class:`RunOptions`; what it found is one :class:`Outcome` per file, which
:func:`add_to` folds into the :class:`~qnn_migrate.codemods.output.RunReport` that
``codemods/output.py`` prints. Reading and writing files is ``codemods/files.py``; which files
a run takes, ``codemods/discovery.py``; the command line, ``codemods/cli.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from qnn_migrate.codemods import files, findings, noqa, notebook
from qnn_migrate.codemods.cache import Cache, Entry, content_digest
from qnn_migrate.codemods.deprecations import lower_to_qnn
from qnn_migrate.codemods.findings import Reason
from qnn_migrate.codemods.options import RuleOptions
from qnn_migrate.codemods.output import Mode, RunReport, Site
from qnn_migrate.codemods.reexports import imported_here, reexport_scan
from qnn_migrate.codemods.stat_index import StatIndex

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

    from qnn_migrate.codemods.engine import FileResult
# ast and concurrent.futures are imported where used: a warm run over an unchanged tree needs
# neither.

# The cheap test done on every file before any decoding or parsing.
NEEDLE = lower_to_qnn().name.encode()
# A file this long (bytes) takes seconds: what its rewrite is doing is told as it goes.
LONG_FILE = 250_000


@dataclass(frozen=True)
class RunOptions:
    """Everything a run does, from the command line (or a caller) to the workers.

    ``rule``: what every file is rewritten with; ``mode``: write, diff or check; ``jobs``:
    worker processes (0: one per CPU); ``cache_dir``: where the result cache lives (None: no
    cache); ``progress``: called once per file done (None: no progress shown);
    ``file_progress``: called with a file's path and what its rewrite is doing, for files of
    :data:`LONG_FILE` bytes or more (None: not told; a function the worker processes can
    import, as it is sent to them); ``roots``: the paths named on the command line, whose
    directories' clean files the cache remembers by their status
    (``codemods/stat_index.py``).
    """

    rule: RuleOptions
    mode: Mode = "write"
    jobs: int = 0
    cache_dir: str | None = None
    progress: Callable[[], None] | None = None
    file_progress: Callable[[str, str], None] | None = None
    roots: tuple[str, ...] = ()


class Outcome(NamedTuple):
    """What happened to one file."""

    path: str
    changed: bool = False
    sites: tuple[Site, ...] = ()
    diff: str = ""
    entry: Entry | None = None  # what the cache keeps of it; None: not to be cached
    digest: bytes = b""  # content_digest of the bytes the outcome is about
    new: bytes | None = None  # a notebook's new bytes (never cached; a .py's are in entry)


def _error(path: str, reason: Reason, line: int = 1, column: int = 1) -> Outcome:
    return Outcome(path, sites=(Site(path, line, column, "error", reason.text, reason.code),))


def _skipped(reason: Reason) -> Reason:
    return Reason(reason.code, f"{reason.text}; skipped")


# -- one file --------------------------------------------------------------------------------
def _syntax_error(text: str, path: str, fallback: Reason) -> Outcome:
    """A file that does not parse, located where Python's own parser puts the error."""
    import ast

    try:
        compile(text, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        line, column = error.lineno or 1, error.offset or 1
        return _error(path, _skipped(findings.DOES_NOT_PARSE.format(error=error.msg)), line, column)
    except ValueError:
        pass
    return _error(path, _skipped(fallback))  # newer syntax only libcst rejects


def _sites(path: str, result: FileResult, text: str) -> tuple[Site, ...]:
    """The engine's findings and rewritten calls as sites (1-based columns); a finding whose
    code a ``# noqa`` comment on its line names (or a bare ``# noqa``) is "suppressed"."""
    suppressions = noqa.parse(text) if result.unfixable else {}
    sites = [
        Site(
            path,
            u.line,
            u.column + 1,
            "suppressed"
            if noqa.suppresses(suppressions, u.line, u.code)
            else "info"
            if u.kind == "info"
            else "unfixable",
            u.reason,
            u.code,
        )
        for u in result.unfixable
    ]
    rewritten = findings.REWRITTEN
    sites += [
        Site(path, line, column + 1, "rewritten", rewritten.text, rewritten.code)
        for line, column in result.rewritten_at
    ]
    return tuple(sorted(sites, key=lambda s: (s.line, s.column)))


def process_text(
    data: bytes,
    path: str,
    rule: RuleOptions,
    mode: Mode,
    progress: Callable[[str], None] | None = None,
) -> tuple[Outcome, bytes | None]:
    """Rewrite one file's bytes; returns the outcome and the new bytes (None: unchanged)."""
    from qnn_migrate.codemods.engine import RewriteError, rewrite_code

    digest = content_digest(data)
    if NEEDLE not in data:
        return Outcome(path, digest=digest, entry=Entry(False, (), None)), None
    if path.endswith(notebook.SUFFIX):
        outcome = _process_notebook(data, path, rule, mode)
        return outcome, outcome.new
    try:
        text, encoding = files.decode(data)
    except ValueError as error:
        reason = findings.CANNOT_DECODE.format(error=error)
        outcome = _error(path, reason, getattr(error, "line", 1))
        return outcome._replace(digest=digest, entry=_entry(outcome, None)), None
    try:
        # The absolute path lets the rule recognise ExecuTorch's own re-exporting module.
        filename = path if path == "-" else os.path.abspath(path)
        result = rewrite_code(text, rule, filename=filename, progress=progress)
    except RewriteError as error:
        outcome = _syntax_error(text, path, error.reason)
        return outcome._replace(digest=digest, entry=_entry(outcome, None)), None
    except Exception as error:  # a bug in the rule must not stop the run; never cached
        what = f"{type(error).__name__}: {error}"
        return _error(path, findings.INTERNAL_ERROR.format(error=what)), None
    new = result.code.encode(encoding) if result.changed else None
    outcome = Outcome(path, result.changed, _sites(path, result, text), digest=digest)
    outcome = outcome._replace(entry=_entry(outcome, new))
    if new is not None and mode == "diff":
        outcome = outcome._replace(diff=files.unified_diff(path, text, result.code))
    return outcome, new


def _process_notebook(data: bytes, path: str, rule: RuleOptions, mode: Mode) -> Outcome:
    """A Jupyter notebook (``codemods/notebook.py``); never cached (the cache keeps no
    cells). The new bytes travel in the outcome's entry-less ``new`` field."""
    from qnn_migrate.codemods.engine import RewriteError, rewrite_code

    filename = path if path == "-" else os.path.abspath(path)

    def rule_on(text: str) -> tuple[str, bool, list[tuple[int, int, str, str, str]]]:
        try:
            result = rewrite_code(text, rule, filename=filename)
        except RewriteError as error:
            raise ValueError(error.reason) from None
        found = [
            (u.line, u.column, "info" if u.kind == "info" else "unfixable", u.reason, u.code)
            for u in result.unfixable
        ]
        found += [
            (line, column, "rewritten", findings.REWRITTEN.text, findings.REWRITTEN.code)
            for line, column in result.rewritten_at
        ]
        return result.code, result.changed, found

    result = notebook.rewrite(
        data, path, rule_on, diff=files.unified_diff if mode == "diff" else None
    )
    suppressions: dict[int, noqa.Suppressions] = {}
    sites = []
    for f in result.findings:
        kind = f.kind
        if kind in ("unfixable", "info") and f.cell:
            if f.cell not in suppressions:
                suppressions[f.cell] = noqa.parse(_cell_text(data, f.cell))
            if noqa.suppresses(suppressions[f.cell], f.line, f.code):
                kind = "suppressed"
        sites.append(Site(path, f.line, f.column + 1, kind, f.reason, f.code, f.cell))  # type: ignore[arg-type]
    sites.sort(key=lambda s: (s.cell, s.line, s.column))
    return Outcome(
        path,
        result.new is not None,
        tuple(sites),
        result.diff,
        None,
        content_digest(data),
        result.new,
    )


def _cell_text(data: bytes, number: int) -> str:
    """The source of code cell ``number`` (from 1) of a notebook that parsed once already."""
    import json

    cells = [c for c in json.loads(data)["cells"] if c.get("cell_type") == "code"]
    source = cells[number - 1].get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _entry(outcome: Outcome, new: bytes | None) -> Entry:
    return Entry(
        outcome.changed,
        tuple((s.line, s.column, s.kind, s.reason, s.code) for s in outcome.sites),
        new,
    )


def _from_entry(path: str, entry: Entry, data: bytes, mode: Mode) -> tuple[Outcome, bytes | None]:
    """The outcome a cache entry records for ``data`` read from ``path``."""
    sites = tuple(
        Site(path, line, column, kind, reason, code)  # type: ignore[arg-type]
        for line, column, kind, reason, code in entry.sites
    )
    outcome = Outcome(path, entry.changed, sites, digest=content_digest(data), entry=entry)
    if entry.new is not None and mode == "diff":
        text, encoding = files.decode(data)
        outcome = outcome._replace(diff=files.unified_diff(path, text, entry.new.decode(encoding)))
    return outcome, entry.new


@contextmanager
def _collected_after() -> Iterator[None]:
    """No cyclic garbage collection while one file is rewritten, one right after.

    Parsing and scope analysis allocate a few hundred thousand objects, all alive until the
    file is done: with the default threshold the collector ran thousands of times over them
    (a sixth of the run) and found nothing. The garbage cycles (libcst's scope graphs) are
    all there once the file is done; a collection of the young generation then frees them.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
            gc.collect(0)


def _write(path: str, outcome: Outcome, new: bytes | None, stat: os.stat_result) -> Outcome:
    if new is None:
        return outcome
    try:
        files.write_atomically(path, new, stat)
    except OSError as error:
        reason = findings.CANNOT_WRITE.format(error=error.strerror or error)
        return outcome._replace(
            changed=False, sites=(*outcome.sites, *_error(path, reason).sites), entry=None
        )
    return outcome


def process_file(
    path: str,
    rule: RuleOptions,
    mode: Mode,
    progress: Callable[[str, str], None] | None = None,
) -> Outcome:
    """Read, rewrite and (in write mode) replace one file; ``progress`` is told what the
    rewrite is doing when the file is long."""
    try:
        data, stat = files.read(path)
    except OSError as error:
        return _error(path, _cannot_read(error))
    tell = functools.partial(progress, path) if progress and len(data) >= LONG_FILE else None
    with _collected_after():
        outcome, new = process_text(data, path, rule, mode, tell)
    return _write(path, outcome, new, stat) if mode == "write" else outcome


def process_stdin(
    data: bytes, options: RunOptions, name: str = "-"
) -> tuple[Outcome, bytes | None]:
    """``-``: the outcome for standard input's bytes and the rewritten bytes (None:
    unchanged). ``name``: what ``--stdin-filename`` calls it (the report and the rule use it).
    Nothing is written: the caller prints the code."""
    tell = options.file_progress
    long = tell is not None and len(data) >= LONG_FILE
    with _collected_after():
        mode: Mode = "diff" if options.mode == "diff" else "check"
        return process_text(
            data, name, options.rule, mode, functools.partial(tell, name) if tell and long else None
        )


def _cannot_read(error: OSError) -> Reason:
    if isinstance(error, files.NotARegularFile):
        return findings.NOT_A_FILE.format(what=error.what)
    return findings.CANNOT_READ.format(error=error.strerror or error)


# -- the run ---------------------------------------------------------------------------------
@contextmanager
def _frozen_imports() -> Iterator[None]:
    """For the run, the objects alive now (the imported modules, libcst's among them) are
    frozen: no collection examines them again, and forked workers share their memory pages
    instead of copying them when a collection would write to them."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _context(path: str, rule: RuleOptions) -> str:
    """What the run knows about ``path`` from the other files, for the cache key."""
    return "imported-from" if imported_here(os.path.abspath(path), rule.imported_from) else ""


def run(paths: Sequence[str], options: RunOptions) -> list[Outcome]:
    """Scan every file, rewrite those that mention the old name; outcomes in input order.

    The scan (read, search the bytes) is cheap and done here; then the files that mention
    the name are scanned for the modules they import it from (``codemods/reexports.py``),
    looked up in the cache, and the misses go to worker processes, largest first, so the
    longest one does not start last.
    """
    outcomes: dict[str, Outcome | Future[Outcome]] = {}
    workers = options.jobs or os.cpu_count() or 1
    tick = options.progress or (lambda: None)
    mode = options.mode
    cache = (
        None
        if options.cache_dir is None
        else Cache(
            options.cache_dir,
            target=options.rule.target,
            line_length=options.rule.line_length,
            flow=options.rule.flow,
        )
    )
    index = None if cache is None else StatIndex.for_run(cache.directory, cache.salt, options.roots)
    mentioning: dict[str, tuple[bytes, os.stat_result]] = {}
    pool: ProcessPoolExecutor | None = None
    try:
        for path in paths:
            if index is not None and index.unchanged(path):
                outcomes[path] = Outcome(path)  # as it was when it was read, clean
                tick()
                continue
            try:
                data, stat = files.read(path)
            except OSError as error:
                outcomes[path] = _error(path, _cannot_read(error))
                tick()
                continue
            if NEEDLE not in data:
                outcomes[path] = Outcome(path)
                if index is not None:
                    index.found_clean(path, stat)
                tick()
            else:
                mentioning[path] = (data, stat)
        scanned = reexport_scan({os.path.abspath(p): data for p, (data, _) in mentioning.items()})
        rule = dataclasses.replace(options.rule, imported_from=scanned)
        sizes: dict[str, int] = {}
        for path, (data, stat) in mentioning.items():
            key = None if cache is None else cache.key(data, path, _context(path, rule))
            entry = None if cache is None or key is None else cache.get(key)
            if entry is None:
                sizes[path] = len(data)
                continue
            outcome, new = _from_entry(path, entry, data, mode)
            outcomes[path] = _write(path, outcome, new, stat) if mode == "write" else outcome
            tick()
        mentioning.clear()  # the misses are read again by the workers
        matches = sorted(sizes, key=lambda p: -sizes[p])
        if matches:
            import qnn_migrate.codemods.engine  # noqa: F401 - imported once here, inherited by workers
        with _frozen_imports():
            if workers > 1 and len(matches) > 1:
                from concurrent.futures import ProcessPoolExecutor

                pool = ProcessPoolExecutor(max_workers=min(workers, len(matches)))
                for path in matches:
                    outcomes[path] = pool.submit(
                        process_file, path, rule, mode, options.file_progress
                    )
            else:
                for path in matches:
                    outcomes[path] = process_file(path, rule, mode, options.file_progress)
                    tick()
            result = []
            for path in paths:
                item = outcomes[path]
                if not isinstance(item, Outcome):
                    item = item.result()
                    tick()
                if cache is not None and path in sizes and item.entry is not None:
                    cache.put(
                        cache.key_of_digest(item.digest, path, _context(path, rule)), item.entry
                    )
                result.append(item)
        if index is not None:
            index.save()
        return result
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)


def add_to(report: RunReport, outcome: Outcome) -> None:
    """Count ``outcome`` in ``report``."""
    report.scanned += 1
    if outcome.changed:
        report.changed.append(outcome.path)
    report.sites += outcome.sites


def path_errors(report: RunReport, errors: Sequence[tuple[str, Reason]]) -> None:
    """The paths the file walk could not take, as errors of the run."""
    for path, reason in errors:
        report.sites.append(Site(path, 1, 1, "error", reason.text, reason.code))


__all__ = [
    "NEEDLE",
    "Outcome",
    "RunOptions",
    "add_to",
    "path_errors",
    "process_file",
    "process_stdin",
    "process_text",
    "run",
]
