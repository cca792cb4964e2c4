"""lab/job_user.py and hoststate's job-user half, with real users (tests/bot/two_users.py)."""

from __future__ import annotations

import json
import os

from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.model import Status

from ..two_users import TwoUserLab
from .support import ABS, ADD, statuses


def test_pr_code_runs_as_the_job_user_in_a_fresh_checkout(two_user_lab: TwoUserLab) -> None:
    t = two_user_lab
    t.lab.scenario(tests={ABS: "fail", ADD: "pass"})
    settings = t.settings()
    result = Runner(settings).run(t.lab.shard(ABS, ADD))
    assert statuses(result) == [Status.FAIL, Status.PASS], t.lab.logs
    user = t.users[0]
    (run,) = t.lab.runs_log()
    assert run["uid"] == t.uid(user) != os.getuid()
    assert run["cwd"] == str(t.jobs_home / user / "executorch")
    report = json.loads((settings.out_dir / "host-check.json").read_text())
    assert report["job_user"] == user and report["isolation"] == "job-user"
    # What the job wrote came back into the supervisor's folder; the job's folder is empty.
    assert (settings.out_dir / "attempt-1" / "junit.xml").is_file()
    assert os.listdir(t.jobs_home / user) == []
