"""Attack: a seal the PR's code can write (issue 27).

A long-lived host checks its trusted paths against a sealed manifest before and after
every job. If the job can write a trusted path *and* the manifest, it can change one and
seal again: job 1's PR code swaps the wheelhouse's wheel for one that also installs a
``.pth`` (run at every interpreter start, here making failed assertions pass), pins its
hash in the requirements, and writes the manifest anew from the files as they now are.
Job 2's fresh environment is built from that wheel.

- The control, the old single-user arrangement (the job is the user that owns the seal):
  the host check says nothing changed and job 2's failing test reads PASS.
- Two users, the seal and the trusted paths root's (as the docs say): job 1, a job user,
  cannot write any of them; job 2's failing test reads FAIL.
- Two users, the manifest's folder the job user's by mistake: the host refuses every job
  before any PR code runs, and says what the job user could change.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from qnn_migrate_tests.bot.lab.support import ABS, ADD, statuses
from qnn_migrate_tests.bot.two_users import SYSTEM_PYTHON, TwoUserLab, long_lived, notes, read_note

from qnn_migrate.bot.lab import host_config
from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.lab.settings import RunSettings
from qnn_migrate.bot.model import Status

RESEAL = """
import base64, hashlib, json, os, stat, zipfile
notes, wheelhouse, requirements, manifest = {notes!r}, {wheelhouse!r}, {requirements!r}, {manifest!r}
def note(text):
    with open(os.path.join(notes, "reseal.txt"), "a") as handle:
        handle.write(text + "\\n")
swapped = False
try:
    wheel = os.path.join(wheelhouse, "qnn_lab_marker-1.0-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as old:
        files = {{n: old.read(n) for n in old.namelist() if not n.endswith("RECORD")}}
    files["zz_persist.pth"] = b"import unittest; unittest.TestCase.assertLess = lambda *a, **k: None\\n"
    info = "qnn_lab_marker-1.0.dist-info"
    record = ["%s,sha256=%s,%d" % (n, base64.urlsafe_b64encode(hashlib.sha256(d).digest())
              .rstrip(b"=").decode(), len(d)) for n, d in files.items()]
    files[info + "/RECORD"] = ("\\n".join(record + [info + "/RECORD,,"]) + "\\n").encode()
    with zipfile.ZipFile(wheel, "w") as new:
        for name, data in files.items():
            new.writestr(name, data)
    digest = hashlib.sha256(open(wheel, "rb").read()).hexdigest()
    with open(requirements, "w") as handle:
        handle.write("qnn_lab_marker==1.0 --hash=sha256:%s\\n" % digest)
    note("swapped the wheel")
    swapped = True
except OSError as exc:
    note("could not swap the wheel: " + type(exc).__name__)

def entry(path):  # as bot/lab/integrity.py records one
    st = os.lstat(path)
    target = os.readlink(path) if stat.S_ISLNK(st.st_mode) else ""
    size = st.st_size if stat.S_ISREG(st.st_mode) else 0
    return "%o %o %d:%d %d %d %s" % (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode),
        st.st_uid, st.st_gid, size, st.st_ctime_ns, target)
try:
    if not swapped:
        raise PermissionError("nothing to seal")
    with open(manifest) as handle:
        roots = json.load(handle)["roots"]
    entries = {{}}
    for root in roots:
        entries[root] = entry(root)
        if os.path.isdir(root) and not os.path.islink(root):
            for folder, dirs, names in os.walk(root):
                for name in dirs + names:
                    entries[os.path.join(folder, name)] = entry(os.path.join(folder, name))
    with open(manifest, "w") as handle:
        handle.write(json.dumps({{"version": 1, "roots": roots, "entries": entries}},
                                sort_keys=True) + "\\n")
    note("sealed again")
except OSError as exc:
    note("could not seal again: " + type(exc).__name__)
"""


def _settings(t: TwoUserLab, config: Path, out: str) -> RunSettings:
    settings = t.lab.settings(out)
    settings.host = host_config.loads(config.read_text(), str(config))
    settings.host_config_path = str(config.resolve())
    return settings


def _jobs(t: TwoUserLab, base: host_config.HostConfig) -> tuple[list[Status], list[Status], str]:
    config, host = long_lived(t, base)
    assert host.integrity_manifest is not None and host.job_env is not None
    hostile = RESEAL.format(
        notes=str(notes(t)),
        wheelhouse=host.job_env.find_links,
        requirements=host.job_env.requirements,
        manifest=host.integrity_manifest,
    )
    t.lab.scenario(tests={ADD: "hostile", ABS: "fail"}, hostile={ADD: hostile})
    job1 = Runner(_settings(t, config, "job1")).run(t.lab.shard(ADD))
    job2 = Runner(_settings(t, config, "job2")).run(t.lab.shard(ABS))
    return statuses(job1), statuses(job2), job2.infra_reason or ""


def _common() -> dict[str, object]:
    return {"python": SYSTEM_PYTHON, "env": {"PYTHONPATH": "${checkout}"}}


def test_control_one_user_job_1_seals_its_change_and_job_2_reads_pass(
    two_user_lab: TwoUserLab,
) -> None:
    t = two_user_lab
    first, second, reason = _jobs(t, t.lab.host(**_common()))  # type: ignore[arg-type]
    assert read_note(t, "reseal.txt") == "swapped the wheel\nsealed again\n"
    assert first == [Status.PASS]
    assert second == [Status.PASS], reason  # abs fails, and reads PASS


def test_two_users_job_1_cannot_write_the_seal_and_job_2_reads_fail(
    two_user_lab: TwoUserLab,
) -> None:
    t = two_user_lab
    first, second, reason = _jobs(t, t.host(**_common()))  # type: ignore[arg-type]
    assert read_note(t, "reseal.txt").startswith("could not swap the wheel: PermissionError\n")
    assert first == [Status.PASS]
    assert second == [Status.FAIL], reason


def test_two_users_a_seal_the_job_user_can_write_refuses_every_job(
    two_user_lab: TwoUserLab,
) -> None:
    t = two_user_lab
    user = t.users[0]
    sealed = t.root / "sealed"
    sealed.mkdir()
    os.chown(sealed, t.uid(user), 0)  # the mistake: the manifest's folder is the job user's
    first, second, reason = _jobs(t, t.host(**_common()))  # type: ignore[arg-type]
    assert first == second == [Status.INFRA]
    assert read_note(t, "reseal.txt") == "", "PR code ran on a host it could reseal"
    assert f"the job user {user} could change what the supervisor trusts" in reason
    assert f"the sealed manifest {sealed / 'manifest.json'}" in reason
    report = json.loads((t.root / "job2" / "host-check.json").read_text())
    assert any(str(sealed) in line for line in report["writable_by_the_job_user"])
