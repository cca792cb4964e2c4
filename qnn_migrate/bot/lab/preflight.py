"""Pre-flight checks of a shard on this host, before any test runs.

Each check either passes or raises ``RefusedError`` with what is wrong and the fix; the
runner turns that into INFRA for every test with ``attempts == 0`` (exit 2). The checks:
the checkout is at the pinned SHA; the host can run the shard (kind, backend, not
``compile_only``); the ``executorch`` the harness will import is the checkout's. The last
one runs the PR's ``executorch/__init__.py``, so it runs inside a watched, reaped run like
the tests themselves. Also here: the QNN SDK version recorded with every result.
"""

from __future__ import annotations

import re
from pathlib import Path

from qnn_migrate.bot.lab import job_user, process, results
from qnn_migrate.bot.lab.settings import TEST_SCRIPT, RunSettings, child_env
from qnn_migrate.bot.model import HostShard, RunsOn, Shard

COMPILE_ONLY_REASON = (
    "refused: --compile_only is not run: in ExecuTorch 1.5.1 every test then ERRORs in "
    "verify_output, which ignores compile_only and asks for a device serial (an upstream "
    "bug); use the simulator (--sim) instead"
)
IMPORT_CHECK_TIMEOUT_S = 120.0
# git reads no configuration but the repository's own: a global or system file is
# outside what the checkout pins (a hook or fsmonitor set there would run here).
GIT_ENV = job_user.GIT_ENV


class RefusedError(RuntimeError):
    """The shard cannot run on this host at all (wrong checkout, no phone configured)."""


_LIB_VERSION_RE = re.compile(rb"v(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{6,16})(?![\d.])")
_VERSION_SCAN_BYTES = 256 * 1024 * 1024


def library_version(library: Path) -> str | None:
    """The build version libQnnHtp.so carries in its own bytes (``v2.51.0.260929181845``)."""
    overlap = 64
    tail = b""
    read = 0
    try:
        with open(library, "rb") as handle:
            while read < _VERSION_SCAN_BYTES:
                block = handle.read(4 * 1024 * 1024)
                if not block:
                    return None
                read += len(block)
                match = _LIB_VERSION_RE.search(tail + block)
                if match:
                    return match.group(1).decode()
                tail = block[-overlap:]
    except OSError:
        return None
    return None


def sdk_version(qnn_sdk_root: str | None) -> str:
    """The QNN SDK version: ``sdk.yaml``, else libQnnHtp.so's own, else "unknown (why)"."""
    if not qnn_sdk_root:
        return "unknown (qnn_sdk_root is not set in the host config)"
    root = Path(qnn_sdk_root)
    try:
        for line in (root / "sdk.yaml").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("version:"):
                found = line.split(":", 1)[1].strip().strip("'\"")[:64]
                if found:
                    return found
    except OSError:
        pass
    library = root / "lib" / "x86_64-linux-clang" / "libQnnHtp.so"
    from_library = library_version(library)
    if from_library:
        return f"{from_library} (from libQnnHtp.so; no sdk.yaml)"
    if re.match(r"^v?\d+\.\d+\.\d+(\.\d+)?$", root.name):
        return f"{root.name.lstrip('v')} (from the directory name; no sdk.yaml)"
    return f"unknown (no sdk.yaml in {root} and no version string in {library.name})"


def check_checkout(shard: HostShard, settings: RunSettings) -> None:
    """The checkout is the pinned commit: HEAD is it and, with a job user, every file is as
    the commit has it (nothing changed, added or ignored) and git would run nothing of the
    checkout's own (no hooks, no fsmonitor or include in its config); git then runs as the
    job user (the folder is the user's). Git never reads a global or system config."""
    if not shard.executorch_dir:
        raise RefusedError(
            "no ExecuTorch checkout: set executorch_dir in the host config or pass --executorch-dir"
        )
    checkout = Path(shard.executorch_dir)
    user = settings.job_user
    env = {**{k: v for k, v in settings.env.items() if not k.startswith("GIT_")}, **GIT_ENV}

    def run(argv: list[str]) -> process.Captured:
        if user is None:
            return process.run_captured(argv, env=env, timeout_s=300)
        full, popen_env = user.command(argv, env, "/")
        return process.run_captured(full, env=popen_env, cwd=Path("/"), timeout_s=300)

    if user is None and not (checkout / TEST_SCRIPT).is_file():
        raise RefusedError(
            f"{checkout} has no {TEST_SCRIPT}; is executorch_dir an ExecuTorch checkout?"
        )
    got = run(job_user.git_command(checkout, "rev-parse", "HEAD"))
    if got.code != 0:
        raise RefusedError(
            f"{checkout} is not a git checkout ({got.stderr.strip()[:200]}); set "
            "executorch_dir in the host config or pass --executorch-dir"
        )
    head = got.stdout.strip()
    if head != shard.sha:
        raise RefusedError(
            f"{checkout} is at {head[:12]}, but the shard is pinned to {shard.sha[:12]}: the "
            "checkout is wrong or the PR head moved; check out the pinned SHA and run again"
        )
    # The fresh checkout of a job user is checked whole. Without one (isolation = "none")
    # the checkout is the workflow's, reused, and PR code runs as the user that would
    # check it: a check there could be undone the moment after it, so HEAD is all.
    problems = job_user.checkout_problems(run, checkout) if user is not None else []
    if problems:
        raise RefusedError(
            f"refused: the checkout {checkout} is not exactly the pinned commit "
            f"{shard.sha[:12]}: " + "; ".join(problems) + "; a job may have changed it: "
            "check it out again into a new folder (git's hooks and global configuration off)"
        )
    if user is not None:
        listed = run(job_user.git_command(checkout, "ls-files", "--error-unmatch", TEST_SCRIPT))
        if listed.code != 0:
            raise RefusedError(f"the commit {shard.sha[:12]} has no {TEST_SCRIPT}")


def check_host_can_run(shard: Shard, settings: RunSettings) -> None:
    host = settings.host
    if shard.runs_on is RunsOn.COMPILE_ONLY:
        raise RefusedError(COMPILE_ONLY_REASON)
    if shard.runs_on is RunsOn.SIMULATOR and not host.simulator:
        raise RefusedError(
            "refused: this is a phone host; simulator shards run on hosts with "
            'kind = "x86-simulator" (the workflow routes them by runner label)'
        )
    if host.simulator and shard.runs_on is not RunsOn.SIMULATOR:
        raise RefusedError(
            "refused: this x86-simulator host has no phones; the shard was routed to the "
            "wrong runner labels"
        )
    if shard.backend not in host.runnable_backends:
        raise RefusedError(
            f"refused: this {host.kind} host runs backend(s) "
            f"{', '.join(host.runnable_backends)}, not {shard.backend}"
            + (
                " (QNN's GPU backend does not run on x86-64)"
                if host.simulator and shard.backend == "gpu"
                else ""
            )
            + "; this is the lab's limit, not the change's"
        )


def check_import(shard: HostShard, settings: RunSettings, python: str) -> None:
    """The ``executorch`` the harness imports must be the checkout's, not another copy.

    Importing it runs the PR's ``executorch/__init__.py``: the check is a watched run
    (own process group, a timeout, everything it leaves behind reaped), never a bare
    subprocess."""
    checkout = Path(shard.executorch_dir or ".").resolve()
    script_dir = checkout / Path(TEST_SCRIPT).parent
    code = (
        "import sys; sys.path[0] = sys.argv[1]; import executorch; "
        "print('\\n'.join([getattr(executorch, '__file__', None) or '', "
        "*getattr(executorch, '__path__', [])]))"
    )
    out = settings.out_dir / "import-check"
    out.mkdir(parents=True, exist_ok=True)
    outcome = process.run_watched(
        [python, "-c", code, str(script_dir)],
        cwd=checkout,
        env=child_env(settings, str(checkout)),
        out_dir=out,
        timeout_s=IMPORT_CHECK_TIMEOUT_S,
        progress_budget_s=IMPORT_CHECK_TIMEOUT_S,
        kill_grace_s=settings.kill_grace_s,
        as_user=settings.job_user,
        clock=settings.clock,
    )
    stdout = _read(outcome.stdout_path)
    stderr = _read(outcome.stderr_path)
    if outcome.end is not results.RunEnd.EXITED or outcome.code is None:
        raise RefusedError(f"cannot run {python}: {outcome.detail or stderr.strip()[-200:]}")
    if outcome.code != 0:
        lines = [ln for ln in stderr.strip().splitlines() if not ln.startswith("[runner:")]
        last = (lines or ["no output"])[-1][:200]
        raise RefusedError(
            f"{python} cannot import executorch from {checkout} ({last}); "
            "install the checkout editable or set [env] PYTHONPATH in the host config"
        )
    # The module file, else the first portion of a namespace package: the one whose
    # submodules are imported first.
    places = [Path(p).resolve() for p in stdout.splitlines() if p.strip()][:1]
    outside = [p for p in places if p != checkout and checkout not in p.parents]
    if not places or outside:
        where = outside[0] if outside else "nowhere"
        raise RefusedError(
            f"the tests would import executorch from {where}, not from the checkout at "
            f"{checkout} (pinned to {shard.sha[:12]}); install the checkout editable in "
            "the host's venv or set [env] PYTHONPATH so it comes first"
        )


def _read(path: Path, limit: int = 64 * 1024) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""
