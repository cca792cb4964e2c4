"""Results of fresh-process calls shared by the whole test session: each lowering runs once.

The same :class:`~qnn_htp.lowering.LoweringSpec` is asked for by several tests (the zoo's
structure and numerics tests, the canonical flow's tests in tests/passes, the infrastructure
controls), and pytest-xdist may run them on different workers. :class:`SessionCache` keys each
call by its function and arguments and keeps its result (or the FreshProcessError it ended
with) in one folder shared by the workers of this session, under a per-key file lock: the first
worker to ask runs it in a fresh child, every later ask reads it. A worker that asks while the
other is running it waits for that result instead of lowering it again. Missing calls asked for
together run side by side (:meth:`qnn_htp.fresh.FreshRunner.outcomes`).

The folder is under pytest's base temporary folder, new for every session, so nothing carries
over from one run (or one version of the code) to the next.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import pickle
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from qnn_migrate_tests.qnn_htp.fresh import Call, FreshProcessError, FreshRunner
from qnn_migrate_tests.qnn_htp.lowering import Lowered, LoweringSpec, lower

_MISSING = object()


def call_key(fn: Callable[..., Any], args: tuple[Any, ...]) -> str:
    """A stable name for ``fn(*args)``: arguments are plain data (specs, strings, tuples)."""
    name = f"{fn.__module__}.{fn.__qualname__}"
    return hashlib.sha256(repr((name, args)).encode()).hexdigest()[:32]


class SessionCache:
    """``fn(*args)`` run once per session in a fresh child, shared by every test and worker."""

    def __init__(self, runner: FreshRunner, directory: Path) -> None:
        self.runner = runner
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._memory: dict[str, Any] = {}
        self.computed = 0  # calls this process ran (the rest were read)

    def lowered(self, specs: Sequence[LoweringSpec]) -> list[Lowered | FreshProcessError]:
        """``lower(spec)`` for each spec: a Lowered, or the error its child raised."""
        return self.outcomes([(lower, (spec,)) for spec in specs])

    def call(self, fn: Callable[..., Any], /, *args: Any) -> Any:
        """``fn(*args)``'s result, or the FreshProcessError its child raised (returned, not raised)."""
        return self.outcomes([(fn, args)])[0]

    def outcomes(self, calls: Sequence[Call]) -> list[Any]:
        """Per call its result or FreshProcessError; missing ones run side by side."""
        keys = [call_key(fn, args) for fn, args in calls]
        mine: dict[str, tuple[Call, IO[bytes]]] = {}  # locked here: this process runs them
        theirs: dict[str, tuple[Call, IO[bytes]]] = {}  # locked by the other worker
        try:
            for key, call in zip(keys, calls, strict=True):
                if key in self._memory or key in mine or key in theirs:
                    continue
                lock = open(self.directory / f"{key}.lock", "wb")  # noqa: SIM115 - held below
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    theirs[key] = (call, lock)
                    continue
                found = self._load(key)
                if found is _MISSING:
                    mine[key] = (call, lock)
                else:
                    self._memory[key] = found
                    _release(lock)
            if mine:
                results = self.runner.outcomes([call for call, _ in mine.values()])
                for (key, (_, lock)), result in zip(mine.items(), results, strict=True):
                    self._store(key, result)
                    _release(lock)
                mine.clear()
            for key, (call, lock) in theirs.items():
                fcntl.flock(lock, fcntl.LOCK_EX)  # holding nothing else: no deadlock
                found = self._load(key)
                if found is _MISSING:  # the other worker stopped before it stored a result
                    (found,) = self.runner.outcomes([call])
                    self._store(key, found)
                self._memory[key] = found
        finally:
            for _, lock in [*mine.values(), *theirs.values()]:
                _release(lock)
        return [self._memory[key] for key in keys]

    def _load(self, key: str) -> Any:
        path = self.directory / f"{key}.pickle"
        if not path.exists():
            return _MISSING
        with path.open("rb") as handle:
            return pickle.load(handle)

    def _store(self, key: str, result: Any) -> None:
        self.computed += 1
        self._memory[key] = result
        with _atomic(self.directory / f"{key}.pickle") as handle:
            pickle.dump(result, handle, protocol=pickle.HIGHEST_PROTOCOL)


def _release(lock: IO[bytes]) -> None:
    if not lock.closed:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()


@contextlib.contextmanager
def _atomic(path: Path) -> Iterator[IO[bytes]]:
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
