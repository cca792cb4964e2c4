"""quarantine.py: a phone's quarantine file, read without trusting what stands at its path."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import pytest

from qnn_migrate.bot.lab import quarantine


def test_put_get_lift(tmp_path: Path) -> None:
    assert quarantine.get(tmp_path, "PHONE_A") is None
    quarantine.put(tmp_path, "PHONE_A", "adb offline", "s1", now=5.0)
    got = quarantine.get(tmp_path, "PHONE_A")
    assert got is not None and (got.reason, got.since, got.shard) == ("adb offline", 5.0, "s1")
    assert quarantine.lift(tmp_path, "PHONE_A") and quarantine.get(tmp_path, "PHONE_A") is None


@pytest.mark.parametrize("kind", ["fifo", "endless", "garbage"])
def test_a_file_that_cannot_be_read_means_quarantined_and_never_stalls(
    tmp_path: Path, kind: str
) -> None:
    quarantine.put(tmp_path, "PHONE_A", "x")
    path = next((tmp_path / "quarantine").glob("PHONE_A.json"))
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)  # a plain read waits for a writer for ever
    elif kind == "endless":
        path.symlink_to("/dev/zero")  # a plain read never ends
    else:
        path.write_bytes(b"\xff{")
    got: list[object] = []
    worker = threading.Thread(target=lambda: got.append(quarantine.get(tmp_path, "PHONE_A")))
    worker.start()
    worker.join(timeout=60)
    if worker.is_alive():  # release the reader, so that the test fails instead of hanging
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(timeout=30)
        pytest.fail(f"get() waited on the {kind} at {path}")
    (entry,) = got
    assert isinstance(entry, quarantine.Quarantined)
    assert str(path) in entry.reason
