"""A long-lived single-user host on the fake lab: its sealed files, a job run on it, a commit of the job's code.

Shared by tests/bot/test_scenario_persistence.py (what a hostile job plants) and
tests/bot/lab/test_hoststate.py (a change in the job's Python environment).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from qnn_migrate_tests.bot.lab.support import ABS, ADD, Lab, git, hashed_requirements, make_wheel

from qnn_migrate.bot.cli.main import bot
from qnn_migrate.bot.lab import host_config
from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.model import ShardResult


def long_lived_host(lab: Lab) -> Path:
    """The host's files: the runner's install, a wheelhouse, the host config; sealed."""
    runner_install = lab.root / "actions-runner"
    (runner_install / "bin").mkdir(parents=True)
    (runner_install / "run.sh").write_text("#!/bin/sh\nexec ./bin/Runner.Listener run\n")
    (runner_install / "bin" / "Runner.Listener").write_text("stand-in of the runner binary\n")
    wheelhouse = lab.root / "wheelhouse"
    requirements = hashed_requirements(make_wheel(wheelhouse), lab.root / "requirements.txt")
    config = lab.root / "etc" / "qnn-runner.toml"
    config.parent.mkdir()
    config.write_text(
        f'executorch_dir = "{lab.checkout}"\n'
        f'state_dir = "{lab.state_dir}"\n'
        "lock_wait_s = 60\n"
        'lifetime = "long-lived"\n'
        'isolation = "none"\n'
        f'integrity_manifest = "{lab.root / "sealed" / "manifest.json"}"\n'
        f'trusted_paths = ["{runner_install}", "{wheelhouse}", "{requirements}"]\n'
        "[job_env]\n"
        f'base_python = "{sys.executable}"\n'
        f'requirements = "{requirements}"\n'
        f'find_links = "{wheelhouse}"\n'
        '[[devices]]\nserial = "PHONE_A"\nsoc = "SM8650"\n'
        '[[devices]]\nserial = "PHONE_B"\nsoc = "SM8650"\n'
    )
    seal(config)
    return config


def seal(config: Path) -> None:
    sealed = CliRunner().invoke(bot, ["host", "seal", "--host-config", str(config)])
    assert sealed.exit_code == 0, sealed.output
    assert "sealed" in sealed.output


def run_job(lab: Lab, config: Path, out: str, sha: str) -> tuple[ShardResult, dict[str, Any]]:
    """One job on the host at ``sha``: its result, and the host check it wrote."""
    settings = lab.settings(out)
    settings.host = host_config.loads(config.read_text(), str(config))
    settings.host_config_path = str(config.resolve())
    result = Runner(settings).run(lab.shard(ABS, ADD, sha=sha))
    report: dict[str, Any] = json.loads((settings.out_dir / "host-check.json").read_text())
    return result, report


def commit(lab: Lab, init: str, message: str) -> str:
    (lab.checkout / "executorch" / "__init__.py").write_text(init)
    git(lab.checkout, "commit", "-qam", message)
    return git(lab.checkout, "rev-parse", "HEAD")
