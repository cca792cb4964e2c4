"""ForkHopper (a test double of a hostile daemon): re-execs without the run's marker, then
keeps forking, each generation leaving the session and exiting as soon as its child exists.

    python fork_hopper.py HEARTBEAT DEADLINE [LOCK_FILE ...]

HEARTBEAT is a file path: the hopper holds a shared ``flock`` on it for as long as any
generation lives (every generation inherits the descriptor), which is how a test knows
it is alive (a hopper moves too fast to be seen reliably in /proc), and it writes
``HEARTBEAT.started`` once it holds its locks and has left the run's process group. The path is also in every generation's
command line. DEADLINE (seconds since the epoch) bounds it: every generation exits once it
has passed, so a test that fails cannot leak it for long. Each LOCK_FILE is held
exclusively the same way (as a PR's daemon holding a phone's lock would). Standard library
only.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time


def main() -> None:
    heartbeat, deadline, locks = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    if locks[-1:] != ["--hopping"]:
        # Drop the whole environment, the run's marker with it.
        argv = [sys.executable, "-S", __file__, heartbeat, str(deadline), *locks, "--hopping"]
        os.execve(sys.executable, argv, {})
    for path, mode in [(heartbeat, fcntl.LOCK_SH), *((p, fcntl.LOCK_EX) for p in locks[:-1])]:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, mode)
        os.set_inheritable(fd, True)
    started = False
    while time.time() < deadline:
        # Each generation that exits is a zombie until its (sub)reaper waits for it; hopping
        # flat out (thousands a second) would use up the machine's process ids (32,768 here)
        # for every test beside it before the reaper gets to it. A thousand a second still
        # outruns a scan of /proc.
        time.sleep(0.001)
        if os.fork() > 0:
            os._exit(0)
        # Each generation leaves the session and the process group of the one before.
        os.setsid()
        if not started:
            # Out of the run's process group now: killing that group no longer reaches it.
            with open(heartbeat + ".started", "w") as handle:
                handle.write(f"{os.getpid()}\n")
            started = True
    os._exit(0)


if __name__ == "__main__":
    main()
