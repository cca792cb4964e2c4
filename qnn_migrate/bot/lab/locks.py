"""One job per phone: an exclusive ``flock`` per serial in the host's state directory.

The lock is held for as long as the shard uses the phone, by an open file descriptor, so
a runner that dies releases it with its process; nothing has to clean up stale locks.
Acquiring never blocks forever: it polls within a wait budget and then says who to ask.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

POLL_S = 0.2


class DeviceBusy(RuntimeError):
    """No phone could be locked within the wait budget."""


def lock_path(state_dir: Path, serial: str) -> Path:
    return state_dir / "locks" / f"{serial.replace(':', '_').replace('/', '_')}.lock"


def try_lock(state_dir: Path, serial: str) -> int | None:
    """A file descriptor holding the phone's lock, or None when another job has it."""
    path = lock_path(state_dir, serial)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        # A link where a lock file belongs: never written through (it would truncate what
        # it names); the state folder is the supervisor's, so its own to replace.
        path.unlink()
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    # Only the supervisor may open it: flock needs no more than a read, so a file others
    # can read is a lock a job user's process could take and hold.
    os.fchmod(fd, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    # Who holds it, for the operator reading the file; the flock is what counts.
    os.ftruncate(fd, 0)
    os.write(fd, f"pid {os.getpid()} since {time.strftime('%Y-%m-%dT%H:%M:%S')}\n".encode())
    return fd


def release(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


@contextmanager
def first_free(
    state_dir: Path,
    serials: Sequence[str],
    wait_s: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[str]:
    """Lock the first phone of ``serials`` (in order) that is free within ``wait_s``."""
    if not serials:
        raise DeviceBusy("no device to lock: the shard and the host config name none")
    deadline = clock() + max(0.0, wait_s)
    while True:
        for serial in serials:
            fd = try_lock(state_dir, serial)
            if fd is not None:
                try:
                    yield serial
                finally:
                    release(fd)
                return
        if clock() >= deadline:
            raise DeviceBusy(
                f"device(s) {', '.join(serials)} stayed busy for {wait_s:g} s (locks in "
                f"{lock_path(state_dir, serials[0]).parent}); another job holds them"
            )
        sleep(POLL_S)
