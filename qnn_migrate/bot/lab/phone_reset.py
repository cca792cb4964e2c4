"""A phone brought back to its known state before and after every run (PR code reaches it).

PR code runs ``adb`` like the harness does, so it can leave on a phone what a later job
would meet: a package, a file under /data/local/tmp, and a process. A process started
through ``adb shell`` (``nohup sh -c '...' &``) runs as the ``shell`` user and outlives the
adb call, the job and an ephemeral runner: the phone is not ephemeral. The reset:

- kills every process of the ``shell`` user but the reset's own shell and what the host
  config keeps (``keep_processes``), and looks again (a process can fork while it is being
  killed); with ``phone_reset = "reboot"`` the phone is also rebooted after every run
  (``adb reboot``, ``wait-for-device``, then ``sys.boot_completed``), which ends what no
  ``ps`` shows;
- uninstalls every third-party package not in ``keep_packages``;
- removes every entry of /data/local/tmp not in ``keep_tmp``, dot-files included, by a
  loop that runs on the phone (an entry's name is never passed back to the phone's shell,
  whatever characters it holds), then lists the folder again.

What could not be undone is ``left``: before a run that makes the shard INFRA (the phone
is not in its known state) and quarantines the phone.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Protocol

from qnn_migrate.bot.lab.adb import AdbReply

DEVICE_TMP = "/data/local/tmp"
SHELL_USER = "shell"
KILL_ROUNDS = 3
BOOT_TIMEOUT_S = 600.0
BOOT_POLL_S = 2.0
# Names from the phone are PR-controlled: only a package name Android allows is passed back.
_PACKAGE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)+$")
# `echo $$` prints the shell's pid; `exec` makes ps that same process, so the listing's own
# process is known by pid, not by a name a hostile process could also take.
LIST_PROCESSES = "echo $$; exec ps -A -o USER,PID,PPID,NAME"


class PhoneShell(Protocol):
    """The adb operations a reset needs (``adb.Adb`` on a runner host)."""

    def shell(self, command: str, timeout_s: float | None = None) -> AdbReply: ...

    def call(self, args: list[str], timeout_s: float | None = None) -> AdbReply: ...


@dataclass
class Reset:
    """What one reset did (``notes``) and what it could not undo (``left``)."""

    notes: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {"notes": self.notes, "left": self.left}


def _shown(name: str) -> str:
    """A PR-chosen name made safe to print: its repr, capped."""
    return repr(name[:80])


def remove_tmp_command(keep: tuple[str, ...]) -> str:
    """The loop that removes every entry of /data/local/tmp but ``keep`` (plain names,
    checked by the host config), dot-files included; no entry's name is ever in it."""
    remove = '[ -e "$f" ] || [ -L "$f" ] && rm -rf -- "$f"'
    body = f'case "$f" in {"|".join(keep)}) ;; *) {remove};; esac' if keep else remove
    return f"cd {DEVICE_TMP} && for f in * .[!.]* ..?*; do {body}; done"


def shell_processes(phone: PhoneShell) -> tuple[list[tuple[str, str]], str | None]:
    """The ``shell`` user's processes as (pid, name), not the listing's own; or the error."""
    listed = phone.shell(LIST_PROCESSES)
    if not listed.ok:
        return [], f"could not list the phone's processes: {listed.reason()}"
    lines = listed.out.splitlines()
    own = lines[0].strip() if lines else ""
    found: list[tuple[str, str]] = []
    for line in lines[1:]:
        parts = line.split(None, 3)
        if len(parts) < 4 or parts[0] != SHELL_USER or not parts[1].isdigit():
            continue
        if parts[1] != own:
            found.append((parts[1], parts[3].strip()))
    return found, None


def kill_shell_processes(phone: PhoneShell, keep: tuple[str, ...], reset: Reset) -> None:
    """Kill the ``shell`` user's processes the phone does not keep; what survives is left."""
    for _ in range(KILL_ROUNDS):
        found, error = shell_processes(phone)
        if error:
            reset.left.append(error)
            return
        strays = [(pid, name) for pid, name in found if name not in keep]
        if not strays:
            return
        killed = phone.shell("kill -9 " + " ".join(pid for pid, _ in strays))
        reset.notes.append(
            f"killed {len(strays)} shell process(es) a job left: "
            + ", ".join(f"{pid} {_shown(name)}" for pid, name in strays[:8])
            + ("" if killed.ok else f" (kill said: {killed.reason()})")
        )
    found, error = shell_processes(phone)
    strays = [(pid, name) for pid, name in found if name not in keep]
    if error or strays:
        reset.left.append(
            error
            or "shell process(es) still running after the kill: "
            + ", ".join(f"{pid} {_shown(name)}" for pid, name in strays[:8])
        )


def reboot(
    phone: PhoneShell,
    reset: Reset,
    *,
    timeout_s: float = BOOT_TIMEOUT_S,
    poll_s: float = BOOT_POLL_S,
) -> None:
    """Reboot the phone and wait until it has booted; a phone that does not come back is left."""
    got = phone.call(["reboot"], timeout_s=60)
    if not got.ok:
        reset.left.append(f"could not reboot the phone: {got.reason()}")
        return
    deadline = time.monotonic() + timeout_s
    waited = phone.call(["wait-for-device"], timeout_s=timeout_s)
    while waited.ok and time.monotonic() < deadline:
        if phone.shell("getprop sys.boot_completed", timeout_s=30).out.strip() == "1":
            reset.notes.append("rebooted the phone")
            return
        time.sleep(poll_s)
    reset.left.append(f"the phone did not finish booting within {timeout_s:g} s of a reboot")


def reset_phone(
    phone: PhoneShell,
    *,
    keep_packages: tuple[str, ...] = (),
    keep_tmp: tuple[str, ...] = (),
    keep_processes: tuple[str, ...] = (),
    reboot_phone: bool = False,
) -> Reset:
    """Bring a phone back to its known state: processes, packages, /data/local/tmp."""
    reset = Reset()
    if reboot_phone:
        reboot(phone, reset)
    kill_shell_processes(phone, keep_processes, reset)

    listed = phone.shell("pm list packages -3")
    if not listed.ok:
        reset.left.append(f"could not list the phone's packages: {listed.reason()}")
    for line in listed.out.splitlines() if listed.ok else []:
        name = line.strip().removeprefix("package:")
        if not name or name in keep_packages:
            continue
        if not _PACKAGE_RE.match(name):
            reset.left.append(f"package {_shown(name)}: not a package name to pass to adb")
            continue
        gone = phone.shell(f"pm uninstall {name}")
        if gone.ok and "Success" in gone.out:
            reset.notes.append(f"uninstalled {name}")
        else:
            reset.left.append(f"could not uninstall {name}: {gone.reason()}")

    before = _tmp_entries(phone, reset)
    if before is None:
        return reset
    strays = sorted(set(before) - set(keep_tmp))
    if not strays:
        return reset
    removed = phone.shell(remove_tmp_command(keep_tmp), timeout_s=120)
    after = _tmp_entries(phone, reset)
    if after is None:
        return reset
    left = sorted(set(after) - set(keep_tmp))
    cleared = [name for name in strays if name not in left]
    if cleared:
        reset.notes.append(
            f"removed from {DEVICE_TMP}: "
            + ", ".join(_shown(n) for n in cleared[:20])
            + (f" and {len(cleared) - 20} more" if len(cleared) > 20 else "")
        )
    if left:
        reset.left.append(
            f"could not remove from {DEVICE_TMP}: "
            + ", ".join(_shown(n) for n in left[:20])
            + ("" if removed.ok else f" ({removed.reason()})")
        )
    return reset


def _tmp_entries(phone: PhoneShell, reset: Reset) -> list[str] | None:
    listed = phone.shell(f"ls -a {DEVICE_TMP}")
    if not listed.ok:
        reset.left.append(f"could not list {DEVICE_TMP}: {listed.reason()}")
        return None
    return [n for n in listed.out.splitlines() if n.strip() and n not in (".", "..")]
