"""File I/O of the rewrite: whole files read, atomic writes that refuse a file changed meanwhile."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qnn_migrate.codemods import files


def test_a_file_is_read_whole_and_a_folder_is_an_error(tmp_path: Path) -> None:
    big = tmp_path / "big.py"
    big.write_bytes(b"x = 1\n" * 500_000)  # over the 1 MiB chunk
    data, status = files.read(str(big))
    assert data == big.read_bytes() and status.st_size == len(data)
    folder = tmp_path / "folder.py"
    folder.mkdir()
    with pytest.raises(OSError):
        files.read(str(folder))


@pytest.mark.posix  # file modes are POSIX
def test_a_write_keeps_the_mode_and_refuses_a_file_changed_since_it_was_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.py"
    path.write_bytes(b"old\n")
    os.chmod(path, 0o640)
    _, status = files.read(str(path))
    files.write_atomically(str(path), b"new\n", status)
    assert path.read_bytes() == b"new\n" and (path.stat().st_mode & 0o777) == 0o640
    path.write_bytes(b"changed by someone else, longer\n")
    with pytest.raises(OSError):
        files.write_atomically(str(path), b"newer\n", status)  # the status read before
    assert path.read_bytes() == b"changed by someone else, longer\n"
    assert not list(tmp_path.glob(".qnn-migrate-*"))


@pytest.mark.posix  # FIFOs are POSIX
def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path: Path) -> None:
    """707dc17 opened it for reading and waited for a writer for ever."""
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    with pytest.raises(files.NotARegularFile) as caught:
        files.read(str(fifo))
    assert caught.value.what == "a FIFO (named pipe)"
    regular = tmp_path / "regular.py"  # control: the same call reads a file
    regular.write_bytes(b"x = 1\n")
    assert files.read(str(regular))[0] == b"x = 1\n"
