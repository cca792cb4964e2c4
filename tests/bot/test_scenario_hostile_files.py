"""Every file the bot's CLI reads, made hostile: a clear error naming the file, never a
traceback or a hang.

One table over the file-reading entry points of ``qnn-migrate bot`` (and ``matrix
registry``): for each, the file is replaced by something PR code or a careless adopter can
put there: a FIFO (an ``open`` that never returns), a link to ``/dev/zero`` (a read that
never ends), bad UTF-8, nesting deep enough to reach Python's recursion limit, a file over
the cap, a directory, a missing file, the wrong shape. Each case runs the real command in
its own process with a generous timeout and checks the exit code, that the output names
the file, that it says what is wrong (the ``needle``), and that no traceback was printed.

Where a file is one of several (one shard's result, one SoC's baseline, the gate's event)
the command goes on and says what it left out: that is the documented behaviour, so the
expected exit code there is 0.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from qnn_migrate_tests.github_standin.payloads import comment_event

from qnn_migrate.bot import catalog as catalog_mod
from qnn_migrate.bot.model import Shard, ShardResult
from qnn_migrate.bot.nightly.baseline import SocBaseline
from qnn_migrate.bot.pr.plan import PlanRequest, Selection, plan

SHA = "a" * 40
OTHER_SHA = "b" * 40
TIMEOUT_S = 60  # generous: every case takes well under a second when nothing hangs
DEPTH = 100_000

# --------------------------------------------------------------------------- the files


def _sparse(path: Path) -> None:
    with open(path, "wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # over every cap, without writing 64 MiB


MAKERS: dict[str, Callable[[Path], None]] = {
    "missing": lambda p: None,
    "directory": lambda p: p.mkdir(),
    "fifo": lambda p: os.mkfifo(p),
    "endless": lambda p: p.symlink_to("/dev/zero"),
    "bad-utf8": lambda p: p.write_bytes(b'{"a": "\xff\xfe\xc3\x28"}\n'),
    "deep-json": lambda p: p.write_text("[" * DEPTH + "]" * DEPTH),
    "deep-toml": lambda p: p.write_text("a = " + "[" * DEPTH + "]" * DEPTH + "\n"),
    "deep-python": lambda p: p.write_text("x = " + "(" * DEPTH + ")" * DEPTH + "\n"),
    "over-cap": _sparse,
    "wrong-shape": lambda p: p.write_text("42\n"),
}

# What the message must say for each kind (lower case; any one of them).
NEEDLES: dict[str, tuple[str, ...]] = {
    "missing": ("not found", "does not exist"),
    "directory": ("directory",),
    "fifo": ("not a regular file",),
    "endless": ("not a regular file",),
    "bad-utf8": ("utf-8",),
    "deep-json": ("nested",),
    "deep-toml": ("nested",),
    "deep-python": ("nested",),
    "over-cap": ("cap",),
    "wrong-shape": ("must be", "not a", "is not"),
}


@dataclass(frozen=True)
class Case:
    """One entry point with one of its files made hostile."""

    name: str
    argv: tuple[str, ...]  # after `python -m qnn_migrate`; {d} is the case's folder
    target: str  # the file made hostile, relative to the case's folder
    kind: str
    code: int = 2
    stdout: str | None = None  # a line the output must hold (the gate's lane)
    stdin: str = ""

    @property
    def id(self) -> str:
        return f"{self.name}-{self.kind}"


def cases(name: str, argv: tuple[str, ...], target: str, kinds: str, **kw: object) -> list[Case]:
    return [Case(name, argv, target, kind, **kw) for kind in kinds.split()]  # type: ignore[arg-type]


REPORT = ("bot", "report", "--dry-run", "--shards-file", "{d}/shards.json")
REPORT += ("--results-dir", "{d}/results", "--baseline-dir", "{d}/baselines")
RECORD = ("bot", "nightly", "record", "--shards-file", "{d}/shards.json")
RECORD += ("--results-dir", "{d}/results", "--baselines-dir", "{d}/baselines", "--sha", SHA)
RECORD += ("--issues-file", "{d}/issues.json", "--issue-out", "{d}/issue.md")
EVENT = ("bot", "on-event", "--event-name", "issue_comment", "--event-path", "{d}/event.json")
RESULT = "results/qnn-result-{shard}/result.json"
HOST = ("bot", "host", "check", "--host-config", "{d}/host.toml")
JSON_KINDS = "fifo endless bad-utf8 deep-json over-cap wrong-shape"

CASES: list[Case] = [
    # The catalog (matrices data) and the registry it names.
    *cases("catalog", ("bot", "parse", "--catalog", "{d}/cat/matrices.toml"),
           "cat/matrices.toml", "missing directory fifo endless bad-utf8 deep-toml over-cap"),
    *cases("registry", ("bot", "parse", "--catalog", "{d}/cat/matrices.toml"),
           "cat/data/test_registry.json", "missing fifo endless bad-utf8 deep-json over-cap wrong-shape"),
    # An adopter's .github/qnn-bot.toml, and the registry path it names.
    *cases("adopter-config", ("bot", "parse", "--catalog", "{d}/.github/qnn-bot.toml"),
           ".github/qnn-bot.toml", "fifo endless bad-utf8 deep-toml"),
    *cases("adopter-registry", ("bot", "parse", "--catalog", "{d}/.github/qnn-bot.toml"),
           ".github/registry.json", "fifo endless deep-json"),
    # The webhook payload.
    *cases("on-event", EVENT, "event.json", "directory " + JSON_KINDS),
    # The gate never fails: a payload it cannot read sends the comment to a kept lane.
    *cases("gate", ("bot", "gate", "--event-path", "{d}/event.json"), "event.json",
           "missing directory fifo endless bad-utf8 deep-json over-cap", code=0,
           stdout="lane=unsure"),
    # The report: its shard list, a shard's result (that shard is INFRA, the rest posts),
    # a SoC's baseline (left out, its failures UNCLASSIFIED), and where the body goes.
    *cases("report-shards", REPORT, "shards.json", JSON_KINDS),
    *cases("report-result", REPORT, RESULT, "fifo endless bad-utf8 deep-json over-cap", code=0),
    *cases("report-baseline", REPORT, "baselines/SM8650.json",
           "fifo endless bad-utf8 deep-json over-cap", code=0),
    Case("report-body-out", (*REPORT, "--body-out", "{d}/nowhere/body.md"), "nowhere",
         "missing"),
    # The nightly: its baselines, the issue list, where the issue body goes.
    *cases("nightly-shards", RECORD, "shards.json", "fifo endless bad-utf8 deep-json"),
    *cases("nightly-baseline", RECORD, "baselines/SM8650.json",
           "fifo endless bad-utf8 deep-json", code=0),
    *cases("nightly-issues", RECORD, "issues.json", "fifo endless bad-utf8 deep-json wrong-shape"),
    Case("nightly-issue-out", (*RECORD[:-1], "{d}/nowhere/issue.md"), "nowhere", "missing"),
    # The runner host: the shard, the host config, the sealed manifest.
    *cases("device-matrix", ("bot", "device-matrix", "--shards-file", "{d}/shards.json"),
           "shards.json", "fifo endless bad-utf8 deep-json"),
    *cases("run-shard", ("bot", "run-shard", "--shard", "{d}/shard.json", "--out", "{d}/out"),
           "shard.json", "fifo endless bad-utf8 deep-json wrong-shape"),
    *cases("host-config", HOST, "host.toml", "missing fifo endless bad-utf8 deep-toml over-cap"),
    *cases("manifest", HOST, "manifest.json", "fifo endless", code=1),
    # The registry's source (ExecuTorch's test file) and where the registry goes.
    *cases("registry-from", ("matrix", "registry", "--from", "{d}/tests.py", "--version", "1",
                             "--out", "{d}/registry.json"),
           "tests.py", "fifo endless bad-utf8 deep-python"),
    Case("registry-out", ("matrix", "registry", "--from", "{d}/tests.py", "--version", "1",
                          "--out", "{d}/nowhere/registry.json"), "nowhere", "missing"),
    # The adopter's checkout as the doctor reads it.
    *cases("doctor-workflow", ("bot", "doctor", "--root", "{d}"),
           ".github/workflows/qnn-command.yml", "fifo endless bad-utf8", code=1),
]  # fmt: skip


def _two_shas(folder: Path) -> None:
    doc = json.loads((folder / "shards.json").read_text())
    doc[-1]["shard"]["sha"] = OTHER_SHA
    (folder / "shards.json").write_text(json.dumps(doc))


# Files that are well formed but inconsistent with each other.
ODD: list[tuple[Case, Callable[[Path], None], tuple[str, ...]]] = [
    (Case("report-two-shas", REPORT, "shards.json", "two-shas"), _two_shas, ("sha",)),
]

# ------------------------------------------------------------------------ the fixture


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A folder every case starts from, where every command succeeds (or fails for a
    reason that is not a file: no GitHub token, no phone)."""
    root = tmp_path_factory.mktemp("good")
    catalog = catalog_mod.load()
    the_plan = plan(
        PlanRequest(
            {
                "SM8650": [
                    Selection("canonicalize_conv", catalog.matrices["canonicalize_conv"].tests)
                ]
            },
            "htp",
            1126,
            SHA,
            7,
        ),
        catalog=catalog,
    )
    (root / "shards.json").write_text(the_plan.to_json())
    first: Shard = the_plan.shards[0].shard
    (root / "shard.json").write_text(json.dumps(first.to_dict()))
    for p in the_plan.shards:
        folder = root / "results" / f"qnn-result-{p.shard.id}"
        folder.mkdir(parents=True)
        result = ShardResult.all_infra(p.shard, "no phone")
        (folder / "result.json").write_text(json.dumps(result.to_dict()))
    (root / "baselines").mkdir()
    (root / "baselines" / "SM8650.json").write_text(SocBaseline("SM8650").to_json())
    (root / "issues.json").write_text("[]")
    event = comment_event(repo="o/r", number=7, body="/qnn help", login="m", comment_id=5)
    (root / "event.json").write_text(json.dumps(event))
    shutil.copytree(catalog_mod.DEFAULT_PATH.parent, root / "cat", dirs_exist_ok=True)
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "qnn-bot.toml").write_text('schema = 1\nregistry = "registry.json"\n')
    shutil.copy(root / "cat" / "data" / "test_registry.json", root / ".github" / "registry.json")
    (root / ".github" / "workflows" / "qnn-command.yml").write_text("on: issue_comment\n")
    (root / "host.toml").write_text(
        f'lifetime = "long-lived"\nintegrity_manifest = "{root}/manifest.json"\n'
        f'trusted_paths = ["{root}/cat"]\n'
    )
    (root / "manifest.json").write_text("{}")
    (root / "tests.py").write_text("class TestQNN:\n    def test_qnn_backend_abs(self): ...\n")
    return root, first.id


def _run(case: Case, folder: Path, shard: str) -> subprocess.CompletedProcess[str]:
    argv = [a.replace("{d}", str(folder)) for a in case.argv]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(folder), "LC_ALL": "C.UTF-8"}
    try:
        return subprocess.run(
            [sys.executable, "-m", "qnn_migrate", *argv],
            input=case.stdin,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            cwd=folder,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case.id}: still running after {TIMEOUT_S} s (a hang)")


def _case_folder(template: tuple[Path, str], tmp_path: Path) -> tuple[Path, str]:
    root, shard = template
    folder = tmp_path / "case"
    shutil.copytree(root, folder, symlinks=True)
    # The copied paths that name the template's folder point at this case's instead.
    host = folder / "host.toml"
    host.write_text(host.read_text().replace(str(root), str(folder)))
    return folder, shard


def _check(
    case: Case, done: subprocess.CompletedProcess[str], named: str, needles: tuple[str, ...]
) -> None:
    out = done.stdout + done.stderr
    assert "Traceback" not in out, f"{case.id}: a traceback\n{out[-3000:]}"
    assert done.returncode == case.code, f"{case.id}: exit {done.returncode}\n{out[-2000:]}"
    assert named in out, f"{case.id}: the output does not name {named}\n{out[-2000:]}"
    assert any(n in out.lower() for n in needles), (
        f"{case.id}: says none of {needles}\n{out[-2000:]}"
    )
    if case.stdout is not None:
        assert case.stdout in done.stdout.splitlines(), f"{case.id}: {done.stdout!r}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_hostile_file_ends_in_a_clear_error(
    case: Case, template: tuple[Path, str], tmp_path: Path
) -> None:
    folder, shard = _case_folder(template, tmp_path)
    target = folder / case.target.replace("{shard}", shard)
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.exists() or target.is_symlink():
        target.unlink()
    MAKERS[case.kind](target)
    done = _run(case, folder, shard)
    _check(case, done, target.name, NEEDLES[case.kind])


@pytest.mark.parametrize("case,spoil,needles", ODD, ids=[c.id for c, _, _ in ODD])
def test_files_that_disagree_end_in_a_clear_error(
    case: Case,
    spoil: Callable[[Path], None],
    needles: tuple[str, ...],
    template: tuple[Path, str],
    tmp_path: Path,
) -> None:
    folder, shard = _case_folder(template, tmp_path)
    spoil(folder)
    done = _run(case, folder, shard)
    _check(case, done, case.target, needles)


def test_control_every_entry_point_succeeds_on_the_good_files(
    template: tuple[Path, str], tmp_path: Path
) -> None:
    """Without the hostile file each command gets past its files: the errors above are
    the files', not a broken set-up."""
    folder, shard = _case_folder(template, tmp_path)
    seen: set[tuple[str, ...]] = set()
    for case in [*CASES, *(c for c, _, _ in ODD)]:
        if case.argv in seen or case.kind in ("missing",):
            continue
        seen.add(case.argv)
        done = _run(case, folder, shard)
        out = done.stdout + done.stderr
        assert "Traceback" not in out, f"{case.name}\n{out[-2000:]}"
        for kind in ("not a regular file", "not utf-8", "nested", "over the"):
            assert kind not in out.lower(), f"{case.name}: {out[-2000:]}"
