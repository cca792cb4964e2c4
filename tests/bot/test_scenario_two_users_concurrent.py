"""Attack: a concurrent job rewrites another job's results and fingerprints (issue 27).

Two runners on one host, one per phone. Job A (a hostile PR) runs while job B (the
nightly, whose test ``abs`` really fails) runs beside it; A's test code waits for B's
``result.json`` and then rewrites it to PASS and B's ``programs.json`` to A's fingerprint.
``bot nightly record`` then stores what B uploaded as the baselines every later PR is
compared with.

- The control, the old single-user arrangement (one user for every job on the host, as
  one runner per phone was): A rewrites both; the nightly stores ``abs`` as PASS and A's
  fingerprint as its program baseline.
- Two users: A and B run as two job users; A cannot write B's results (the supervisor's)
  nor see B's own folder (B's job user's, mode 0700). B's ``abs`` reads FAIL, the nightly
  stores FAIL and no forged fingerprint.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner
from qnn_migrate_tests.bot.lab.support import ABS, ADD, statuses
from qnn_migrate_tests.bot.support import program_doc, programs_file
from qnn_migrate_tests.bot.two_users import (
    SYSTEM_PYTHON,
    TwoUserLab,
    notes,
    read_note,
    start_run_shard,
    write_host,
)

from qnn_migrate.bot.cli import nightly as nightly_cli
from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.model import Status

FORGER = """
import json, os, time
notes, targets = {notes!r}, {targets!r}
def note(text):
    with open(os.path.join(notes, "forger.txt"), "a") as handle:
        handle.write(text + "\\n")
note("started as uid %d" % os.getuid())
deadline, done = time.time() + 60, set()
while time.time() < deadline and not os.path.exists(os.path.join(notes, "stop")):
    # B's result.json is written last: then B's files are all there, and stay as written.
    if not os.path.exists(targets[0][0]):
        time.sleep(0.02)
        continue
    for path, forged in targets:
        if path in done or not os.path.exists(path):
            continue
        done.add(path)
        try:
            if forged == "PASS":
                with open(path) as handle:
                    doc = json.load(handle)
                for result in doc["results"]:
                    result["status"], result["message"] = "PASS", ""
                doc["infra_reason"] = None
                forged = json.dumps(doc)
            with open(path, "w") as handle:
                handle.write(forged)
            note("forged " + path)
        except OSError as exc:
            note("could not forge " + path + ": " + type(exc).__name__)
    time.sleep(0.02)
"""
FORGED_PAYLOAD = b"\xa5" * 4096  # A's program, passed off as B's


def _wait(condition: Callable[[], bool], what: str, limit_s: float = 60.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _run(t: TwoUserLab, two_users: bool) -> tuple[list[Status], Path, str]:
    """Job A (hostile, a runner process of its own) beside job B (in this process); B's
    uploaded statuses, the nightly's baselines folder and what A's code noted."""
    out_b = t.root / "job-b"
    forged_programs = json.dumps(programs_file({ABS: [program_doc(payloads=(FORGED_PAYLOAD,))]}))
    targets = [(str(out_b / "result.json"), "PASS")]
    targets.append((str(out_b / "attempt-1" / "programs.json"), forged_programs))
    if two_users:  # where B's own test process writes
        folder = t.jobs_home / t.users[1] / "out" / "attempt-1" / "programs.json"
        targets.append((str(folder), forged_programs))
    t.lab.scenario(
        tests={ADD: "hostile", ABS: "fail"},
        hostile={ADD: FORGER.format(notes=str(notes(t)), targets=targets)},
    )
    common = {"python": SYSTEM_PYTHON, "env": {"PYTHONPATH": "${checkout}"}}
    # One runner per phone on one host: each job's host config names its own phone.
    phones = {d.serial: d for d in t.lab.host().devices}
    only_a = {**common, "devices": (phones["PHONE_A"],)}
    only_b = {**common, "devices": (phones["PHONE_B"],)}
    host = t.host(t.users[:2], **only_a) if two_users else t.lab.host(**only_a)
    config = write_host(t, host)
    sha = t.lab.sha  # main, and PR A's head: the same code (the PR's harm is in its test)
    shard_a = t.lab.shard(ADD, id="sm8650-m-2", sha=sha, per_test_timeout_s=90, timeout_s=120)
    job_a = start_run_shard(t, shard_a, config, "job-a")
    try:
        _wait(lambda: "started" in read_note(t, "forger.txt"), "job A's test")
        settings = (
            t.settings("job-b", users=t.users[:2], **only_b)
            if two_users
            else (t.lab.settings("job-b", **only_b))
        )
        shard_b = t.lab.shard(ABS, sha=sha)
        result_b = Runner(settings).run(shard_b)
        assert statuses(result_b) == [Status.FAIL], result_b.infra_reason  # what B found
        _wait(lambda: read_note(t, "forger.txt").count("forge") >= 2, "job A's try at B's files")
    finally:
        (notes(t) / "stop").touch()
        job_a.wait(timeout=120)

    # The nightly records what job B uploaded.
    results = t.root / "results"
    shutil.copytree(out_b, results / f"qnn-result-{shard_b.id}")
    shards = t.root / "shards.json"
    shards.write_text(json.dumps([shard_b.to_dict()]))
    baselines = t.root / "baselines"
    args = ["record", "--shards-file", str(shards), "--results-dir", str(results)]
    args += ["--baselines-dir", str(baselines), "--sha", sha]
    args += ["--issue-out", str(t.root / "nightly-issue.md")]
    recorded = CliRunner().invoke(nightly_cli.nightly_group, args)
    assert recorded.exit_code == 0, recorded.output
    uploaded = json.loads((out_b / "result.json").read_text())
    return [Status(r["status"]) for r in uploaded["results"]], baselines, read_note(t, "forger.txt")


def _stored_programs(baselines: Path) -> list[object]:
    """The program baseline stored for ``abs`` (B's recorder saw no program lowered)."""
    doc = json.loads((baselines / "programs" / "SM8650-phone.json").read_text())
    programs: list[object] = doc["tests"][ABS]["programs"]
    return programs


def _history(baselines: Path) -> str:
    doc = json.loads((baselines / "SM8650.json").read_text())
    return str(doc["tests"][ABS])


def test_control_one_user_a_concurrent_job_forges_the_nightlys_results_and_baseline(
    two_user_lab: TwoUserLab,
) -> None:
    uploaded, baselines, said = _run(two_user_lab, two_users=False)
    assert "could not" not in said, said
    assert uploaded == [Status.PASS]
    assert "PASS" in _history(baselines) and "FAIL" not in _history(baselines)
    assert len(_stored_programs(baselines)) == 1, "A's program is not B's baseline"


def test_two_users_a_concurrent_job_cannot_touch_another_jobs_files(
    two_user_lab: TwoUserLab,
) -> None:
    t = two_user_lab
    uploaded, baselines, said = _run(t, two_users=True)
    assert f"started as uid {t.uid(t.users[0])}" in said
    assert said.count("could not forge") == 2 and "forged /" not in said, said
    assert uploaded == [Status.FAIL]
    assert "FAIL" in _history(baselines) and "PASS" not in _history(baselines)
    assert _stored_programs(baselines) == [], "the stored baseline is not what B recorded"
