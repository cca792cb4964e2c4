"""Tonight's results -> the baselines branch and the one nightly issue (pure over a gateway).

``record_night`` is the whole update of the per-SoC baseline files, from their current
text to their new text; ``publish`` runs it against the ``qnn-baselines`` branch through
the ``NightlyGateway`` and then opens or updates the issue:

1. Read the branch tip and its ``baselines/<SOC>.json`` files (a missing branch is an
   empty history).
2. Record tonight into each planned SoC's history, and tonight's program fingerprints into
   ``baselines/programs/<SOC>-<tier>.json`` (program_baseline); unchanged files are not
   written (a re-run of a recorded night changes nothing).
3. Commit the changed files on top of that tip and move the branch, refusing anything but
   a fast-forward. A concurrent nightly that pushed first makes GitHub answer 422: read
   the new tip and record again on top of it, so neither night is dropped.
4. Ensure the label, list the open labelled issues, and create or edit ours.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from qnn_migrate.bot.artifacts import MAX_BYTES, ArtifactError
from qnn_migrate.bot.github.gateway import GatewayError, NightlyGateway, NotFastForward
from qnn_migrate.bot.model import ShardResult
from qnn_migrate.bot.nightly import baseline as baseline_mod
from qnn_migrate.bot.nightly import issue as issue_mod
from qnn_migrate.bot.nightly import program_baseline
from qnn_migrate.bot.nightly.baseline import BRANCH, DIRECTORY, RunInfo, SocBaseline

PUSH_ATTEMPTS = 5
LABEL_COLOR = "B60205"
LABEL_DESCRIPTION = "QNN nightly device test changes"


@dataclass(frozen=True)
class Night:
    """Tonight recorded into every SoC's history: before, after, and the files to write."""

    befores: Mapping[str, SocBaseline | None]
    afters: tuple[SocBaseline, ...]
    files: Mapping[str, str]  # "<SOC>.json" -> new text, only for files that change
    warnings: tuple[str, ...]

    def diff(self, results: Sequence[ShardResult], run: RunInfo) -> issue_mod.NightlyDiff:
        return issue_mod.diff(self.befores, self.afters, results, run)


def record_night(
    current: Mapping[str, bytes],
    socs: Sequence[str],
    results: Sequence[ShardResult],
    run: RunInfo,
    window: int | None = None,
    where: str = DIRECTORY,
) -> Night:
    """Record ``results`` into each SoC's file of ``current`` (file name -> bytes).

    A file that does not parse starts that SoC's history again, with a warning: that is
    better than failing every night after.
    """
    befores: dict[str, SocBaseline | None] = {}
    afters: list[SocBaseline] = []
    files: dict[str, str] = {}
    warnings: list[str] = []
    for soc in dict.fromkeys(socs):
        name = baseline_mod.file_name(soc)
        before: SocBaseline | None = None
        if name in current:
            try:
                before = baseline_mod.loads(current[name], f"{where}/{name}")
            except ArtifactError as exc:
                warnings.append(f"{exc}; starting {soc}'s history again")
        befores[soc] = before.before(run) if before else None
        after = baseline_mod.record(before, soc, results, run, window)
        afters.append(after)
        text = after.to_json()
        if current.get(name) != text.encode("utf-8"):
            files[name] = text
    return Night(befores, tuple(afters), files, tuple(warnings))


@dataclass(frozen=True)
class Published:
    """What the nightly wrote."""

    night: Night
    commit: str | None  # the baselines commit pushed (None: nothing changed)
    attempts: int  # branch updates tried (more than 1: lost a race and retried)
    action: issue_mod.IssueAction
    issue: int | None  # the issue created or edited
    program_files: tuple[str, ...] = ()  # program baselines written ("<SOC>-<tier>.json")
    program_warnings: tuple[str, ...] = ()


def publish(
    gw: NightlyGateway,
    *,
    socs: Sequence[str],
    results: Sequence[ShardResult],
    run: RunInfo,
    bot_login: str,
    window: int | None = None,
    branch: str = BRANCH,
    attempts: int = PUSH_ATTEMPTS,
    programs: program_baseline.Recorded | None = None,
) -> Published:
    """Record tonight on the baselines branch (retrying lost races), then the issue.

    ``programs``: tonight's fingerprints per (SoC, simulator?), committed with the pass/fail
    baselines in the same commit (``program_baseline.tonight`` reads them).
    """
    pushed = _push(gw, socs, results, run, window, branch, attempts, programs or {})
    night, commit, tried, program_files, program_warnings = pushed
    action = issue_mod.plan_issue(night.diff(results, run), _existing(gw), bot_login)
    number: int | None = None
    if action.kind == "create":
        gw.ensure_label(issue_mod.LABEL, LABEL_COLOR, LABEL_DESCRIPTION)
        number = gw.create_issue(action.title, action.body, [issue_mod.LABEL]).number
    elif action.kind == "update" and action.number is not None:
        gw.edit_issue(action.number, action.body)
        number = action.number
    return Published(
        night, commit, tried, action, number, tuple(program_files), tuple(program_warnings)
    )


def _push(
    gw: NightlyGateway,
    socs: Sequence[str],
    results: Sequence[ShardResult],
    run: RunInfo,
    window: int | None,
    branch: str,
    attempts: int,
    programs: program_baseline.Recorded,
) -> tuple[Night, str | None, int, list[str], list[str]]:
    """(the night as recorded on the tip it was pushed on, the commit or None, tries,
    the program baselines written, their warnings)."""
    folder = f"{DIRECTORY}/{program_baseline.DIRECTORY}"
    for attempt in range(1, attempts + 1):
        tip = gw.branch_tip(branch)
        current = gw.read_directory(tip, DIRECTORY, MAX_BYTES) if tip else {}
        night = record_night(current, socs, results, run, window, f"{branch}:{DIRECTORY}")
        stored = (
            gw.read_directory(tip, folder, program_baseline.MAX_BYTES) if tip and programs else {}
        )
        program_files, warnings = program_baseline.record_files(
            stored, programs, run.sha, f"{branch}:{folder}"
        )
        if not night.files and not program_files:
            return night, None, attempt, [], warnings
        message = f"nightly baselines at {run.sha[:12]} ({run.date})"
        paths = {f"{DIRECTORY}/{name}": text for name, text in night.files.items()}
        paths |= {f"{folder}/{name}": text for name, text in program_files.items()}
        try:
            commit = gw.commit_files(branch, tip, paths, message)
        except NotFastForward:
            continue  # another run pushed first: record again on top of its commit
        return night, commit, attempt, sorted(program_files), warnings
    raise GatewayError(
        f"{branch} moved under every one of {attempts} pushes; tonight is not recorded"
    )


def _existing(gw: NightlyGateway) -> list[issue_mod.ExistingIssue]:
    return [
        issue_mod.ExistingIssue(i.number, i.author, i.body) for i in gw.open_issues(issue_mod.LABEL)
    ]
