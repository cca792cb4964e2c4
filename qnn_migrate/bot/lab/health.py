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
from collections.abc import Callable, Mapping
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


# ------------------------------------------------------------------ x86-simulator hosts

SIMULATOR = "x86-simulator"
HTP_LIBRARY = "lib/x86_64-linux-clang/libQnnHtp.so"
RUNNER_IN_BUILD = "examples/qualcomm/executor_runner/qnn_executor_runner"
_LOADER_ERRORS = ("error while loading shared libraries", "exec format error", "not found")


def simulator_runner_path(qnn_executor_runner: str | None, build_folder: str, checkout: str) -> str:
    """Where the harness will look for the x86 runner: ``QNN_EXECUTOR_RUNNER``, else the build."""
    if qnn_executor_runner:
        return qnn_executor_runner
    base = build_folder if build_folder.startswith("/") else f"{checkout}/{build_folder}"
    return f"{base.rstrip('/')}/{RUNNER_IN_BUILD}"


def check_simulator(
    *,
    qnn_sdk_root: str | None,
    runner: str,
    work_dir: str,
    min_free_mb: int,
    is_file: Callable[[str], bool],
    is_executable: Callable[[str], bool],
    probe: Callable[[list[str]], tuple[int | None, str]],
    free_mb: Callable[[str], int | None],
) -> Health:
    """Is this host fit to run a simulator shard? The SDK, the x86 runner, disk; no adb.

    ``probe`` runs a command and returns (exit code or None if it could not start, output);
    the runner is started with ``--help``: any exit code will do, as long as the loader
    found its libraries and the file is an x86-64 program.
    """
    if not qnn_sdk_root:
        return Health(
            SIMULATOR,
            False,
            "qnn_sdk_root is not set in the host config; point it at the QNN SDK (QAIRT) root",
        )
    library = f"{qnn_sdk_root.rstrip('/')}/{HTP_LIBRARY}"
    if not is_file(library):
        return Health(
            SIMULATOR,
            False,
            f"{library} is missing: qnn_sdk_root must be a QNN SDK root with the x86-64 HTP "
            "simulator libraries",
        )
    if not is_file(runner) or not is_executable(runner):
        return Health(
            SIMULATOR,
            False,
            f"the x86 qnn_executor_runner {runner} is missing or not executable; build it with "
            "backends/qualcomm/scripts/build.sh (see docs/runners.md) and set "
            "qnn_executor_runner in the host config",
        )
    code, text = probe([runner, "--help"])
    lowered = text.lower()
    if code is None or code in (126, 127) or any(e in lowered for e in _LOADER_ERRORS):
        first = text.strip().splitlines()[0][:200] if text.strip() else f"exit {code}"
        return Health(
            SIMULATOR,
            False,
            f"the x86 qnn_executor_runner {runner} does not start ({first}); rebuild it or "
            "fix LD_LIBRARY_PATH in the host config's [env]",
        )
    free = free_mb(work_dir)
    if free is None:
        return Health(SIMULATOR, False, f"cannot read free space on {work_dir}")
    if free < min_free_mb:
        return Health(
            SIMULATOR,
            False,
            f"{work_dir} has {free} MB free, needs {min_free_mb} MB; clean the runner's work "
            "directory",
            free_mb=free,
        )
    return Health(SIMULATOR, True, "", free_mb=free)
