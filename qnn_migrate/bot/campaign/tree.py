"""A checkout of the default branch, rewritten in memory with the repository's own settings.

The rewrite is ``qnn-migrate rewrite``'s own, layer for layer, so that the PR's "reproduce
locally" command gives the same files: ``codemods.config`` finds ``[tool.qnn-migrate]``
(target, exclude, extend-exclude, respect-gitignore, force-exclude) above the paths;
``codemods.discovery`` walks the paths with those exclusions and git's ignore files; and
``codemods.runner`` rewrites the files in ``check`` mode, which writes nothing and hands
back each file's new bytes (in the file's own encoding). Only ``codemods.files`` reads the
checkout. Nothing in it is imported or run: its files are parsed, never executed, and the
process that reads them holds no credentials in it (the workflow checks it out with
``persist-credentials: false``; the campaign writes through the API).

Each site the rewrite leaves for a person keeps its line in the rewritten file (the bot's
commit), found through the line diff of the two texts, so the PR can link to it there.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from qnn_migrate.codemods import config as configuration
from qnn_migrate.codemods import files, runner
from qnn_migrate.codemods.deprecations import DEFAULT_FLOW, FLOWS, default_target, target_names
from qnn_migrate.codemods.discovery import DEFAULT_EXCLUDES, Selection, discover
from qnn_migrate.codemods.line_diff import opcodes
from qnn_migrate.codemods.options import RuleOptions


class TreeError(ValueError):
    """The checkout or the settings cannot be used; the message says which and what to do."""


@dataclass(frozen=True)
class TreeOptions:
    """What to rewrite and how: the campaign's settings, laid over ``[tool.qnn-migrate]``.

    ``paths`` are relative to the checkout (``.``: all of it). ``target`` None takes the
    config's target, else the default one. ``jobs`` None takes the config's jobs (0: one
    process per CPU)."""

    paths: tuple[str, ...] = (".",)
    target: str | None = None
    flow: str = DEFAULT_FLOW
    jobs: int | None = None


@dataclass(frozen=True)
class SiteLeft:
    """A site the rewrite left for a person: its line in the rewritten file, and why."""

    line: int
    code: str
    reason: str


@dataclass(frozen=True)
class FileRewrite:
    """One file the campaign has something to say about.

    ``new`` None: the file stays as it is (nothing to rewrite, or it could not be
    processed: ``error`` says why)."""

    path: str  # relative to the checkout, with "/"
    new: bytes | None
    mode: str = "100644"
    rewritten: int = 0
    left: tuple[SiteLeft, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class TreeRewrite:
    """The rewrite of the checkout: every file with a change, a site left or an error."""

    target: str
    flow: str
    paths: tuple[str, ...]
    config: str | None  # the pyproject.toml whose [tool.qnn-migrate] applied, relative
    scanned: int
    files: tuple[FileRewrite, ...]

    @property
    def changed(self) -> tuple[FileRewrite, ...]:
        return tuple(f for f in self.files if f.new is not None)

    @property
    def rewritten(self) -> int:
        return sum(f.rewritten for f in self.files)

    @property
    def left(self) -> int:
        return sum(len(f.left) for f in self.files)

    def changes(self) -> str | None:
        """What the campaign's commit would hold, as 16 hex digits (None: nothing changes):
        the same digest means the same files with the same bytes and modes."""
        changed = self.changed
        if not changed:
            return None
        digest = hashlib.sha256()
        for f in sorted(changed, key=lambda f: f.path):
            assert f.new is not None
            for part in (f.path, f.mode, hashlib.sha256(f.new).hexdigest()):
                digest.update(part.encode() + b"\0")
        return digest.hexdigest()[:16]


def _inside(checkout: Path, given: str) -> str:
    """``given`` as a path under ``checkout``; a path that leaves it is refused."""
    relative = PurePosixPath(given.replace(os.sep, "/"))
    if relative.is_absolute() or ".." in relative.parts:
        raise TreeError(
            f"path {given!r} must be relative to the checkout and stay inside it (no '..'); "
            "name a folder of the repository, like `examples` or `.`"
        )
    return os.path.join(checkout, *relative.parts) if relative.parts else str(checkout)


def _config(checkout: Path, targets: Sequence[str], starts: Sequence[str]) -> configuration.Config:
    try:
        found = configuration.find(configuration.start_directory(starts), targets)
    except configuration.ConfigError as error:
        raise TreeError(f"{error}; fix [tool.qnn-migrate] on the default branch") from None
    if found.path is None or not Path(found.path).resolve().is_relative_to(checkout.resolve()):
        # A pyproject.toml above the checkout is not the repository's: the defaults apply.
        return configuration.Config(root=str(checkout), line_length=found.line_length)
    return found


def _mode(path: str) -> str:
    try:
        executable = os.stat(path).st_mode & stat.S_IXUSR
    except OSError:
        executable = 0
    return "100755" if executable else "100644"


def _new_lines(old: bytes, new: bytes) -> dict[int, int]:
    """1-based line in ``old`` -> its line in ``new``: an unchanged line where it moved to,
    a line inside a changed stretch to the start of what replaced it."""
    try:
        old_text, encoding = files.decode(old)
        new_text = new.decode(encoding)
    except (ValueError, LookupError):
        return {}
    a, b = old_text.splitlines(), new_text.splitlines()
    where: dict[int, int] = {}
    for tag, i1, i2, j1, _ in opcodes(a, b):
        for i in range(i1, i2):
            where[i + 1] = (j1 + (i - i1) if tag == "equal" else j1) + 1
    return where


def rewrite_checkout(checkout: Path, options: TreeOptions) -> TreeRewrite:
    """Rewrite ``options.paths`` of ``checkout`` in memory (``check`` mode: nothing written)."""
    if not checkout.is_dir():
        raise TreeError(f"{checkout}: not a directory; check out the default branch there first")
    if options.flow not in FLOWS:
        raise TreeError(f"unknown flow {options.flow!r}; choose one of {', '.join(FLOWS)}")
    targets = target_names()
    if options.target is not None and options.target not in targets:
        raise TreeError(f"unknown target {options.target!r}; choose one of {', '.join(targets)}")
    starts = [_inside(checkout, p) for p in options.paths or (".",)]
    missing = [
        p for p, full in zip(options.paths, starts, strict=False) if not os.path.lexists(full)
    ]
    if missing:
        raise TreeError(
            f"no such path in the checkout: {', '.join(missing)}; the campaign's paths are "
            "relative to the repository's top"
        )
    found_config = _config(checkout, targets, starts)
    target = options.target or found_config.target or default_target()
    selection = Selection(
        root=found_config.root,
        exclude=DEFAULT_EXCLUDES if found_config.exclude is None else found_config.exclude,
        extend_exclude=found_config.extend_exclude,
        respect_gitignore=found_config.respect_gitignore is not False,
        force_exclude=bool(found_config.force_exclude),
    )
    found = discover(starts, selection)
    jobs = options.jobs if options.jobs is not None else found_config.jobs or 0
    run = runner.RunOptions(
        rule=RuleOptions(target=target, line_length=found_config.line_length, flow=options.flow),
        mode="check",
        jobs=jobs,
        cache_dir=None,
    )
    out: list[FileRewrite] = []

    def relative(path: str) -> str:
        return Path(os.path.relpath(path, checkout)).as_posix()

    for path, reason in found.errors:
        out.append(FileRewrite(relative(path), None, error=reason.text))
    for outcome in runner.run(found.files, run):
        errors = [s for s in outcome.sites if s.kind == "error"]
        left = [s for s in outcome.sites if s.kind == "unfixable"]
        rewritten = sum(1 for s in outcome.sites if s.kind == "rewritten")
        new = outcome.entry.new if outcome.changed and outcome.entry is not None else None
        if new is None and not errors and not left:
            continue
        where: dict[int, int] = {}
        if new is not None and left:
            where = _new_lines(files.read(outcome.path)[0], new)
        out.append(
            FileRewrite(
                path=relative(outcome.path),
                new=new,
                mode=_mode(outcome.path),
                rewritten=rewritten if new is not None else 0,
                left=tuple(SiteLeft(where.get(s.line, s.line), s.code, s.reason) for s in left),
                error="; ".join(f"line {s.line}: {s.reason}" for s in errors),
            )
        )
    config_path = found_config.path and relative(found_config.path)
    return TreeRewrite(
        target=target,
        flow=options.flow,
        paths=tuple(options.paths),
        config=config_path,
        scanned=len(found.files),
        files=tuple(sorted(out, key=lambda f: f.path)),
    )
