"""File I/O of ``qnn-migrate rewrite``: read a source file's bytes, decode them, write the
new bytes back atomically, and the unified diff between the two.

The only module of ``codemods`` that reads or writes a user's source file. Writes are atomic
(temporary file + rename) and keep the file's mode; the caller keeps its encoding, BOM and
newlines by encoding the new text as the old one was decoded (:func:`decode`).
"""

from __future__ import annotations

import os

# decoding (tokenize), line_diff and tempfile are imported where used: a warm run over an
# unchanged tree needs none of them, and every millisecond of start-up counts there.


def read(path: str) -> tuple[bytes, os.stat_result]:
    """The bytes of ``path`` and its status when read, by plain system calls: a third less
    time than ``open().read()``, which counts when every file of a tree is read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), os.fstat(fd)
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
