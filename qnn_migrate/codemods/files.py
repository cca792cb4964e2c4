"""File I/O of ``qnn-migrate rewrite``: read a source file's bytes, decode them, write the
new bytes back atomically, and the unified diff between the two.

The only module of ``codemods`` that reads or writes a user's source file. Writes are atomic
(temporary file + rename) and keep the file's mode; the caller keeps its encoding, BOM and
newlines by encoding the new text as the old one was decoded (:func:`decode`).
"""

from __future__ import annotations

import os
import stat as stat_module

# decoding (tokenize), line_diff and tempfile are imported where used: a warm run over an
# unchanged tree needs none of them, and every millisecond of start-up counts there.


class NotARegularFile(OSError):
    """``path`` is a FIFO, a socket or a device: reading it could wait for ever (a FIFO until
    some process writes to it), so it is not read. ``what`` names the kind."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(f"{path} is {what}, not a regular file")
        self.what = what


def kind_of(mode: int) -> str | None:
    """What a file of status ``mode`` is, when it is not a regular file or a directory."""
    if stat_module.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat_module.S_ISSOCK(mode):
        return "a socket"
    if stat_module.S_ISCHR(mode) or stat_module.S_ISBLK(mode):
        return "a device"
    if stat_module.S_ISREG(mode) or stat_module.S_ISDIR(mode):
        return None
    return "not a regular file"


# Opening a FIFO for reading waits for a writer; with O_NONBLOCK it returns at once (and
# the status then says what it is). It changes nothing for a regular file. Windows has no
# FIFOs to open, and no O_NONBLOCK.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)


def read(path: str) -> tuple[bytes, os.stat_result]:
    """The bytes of ``path`` and its status when read, by plain system calls: a third less
    time than ``open().read()``, which counts when every file of a tree is read.

    A FIFO, socket or device raises :class:`NotARegularFile` without being read (the file
    walk leaves them out already; this covers a file replaced by one since, and a path named
    on the command line)."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        status = os.fstat(fd)
        what = kind_of(status.st_mode)
        if what is not None:
            raise NotARegularFile(path, what)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), status
    finally:
        os.close(fd)


def decode(data: bytes) -> tuple[str, str]:
    """The text and the encoding of a Python source file (``codemods/decoding.py``); a
    ``SourceDecodeError`` (a ValueError with the line to report) when it cannot be read."""
    from qnn_migrate.codemods.decoding import decode_source

    return decode_source(data)


def write_atomically(path: str, data: bytes, expected: os.stat_result) -> None:
    """Replace ``path`` by ``data`` in one rename, keeping its mode; an OSError when the file
    changed on disk since it was read (``expected``: its status then)."""
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
