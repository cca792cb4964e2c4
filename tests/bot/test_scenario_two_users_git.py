"""Attack: git hooks and the global git config outlive the job (issue 27).

``actions/checkout`` on a self-hosted runner reuses the work folder and its ``.git/``, and
runs git with the runner user's global configuration. Job 1's PR code writes a
``post-checkout`` hook into the checkout's ``.git/hooks`` and a ``core.hooksPath`` into
``~/.config/git/config``; when the next job's checkout step runs, the hook edits that job's
test script (here: failed assertions pass). The runner checked only that HEAD was the
pinned commit.

- The control, the old single-user arrangement (the workflow's reused checkout, PR code
  as the runner's user): job 2's failing test reads PASS.
- Two users: job 1's code runs as a job user in a checkout of its own; it cannot write the
  runner's checkout or home. Job 2's checkout is made fresh by the job user with git's
  global and system configuration and hooks off, then checked whole (every file as the
  commit has it, no hooks): its failing test reads FAIL. ``test_a_checkout_with_hooks_or_
  changed_files_is_refused`` (tests/bot/lab/test_job_user.py) is the check itself.
"""

from __future__ import annotations

import os
import subprocess

from qnn_migrate_tests.bot.lab.support import ABS, ADD, git, statuses
from qnn_migrate_tests.bot.two_users import (
    SYSTEM_PYTHON,
    TwoUserLab,
    commit,
    long_lived,
    notes,
    read_note,
)

from qnn_migrate.bot.lab import host_config
from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.lab.settings import RunSettings
from qnn_migrate.bot.model import Status

PLANT = """
import os, stat
notes, checkout, home = {notes!r}, {checkout!r}, {home!r}
HOOK = "#!/bin/sh\\nprintf '\\\\nimport unittest\\\\nunittest.TestCase.assertLess = lambda *a, **k: None\\\\n' >> backends/qualcomm/tests/test_qnn_delegate.py\\n"
def note(text):
    with open(os.path.join(notes, "git.txt"), "a") as handle:
        handle.write(text + "\\n")
def plant(path, text, mode=0o644):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)
        os.chmod(path, mode)
        note("wrote " + path)
    except OSError as exc:
        note("could not write " + path + ": " + type(exc).__name__)
hooks = os.path.join(home, ".qnn-hooks")
plant(os.path.join(checkout, ".git", "hooks", "post-checkout"), HOOK, 0o755)
plant(os.path.join(hooks, "post-checkout"), HOOK, 0o755)
plant(os.path.join(home, ".config", "git", "config"), "[core]\\n\\thooksPath = " + hooks + "\\n")
"""
BENIGN_INIT = '"""Stand-in package."""\n'


def _workflow_checkout(t: TwoUserLab, sha: str) -> None:
    """What actions/checkout does on a self-hosted runner: the same folder, the runner
    user's own git configuration (its HOME is the lab's root here)."""
    env = {**os.environ, "HOME": str(t.root)}
    subprocess.run(["git", "checkout", "-q", sha], cwd=t.lab.checkout, env=env, check=True)


def _jobs(t: TwoUserLab, two_users: bool) -> tuple[list[Status], list[Status]]:
    hostile = PLANT.format(notes=str(notes(t)), checkout=str(t.lab.checkout), home=str(t.root))
    t.lab.scenario(tests={ADD: "hostile", ABS: "fail"}, hostile={ADD: hostile})
    common = {"python": SYSTEM_PYTHON, "env": {"PYTHONPATH": "${checkout}"}}
    sha1 = t.lab.sha
    sha2 = commit(t.lab, BENIGN_INIT + "# PR 2\n", "PR 2: a real regression in abs")
    git(t.lab.checkout, "checkout", "-q", sha1)

    config = None
    if two_users:  # a long-lived host: the same job user runs the next job
        config, _ = long_lived(t, t.host(**common))  # type: ignore[arg-type]

    def settings(out: str) -> RunSettings:
        if config is None:
            return t.lab.settings(out, **common)
        ran = t.lab.settings(out)
        ran.host = host_config.loads(config.read_text(), str(config))
        ran.host_config_path = str(config.resolve())
        return ran

    job1 = Runner(settings("job1")).run(t.lab.shard(ADD, sha=sha1))
    _workflow_checkout(t, sha2)
    job2 = Runner(settings("job2")).run(t.lab.shard(ABS, sha=sha2))
    return statuses(job1), statuses(job2)


def test_control_one_user_a_planted_hook_edits_the_next_jobs_test(
    two_user_lab: TwoUserLab,
) -> None:
    t = two_user_lab
    first, second = _jobs(t, two_users=False)
    said = read_note(t, "git.txt")
    assert "could not" not in said and said.count("wrote") == 3, said
    assert first == [Status.PASS]
    assert second == [Status.PASS]  # abs fails, and reads PASS: the hook edited the test


def test_two_users_the_next_job_checks_out_fresh_and_reads_fail(two_user_lab: TwoUserLab) -> None:
    t = two_user_lab
    first, second = _jobs(t, two_users=True)
    said = read_note(t, "git.txt")
    assert said.count("could not write") == 3 and "PermissionError" in said, said
    assert first == [Status.PASS]
    assert second == [Status.FAIL], t.lab.logs
    script = t.lab.checkout / "backends/qualcomm/tests/test_qnn_delegate.py"
    assert "lambda *a, **k: None" not in script.read_text(), "a hook ran at the checkout"
