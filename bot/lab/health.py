"""Is this phone fit to run a shard? Online, answering, the right SoC, room to work (pure).

The check talks to the phone through anything with ``get_state()``, ``shell()`` and
``getprop()`` (``bot.adb.Adb`` on a runner host, a fake in tests) and returns a
``Health`` whose ``reason`` is written for the person who has to fix the phone. A failed
check makes every test of the shard INFRA with that reason; it never runs a test.
"""

from __future__ import annotations

import re
import secrets
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from qnn_migrate.bot.lab.adb import AdbReply

WORK_DIR = "/data/local/tmp"
DEFAULT_MIN_FREE_MB = 2048
PLATFORMS_PATH = Path(__file__).parents[1] / "data" / "board_platforms.toml"
FIX_HINTS = {
    "offline": "replug the USB cable or restart adbd (`adb -s SERIAL reconnect`)",
    "unauthorized": "unlock the phone and accept the USB-debugging prompt for this host's key",
    "missing": "the phone is not attached to this host's adb server; check the cable and `adb devices`",
}


class DeviceShell(Protocol):
    """The three adb operations the health check needs."""

    def get_state(self) -> AdbReply: ...

    def shell(self, command: str, timeout_s: float | None = None) -> AdbReply: ...

    def getprop(self, name: str) -> str: ...


@dataclass(frozen=True)
class Health:
    """The verdict on one phone, and what was learned on the way."""

    serial: str
    ok: bool
    reason: str = ""
    soc: str | None = None
    fingerprint: str | None = None
    free_mb: int | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "serial": self.serial,
            "ok": self.ok,
            "reason": self.reason,
            "soc": self.soc,
            "fingerprint": self.fingerprint,
            "free_mb": self.free_mb,
        }


def load_platforms(path: Path = PLATFORMS_PATH) -> dict[str, str]:
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    table = doc.get("platforms", {})
    return {str(k).lower(): str(v).upper() for k, v in table.items()}


def parse_df_free_kb(text: str) -> int | None:
    """Available KiB from ``df -k PATH`` (toybox and busybox layouts)."""
    rows = [ln for ln in text.strip().splitlines() if ln.strip()]
    if len(rows) < 2:
        return None
    header = rows[0].replace("Mounted on", "Mounted_on").lower().split()
    column = next((i for i, h in enumerate(header) if h in ("available", "avail", "free")), 3)
    # A long filesystem name can wrap onto its own line; count columns from the right.
    row = rows[-1].split()
    from_right = len(header) - column
    if len(row) < from_right:
        return None
    try:
        return int(row[len(row) - from_right])
    except ValueError:
        return None


def device_soc(device: DeviceShell, platforms: Mapping[str, str]) -> str | None:
    """The SoC name the phone reports: ro.soc.model, else its board platform via the table."""
    model = device.getprop("ro.soc.model").strip().upper()
    if re.match(r"^[A-Z0-9]{2,16}$", model):
        return model
    platform = device.getprop("ro.board.platform").strip().lower()
    return platforms.get(platform)


def _state_problem(serial: str, reply: AdbReply) -> str:
    text = f"{reply.out}\n{reply.err}".lower()
    for state in ("unauthorized", "offline"):
        if state in text:
            return f"device {serial} is {state}: {FIX_HINTS[state]}"
    if "not found" in text or "no devices" in text:
        return f"device {serial} is missing: {FIX_HINTS['missing']}"
    return f"device {serial}: adb get-state failed ({reply.reason()})"


def check(
    device: DeviceShell,
    *,
    serial: str,
    expected_soc: str,
    min_free_mb: int = DEFAULT_MIN_FREE_MB,
    platforms: Mapping[str, str] | None = None,
    nonce: str | None = None,
) -> Health:
    """Run the checks in order and stop at the first failure."""
    state = device.get_state()
    if not state.ok or state.out.strip() != "device":
        return Health(serial, False, _state_problem(serial, state))

    token = nonce or f"qnn-health-{secrets.token_hex(4)}"
    echo = device.shell(f"echo {token}")
    if not echo.ok or echo.out.strip() != token:
        return Health(
            serial,
            False,
            f"device {serial} is online but its shell does not answer ({echo.reason()}); "
            "reboot the phone",
        )

    fingerprint = device.getprop("ro.build.fingerprint").strip() or None
    soc = device_soc(device, load_platforms() if platforms is None else platforms)
    if soc is None:
        return Health(
            serial,
            False,
            f"device {serial}: cannot tell its SoC (ro.soc.model and ro.board.platform are "
            f"unknown); add its platform to {PLATFORMS_PATH.name} or the host config",
            fingerprint=fingerprint,
        )
    if soc != expected_soc.upper():
        return Health(
            serial,
            False,
            f"device {serial} is a {soc}, but the shard is for {expected_soc}; fix the "
            "runner's labels or the host config's device list",
            soc=soc,
            fingerprint=fingerprint,
        )

    df = device.shell(f"df -k {WORK_DIR}")
    free_kb = parse_df_free_kb(df.out) if df.ok else None
    if free_kb is None:
        return Health(
            serial,
            False,
            f"device {serial}: cannot read free space on {WORK_DIR} ({df.reason()})",
            soc=soc,
            fingerprint=fingerprint,
        )
    free_mb = free_kb // 1024
    if free_mb < min_free_mb:
        return Health(
            serial,
            False,
            f"device {serial} has {free_mb} MB free on {WORK_DIR}, needs {min_free_mb} MB; "
            "delete old files there",
            soc=soc,
            fingerprint=fingerprint,
            free_mb=free_mb,
        )
    return Health(serial, True, "", soc=soc, fingerprint=fingerprint, free_mb=free_mb)
