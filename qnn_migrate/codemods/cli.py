"""``qnn-migrate rewrite``: files in, files out, diffs, the report and the exit code.

The only module of ``codemods`` that touches the disk, the terminal or a process pool. Files
are read as bytes and searched for the old name first; only those that mention it are looked
up in the result cache (``codemods/cache.py``), and only the misses are decoded, parsed and
rewritten, in worker processes when there are several. Writes are atomic (temporary file +
rename) and keep the file's mode, encoding, BOM and newlines. Which files a run takes is
``codemods/discovery.py``; the ``[tool.qnn-migrate]`` table, ``codemods/config.py``; what is
printed, ``codemods/output.py``.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

import click

from qnn_migrate.codemods import config as configuration
from qnn_migrate.codemods import output
from qnn_migrate.codemods.cache import Cache, Entry, content_digest, default_directory
from qnn_migrate.codemods.deprecations import (
    DEFAULT_FLOW,
    FLOWS,
    default_target,
    lower_to_qnn,
    target_names,
)
from qnn_migrate.codemods.discovery import DEFAULT_EXCLUDES, Selection, discover
from qnn_migrate.codemods.output import Mode, RunReport, Site
from qnn_migrate.codemods.reexports import imported_here, reexport_scan

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

    from qnn_migrate.codemods.engine import FileResult
# decoding (tokenize), line_diff, tempfile, ast and concurrent.futures are imported where
# used: a warm run over an unchanged tree needs none of them, and every millisecond of
# start-up counts there.

__all__ = ["DEFAULT_EXCLUDES", "rewrite"]

EXIT_OK = 0
EXIT_CHANGES_NEEDED = 1
EXIT_USAGE = 2
EXIT_FILE_ERRORS = 3

PROGRESS_MIN_FILES = 200  # smaller trees finish before a bar would be useful
# The cheap test done on every file before any decoding or parsing.
_NEEDLE = lower_to_qnn().name.encode()
# The reason of a rewritten site (the same in every mode, so a cached result serves all).
REWRITTEN = f"{lower_to_qnn().name} -> {lower_to_qnn().replacement}"

EPILOG = """\b
Exit codes (the highest that applies wins: 3 over 1 over 0):
  0  done (with --check: nothing to change)
  1  --check only: some files would change
  2  usage error (bad option, missing path, bad [tool.qnn-migrate])
  3  some files could not be processed (unreadable, not UTF-8 or their
     declared encoding, not valid Python, a directory that cannot be
     read, a symbolic link loop); they were left untouched, every other
     file was processed

\b
Configuration: [tool.qnn-migrate] in the nearest pyproject.toml above
the paths (target, exclude, extend-exclude, jobs, respect-gitignore,
force-exclude); flags win over it. Also: python -m qnn_migrate rewrite.
Shell completion: eval "$(_QNN_MIGRATE_COMPLETE=bash_source qnn-migrate)".
"""


class ConfigurationError(click.ClickException):
    """A bad ``[tool.qnn-migrate]`` table: a usage error, without the usage text."""

    exit_code = EXIT_USAGE


class Outcome(NamedTuple):
    """What happened to one file."""

    path: str
    changed: bool = False
    sites: tuple[Site, ...] = ()
    diff: str = ""
    entry: Entry | None = None  # what the cache keeps of it; None: not to be cached
    digest: bytes = b""  # content_digest of the bytes the outcome is about


def _error(path: str, message: str, line: int = 1, column: int = 1) -> Outcome:
    return Outcome(path, sites=(Site(path, line, column, "error", message),))


# -- files in --------------------------------------------------------------------------------
def decode(data: bytes) -> tuple[str, str]:
    """The text and the encoding of a Python source file (``codemods/decoding.py``); a
    ``SourceDecodeError`` (a ValueError with the line to report) when it cannot be read."""
    from qnn_migrate.codemods.decoding import decode_source

    return decode_source(data)


# -- files out -------------------------------------------------------------------------------
def write_atomically(path: str, data: bytes, expected: os.stat_result) -> None:
    """Replace ``path`` by ``data`` in one rename, keeping its mode."""
    import tempfile

    now = os.stat(path)
    if (now.st_mtime_ns, now.st_size) != (expected.st_mtime_ns, expected.st_size):
        raise OSError("changed on disk while it was being rewritten; run again")
    directory = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(prefix=".qnn-migrate-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, expected.st_mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def unified_diff(path: str, old: str, new: str) -> str:
    """A ``git diff``-style unified diff of one file (bounded work: ``line_diff``)."""
    from qnn_migrate.codemods.line_diff import unified_lines

    lines = unified_lines(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return "".join(line if line.endswith(("\n", "\r")) else line + "\n" for line in lines)


# -- one file --------------------------------------------------------------------------------
def _syntax_error(text: str, path: str, fallback: str) -> Outcome:
    """A file that does not parse, located where Python's own parser puts the error."""
    import ast

    try:
        compile(text, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        line, column = error.lineno or 1, error.offset or 1
        message = f"does not parse ({error.msg}); fix the syntax error, then run again; skipped"
        return _error(path, message, line, column)
    except ValueError:
        pass
    return _error(path, f"{fallback}; skipped")  # newer syntax only libcst rejects


def _sites(path: str, result: FileResult) -> tuple[Site, ...]:
    """The engine's findings and rewritten calls as sites (1-based columns)."""
    sites = [
        Site(
            path,
            u.line,
            u.column + 1,
            "info" if u.kind == "info" else "unfixable",
            u.reason,
            u.code,
        )
        for u in result.unfixable
    ]
    sites += [
        Site(path, line, column + 1, "rewritten", REWRITTEN) for line, column in result.rewritten_at
    ]
    return tuple(sorted(sites, key=lambda s: (s.line, s.column)))


class Settings(NamedTuple):
    """What every file of a run is rewritten with (plain values: sent to the workers)."""

    target: str
    line_length: int
    flow: str = DEFAULT_FLOW
    imported_from: frozenset[str] = frozenset()  # modules other files import the name from


def process_text(
    data: bytes, path: str, settings: Settings, mode: Mode
) -> tuple[Outcome, bytes | None]:
    """Rewrite one file's bytes; returns the outcome and the new bytes (None: unchanged)."""
    from qnn_migrate.codemods.engine import RewriteError, rewrite_code, rule_options

    digest = content_digest(data)
    if _NEEDLE not in data:
        return Outcome(path, digest=digest, entry=Entry(False, (), None)), None
    try:
        text, encoding = decode(data)
    except ValueError as error:
        outcome = _error(path, f"{error}; skipped", getattr(error, "line", 1))
        return outcome._replace(digest=digest, entry=_entry(outcome, None)), None
    try:
        # The absolute path lets the rule recognise ExecuTorch's own re-exporting module.
        filename = path if path == "-" else os.path.abspath(path)
        options = rule_options(
            settings.target,
            line_length=settings.line_length,
            flow=settings.flow,
            imported_from=settings.imported_from,
        )
        result = rewrite_code(text, options, filename=filename)
    except RewriteError as error:
        outcome = _syntax_error(text, path, str(error))
        return outcome._replace(digest=digest, entry=_entry(outcome, None)), None
    except Exception as error:  # a bug in the rule must not stop the run; never cached
        message = f"internal error ({type(error).__name__}: {error}); skipped, please report it"
        return _error(path, message), None
    new = result.code.encode(encoding) if result.changed else None
    outcome = Outcome(path, result.changed, _sites(path, result), digest=digest)
    outcome = outcome._replace(entry=_entry(outcome, new))
    if new is not None and mode == "diff":
        outcome = outcome._replace(diff=unified_diff(path, text, result.code))
    return outcome, new


def _entry(outcome: Outcome, new: bytes | None) -> Entry:
    return Entry(
        outcome.changed,
        tuple((s.line, s.column, s.kind, s.reason, s.group) for s in outcome.sites),
        new,
    )


def _from_entry(path: str, entry: Entry, data: bytes, mode: Mode) -> tuple[Outcome, bytes | None]:
    """The outcome a cache entry records for ``data`` read from ``path``."""
    sites = tuple(
        Site(path, line, column, kind, reason, group)  # type: ignore[arg-type]
        for line, column, kind, reason, group in entry.sites
    )
    outcome = Outcome(path, entry.changed, sites, digest=content_digest(data), entry=entry)
    if entry.new is not None and mode == "diff":
        text, encoding = decode(data)
        outcome = outcome._replace(diff=unified_diff(path, text, entry.new.decode(encoding)))
    return outcome, entry.new


def read_file(path: str) -> tuple[bytes, os.stat_result]:
    """The bytes of ``path`` and its status when read."""
    with open(path, "rb") as handle:
        return handle.read(), os.fstat(handle.fileno())


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
        write_atomically(path, new, stat)
    except OSError as error:
        reason = error.strerror or str(error)
        return outcome._replace(
            changed=False,
            sites=(
                *outcome.sites,
                *_error(path, f"cannot be written ({reason}); left unchanged").sites,
            ),
            entry=None,
        )
    return outcome


def process_file(path: str, settings: Settings, mode: Mode) -> Outcome:
    """Read, rewrite and (in write mode) replace one file."""
    try:
        data, stat = read_file(path)
    except OSError as error:
        return _error(path, f"cannot be read ({error.strerror or error}); skipped")
    with _collected_after():
        outcome, new = process_text(data, path, settings, mode)
    return _write(path, outcome, new, stat) if mode == "write" else outcome


def _scan(path: str) -> tuple[str, int | None, str | None]:
    """(path, size if it mentions the old name else None, read error); no decoding, no parsing."""
    try:
        data = _read_bytes(path)
    except OSError as error:
        return path, None, f"cannot be read ({error.strerror or error}); skipped"
    return path, (len(data) if _NEEDLE in data else None), None


def _read_bytes(path: str) -> bytes:
    """The file's bytes, by plain system calls: a third less time than ``open().read()``,
    which counts when every file of a tree is read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


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


class _Progress:
    def __init__(self, bar: Any) -> None:
        self.bar = bar

    def step(self) -> None:
        if self.bar is not None:
            self.bar.update(1)


def _read(path: str) -> tuple[bytes, os.stat_result | None]:
    """The file's bytes, and its status if it mentions the old name; plain system calls,
    a third less time than ``open().read()``, which counts when every file is read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        data = b"".join(chunks)
        return data, (os.fstat(fd) if _NEEDLE in data else None)
    finally:
        os.close(fd)


def _context(path: str, settings: Settings) -> str:
    """What the run knows about ``path`` from the other files, for the cache key."""
    return "imported-from" if imported_here(os.path.abspath(path), settings.imported_from) else ""


def run(
    files: Sequence[str],
    *,
    settings: Settings,
    mode: Mode,
    jobs: int,
    progress: bool,
    cache: Cache | None = None,
) -> list[Outcome]:
    """Scan every file, rewrite those that mention the old name; outcomes in input order.

    The scan (read, search the bytes) is cheap and done here; then the files that mention
    the name are scanned for the modules they import it from (``codemods/reexports.py``),
    looked up in ``cache``, and the misses go to worker processes, largest first, so the
    longest one does not start last.
    """
    outcomes: dict[str, Outcome | Future[Outcome]] = {}
    workers = jobs or os.cpu_count() or 1
    bar = (
        click.progressbar(length=len(files), label="qnn-migrate rewrite", file=sys.stderr)
        if progress
        else None
    )
    tick = _Progress(bar)
    mentioning: dict[str, tuple[bytes, os.stat_result]] = {}
    pool: ProcessPoolExecutor | None = None
    try:
        for path in files:
            try:
                data, stat = _read(path)
            except OSError as error:
                outcomes[path] = _error(
                    path, f"cannot be read ({error.strerror or error}); skipped"
                )
                tick.step()
                continue
            if stat is None:
                outcomes[path] = Outcome(path)
                tick.step()
            else:
                mentioning[path] = (data, stat)
        scanned = reexport_scan({os.path.abspath(p): data for p, (data, _) in mentioning.items()})
        settings = settings._replace(imported_from=scanned)
        sizes: dict[str, int] = {}
        for path, (data, stat) in mentioning.items():
            key = None if cache is None else cache.key(data, path, _context(path, settings))
            entry = None if cache is None or key is None else cache.get(key)
            if entry is None:
                sizes[path] = len(data)
                continue
            outcome, new = _from_entry(path, entry, data, mode)
            outcomes[path] = _write(path, outcome, new, stat) if mode == "write" else outcome
            tick.step()
        mentioning.clear()  # the misses are read again by the workers
        matches = sorted(sizes, key=lambda p: -sizes[p])
        if matches:
            import qnn_migrate.codemods.engine  # noqa: F401 - imported once here, inherited by workers
        with _frozen_imports():
            if workers > 1 and len(matches) > 1:
                from concurrent.futures import ProcessPoolExecutor

                pool = ProcessPoolExecutor(max_workers=min(workers, len(matches)))
                for path in matches:
                    outcomes[path] = pool.submit(process_file, path, settings, mode)
            else:
                for path in matches:
                    outcomes[path] = process_file(path, settings, mode)
                    tick.step()
            result = []
            for path in files:
                item = outcomes[path]
                if not isinstance(item, Outcome):
                    item = item.result()
                    tick.step()
                if cache is not None and path in sizes and item.entry is not None:
                    context = _context(path, settings)
                    cache.put(cache.key_of_digest(item.digest, path, context), item.entry)
                result.append(item)
        return result
    finally:
        if bar is not None:
            bar.render_finish()
        if pool is not None:
            pool.shutdown(cancel_futures=True)


def _stdin(settings: Settings, mode: Mode) -> tuple[Outcome, bytes, bytes | None]:
    """``-``: the outcome for standard input, its bytes and the rewritten bytes."""
    data = sys.stdin.buffer.read()
    with _collected_after():
        outcome, new = process_text(data, "-", settings, "diff" if mode == "diff" else "check")
    return outcome, data, new


@click.command(
    "rewrite",
    epilog=EPILOG,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--diff", "show_diff", is_flag=True, help="Print a unified diff; write nothing.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if any file would change.")
@click.option(
    "--output-format",
    type=click.Choice(output.FORMATS),
    default=None,
    help="text (default): files, errors and counts on stderr. json: one record per site "
    "(path, line, column, kind, reason, target) on stdout. github: workflow commands on "
    "stdout, shown as annotations on a pull request. Never changes what is written.",
)
@click.option("--json", "as_json", is_flag=True, help="Shorthand for --output-format json.")
@click.option(
    "-q",
    "--quiet",
    count=True,
    help="Text output: -q the summary only, -qq nothing (the exit code still tells).",
)
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="Text output: every site left for you (path:line:col), not a count per reason.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=0),
    default=None,
    help="Worker processes for the files that need rewriting [default: jobs from the "
    "config, else 0: one per CPU].",
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="GLOB",
    help="Skip files and directories whose name, or path relative to the project root, "
    "matches; repeatable. Replaces the config's exclude and the built-in list (.git, "
    "virtualenvs, build, dist, caches, site-packages, ...).",
)
@click.option(
    "--extend-exclude",
    multiple=True,
    metavar="GLOB",
    help="Like --exclude, but added to the config's exclude and the built-in list.",
)
@click.option(
    "--respect-gitignore/--no-respect-gitignore",
    default=None,
    help="Skip what .gitignore files and .git/info/exclude ignore [default: on].",
)
@click.option(
    "--force-exclude/--no-force-exclude",
    default=None,
    help="Apply the exclusions and ignore files to files named on the command line too "
    "(the pre-commit hooks pass it) [default: off].",
)
@click.option(
    "--target",
    type=click.Choice(target_names()),
    default=None,
    help="How the replacement is written [default: target from the config, else "
    + default_target()
    + "]. "
    + " ".join(f"{t.name}: {t.help}" for t in lower_to_qnn().targets),
)
@click.option(
    "--flow",
    type=click.Choice(FLOWS),
    default=DEFAULT_FLOW,
    show_default=True,
    help="qnn-passes target: canonical writes your own torch.export.export(..., strict=True) "
    "wherever the source shows the module's shape and whether inputs and dynamic_shapes are "
    "per method (qnn_export elsewhere); qnn-export always calls qnn_passes.qnn_export.",
)
@click.option(
    "--cache/--no-cache",
    "use_cache",
    default=True,
    help="Reuse the results of files unchanged since an earlier run [default: on].",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False),
    default=None,
    envvar="QNN_MIGRATE_CACHE_DIR",
    help="Where the cache lives [default: $XDG_CACHE_HOME/qnn-migrate or ~/.cache/qnn-migrate; "
    "env: QNN_MIGRATE_CACHE_DIR].",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress bar on stderr (default: when stderr is a terminal and the tree is large).",
)
def rewrite(
    paths: tuple[str, ...],
    show_diff: bool,
    check: bool,
    output_format: str | None,
    as_json: bool,
    quiet: int,
    verbose: int,
    jobs: int | None,
    exclude: tuple[str, ...],
    extend_exclude: tuple[str, ...],
    respect_gitignore: bool | None,
    force_exclude: bool | None,
    target: str | None,
    flow: str,
    use_cache: bool,
    cache_dir: str | None,
    progress: bool | None,
) -> None:
    """Rewrite to_edge_transform_and_lower_to_qnn calls to to_edge_transform_and_lower.

    PATH is a file or a directory (searched for *.py), or - to rewrite standard input to
    standard output. Each file rewritten (or, with --check, that would be) is named; sites
    that cannot be rewritten safely are left alone and counted per reason (-v lists each as
    path:line:col: reason).
    """
    if as_json and output_format not in (None, "json"):
        raise click.UsageError(f"--json and --output-format {output_format} disagree; use one")
    fmt = "json" if as_json else output_format or "text"
    if show_diff and fmt != "text":
        raise click.UsageError(f"--diff and --output-format {fmt} both print to stdout; use one")
    mode: Mode = "diff" if show_diff else "check" if check else "write"
    if "-" in paths and len(paths) > 1:
        raise click.UsageError("- (standard input) cannot be combined with other paths")
    if paths == ("-",) and mode == "write" and fmt != "text":
        # Both would go to stdout; printing only the report would lose the code, silently.
        raise click.UsageError(
            f"- (standard input) prints the rewritten code on stdout, where --output-format "
            f"{fmt} prints its report; use one: drop --output-format for the code (the report "
            f"goes to stderr as text), add --check for the {fmt} report alone, or pass a file "
            f"path to rewrite it in place and get the {fmt} report"
        )
    missing = [p for p in paths if p != "-" and not os.path.lexists(p)]
    if missing:
        raise click.UsageError(f"no such file or directory: {', '.join(missing)}")
    try:
        found_config = configuration.find(configuration.start_directory(paths), target_names())
    except configuration.ConfigError as error:
        raise ConfigurationError(str(error)) from None
    settings = Settings(
        target=target or found_config.target or default_target(),
        line_length=found_config.line_length,
        flow=flow,
    )
    report = RunReport(mode=mode, target=settings.target)
    if paths == ("-",):
        outcome, data, new = _stdin(settings, mode)
        _add(report, outcome)
        if mode == "write" and fmt == "text":
            sys.stdout.buffer.write(data if new is None else new)
        elif mode == "diff":
            sys.stdout.write(outcome.diff)
    else:
        selection = Selection(
            root=found_config.root,
            exclude=exclude
            or (DEFAULT_EXCLUDES if found_config.exclude is None else found_config.exclude),
            extend_exclude=(*found_config.extend_exclude, *extend_exclude),
            respect_gitignore=_first(respect_gitignore, found_config.respect_gitignore, True),
            force_exclude=_first(force_exclude, found_config.force_exclude, False),
        )
        found = discover(paths, selection)
        report.links = found.links
        for path, message in found.errors:
            report.sites.append(Site(path, 1, 1, "error", message))
        show = (
            progress
            if progress is not None
            else (sys.stderr.isatty() and len(found.files) >= PROGRESS_MIN_FILES)
        )
        store = (
            Cache(
                cache_dir or default_directory(),
                target=settings.target,
                line_length=settings.line_length,
                flow=settings.flow,
            )
            if use_cache
            else None
        )
        workers = jobs if jobs is not None else found_config.jobs or 0
        outcomes = run(
            found.files,
            settings=settings,
            mode=mode,
            jobs=workers,
            progress=show,
            cache=store,
        )
        for outcome in outcomes:
            _add(report, outcome)
            if outcome.diff:
                click.echo(outcome.diff, nl=False)
    _print(report, fmt, verbose - quiet)
    errors = report.of_kind("error")
    if errors:
        sys.exit(EXIT_FILE_ERRORS)
    if check and report.changed:
        sys.exit(EXIT_CHANGES_NEEDED)
    sys.exit(EXIT_OK)


def _first(*values: bool | None) -> bool:
    return next(v for v in values if v is not None)


def _add(report: RunReport, outcome: Outcome) -> None:
    report.scanned += 1
    if outcome.changed:
        report.changed.append(outcome.path)
    report.sites += outcome.sites


def _print(report: RunReport, fmt: str, verbosity: int) -> None:
    if fmt == "json":
        click.echo(output.as_json(report))
    elif fmt == "github":
        for line in output.github(report, os.getcwd()):
            click.echo(line)
    if fmt != "text":
        verbosity = min(verbosity, -1)  # the machine output is on stdout; stderr: the summary
    for line in output.text(report, verbosity):
        click.echo(line, err=True)
