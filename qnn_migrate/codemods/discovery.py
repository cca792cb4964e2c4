"""Which files a run takes: the walk of the PATH arguments, exclusions and git's ignore files.

Exclusion patterns (``exclude``, ``extend-exclude``) are matched as ruff matches them: a
pattern without ``/`` matches a file or directory by its name, one with ``/`` by its path
relative to the project root (the directory holding the configuration, else the current
directory), with ``fnmatch`` wildcards (``*`` also crosses ``/``). Git's ignore files (``.gitignore`` at every level and
``.git/info/exclude``) are read with ``pathspec``'s implementation of git's rules, not a
parser of our own: a deeper file wins over a shallower one, ``.gitignore`` over
``info/exclude``, and the last matching line of a file decides (``!`` re-includes).

Entries are tested when the walk meets them, so a directory named on the command line is
walked even if it lies inside an excluded or ignored directory; a line of an ignore file
above it that ignores it (or a directory above it) is not applied below it. Files named on
the command line are always taken unless ``force_exclude`` is set.

Nothing is skipped silently: a directory that cannot be read, a symbolic link that loops,
an explicit path that cannot be resolved, and a ``*.py`` that is not a regular file (a FIFO,
whose reading would wait for ever for a writer; a socket; a device) are returned as errors. Symbolic links below a
PATH are not followed (a link could lead out of the tree, or make the run write through it);
they are listed in ``links`` for ``-v``.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from qnn_migrate.codemods import findings
from qnn_migrate.codemods.files import kind_of, read
from qnn_migrate.codemods.findings import Reason

if TYPE_CHECKING:
    import pathspec  # imported when an ignore file is read: a tree without one never pays

# Never entered when walking a directory argument, unless `exclude` replaces this list
# (virtualenvs are also recognised by their pyvenv.cfg, whatever the list).
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
LOOP = findings.LINK_LOOP


class Selection(NamedTuple):
    """What to exclude; patterns are relative to ``root``."""

    root: str
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    force_exclude: bool = False


class Found:
    """The files to process, in walk order, and what could not be walked."""

    def __init__(self) -> None:
        self.files: list[str] = []
        self.errors: list[tuple[str, Reason]] = []  # (path, reason)
        self.links: list[str] = []  # symbolic links not followed


def exclusion(patterns: Sequence[str]) -> Callable[[str, str], bool]:
    """Whether a name or relative path matches one of ``patterns`` (as ``fnmatch.fnmatch``):
    one compiled expression for all of them, as the tree has thousands of entries."""
    if not patterns:
        return lambda name, relative: False
    either = re.compile("|".join(fnmatch.translate(os.path.normcase(p)) for p in patterns))

    def excluded(name: str, relative: str) -> bool:
        normcase = os.path.normcase
        return bool(either.match(normcase(name)) or either.match(normcase(relative)))

    return excluded


def _compiled(patterns: Sequence[str]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(fnmatch.translate(os.path.normcase(p)) for p in patterns))


# -- git's ignore files ----------------------------------------------------------------------
class _Ignore(NamedTuple):
    """One ignore file's patterns, which apply to paths relative to ``base``."""

    base: str  # absolute directory the patterns are relative to
    spec: pathspec.GitIgnoreSpec
    # One expression that matches wherever any line's own expression does: most paths match
    # no line, and one search says so at a tenth of the cost of asking each line.
    any_line: re.Pattern[str] | None = None

    @staticmethod
    def of(base: str, spec: pathspec.GitIgnoreSpec) -> _Ignore:
        return _Ignore(base, spec, _any_line(spec))

    def verdict(self, relative: str) -> bool | None:
        """True: ignored, False: re-included (``!``), None: no line matches."""
        if self.any_line is not None and self.any_line.match(relative) is None:
            return None
        return self.spec.check_file(relative).include


def _any_line(spec: pathspec.GitIgnoreSpec) -> re.Pattern[str] | None:
    """The union of the lines' expressions (pathspec's own), or None if they are not
    available as plain expressions; the verdict then always comes from pathspec."""
    anywhere, anchored = [], []
    for pattern in spec.patterns:
        if pattern.include is None:
            continue  # a blank line or a comment
        expression = getattr(pattern, "regex", None)
        if not isinstance(expression, re.Pattern) or not isinstance(expression.pattern, str):
            return None
        part = _NAMED_GROUP.sub("(?:", expression.pattern)
        if part.startswith(_ANY_DIRECTORY):
            anywhere.append(part[len(_ANY_DIRECTORY) :])
        elif part.startswith("^"):
            anchored.append(part)
        else:
            return None  # not anchored: a match from the start could miss it
    # Most lines match at any depth; with their common start factored out, one scan of the
    # path tries them all at each "/", instead of one scan per line.
    parts = [f"{_ANY_DIRECTORY}(?:{'|'.join(anywhere)})"] if anywhere else []
    parts += [f"(?:{p})" for p in anchored]
    try:
        return re.compile("|".join(parts)) if parts else None
    except re.error:
        return None


_NAMED_GROUP = re.compile(r"\(\?P<\w+>")
_ANY_DIRECTORY = "^(?:.+/)?"  # how pathspec starts a line that has no leading or middle "/"


def _read_ignore(path: str, base: str, errors: list[tuple[str, Reason]]) -> _Ignore | None:
    try:
        data, _ = read(path)  # a FIFO is refused, not waited on
    except (FileNotFoundError, NotADirectoryError):
        return None  # NotADirectoryError: `.git` is a file in a git worktree or submodule
    except OSError as error:
        errors.append((path, findings.IGNORE_FILE_UNREADABLE.format(error=error.strerror or error)))
        return None
    lines = data.decode("utf-8", errors="surrogateescape").splitlines()
    import pathspec

    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return _Ignore.of(base, spec) if spec.patterns else None


def _git_root(directory: str) -> str | None:
    """The work tree holding ``directory``: the nearest ancestor with a ``.git`` entry."""
    current = directory
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _chain(root: str, directory: str) -> list[str]:
    """``root``, then each directory down to ``directory`` (inclusive)."""
    folders = [directory]
    while folders[0] != root:
        folders.insert(0, os.path.dirname(folders[0]))
    return folders


def _ignore_files(
    root: str, folders: Sequence[str], errors: list[tuple[str, Reason]]
) -> list[_Ignore]:
    """``.git/info/exclude`` of the work tree at ``root``, then the ``.gitignore`` of each
    of ``folders``: shallowest (weakest) first."""
    candidates = [(os.path.join(root, ".git", "info", "exclude"), root)]
    candidates += [(os.path.join(folder, ".gitignore"), folder) for folder in folders]
    found = [_read_ignore(path, base, errors) for path, base in candidates]
    return [i for i in found if i is not None]


def _above(directory: str, errors: list[tuple[str, Reason]]) -> list[_Ignore]:
    """The ignore files that apply inside ``directory`` from outside it, weakest first.
    Lines that ignore ``directory`` itself (or an ancestor) are dropped: it was named."""
    root = _git_root(directory)
    if root is None:
        return []
    found = _ignore_files(root, _chain(root, directory)[:-1], errors)
    named = [_without_lines_matching(i, directory) for i in found]
    return [i for i in named if i is not None]


def _without_lines_matching(ignore: _Ignore, directory: str) -> _Ignore | None:
    relative = os.path.relpath(directory, ignore.base).replace(os.sep, "/")
    if relative == ".":
        return ignore
    parts = relative.split("/")
    ancestors = ["/".join(parts[: i + 1]) + "/" for i in range(len(parts))]
    kept = [
        p
        for p in ignore.spec.patterns
        if p.include is None or not any(p.match_file(a) is not None for a in ancestors)
    ]
    return _Ignore.of(ignore.base, type(ignore.spec)(kept)) if kept else None


def _ignored(ignores: Sequence[_Ignore], path: str, is_dir: bool) -> bool:
    """Git's verdict for ``path`` (absolute): the deepest ignore file with a matching line
    decides, and within it the last matching line."""
    for ignore in reversed(ignores):
        if not path.startswith(ignore.base + os.sep):
            continue  # a deeper file's lines apply below its directory only
        relative = path[len(ignore.base) + 1 :].replace(os.sep, "/")
        if is_dir:
            relative += "/"
        verdict = ignore.verdict(relative)
        if verdict is not None:
            return verdict
    return False


# -- the walk --------------------------------------------------------------------------------
class _Matcher:
    """Exclusion patterns and ignore files, relative to the project root."""

    def __init__(self, selection: Selection) -> None:
        self.root = os.path.abspath(selection.root)
        patterns = (*selection.exclude, *selection.extend_exclude)
        # As ruff's: a pattern without "/" matches the name, one with "/" the path from the
        # root. Split, each entry needs one match of its name, and one of its path only when
        # some pattern has a "/".
        self.by_name = _compiled([p for p in patterns if "/" not in p])
        self.by_path = _compiled([p for p in patterns if "/" in p])
        self.gitignore = selection.respect_gitignore

    def pattern_excluded(self, name: str, absolute: str) -> bool:
        """Whether an exclusion pattern matches the entry ``name`` at ``absolute``."""
        normcase = os.path.normcase
        if self.by_name is not None and self.by_name.match(normcase(name)):
            return True
        return self.by_path is not None and bool(
            self.by_path.match(normcase(self.relative(absolute)))
        )

    def relative(self, path: str) -> str:
        """``path`` (absolute) relative to the root, or absolute outside it (where only
        patterns without a directory part can match, as the name is matched too)."""
        if path.startswith(self.root + os.sep):
            return path[len(self.root) + 1 :].replace(os.sep, "/")
        return path.replace(os.sep, "/")

    def excluded(self, path: str) -> bool:
        """For --force-exclude: ``path``, or a directory between it and the project root, is
        excluded; or git ignores it (or a directory above it)."""
        absolute = os.path.abspath(path)
        inside = absolute.startswith(self.root + os.sep)
        current = absolute
        while True:
            if self.pattern_excluded(os.path.basename(current), current):
                return True
            current = os.path.dirname(current)
            if not inside or current == self.root or not current.startswith(self.root):
                break
        if not self.gitignore:
            return False
        root = _git_root(os.path.dirname(absolute))
        if root is None:
            return False
        folders = _chain(root, os.path.dirname(absolute))
        ignores = _ignore_files(root, folders, [])
        # Git's rule: a path inside an ignored directory is ignored.
        return _ignored(ignores, absolute, os.path.isdir(absolute)) or any(
            _ignored(ignores, folder, True) for folder in folders[1:]
        )


def excluded(path: str, selection: Selection) -> bool:
    """Whether ``--force-exclude`` leaves ``path`` out: an exclusion pattern matches it or a
    directory between it and the project root, or git ignores it (``--stdin-filename``)."""
    return _Matcher(selection).excluded(path)


def discover(paths: Sequence[str], selection: Selection) -> Found:
    """The Python files under ``paths``, each once, in a stable order, and the errors met."""
    found = Found()
    matcher = _Matcher(selection)
    seen: set[str] = set()
    for given in paths:
        try:
            status = os.stat(given)
        except OSError as error:
            found.errors.append((given, _unresolvable(given, error)))
            continue
        what = kind_of(status.st_mode)
        if what is not None:
            found.errors.append((given, findings.NOT_A_FILE.format(what=what)))
            continue
        if not os.path.isdir(given):
            if selection.force_exclude and matcher.excluded(given):
                continue
            real = os.path.realpath(given)
            if real not in seen:
                seen.add(real)
                found.files.append(given)
            continue
        if selection.force_exclude and matcher.excluded(given):
            continue
        _walk(given, matcher, found, seen)
    return found


def _kind(path: str) -> str | None:
    """What the entry at ``path`` is when it is not a regular file (None: it is one now)."""
    try:
        return kind_of(os.lstat(path).st_mode)
    except OSError:
        return None  # gone meanwhile: reading it will say so


def _unresolvable(path: str, error: OSError) -> Reason:
    if error.errno == errno.ELOOP:
        return LOOP
    if error.errno == errno.ENOENT and os.path.islink(path):
        return findings.BROKEN_LINK
    return findings.CANNOT_READ.format(error=error.strerror or error)


def _walk(given: str, matcher: _Matcher, found: Found, seen: set[str]) -> None:
    absolute_root = os.path.abspath(given)
    real_root = os.path.realpath(given)
    errors = found.errors
    base_ignores = _above(absolute_root, errors) if matcher.gitignore else []
    pattern_excluded = matcher.pattern_excluded
    # (path as given, absolute path, path relative to the argument, ignore files in force)
    stack: list[tuple[str, str, str, list[_Ignore]]] = [(given, absolute_root, "", base_ignores)]
    while stack:
        directory, absolute, relative, ignores = stack.pop()
        try:
            with os.scandir(directory) as iterator:
                entries = sorted(iterator, key=lambda e: e.name)
        except OSError as error:
            errors.append(
                (directory, findings.DIRECTORY_UNREADABLE.format(error=error.strerror or error))
            )
            continue
        names = {e.name for e in entries}
        if relative and "pyvenv.cfg" in names:
            continue  # a virtualenv
        if matcher.gitignore and ".gitignore" in names:
            own = _read_ignore(os.path.join(absolute, ".gitignore"), absolute, errors)
            if own is not None:
                ignores = [*ignores, own]
        subdirectories = []
        for entry in entries:
            name = entry.name
            rel = f"{relative}/{name}" if relative else name
            entry_absolute = f"{absolute}{os.sep}{name}"
            if entry.is_symlink():
                try:
                    os.stat(entry.path)
                except OSError as error:
                    if error.errno == errno.ELOOP:
                        errors.append((entry.path, LOOP))
                        continue
                found.links.append(entry.path)
                continue  # never followed: out of the tree, or a write through a link
            if entry.is_dir():
                if pattern_excluded(name, entry_absolute):
                    continue
                if ignores and _ignored(ignores, entry_absolute, True):
                    continue
                subdirectories.append((entry.path, entry_absolute, rel, ignores))
            elif name.endswith((".py", ".ipynb")):
                if pattern_excluded(name, entry_absolute):
                    continue
                if ignores and _ignored(ignores, entry_absolute, False):
                    continue
                if not entry.is_file():  # no system call: the directory entry's type
                    what = _kind(entry.path)
                    if what is not None:
                        errors.append((entry.path, findings.NOT_A_FILE.format(what=what)))
                        continue
                # No links are followed below a root, so root + relative path is unique.
                key = f"{real_root}{os.sep}{rel}"
                if key not in seen:
                    seen.add(key)
                    found.files.append(entry.path)
        stack += reversed(subdirectories)  # files first, then directories, sorted
