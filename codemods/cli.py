"""``qnn-migrate rewrite``: files in, files out, diffs, the report and the exit code.

The only module of ``codemods`` that touches the disk, the terminal or a process pool. Files
are read as bytes and searched for the old name first; only those that mention it are
decoded, parsed and rewritten, in worker processes when there are several. Writes are atomic
(temporary file + rename) and keep the file's mode, encoding, BOM and newlines.
"""

from __future__ import annotations

import difflib
import fnmatch
import gc
import io
import json
import os
import re
import sys
import tempfile
import tokenize
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

import click

from qnn_migrate.codemods.deprecations import lower_to_qnn
from qnn_migrate.codemods.findings import Unfixable

Mode = Literal["write", "diff", "check"]

EXIT_OK = 0
EXIT_CHANGES_NEEDED = 1
EXIT_USAGE = 2
EXIT_FILE_ERRORS = 3

# Directories never entered when walking a directory argument (virtualenvs are also
# recognised by their pyvenv.cfg).
DEFAULT_EXCLUDES = (
    ".git",
    ".hg",
    ".svn",
    ".tox",
    ".nox",
    ".venv",
    "venv",
    "__pycache__",
    "build",
    "dist",
    ".eggs",
    "*.egg-info",
    "node_modules",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    "site-packages",
)
PROGRESS_MIN_FILES = 200  # smaller trees finish before a bar would be useful
# The cheap test done on every file before any decoding or parsing.
_NEEDLE = lower_to_qnn().name.encode()

EPILOG = """\b
Exit codes:
  0  done (with --check: nothing to change)
  1  --check only: some files would change
  2  usage error (bad option, missing path)
  3  some files could not be processed (unreadable, not UTF-8 or their
     declared encoding, or not valid Python); they were left untouched,
     every other file was processed
"""


@dataclass(frozen=True)
class Outcome:
    """What happened to one file."""

    path: str
    changed: bool = False
    sites: int = 0
    unfixable: tuple[Unfixable, ...] = ()
    error: str | None = None
    diff: str = ""


@dataclass
class Totals:
    """The run so far."""

    scanned: int = 0
    changed: list[str] = field(default_factory=list)
    sites: int = 0
    unfixable: list[tuple[str, Unfixable]] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)

    def add(self, outcome: Outcome) -> None:
        self.scanned += 1
        if outcome.changed:
            self.changed.append(outcome.path)
        self.sites += outcome.sites
        self.unfixable += [(outcome.path, u) for u in outcome.unfixable]
        if outcome.error is not None:
            self.errors.append((outcome.path, outcome.error))


# -- files in --------------------------------------------------------------------------------
def _exclusion(patterns: Sequence[str]) -> Callable[[str, str], bool]:
    """Whether a name or relative path matches one of ``patterns`` (as ``fnmatch.fnmatch``):
    one compiled expression for all of them, as the tree has thousands of entries."""
    if not patterns:
        return lambda name, relative: False
    either = re.compile("|".join(fnmatch.translate(os.path.normcase(p)) for p in patterns))

    def excluded(name: str, relative: str) -> bool:
        normcase = os.path.normcase
        return bool(either.match(normcase(name)) or either.match(normcase(relative)))

    return excluded


def discover(paths: Sequence[str], excludes: Sequence[str]) -> Iterator[str]:
    """Python files under ``paths`` (files given explicitly are always taken), each once."""
    seen: set[str] = set()
    for root in paths:
        if os.path.isfile(root):
            real = os.path.realpath(root)
            if real not in seen:
                seen.add(real)
                yield root
            continue
        real_root = os.path.realpath(root)
        directory_excluded = _exclusion((*DEFAULT_EXCLUDES, *excludes))
        file_excluded = _exclusion(excludes)
        stack = [(root, "")]
        while stack:
            directory, relative = stack.pop()
            try:
                entries = sorted(os.scandir(directory), key=lambda e: e.name)
            except OSError:
                continue
            if relative and any(e.name == "pyvenv.cfg" for e in entries):
                continue  # a virtualenv
            subdirectories = []
            for entry in entries:
                rel = f"{relative}/{entry.name}" if relative else entry.name
                if entry.is_symlink():
                    continue  # never follow links out of the tree, or write through them
                if entry.is_dir():
                    if not directory_excluded(entry.name, rel):
                        subdirectories.append((entry.path, rel))
                elif entry.name.endswith(".py") and not file_excluded(entry.name, rel):
                    # No links are followed below a root, so root + relative path is unique.
                    key = os.path.join(real_root, rel)
                    if key not in seen:
                        seen.add(key)
                        yield entry.path
            stack += reversed(subdirectories)  # files first, then directories, sorted


def decode(data: bytes) -> tuple[str, str]:
    """The text and the encoding of a Python source file (PEP 263, BOM -> utf-8-sig)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        raise ValueError(
            f"cannot be decoded ({error.msg}); save it as UTF-8 or declare its encoding "
            "with a `# -*- coding: ... -*-` line"
        ) from None
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError as error:
        raise ValueError(
            f"is not valid {encoding} (byte {error.start}: {error.reason}); save it as UTF-8 "
            "or declare its encoding with a `# -*- coding: ... -*-` line"
        ) from None


# -- files out -------------------------------------------------------------------------------
def write_atomically(path: str, data: bytes, expected: os.stat_result) -> None:
    """Replace ``path`` by ``data`` in one rename, keeping its mode."""
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
    """A ``git diff``-style unified diff of one file."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    )
    return "".join(line if line.endswith(("\n", "\r")) else line + "\n" for line in lines)


# -- one file --------------------------------------------------------------------------------
def process_text(data: bytes, path: str, target: str, mode: Mode) -> tuple[Outcome, bytes | None]:
    """Rewrite one file's bytes; returns the outcome and the new bytes (None: unchanged)."""
    from qnn_migrate.codemods.engine import RewriteError, rewrite_code

    if _NEEDLE not in data:
        return Outcome(path), None
    try:
        text, encoding = decode(data)
    except ValueError as error:
        return Outcome(path, error=f"{error}; skipped"), None
    try:
        # The absolute path lets the rule recognise ExecuTorch's own re-exporting module.
        filename = path if path == "-" else os.path.abspath(path)
        result = rewrite_code(text, target=target, filename=filename)
    except RewriteError as error:
        return Outcome(path, error=f"{error}; skipped"), None
    except Exception as error:  # a bug in the rule must not stop the run
        message = f"internal error ({type(error).__name__}: {error}); skipped, please report it"
        return Outcome(path, error=message), None
    outcome = Outcome(path, result.changed, result.sites_rewritten, result.unfixable)
    if not result.changed:
        return outcome, None
    if mode == "diff":
        diff = unified_diff(path, text, result.code)
        outcome = Outcome(path, True, result.sites_rewritten, result.unfixable, None, diff)
    return outcome, result.code.encode(encoding)


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


def process_file(path: str, target: str, mode: Mode) -> Outcome:
    """Read, rewrite and (in write mode) replace one file."""
    try:
        data, stat = read_file(path)
    except OSError as error:
        return Outcome(path, error=f"cannot be read ({error.strerror or error}); skipped")
    with _collected_after():
        outcome, new = process_text(data, path, target, mode)
    if new is not None and mode == "write":
        try:
            write_atomically(path, new, stat)
        except OSError as error:
            reason = error.strerror or str(error)
            return Outcome(path, error=f"cannot be written ({reason}); left unchanged")
    return outcome


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


def run(
    files: Sequence[str], *, target: str, mode: Mode, jobs: int, progress: bool
) -> list[Outcome]:
    """Scan every file, rewrite those that mention the old name; outcomes in input order.

    The scan (read, search the bytes) is cheap and done here; the files that mention the name
    go to worker processes, largest first, so the longest one does not start last.
    """
    outcomes: dict[str, Outcome | Future[Outcome]] = {}
    workers = jobs or os.cpu_count() or 1
    bar = (
        click.progressbar(length=len(files), label="qnn-migrate rewrite", file=sys.stderr)
        if progress
        else None
    )
    sizes: dict[str, int] = {}
    pool: ProcessPoolExecutor | None = None
    try:
        for path in files:
            _, size, error = _scan(path)
            if size is None:
                outcomes[path] = Outcome(path, error=error)
                if bar is not None:
                    bar.update(1)
            else:
                sizes[path] = size
        matches = sorted(sizes, key=lambda p: -sizes[p])
        if matches:
            import qnn_migrate.codemods.engine  # noqa: F401 - imported once here, inherited by workers
        with _frozen_imports():
            if workers > 1 and len(matches) > 1:
                pool = ProcessPoolExecutor(max_workers=min(workers, len(matches)))
                for path in matches:
                    outcomes[path] = pool.submit(process_file, path, target, mode)
            else:
                for path in matches:
                    outcomes[path] = process_file(path, target, mode)
                    if bar is not None:
                        bar.update(1)
            result = []
            for path in files:
                item = outcomes[path]
                if isinstance(item, Future):
                    item = item.result()
                    if bar is not None:
                        bar.update(1)
                result.append(item)
        return result
    finally:
        if bar is not None:
            bar.render_finish()
        if pool is not None:
            pool.shutdown(cancel_futures=True)


def _summary(totals: Totals, mode: Mode) -> str:
    verb = {"write": "rewritten", "diff": "would change", "check": "would change"}[mode]
    parts = [
        f"{totals.scanned} file{'s' if totals.scanned != 1 else ''} scanned",
        f"{len(totals.changed)} {verb} ({totals.sites} call site{'s' if totals.sites != 1 else ''})",
        f"{len(totals.unfixable)} site{'s' if len(totals.unfixable) != 1 else ''} left for you",
        f"{len(totals.errors)} error{'s' if len(totals.errors) != 1 else ''}",
    ]
    return "qnn-migrate rewrite: " + ", ".join(parts)


def _report_json(totals: Totals) -> str:
    return json.dumps(
        {
            "files_scanned": totals.scanned,
            "files_changed": totals.changed,
            "sites_rewritten": totals.sites,
            "unfixable": [
                {"path": path, "line": u.line, "reason": u.reason} for path, u in totals.unfixable
            ],
            "errors": [{"path": path, "message": message} for path, message in totals.errors],
        },
        indent=2,
    )


def _stdin(target: str, mode: Mode, as_json: bool) -> Totals:
    """``-``: rewrite standard input to standard output (diff/check as for files)."""
    data = sys.stdin.buffer.read()
    with _collected_after():
        outcome, new = process_text(data, "-", target, "diff" if mode == "diff" else "check")
    totals = Totals()
    totals.add(outcome)
    if mode == "write" and not as_json:
        sys.stdout.buffer.write(data if new is None else new)
    elif mode == "diff":
        sys.stdout.write(outcome.diff)
    return totals


@click.command(
    "rewrite",
    epilog=EPILOG,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--diff", "show_diff", is_flag=True, help="Print a unified diff; write nothing.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if any file would change.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print a JSON report on stdout instead of the summary."
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=0),
    default=0,
    show_default="0: one per CPU",
    help="Worker processes for the files that need rewriting.",
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="GLOB",
    help="Skip files and directories whose name or path (relative to the PATH given) match; "
    "repeatable. .git, virtualenvs, build folders and caches are always skipped.",
)
@click.option(
    "--target",
    type=click.Choice(["qnn-passes", "executorch"]),
    default="qnn-passes",
    show_default=True,
    help="qnn-passes: the generic call with the qnn_passes helpers. executorch: the "
    "wrapper's body with ExecuTorch's own QNN API (no run-time dependency on qnn-migrate).",
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
    as_json: bool,
    jobs: int,
    exclude: tuple[str, ...],
    target: str,
    progress: bool | None,
) -> None:
    """Rewrite to_edge_transform_and_lower_to_qnn calls to to_edge_transform_and_lower.

    PATH is a file or a directory (searched for *.py), or - to rewrite standard input to
    standard output. Sites that cannot be rewritten safely are left alone and listed with
    path:line and the reason.
    """
    if show_diff and as_json:
        raise click.UsageError("--diff and --json both print to stdout; use one of them")
    mode: Mode = "diff" if show_diff else "check" if check else "write"
    if "-" in paths:
        if len(paths) > 1:
            raise click.UsageError("- (standard input) cannot be combined with other paths")
        totals = _stdin(target, mode, as_json)
    else:
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            raise click.UsageError(f"no such file or directory: {', '.join(missing)}")
        files = list(discover(paths, exclude))
        show = (
            progress
            if progress is not None
            else (sys.stderr.isatty() and len(files) >= PROGRESS_MIN_FILES)
        )
        totals = Totals()
        for outcome in run(files, target=target, mode=mode, jobs=jobs, progress=show):
            totals.add(outcome)
            if outcome.diff:
                click.echo(outcome.diff, nl=False)
    if as_json:
        click.echo(_report_json(totals))
    else:
        for path, item in totals.unfixable:
            click.echo(item.render(path), err=True)
        for path, message in totals.errors:
            click.echo(f"{path}: error: {message}", err=True)
        click.echo(_summary(totals, mode), err=True)
    if totals.errors:
        sys.exit(EXIT_FILE_ERRORS)
    if mode in ("check", "diff") and totals.changed and check:
        sys.exit(EXIT_CHANGES_NEEDED)
    sys.exit(EXIT_OK)
