"""The job user: the unprivileged user a job's PR code runs as, never the supervisor's.

The supervisor (``run-shard``: the reaper, the host checks, the results) runs as the
GitHub runner's user or root. Everything that runs PR code (the ``import executorch``
check, the harness, every test) runs as a job user from the host config's pool
(``[job_users]``), through the host's own switch: ``setpriv`` (the supervisor is root, or
holds CAP_SETUID and CAP_SETGID) or ``sudo -n -u NAME``. The job user has its own home,
TMPDIR, checkout and output folder under ``<home>/<name>/`` (mode 0700, its own), and
write access to nothing of the supervisor's: not the bot's install, not another job's
folders, not the results, the host config or the seal.

Per job (``hoststate`` drives it):

- ``acquire``: the first job user of the pool whose lock (``<state_dir>/locks``, mode
  0600: no job user can open it) is free; on an ephemeral host, only one that never ran a
  job there (its marker in ``<state_dir>/used/``), so a reused "ephemeral" host is found;
- ``end_all``: every process of the user's uid is killed (``kill(-1, SIGKILL)`` run *as*
  that user, see ``job_helper``) and ``/proc`` is read again until none is left; by uid,
  so a process that re-execs, drops every marker, leaves its session or outlives a killed
  supervisor is found all the same. Before a job, a process that cannot be ended refuses
  the job;
- ``prepare``: the user's folder emptied and made again (home, tmp, out);
- ``fresh_checkout``: the pinned commit fetched into a new folder, as the job user, with
  git's global and system configuration and hooks off (``checkout_problems`` then checks
  the tree: every file as the commit has it, nothing more, no hooks);
- ``collect``: what the job's processes wrote, read back through the job user (the
  supervisor may not be able to read the folder: ``sudo``) as untrusted frames;
- ``sweep``: what the user left in the shared temporary folders.

Processes are started through ``process``; the job user's steps are ``job_helper``.
"""

from __future__ import annotations

import contextlib
import grp
import hashlib
import json
import os
import pwd
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from qnn_migrate.bot.lab import integrity, locks, process
from qnn_migrate.bot.lab.host_config import JobUsers

HERE = Path(__file__).parent
# The files of the bot a job user's processes run by path (the helper; the JUnit wrapper, a
# folder staged whole, and the recorder it loads from beside it; the other-backends driver).
# The bot's install may sit where a job user cannot read (the runner's home): they are staged
# into the state folder, the supervisor's and readable by all, under their content's hash.
STAGED = ("job_helper.py", "junit_wrapper", "program_recorder.py", "other_backends.py")
HELPER_PATH = "/usr/bin:/bin"
ENV_TOOL = "/usr/bin/env"
# A user in one of these groups can become root or read any disk: not a job user.
PRIVILEGED_GROUPS = frozenset(
    {"root", "sudo", "wheel", "admin", "adm", "docker", "disk", "lxd", "libvirt", "shadow"}
)
SHARED_TMP = ("/tmp", "/var/tmp", "/dev/shm")
END_BUDGET_S = 10.0
CHECKOUT_TIMEOUT_S = 1800.0
# What one attempt's files may bring back (junit.xml, programs.json, the harness's artifacts).
COLLECT_FILE_BYTES = 64 * 1024 * 1024
COLLECT_TOTAL_BYTES = 256 * 1024 * 1024
# git with no configuration but the repository's own, no hooks, no fsmonitor, no prompt.
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_SYSTEM": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
}
GIT_SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")
# Repository configuration that makes git run a program or read another file.
_RISKY_CONFIG = ("core.hookspath", "core.fsmonitor", "core.sshcommand", "include.", "includeif.")
_RISKY_SECTIONS = ("filter.",)
_SHA_RE = re.compile(r"^[0-9a-f]{40}$")


class JobUserError(RuntimeError):
    """A job user cannot be used; the message says what, where and what to do."""


@dataclass(frozen=True)
class JobUser:
    """One resolved job user: who it is, its folder, and how the supervisor becomes it."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    folder: Path
    switch: str
    tool: str  # the absolute path of setpriv or sudo
    python: str  # the interpreter the helper runs with ([job_users] python)
    staged: Path  # the bot's files the job user runs (``stage``)

    @property
    def home(self) -> Path:
        return self.folder / "home"

    @property
    def tmp(self) -> Path:
        return self.folder / "tmp"

    @property
    def out(self) -> Path:
        return self.folder / "out"

    @property
    def checkout(self) -> Path:
        return self.folder / "executorch"

    def command(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: Path | str
    ) -> tuple[list[str], dict[str, str]]:
        """``argv`` run as this user in ``cwd`` with exactly ``env``: the command line and
        the environment to start it with (from ``/``, which the supervisor can enter)."""
        if self.switch == "setpriv":
            head = [
                self.tool,
                f"--reuid={self.uid}",
                f"--regid={self.gid}",
                "--clear-groups",
                "--no-new-privs",  # no setuid program (sudo, su) gains anything
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--",
                ENV_TOOL,
                "-C",
                str(cwd),
                "--",
            ]
            return [*head, *argv], dict(env)
        # sudo drops the caller's environment: it is given to env(1) as arguments.
        assignments = [f"{k}={v}" for k, v in env.items() if "=" not in k]
        head = [self.tool, "-n", "-u", self.name, "--", ENV_TOOL, "-i", "-C", str(cwd)]
        # env takes its options before the assignments; the first word after them that is
        # no assignment is the command (a program path never holds "=").
        return [*head, *assignments, *argv], {"PATH": HELPER_PATH}

    def helper(self, *args: str, timeout_s: float = 600.0) -> process.Captured:
        argv, env = self.command(
            [self.python, "-I", "-S", str(self.staged / "job_helper.py"), *args],
            {"PATH": HELPER_PATH, "HOME": str(self.folder), "LC_ALL": "C"},
            "/",
        )
        return process.run_captured(argv, env=env, timeout_s=timeout_s, cwd=Path("/"))

    def end_all(self, budget_s: float = END_BUDGET_S) -> tuple[list[str], list[str]]:
        """Kill every process of this user; (what was found, what is still there)."""
        found = describe(processes_of(self.uid))
        deadline = time.monotonic() + budget_s
        while True:
            left = processes_of(self.uid)
            if not left:
                return found, []
            if time.monotonic() > deadline:
                return found, describe(left)
            got = self.helper("kill-all", timeout_s=60)
            if got.code is None:
                return found, [f"cannot run the kill as {self.name}: {got.stderr[:200]}"]
            process.reap_zombies()
            time.sleep(0.02)

    def prepare(self, subdirs: Sequence[str]) -> None:
        got = self.helper("prepare", str(self.folder), *subdirs)
        if got.code != 0:
            raise JobUserError(
                f"cannot empty and prepare {self.folder} as {self.name} "
                f"({_last(got)}); check that the folder is the user's own"
            )

    def wipe(self) -> str | None:
        got = self.helper("wipe", str(self.folder))
        return None if got.code == 0 else _last(got)

    def sweep(self) -> list[str]:
        """What this user left at the top of the shared temporary folders, removed."""
        got = self.helper("sweep", *SHARED_TMP)
        removed = [f"removed {p}" for p in got.stdout.splitlines() if p.strip()]
        return removed + [f"left {ln}" for ln in got.stderr.splitlines() if ln.strip()]

    def collect(self, folder: Path, into: Path) -> list[str]:
        """Copy the job's outputs under ``folder`` (``OUTPUTS``: the JUnit XML, the
        programs file, the harness's artifacts) into ``into`` (the supervisor's), read as
        the job user; the notes about what was not copied."""
        argv, env = self.command(
            [
                self.python,
                "-I",
                "-S",
                str(self.staged / "job_helper.py"),
                "collect",
                str(folder),
                str(COLLECT_FILE_BYTES),
                str(COLLECT_TOTAL_BYTES),
            ],
            {"PATH": HELPER_PATH, "LC_ALL": "C"},
            "/",
        )
        code, data, err = process.run_bytes(
            argv, env=env, cwd=Path("/"), timeout_s=600, limit=COLLECT_TOTAL_BYTES + (1 << 20)
        )
        if code != 0:
            return [f"the job's files in {folder} could not be read back: {err.strip()[:200]}"]
        return unpack(data, into)


def describe(found: Sequence[tuple[int, str]]) -> list[str]:
    return [f"{pid} {name}" for pid, name in found[:20]] + (
        [f"and {len(found) - 20} more"] if len(found) > 20 else []
    )


def _last(got: process.Captured) -> str:
    lines = [ln for ln in (got.stderr + got.stdout).splitlines() if ln.strip()]
    return (lines[-1] if lines else f"exit code {got.code}")[:300]


def processes_of(uid: int) -> list[tuple[int, str]]:
    """Live processes with ``uid`` as their real, effective, saved or filesystem uid."""
    found: list[tuple[int, str]] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as handle:
                text = handle.read(4096).decode("utf-8", "replace")
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        uids = fields.get("Uid", "").split()
        state = fields.get("State", "").strip()[:1]
        if str(uid) in uids and state not in ("Z", "X"):
            found.append((int(name), fields.get("Name", "?").strip()[:40]))
    return found


# What a test process writes that the supervisor keeps: nothing else of the job's folder
# may land beside the supervisor's own files of the attempt (its stderr.txt is read too).
OUTPUTS = ("junit.xml", "programs.json")
OUTPUT_FOLDERS = ("artifacts",)


def unpack(data: bytes, into: Path) -> list[str]:
    """Write the frames of ``job_helper collect`` that are ``OUTPUTS`` under ``into``."""
    notes: list[str] = []
    view = memoryview(data)
    at = 0
    while at < len(view):
        end = data.find(b"\n", at, at + 64 * 1024)
        if end < 0:
            notes.append("the job's files ended in a damaged frame; the rest is not kept")
            break
        try:
            head = json.loads(data[at:end])
        except (ValueError, RecursionError):
            notes.append("the job's files ended in a damaged frame; the rest is not kept")
            break
        at = end + 1
        if not isinstance(head, dict):
            break
        if "skipped" in head:
            skipped = head["skipped"] if isinstance(head["skipped"], list) else []
            notes += [f"not kept: {str(s)[:200]}" for s in skipped[:50]]
            break
        rel, size = head.get("path"), head.get("size")
        if not isinstance(rel, str) or not isinstance(size, int) or size < 0:
            notes.append("the job's files ended in a damaged frame; the rest is not kept")
            break
        body = bytes(view[at : at + size])
        at += size
        parts = Path(rel).parts
        if not parts or Path(rel).is_absolute() or any(p in ("..", ".", "") for p in parts):
            notes.append(f"not kept: {rel[:200]!r} (not a plain relative path)")
            continue
        if rel not in OUTPUTS and (len(parts) < 2 or parts[0] not in OUTPUT_FOLDERS):
            notes.append(f"not kept: {rel[:200]!r} (not one of the test process's outputs)")
            continue
        target = into.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".collect-")
        with os.fdopen(fd, "wb") as handle:
            handle.write(body)
        os.replace(tmp, target)  # over whatever stood there: never through a link
    return notes


# ---------------------------------------------------------------------- finding a user


def staged_files() -> dict[str, bytes]:
    """What ``stage`` copies: the path under the staged folder -> the content, for each
    ``STAGED`` file, and for a ``STAGED`` folder each of its ``.py`` files."""
    files: dict[str, bytes] = {}
    for name in STAGED:
        path = HERE / name
        if path.is_dir():
            for member in sorted(path.glob("*.py")):
                files[f"{name}/{member.name}"] = member.read_bytes()
        else:
            files[name] = path.read_bytes()
    return files


def stage(state_dir: Path) -> Path:
    """The bot's ``STAGED`` files copied to ``<state_dir>/bot-files/<hash>/`` (made once)."""
    digest = hashlib.sha256()
    texts = staged_files()
    for name, data in texts.items():
        digest.update(name.encode() + b"\0" + data + b"\0")
    target = state_dir / "bot-files" / digest.hexdigest()[:16]
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    target.parent.chmod(0o755)
    work = Path(tempfile.mkdtemp(dir=target.parent, prefix=".stage-"))
    for name, data in texts.items():
        path = work / name
        if not path.parent.is_dir():
            path.parent.mkdir()
            path.parent.chmod(0o755)
        path.write_bytes(data)
        path.chmod(0o644)
    work.chmod(0o755)
    try:
        os.rename(work, target)
    except OSError:  # another runner staged the same files first
        shutil.rmtree(work, ignore_errors=True)
    return target


def staged_argv(argv: Sequence[str], staged: Path) -> list[str]:
    """``argv`` with each path of a ``STAGED`` file or folder of the bot's install made the
    staged one."""
    mapping = {str(HERE / name): str(staged / name) for name in STAGED}
    return [mapping.get(word, word) for word in argv]


def resolve(spec: JobUsers, name: str, *, path_env: str, staged: Path) -> JobUser:
    """The job user ``name`` of the pool, checked fit to run PR code, or ``JobUserError``."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise JobUserError(
            f"job user {name} (host config [job_users]) does not exist on this host; create "
            f"it: useradd --system --user-group --shell /usr/sbin/nologin --no-create-home "
            f'{name} (docs/runners.md, "Two users")'
        ) from None
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        raise JobUserError(f"job user {name} is root or in root's group: it must be unprivileged")
    if entry.pw_uid == os.getuid():
        raise JobUserError(
            f"job user {name} is the supervisor's own user (uid {entry.pw_uid}): PR code must "
            "never run as the user that checks it; use a user of its own"
        )
    groups = tuple(os.getgrouplist(name, entry.pw_gid))
    privileged = sorted(
        g.gr_name for gid in groups if (g := _group(gid)) and g.gr_name in PRIVILEGED_GROUPS
    )
    if privileged:
        raise JobUserError(
            f"job user {name} is in the group(s) {', '.join(privileged)}, which lead to root; "
            f"remove it from them (gpasswd -d {name} GROUP)"
        )
    folder = Path(spec.home) / name
    try:
        st = os.lstat(folder)
    except OSError:
        st = None
    if st is None or not stat.S_ISDIR(st.st_mode):
        raise JobUserError(
            f"{folder}, job user {name}'s folder, is missing (or not a folder); make it: "
            f"install -d -o {name} -g {name} -m 0700 {folder}"
        )
    if st.st_uid != entry.pw_uid or stat.S_IMODE(st.st_mode) & 0o077:
        raise JobUserError(
            f"{folder} must belong to {name} with mode 0700 (it is uid {st.st_uid}, mode "
            f"{stat.S_IMODE(st.st_mode):o}): chown {name}: {folder} && chmod 0700 {folder}"
        )
    how = integrity.replaceable_by(Path(spec.home), entry.pw_uid, groups)
    if how:
        raise JobUserError(
            f"{spec.home} (job users' home) can be replaced by {name}: {how}; make it root's"
        )
    tool = shutil.which(spec.switch, path=path_env)
    if tool is None:
        package = "util-linux" if spec.switch == "setpriv" else "sudo"
        raise JobUserError(
            f"{spec.switch} (host config [job_users] switch) is not on PATH; install {package}"
        )
    return JobUser(
        name, entry.pw_uid, entry.pw_gid, groups, folder, spec.switch, tool, spec.python, staged
    )


def writable_by_job_users(spec: JobUsers | None, paths: Sequence[Path]) -> list[str]:
    """How a job user of ``spec`` could change one of ``paths`` (the seal, the host config)."""
    found: list[str] = []
    for name in spec.names if spec else ():
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            found.append(f"job user {name} does not exist")
            continue
        groups = os.getgrouplist(name, entry.pw_gid)
        for path in paths:
            how = integrity.replaceable_by(path, entry.pw_uid, groups)
            if how:
                found.append(f"writable by the job user {name}: {how}")
    return found


def _group(gid: int) -> grp.struct_group | None:
    try:
        return grp.getgrgid(gid)
    except KeyError:
        return None


def marker_path(state_dir: Path, name: str) -> Path:
    return state_dir / "used" / f"{name}.json"


def used(state_dir: Path, name: str) -> str | None:
    """What the marker of an earlier job of ``name`` on this host says, or None."""
    path = marker_path(state_dir, name)
    if not path.exists() and not path.is_symlink():
        return None
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:300].strip() or "(empty)"
    except OSError as exc:
        return f"(unreadable: {exc.strerror})"


def mark_used(state_dir: Path, name: str, what: str) -> None:
    path = marker_path(state_dir, name)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".mark-")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(what + "\n")
    os.replace(tmp, path)


@contextlib.contextmanager
def acquire(
    spec: JobUsers,
    state_dir: Path,
    wait_s: float,
    *,
    ephemeral: bool,
    resolve_one: Callable[[str], JobUser],
) -> Iterator[JobUser]:
    """Lock a job user of the pool for the whole job (one runner per user at a time).

    On an ephemeral host a user that ran a job here before is never taken again: when
    every one has, the host was reused, and the job is refused."""
    names = list(spec.names)
    if ephemeral:
        seen = {n: used(state_dir, n) for n in names}
        names = [n for n in names if seen[n] is None]
        if not names:
            said = "; ".join(f"{n}: {m}" for n, m in seen.items())
            raise JobUserError(
                'refused: this host says lifetime = "ephemeral", but every job user already '
                f"ran a job on it ({said}): it is a reused host, and what an earlier job "
                "left may decide this one; give each job a fresh VM or container, or make "
                'the host long-lived and sealed (docs/runners.md, "A clean host per job")'
            )
    slots = [f"job-user-{n}" for n in names]
    try:
        with locks.first_free(state_dir, slots, wait_s) as slot:
            yield resolve_one(slot.removeprefix("job-user-"))
    except locks.DeviceBusy:
        raise JobUserError(
            f"every job user ({', '.join(names)}) stayed busy for {wait_s:g} s: another "
            "runner on this host has each; list one job user per runner in [job_users] names"
        ) from None


# ------------------------------------------------------------------------ the checkout


def git_command(checkout: Path, *args: str) -> list[str]:
    return ["git", "-C", str(checkout), "-c", f"safe.directory={checkout}", *GIT_SAFE, *args]


def fresh_checkout(user: JobUser, source: str, sha: str, env: Mapping[str, str]) -> None:
    """The commit ``sha`` of ``source`` (a URL, or a local repository) checked out into a
    new folder of the job user's, by the job user, with no configuration but git's own."""
    if not _SHA_RE.match(sha):
        raise JobUserError(f"refused: {sha!r} is not a full commit SHA")
    git_env = {**{k: v for k, v in env.items() if not k.startswith("GIT_")}, **GIT_ENV}
    local = not re.match(r"^[a-z][a-z0-9+.-]*://", source)
    # A local source belongs to another user: its upload-pack must accept that (git's own
    # option; -c settings are not passed on to a local transport).
    upload = ["--upload-pack", "git -c safe.directory=* upload-pack"] if local else []
    steps = [
        ["git", "init", "-q", "--template=", str(user.checkout)],
        git_command(
            user.checkout, "fetch", "-q", "--depth=1", "--no-tags", *upload, "--", source, sha
        ),
        git_command(
            user.checkout, "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", sha
        ),
    ]
    for argv in steps:
        full, popen_env = user.command(argv, git_env, "/")
        got = process.run_captured(full, env=popen_env, cwd=Path("/"), timeout_s=CHECKOUT_TIMEOUT_S)
        if got.code != 0:
            raise JobUserError(
                f"refused: cannot check out {sha[:12]} from {source} as {user.name} "
                f"({' '.join(argv[:4])}...: {_last(got)}); check that the commit exists there"
            )


def checkout_problems(run: Callable[[list[str]], process.Captured], checkout: Path) -> list[str]:
    """Why the tree at ``checkout`` is not exactly its commit, or has hooks (empty: fine).

    ``run`` runs one git command (as the job user, or as the supervisor on a host without
    job users) and returns what it printed."""
    problems: list[str] = []
    status = run(git_command(checkout, "status", "--porcelain=v1", "--ignored", "-uall"))
    if status.code != 0:
        return [f"git status failed in {checkout}: {_last(status)}"]
    differs = [ln for ln in status.stdout.splitlines() if ln.strip()]
    if differs:
        problems.append(
            f"{len(differs)} path(s) differ from the commit (changed, added or ignored files): "
            + ", ".join(ln[3:][:120] for ln in differs[:8])
        )
    config = run(git_command(checkout, "config", "--local", "--no-includes", "--name-only", "-l"))
    risky = sorted(
        {
            key
            for key in config.stdout.lower().splitlines()
            if key.startswith(_RISKY_CONFIG) or key.startswith(_RISKY_SECTIONS)
        }
    )
    if risky:
        problems.append(f"its git config runs programs or reads other files: {', '.join(risky)}")
    # Not `--git-path hooks`: that names the core.hooksPath the command runs with.
    common_dir = run(git_command(checkout, "rev-parse", "--git-common-dir"))
    where = common_dir.stdout.strip()
    if where:
        hooks = (checkout / where if not where.startswith("/") else Path(where)) / "hooks"
        listed = run(
            ["find", str(hooks), "-mindepth", "1", "-maxdepth", "1", "!", "-name", "*.sample"]
        )
        found = [Path(p).name for p in listed.stdout.splitlines() if p.strip()]
        if found:
            problems.append(f"it has git hooks: {', '.join(sorted(found)[:8])}")
    return problems
