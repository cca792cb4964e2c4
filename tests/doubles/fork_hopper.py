"""ForkHopper (a test double of a hostile daemon): re-execs without the run's marker, then
keeps forking, each generation exiting as soon as its child exists.

    python fork_hopper.py TAG DEADLINE [LOCK_FILE]

TAG is a word the test looks for in /proc/*/cmdline; DEADLINE (seconds since the epoch)
bounds it: every generation exits once it has passed, so a test that fails cannot leak it
for long. With LOCK_FILE, the first generation takes an exclusive flock on it and every
generation inherits the descriptor: the lock lives as long as the hopper does (as a PR's
daemon holding a phone's lock would). Standard library only.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time


def main() -> None:
    tag, deadline = sys.argv[1], float(sys.argv[2])
    lock = sys.argv[3] if len(sys.argv) > 3 else ""
    if sys.argv[-1] != "--hopping":
        # Drop the whole environment, the run's marker with it.
        argv = [sys.executable, "-S", __file__, tag, str(deadline), lock, "--hopping"]
        os.execve(sys.executable, argv, {})
    if lock:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.set_inheritable(fd, True)
    while time.time() < deadline:
        if os.fork() > 0:
            os._exit(0)
        # Each generation leaves the session and the process group of the one before.
        os.setsid()
    os._exit(0)


if __name__ == "__main__":
    main()
