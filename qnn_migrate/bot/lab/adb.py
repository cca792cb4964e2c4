"""The adb client for one phone: argument lists, a timeout on every call, nothing raised.

Only this module and ``runner`` start processes. Every call returns an ``AdbReply``; a
missing ``adb`` binary or a call that hangs becomes a reply with a non-zero code and a
message, so the health check and the runner can turn it into an INFRA reason instead of a
traceback.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

SERIAL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
HOST_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$")
DEFAULT_TIMEOUT_S = 30.0
MAX_OUTPUT_CHARS = 256 * 1024


class AdbConfigError(ValueError):
    """A serial or adb host that cannot be passed to adb safely."""


@dataclass(frozen=True)
class AdbReply:
    """What one adb call printed and how it ended (code -1: could not run or timed out)."""

    code: int
    out: str
    err: str

    @property
    def ok(self) -> bool:
        return self.code == 0

    def reason(self) -> str:
        """The most telling line of the output, for a user-facing message."""
        for text in (self.err, self.out):
            lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
            if lines:
                return lines[0][:300]
        return f"exit code {self.code}"


def check_serial(serial: str) -> str:
    if not SERIAL_RE.match(serial):
        raise AdbConfigError(f"device serial {serial!r} has characters adb serials never use")
    return serial


def check_host(host: str) -> str:
    if not HOST_RE.match(host):
        raise AdbConfigError(f"adb host {host!r} is not a host name or address")
    return host


class Adb:
    """``adb [-H host] -s serial ...`` for one device."""

    def __init__(
        self,
        serial: str,
        *,
        host: str | None = None,
        adb: str = "adb",
        env: Mapping[str, str] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.serial = check_serial(serial)
        self.host = check_host(host) if host else None
        self.adb = adb
        self.env = dict(env) if env is not None else None
        self.timeout_s = timeout_s

    def argv(self, *args: str) -> list[str]:
        head = [self.adb] + (["-H", self.host] if self.host else []) + ["-s", self.serial]
        return head + list(args)

    def call(self, args: Sequence[str], timeout_s: float | None = None) -> AdbReply:
        argv = self.argv(*args)
        try:
            proc = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout_s or self.timeout_s,
                env=self.env,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except FileNotFoundError:
            return AdbReply(-1, "", f"adb not found: {self.adb!r} is not on PATH")
        except subprocess.TimeoutExpired:
            return AdbReply(
                -1, "", f"adb {' '.join(args)} did not answer in {timeout_s or self.timeout_s:g} s"
            )
        except OSError as exc:
            return AdbReply(-1, "", f"adb could not be started: {exc}")
        return AdbReply(
            proc.returncode, proc.stdout[:MAX_OUTPUT_CHARS], proc.stderr[:MAX_OUTPUT_CHARS]
        )

    def get_state(self) -> AdbReply:
        return self.call(["get-state"])

    def shell(self, command: str, timeout_s: float | None = None) -> AdbReply:
        # adb joins shell words with spaces on the phone; the commands here are ours,
        # never text from a PR or a comment.
        return self.call(["shell", command], timeout_s)

    def getprop(self, name: str) -> str:
        reply = self.shell(f"getprop {name}")
        return reply.out.strip() if reply.ok else ""

    def logcat(self, lines: int = 400) -> AdbReply:
        return self.call(["logcat", "-d", "-t", str(lines)])

    def clear_logcat(self) -> AdbReply:
        return self.call(["logcat", "-c"])
