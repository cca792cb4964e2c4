"""A content-hash cache of per-file results, so that a second run over an unchanged tree
parses nothing (and never imports libcst).

An entry is found by a key that hashes everything the result depends on: the file's bytes,
its absolute path (the rule recognises ExecuTorch's own modules by it), the facts the run
gathered from the other files about it, the target, the line length, the Python version,
and the tool itself: every source and data file of ``codemods/`` (the rule, the engine and
``data/deprecations.toml``), so a change to any of them, released or not, is a new key.
Nothing is ever looked up by path alone, so an entry cannot outlive a change to its key.

Entries live in the user cache directory (``$XDG_CACHE_HOME/qnn-migrate``, else
``~/.cache/qnn-migrate``; ``--cache-dir`` or ``QNN_MIGRATE_CACHE_DIR`` override it). Each is
written to a temporary file and renamed into place, so a reader sees a whole entry or none;
an entry that does not parse, does not match its key, or fails its checksum is ignored and
rewritten. The cache is an accelerator only: if it cannot be read or written the run goes on
without it.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

FORMAT = "qnn-migrate-cache-1"
ENV = "QNN_MIGRATE_CACHE_DIR"
# The package whose code and data decide a file's result.
_PACKAGE = Path(__file__).resolve().parent
_SOURCE_SUFFIXES = (".py", ".toml")


def default_directory(environ: dict[str, str] | None = None) -> str:
    """``$QNN_MIGRATE_CACHE_DIR``, else ``$XDG_CACHE_HOME/qnn-migrate``, else
    ``~/.cache/qnn-migrate`` (where ruff, pip and most Linux tools keep theirs)."""
    env = os.environ if environ is None else environ
    if env.get(ENV):
        return env[ENV]
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "qnn-migrate")


@cache
def tool_digest(package: Path = _PACKAGE) -> str:
    """The hash of every source and data file of the rewrite, by relative path."""
    digest = hashlib.sha256()
    for directory, subdirectories, files in sorted(os.walk(package)):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(_SOURCE_SUFFIXES):
                path = os.path.join(directory, name)
                digest.update(os.path.relpath(path, package).encode() + b"\0")
                with open(path, "rb") as handle:
                    digest.update(hashlib.sha256(handle.read()).digest())
    return digest.hexdigest()


def content_digest(data: bytes) -> bytes:
    """The hash of a file's bytes, as the key uses it (computed where the file was read)."""
    return hashlib.sha256(data).digest()


class Entry(NamedTuple):
    """A file's cached result: the sites (as plain lists), whether it changed, and the new
    bytes when it did."""

    changed: bool
    sites: tuple[tuple[int, int, str, str, str], ...]  # line, column, kind, reason, group
    new: bytes | None


def _checksum(payload: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


class Cache:
    """Entries under ``directory``, for one run's settings (the ``salt``)."""

    def __init__(
        self, directory: str, *, target: str, line_length: int | None, flow: str = ""
    ) -> None:
        self.directory = os.path.join(directory, FORMAT)
        parts: Sequence[str] = (
            FORMAT,
            f"{sys.version_info.major}.{sys.version_info.minor}",
            tool_digest(),
            target,
            str(line_length),
            flow,
        )
        self.salt = hashlib.sha256("\0".join(parts).encode()).digest()

    def key(self, data: bytes, path: str, context: str = "") -> str:
        """The key of ``data`` read from ``path``; ``context``: what the run knows about the
        file from the others (empty when nothing)."""
        return self.key_of_digest(content_digest(data), path, context)

    def key_of_digest(self, digest: bytes, path: str, context: str = "") -> str:
        """:meth:`key`, from the :func:`content_digest` of the bytes."""
        key = hashlib.sha256(self.salt)
        key.update(os.path.abspath(path).encode() + b"\0" + context.encode() + b"\0")
        key.update(digest)
        return key.hexdigest()

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key[:2], key)

    def get(self, key: str) -> Entry | None:
        """The entry for ``key``; None if there is none, or it is damaged."""
        try:
            with open(self._path(key), "rb") as handle:
                stored = json.loads(handle.read())
            payload = stored["payload"]
            if stored["key"] != key or stored["sha256"] != _checksum(payload):
                return None
            sites = tuple(
                (int(line), int(column), str(kind), str(reason), str(group))
                for line, column, kind, reason, group in payload["sites"]
            )
            new = None if payload["new"] is None else base64.b64decode(payload["new"])
            return Entry(bool(payload["changed"]), sites, new)
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing, unreadable, truncated or not ours: computed again

    def put(self, key: str, entry: Entry) -> None:
        """Store ``entry`` atomically; a failure only costs the next run the work."""
        payload = {
            "changed": entry.changed,
            "sites": [list(site) for site in entry.sites],
            "new": None if entry.new is None else base64.b64encode(entry.new).decode(),
        }
        data = json.dumps({"key": key, "sha256": _checksum(payload), "payload": payload})
        # A failure changes no result: the next run computes this file again.
        with contextlib.suppress(OSError):
            store(self._path(key), data)


def store(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename, so a reader sees
    the whole file or the old one; its folder is made if missing. An OSError on failure."""
    import tempfile  # only when there is something to store

    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
