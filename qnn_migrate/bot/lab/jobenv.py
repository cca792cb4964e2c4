"""The per-job Python environment of a long-lived host: built before the job, gone after.

The tests run PR code, and PR code can write into the Python environment that runs it (a
``sitecustomize.py``, a ``.pth`` that imports something): with a shared venv, the next
job would run it. Here every job gets a fresh venv (no system site-packages, hence no user
site) filled by pip from hash-pinned requirements, and only from wheels (no package's
build script runs); pip runs ``--isolated`` (no user or environment configuration a job
could have planted) and without its cache. What the job changed in the environment is
reported, then the whole folder is removed.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from qnn_migrate.bot.lab import integrity, process
from qnn_migrate.bot.lab.host_config import JobEnv

BUILD_TIMEOUT_S = 1800.0


class JobEnvError(RuntimeError):
    """The environment could not be built; the message says which step and what to do."""


@dataclass(frozen=True)
class BuiltEnv:
    """A per-job environment: its folder, its interpreter, and its state when built."""

    root: Path
    python: str
    sealed: dict[str, str]

    def changes(self) -> list[str]:
        """What the job changed in the environment since it was built."""
        return integrity.diff(self.sealed, integrity.fingerprint([str(self.root)]))

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def build(
    spec: JobEnv,
    env: Mapping[str, str],
    *,
    parent: Path | None = None,
    installer: str = sys.executable,
) -> BuiltEnv:
    """A fresh venv from ``spec.base_python`` with ``spec.requirements`` installed.

    ``installer`` is the interpreter whose pip fills the venv (``pip --python``): the
    bot's own, so the base interpreter needs no pip."""
    requirements = Path(spec.requirements)
    if not requirements.is_file():
        raise JobEnvError(
            f"the per-job environment's requirements {requirements} do not exist; fix "
            "[job_env] requirements in the host config"
        )
    # Python runs isolated (-I), from the new folder, with no PYTHON* or PIP_* variable:
    # nothing of the checkout's can be imported by the interpreters that build the venv.
    quiet_env = {
        k: v for k, v in env.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))
    }
    root = Path(tempfile.mkdtemp(prefix="qnn-job-env-", dir=parent))
    # The supervisor's, and read-only to the job user that runs the tests with it.
    root.chmod(0o755)
    venv = root / "venv"
    try:
        made = process.run_captured(
            [spec.base_python, "-I", "-m", "venv", "--without-pip", str(venv)],
            env=quiet_env,
            cwd=root,
            timeout_s=300,
        )
        if made.code != 0:
            raise JobEnvError(
                f"{spec.base_python} -m venv failed ({_last(made)}); fix [job_env] "
                "base_python in the host config"
            )
        python = venv / "bin" / "python"
        argv = [
            installer, "-I", "-m", "pip", "--isolated", "--disable-pip-version-check",
            "--no-input", "--python", str(python), "install", "--no-cache-dir",
            "--require-hashes", "--only-binary", ":all:", "-r", str(requirements),
        ]  # fmt: skip
        if spec.find_links:
            argv += ["--no-index", "--find-links", spec.find_links]
        installed = process.run_captured(
            argv, env=quiet_env, cwd=root, timeout_s=BUILD_TIMEOUT_S, limit=256 * 1024
        )
        if installed.code != 0:
            raise JobEnvError(
                f"pip could not install {requirements} into the job's environment "
                f"({_last(installed)}); every requirement needs a --hash, and a wheel"
                + (f" in {spec.find_links}" if spec.find_links else "")
            )
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return BuiltEnv(root, str(python), integrity.fingerprint([str(root)]))


def _last(got: process.Captured) -> str:
    lines = [ln for ln in (got.stderr + got.stdout).splitlines() if ln.strip()]
    return (lines[-1] if lines else f"exit code {got.code}")[:300]
