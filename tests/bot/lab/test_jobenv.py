"""jobenv.py: a fresh venv per job from hash-pinned wheels, and what a job changed in it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from qnn_migrate_tests.bot.lab.support import hashed_requirements, make_wheel

from qnn_migrate.bot.lab import jobenv
from qnn_migrate.bot.lab.host_config import JobEnv


def spec(tmp_path: Path, requirements: Path) -> JobEnv:
    return JobEnv(str(requirements), sys.executable, str(tmp_path / "wheels"))


def test_a_job_env_has_the_pinned_wheel_and_reports_what_the_job_planted(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "wheels")
    requirements = hashed_requirements(wheel, tmp_path / "requirements.txt")
    built = jobenv.build(spec(tmp_path, requirements), {"PATH": os.environ["PATH"]})
    try:
        code = "import qnn_lab_marker, sys; print(sys.prefix)"
        prefix = subprocess.run(
            [built.python, "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()
        assert Path(prefix).resolve() == (built.root / "venv").resolve()
        assert built.changes() == []
        site = next((built.root / "venv" / "lib").glob("python3*/site-packages"))
        (site / "sitecustomize.py").write_text("raise SystemExit\n")
        assert f"added: {site / 'sitecustomize.py'}" in built.changes()
    finally:
        built.remove()
    assert not built.root.exists()


def test_a_requirement_without_a_hash_is_refused(tmp_path: Path) -> None:
    make_wheel(tmp_path / "wheels")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("qnn_lab_marker==1.0\n")
    with pytest.raises(jobenv.JobEnvError, match="needs a --hash"):
        jobenv.build(spec(tmp_path, requirements), {"PATH": os.environ["PATH"]}, parent=tmp_path)
    assert not list(tmp_path.glob("qnn-job-env-*")), "a failed build left its folder"


def test_a_missing_requirements_file_is_refused_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(jobenv.JobEnvError, match=r"fix \[job_env\] requirements"):
        jobenv.build(spec(tmp_path, tmp_path / "nope.txt"), {})
