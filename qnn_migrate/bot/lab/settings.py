"""What a run needs besides the shard, and the environment its child processes get.

Nothing here reads ``os.environ``: the environment is passed in by ``bot/cli/lab.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from qnn_migrate.bot.lab.host_config import HostConfig

if TYPE_CHECKING:
    from qnn_migrate.bot.lab.job_user import JobUser

TEST_SCRIPT = "backends/qualcomm/tests/test_qnn_delegate.py"

# argv template -> argv: the catalog's command_argv, injected so the runner does not
# need matrices.toml to be importable in tests of its own.
CommandBuilder = Callable[..., list[str]]

_SECRET_HINTS = ("TOKEN", "SECRET", "PASSWORD", "PRIVATE_KEY", "CREDENTIAL")


@dataclass
class RunSettings:
    """What the runner needs besides the shard: host facts, where to write, how to act."""

    host: HostConfig
    out_dir: Path
    command: CommandBuilder
    env: Mapping[str, str] = field(default_factory=dict)
    log: Callable[[str], None] = lambda _msg: None
    kill_grace_s: float = 2.0
    # What the run's budgets are read on (the shard's, the per-test progress and start-up
    # budgets, the wait for a phone) and how the wait for a phone passes its time. Tests
    # give a clock double (tests/bot/lab/support.py), so no test waits for a budget to pass.
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    # The host config's own path: sealed with the trusted paths (``HostConfig.trusted_roots``).
    host_config_path: str | None = None
    # Set for the job by ``hoststate``: the user PR code runs as (None: isolation = "none").
    job_user: JobUser | None = None

    @property
    def state_dir(self) -> Path:
        return Path(self.host.state_dir)


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment minus anything that looks like a credential or the runner's own.

    The test process runs the PR's code; it gets no token even if a host has one set.
    """
    return {
        k: v
        for k, v in env.items()
        if not k.startswith("ACTIONS_") and not any(h in k.upper() for h in _SECRET_HINTS)
    }


CHECKOUT_PLACEHOLDER = "${checkout}"


def child_env(settings: RunSettings, checkout: str | None = None) -> dict[str, str]:
    """The environment of every process the runner starts for a shard.

    ``${checkout}`` in a host config ``[env]`` value is the job's checkout. With a job user,
    HOME, TMPDIR, USER and LOGNAME are that user's, and nothing names the supervisor's
    own folders (XDG_*)."""
    env = scrub_env(settings.env)
    where = checkout or settings.host.executorch_dir or ""
    env.update({k: v.replace(CHECKOUT_PLACEHOLDER, where) for k, v in settings.host.env.items()})
    user = settings.job_user
    if user is not None:
        for key in [k for k in env if k.startswith("XDG_")]:
            del env[key]
        env.update(HOME=str(user.home), TMPDIR=str(user.tmp), USER=user.name, LOGNAME=user.name)
    if settings.host.qnn_sdk_root:
        env["QNN_SDK_ROOT"] = settings.host.qnn_sdk_root
    if settings.host.qnn_executor_runner:
        # ExecuTorch's harness reads it on the --enable_x86_64 path instead of the build.
        env["QNN_EXECUTOR_RUNNER"] = settings.host.qnn_executor_runner
    env["PYTHONUNBUFFERED"] = "1"
    return env
