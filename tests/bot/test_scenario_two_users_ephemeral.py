"""Attack: a host that says "ephemeral" but is reused (issue 27).

``lifetime = "ephemeral"`` tells the runner to trust a fresh machine per job, so it builds
no per-job environment and checks no seal: the tests run in the host's own venv. On a
host reused by mistake (a runner registered without ``--ephemeral``, an image kept), job
1's PR code plants a ``.pth`` in that venv that makes failed assertions pass.

- The control, the old single-user arrangement: nothing verifies "ephemeral"; job 2's
  failing test reads PASS.
- Two users: job 1, a job user, cannot write the host's venv; and each job user runs one
  job on an ephemeral host (a marker the supervisor keeps), so job 2 finds the host used
  and is refused: INFRA for every test, with the job that used it named.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from qnn_migrate_tests.bot.lab.support import ABS, ADD, statuses
from qnn_migrate_tests.bot.two_users import SYSTEM_PYTHON, TwoUserLab, notes, read_note

from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.model import Status

PLANT = """
import os, sysconfig
site = sysconfig.get_paths()["purelib"]
try:  # a .pth line that starts with "import" runs at every interpreter start
    with open(os.path.join(site, "zz_persist.pth"), "w") as handle:
        handle.write("import unittest; unittest.TestCase.assertLess = lambda *a, **k: None\\n")
    said = "planted zz_persist.pth in " + site
except OSError as exc:
    said = "could not plant zz_persist.pth: " + type(exc).__name__
with open(os.path.join({notes!r}, "plant.txt"), "a") as handle:
    handle.write(said + "\\n")
"""


def _host_venv(t: TwoUserLab) -> str:
    """The host's own Python (an image's venv), the supervisor's."""
    venv = t.root / "host-venv"
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    return str(venv / "bin" / "python")


def _jobs(t: TwoUserLab, two_users: bool) -> tuple[list[Status], list[Status], str]:
    python = _host_venv(t)
    t.lab.scenario(
        tests={ADD: "hostile", ABS: "fail"}, hostile={ADD: PLANT.format(notes=str(notes(t)))}
    )
    common = {"python": python, "env": {"PYTHONPATH": "${checkout}"}}

    def settings(out: str):  # type: ignore[no-untyped-def]
        return t.settings(out, **common) if two_users else t.lab.settings(out, **common)

    job1 = Runner(settings("job1")).run(t.lab.shard(ADD))
    job2 = Runner(settings("job2")).run(t.lab.shard(ABS))
    assert job1.attempts == 1, job1.infra_reason
    return statuses(job1), statuses(job2), job2.infra_reason or ""


def test_control_one_user_a_reused_ephemeral_host_runs_job_1s_plant(
    two_user_lab: TwoUserLab,
) -> None:
    t = two_user_lab
    first, second, _ = _jobs(t, two_users=False)
    assert "planted zz_persist.pth" in read_note(t, "plant.txt")
    assert first == [Status.PASS] and second == [Status.PASS]  # abs fails, and reads PASS


def test_two_users_a_reused_ephemeral_host_is_found_and_refused(two_user_lab: TwoUserLab) -> None:
    t = two_user_lab
    first, second, reason = _jobs(t, two_users=True)
    assert "could not plant zz_persist.pth: PermissionError" in read_note(t, "plant.txt")
    assert first == [Status.PASS]
    assert second == [Status.INFRA]
    assert 'says lifetime = "ephemeral", but every job user already ran a job on it' in reason
    assert f"{t.users[0]}: shard sm8650-m-1 at {t.lab.sha[:12]}" in reason
    report = json.loads((t.root / "job2" / "host-check.json").read_text())
    assert report["lifetime"] == "ephemeral" and report["job_user"] is None
    assert Path(t.root / "state" / "used" / f"{t.users[0]}.json").is_file()
