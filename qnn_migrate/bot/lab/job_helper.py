"""What the supervisor asks of a job user, run *as* that user (standard library only).

    python -I -S job_helper.py kill-all
    python -I -S job_helper.py prepare FOLDER SUBDIR ...
    python -I -S job_helper.py wipe FOLDER
    python -I -S job_helper.py sweep DIR ...
    python -I -S job_helper.py collect DIR MAX_FILE_BYTES MAX_TOTAL_BYTES

The supervisor (``bot/lab/job_user.py``) starts it through the host's switch (``setpriv``
or ``sudo``) with the job user's uid, so each step has exactly the job user's rights: it
can end only that user's processes and touch only what that user may, and a link a job
left cannot send it elsewhere. ``-I -S``: no environment variable, user site or ``.pth``
reaches the interpreter.

- ``kill-all``: ``kill(-1, SIGKILL)`` as the job user ends every process of that user at
  once (the kernel signals them all under one lock, so a process forking in a loop cannot
  fork past it); the supervisor then lists what is left by uid and asks again.
- ``prepare``: empties FOLDER (the job user's own; dot-files, read-only folders and all),
  then makes each SUBDIR (mode 0700).
- ``wipe``: empties FOLDER.
- ``sweep``: removes what this user owns at the top of each shared DIR (``/tmp``,
  ``/var/tmp``, ``/dev/shm``), and prints each path removed.
- ``collect``: writes the regular files under DIR (links and special files are not
  followed, and are named instead) to stdout as frames: one JSON line
  ``{"path": RELATIVE, "size": N}`` then N bytes; a last line ``{"skipped": [...]}``.
  The supervisor reads the frames as untrusted input (the files are the job's).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys


def kill_all() -> int:
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)  # every process of this user but this one
    return 0


def _remove(path: str) -> None:
    """Remove ``path`` (a link is removed, never followed), making folders writable first.

    coreutils' ``chmod -R`` and ``rm -rf`` work below any depth (a job can nest folders
    deeper than a path can name, or past Python's recursion limit)."""
    if not os.path.lexists(path):
        return
    if os.path.isdir(path) and not os.path.islink(path):
        subprocess.run(["chmod", "-R", "-f", "u+rwx", "--", path], check=False)
    subprocess.run(["rm", "-rf", "--one-file-system", "--", path], check=False)
    if os.path.lexists(path):
        raise OSError(f"could not remove {path}")


def wipe(folder: str) -> None:
    os.chmod(folder, 0o700)
    for name in os.listdir(folder):
        _remove(os.path.join(folder, name))


def prepare(folder: str, subdirs: list[str]) -> int:
    wipe(folder)
    for sub in subdirs:
        os.makedirs(os.path.join(folder, sub), mode=0o700, exist_ok=True)
    return 0


def sweep(dirs: list[str]) -> int:
    me = os.getuid()
    for top in dirs:
        try:
            names = os.listdir(top)
        except OSError:
            continue
        for name in names:
            path = os.path.join(top, name)
            try:
                if os.lstat(path).st_uid != me:
                    continue
                _remove(path)
            except OSError as exc:
                print(f"could not remove {path}: {exc}", file=sys.stderr)
                continue
            print(path)
    return 0


def collect(top: str, max_file: int, max_total: int) -> int:
    out = sys.stdout.buffer
    skipped: list[str] = []
    total = 0
    for folder, dirs, files in os.walk(top, followlinks=False):
        dirs.sort()
        for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, top)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
            except OSError:
                skipped.append(f"{rel} (a link or not readable)")
                continue
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    skipped.append(f"{rel} (not a regular file)")
                    continue
                if st.st_size > max_file or total + st.st_size > max_total:
                    skipped.append(f"{rel} ({st.st_size} bytes: over the cap)")
                    continue
                data = b""
                while len(data) < st.st_size:
                    block = os.read(fd, min(1 << 20, st.st_size - len(data)))
                    if not block:
                        break
                    data += block
            finally:
                os.close(fd)
            total += len(data)
            out.write(json.dumps({"path": rel, "size": len(data)}).encode() + b"\n" + data)
    out.write(json.dumps({"skipped": skipped}).encode() + b"\n")
    out.flush()
    return 0


def main(argv: list[str]) -> int:
    command, args = argv[0], argv[1:]
    if command == "kill-all":
        return kill_all()
    if command == "prepare":
        return prepare(args[0], args[1:])
    if command == "wipe":
        wipe(args[0])
        return 0
    if command == "sweep":
        return sweep(args)
    if command == "collect":
        return collect(args[0], int(args[1]), int(args[2]))
    print(f"job_helper: unknown command {command!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
