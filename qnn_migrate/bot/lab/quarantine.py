"""Phones taken out of rotation after an infrastructure failure, until a health check passes.

One JSON file per serial under ``<state_dir>/quarantine/``, written atomically, so the
state survives runner restarts and an operator can read (or delete) it. Quarantine does
not forbid a phone: a quarantined phone is tried last, and only after a fresh health
check passes, which lifts the quarantine (LAVA's "Bad until a health check passes").
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from qnn_migrate.bot import artifacts

MAX_STATE_BYTES = 64 * 1024


@dataclass(frozen=True)
class Quarantined:
    """Why and since when a phone is out of rotation."""

    serial: str
    reason: str
    since: float
    shard: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "serial": self.serial,
            "reason": self.reason,
            "since": self.since,
            "shard": self.shard,
        }


def _path(state_dir: Path, serial: str) -> Path:
    return state_dir / "quarantine" / f"{serial.replace(':', '_').replace('/', '_')}.json"


def put(
    state_dir: Path, serial: str, reason: str, shard: str = "", now: float | None = None
) -> Quarantined:
    entry = Quarantined(serial, reason[:2000], time.time() if now is None else now, shard)
    path = _path(state_dir, serial)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".q-")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(entry.to_dict(), handle)
    os.replace(tmp, path)
    return entry


def get(state_dir: Path, serial: str) -> Quarantined | None:
    path = _path(state_dir, serial)
    if not path.exists() and not path.is_symlink():
        return None
    try:
        # The capped reader: a FIFO left at the path must not stall every job of the host.
        doc = json.loads(artifacts.read_part(path, "a quarantine file", MAX_STATE_BYTES))
        return Quarantined(
            serial=str(doc.get("serial", serial)),
            reason=str(doc.get("reason", "")),
            since=float(doc.get("since", 0.0)),
            shard=str(doc.get("shard", "")),
        )
    except (ValueError, TypeError, AttributeError, RecursionError):  # ArtifactError included
        # A damaged file still means "something went wrong with this phone".
        return Quarantined(serial, f"unreadable quarantine file {path}", 0.0)


def lift(state_dir: Path, serial: str) -> bool:
    """Take a phone back into rotation; True if it was quarantined."""
    try:
        _path(state_dir, serial).unlink()
    except FileNotFoundError:
        return False
    return True


def order(state_dir: Path, serials: Sequence[str]) -> list[str]:
    """Healthy-looking phones first (in the given order), quarantined ones last."""
    fine = [s for s in serials if get(state_dir, s) is None]
    return fine + [s for s in serials if s not in fine]
