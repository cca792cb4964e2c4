"""Which files of a tree were read last time and did not mention the old name, by their
status: a warm run over an unchanged tree stats them instead of reading them.

This is git's index, for one bit per file. A file is trusted unread when its device, inode,
size, modification and status-change times (``st_ctime``, which ``touch`` and ``utime``
cannot set back) are those it had when it was read and found not to mention the name. Any
write changes at least one of them, so a changed file is read again.

Timestamps are coarse on some file systems (FAT: 2 s; ext3 and many network mounts: 1 s),
so a file written in the same tick as it was read, then written again in that tick, would
keep its times. Like git's "racily clean" entries, a file whose times fall within
:data:`SLACK_NS` of the run's start (or after it) is not recorded: the next run reads it.

The index lives next to the result cache (``codemods/cache.py``), one file per working
directory, set of directories named on the command line and cache salt (the tool, target
and settings), with the paths as the walk gives them; it is only used for directories (files
named one by one are few and just read). It is an
accelerator: damaged, unreadable or from another tool version, it is ignored and rebuilt.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Sequence

from qnn_migrate.codemods.cache import store

FORMAT = "qnn-migrate-stat-index-1"
# Times this close to the run's start are not trusted (coarse file-system clocks).
SLACK_NS = 2_000_000_000

_Status = tuple[int, int, int, int, int]


def _status(stat: os.stat_result) -> _Status:
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


class StatIndex:
    """The clean files under some directories, as of the last run; :meth:`save` writes the
    ones this run found clean."""

    def __init__(self, path: str, salt: bytes) -> None:
        self.path = path
        self._salt = salt.hex()
        self._started = time.time_ns()
        self._known: dict[str, _Status] = {}
        self._clean: dict[str, _Status] = {}
        try:
            with open(path, "rb") as handle:
                stored = json.loads(handle.read())
            if stored["format"] == FORMAT and stored["salt"] == self._salt:
                self._known = {
                    str(name): (int(a), int(b), int(c), int(d), int(e))
                    for name, (a, b, c, d, e) in stored["clean"].items()
                }
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self._known = {}  # missing, damaged or not ours: every file is read

    @classmethod
    def for_run(cls, cache_directory: str, salt: bytes, roots: Sequence[str]) -> StatIndex | None:
        """The index of the directories among ``roots`` (None when there are none)."""
        directories = sorted({os.path.abspath(r) for r in roots if os.path.isdir(r)})
        if not directories:
            return None
        # Paths are kept as the walk gives them (relative to the working directory, or as
        # given), so the working directory is part of the name.
        where = "\0".join([os.getcwd(), *directories])
        name = hashlib.sha256(salt + where.encode()).hexdigest()
        return cls(os.path.join(cache_directory, "index", name + ".json"), salt)

    def unchanged(self, path: str) -> bool:
        """True when ``path`` has the status it had when it was found clean; it then stays
        in the index. False means: read it."""
        known = self._known.get(path)
        if known is None:
            return False
        try:
            now = _status(os.stat(path))
        except OSError:
            return False
        if now != known:
            return False
        self._clean[path] = known
        return True

    def found_clean(self, path: str, stat: os.stat_result) -> None:
        """``path`` (with ``stat``: its status when it was read) does not mention the name."""
        limit = self._started - SLACK_NS
        if stat.st_mtime_ns < limit and stat.st_ctime_ns < limit:
            self._clean[path] = _status(stat)

    def save(self) -> None:
        """Write the clean files of this run atomically (nothing when nothing changed)."""
        if self._clean == self._known:
            return
        data = json.dumps({"format": FORMAT, "salt": self._salt, "clean": self._clean})
        # A failure changes no result: the next run reads every file, as without an index.
        with contextlib.suppress(OSError):
            store(self.path, data)
