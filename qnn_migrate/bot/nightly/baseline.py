"""The nightly baseline: per SoC, per test, the statuses of the last N nightly runs (pure).

Storage (see docs/runners.md): one JSON file per SoC, ``baselines/<SOC>.json``, on the
dedicated branch ``qnn-baselines`` of the repository, written by the nightly report job
and read by every PR report job. A file looks like::

    {
      "schema": 1,
      "soc": "SM8650",
      "window": 14,
      "runs": [{"sha": "<40 hex>", "date": "2026-11-29T02:13:00Z", "run_url": "..."}, ...],
      "tests": {"TestQNNFloatingPointOperator.test_qnn_backend_abs": ["PASS", "FAIL", null]}
    }

``runs`` is oldest first and every list in ``tests`` is aligned with it (``null``: the
test was not part of that night's run). In memory the files become one ``model.Baseline``.
The files are read from a branch anyone with write access can push to, so they are
treated as untrusted input: size caps, strict shapes, unknown statuses refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qnn_migrate.bot import artifacts
from qnn_migrate.bot.artifacts import ArtifactError
from qnn_migrate.bot.model import SHA_RE, SOC_RE, TEST_ID_RE, Baseline, ShardResult, Status

SCHEMA = 1
DEFAULT_WINDOW = 14
BRANCH = "qnn-baselines"
DIRECTORY = "baselines"
MAX_TESTS = 20_000
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


class BaselineError(ArtifactError):
    """A baseline file that is too large or not shaped as documented."""


@dataclass(frozen=True)
class RunInfo:
    """One nightly run: the commit it tested, when, and where its logs are."""

    sha: str
    date: str
    run_url: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"sha": self.sha, "date": self.date, "run_url": self.run_url}

    @property
    def run_number(self) -> int:
        """The workflow run id at the end of ``run_url`` (0 if none): ids grow over time."""
        tail = self.run_url.rstrip("/").rpartition("/")[2]
        return int(tail) if tail.isdigit() else 0

    def order(self) -> tuple[int, str]:
        """Where the run sits in the history: by its run id, then its date.

        A workflow run keeps its id when its jobs are re-run (days later, with a later
        ``date``), and ids grow with time, so the id puts a re-run back on its own night.
        """
        return (self.run_number, self.date)

    def same_night(self, other: RunInfo) -> bool:
        """One workflow run, even when its report job is re-run later (same run URL)."""
        if self.run_url and other.run_url:
            return self.run_url == other.run_url
        return self == other


@dataclass(frozen=True)
class SocBaseline:
    """The history of one SoC, as stored in ``baselines/<SOC>.json``."""

    soc: str
    window: int = DEFAULT_WINDOW
    runs: tuple[RunInfo, ...] = ()
    tests: Mapping[str, tuple[Status | None, ...]] = field(default_factory=dict)

    @property
    def latest_run(self) -> RunInfo | None:
        return self.runs[-1] if self.runs else None

    def history(self, test_id: str) -> list[Status]:
        """The test's statuses, oldest first, skipping nights it did not run."""
        return [s for s in self.tests.get(test_id, ()) if s is not None]

    def before(self, run: RunInfo) -> SocBaseline:
        """The history as it stood before ``run``: what that night is compared with."""
        keep = [
            i for i, r in enumerate(self.runs) if not r.same_night(run) and r.order() <= run.order()
        ]
        tests = {t: tuple(seen[i] for i in keep) for t, seen in self.tests.items()}
        return SocBaseline(
            self.soc,
            self.window,
            tuple(self.runs[i] for i in keep),
            {t: seen for t, seen in tests.items() if any(s is not None for s in seen)},
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "soc": self.soc,
            "window": self.window,
            "runs": [r.to_dict() for r in self.runs],
            "tests": {
                t: [None if s is None else s.value for s in seen]
                for t, seen in sorted(self.tests.items())
            },
        }

    def to_json(self) -> str:
        # One test per line keeps the branch's diffs readable night to night.
        lines = [f"  {json.dumps(t)}: {json.dumps(v)}" for t, v in self.to_dict()["tests"].items()]
        head = {k: v for k, v in self.to_dict().items() if k != "tests"}
        text = json.dumps(head, indent=1)[:-2]
        return text + ',\n "tests": {\n' + ",\n".join(lines) + "\n }\n}\n"


def loads(text: str | bytes, where: str = "baseline") -> SocBaseline:
    """Parse and validate one baseline file; raise BaselineError naming the problem."""
    try:
        doc = artifacts.parse_json(text, where)
    except ArtifactError as exc:
        raise BaselineError(str(exc)) from exc
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise BaselineError(f"{where}: not a schema-{SCHEMA} baseline object")
    soc = doc.get("soc")
    if not isinstance(soc, str) or not SOC_RE.match(soc):
        raise BaselineError(f"{where}: 'soc' must be a SoC name like SM8650")
    window = doc.get("window", DEFAULT_WINDOW)
    if not isinstance(window, int) or isinstance(window, bool) or not 1 <= window <= 365:
        raise BaselineError(f"{where}: 'window' must be an integer from 1 to 365")
    raw_runs = doc.get("runs", [])
    if not isinstance(raw_runs, list):
        raise BaselineError(f"{where}: 'runs' must be a list")
    runs = []
    for i, run in enumerate(raw_runs):
        if not isinstance(run, dict):
            raise BaselineError(f"{where}: runs[{i}] must be an object")
        sha, date, url = run.get("sha"), run.get("date"), run.get("run_url", "")
        if not isinstance(sha, str) or not SHA_RE.match(sha):
            raise BaselineError(f"{where}: runs[{i}].sha must be 40 lowercase hex digits")
        if not isinstance(date, str) or not _DATE_RE.match(date):
            raise BaselineError(f"{where}: runs[{i}].date must look like 2026-11-29T02:00:00Z")
        if not isinstance(url, str) or len(url) > 500:
            raise BaselineError(f"{where}: runs[{i}].run_url must be a short string")
        runs.append(RunInfo(sha, date, url))
    raw_tests = doc.get("tests", {})
    if not isinstance(raw_tests, dict) or len(raw_tests) > MAX_TESTS:
        raise BaselineError(f"{where}: 'tests' must be an object of at most {MAX_TESTS} tests")
    tests: dict[str, tuple[Status | None, ...]] = {}
    for test_id, seen in raw_tests.items():
        if not TEST_ID_RE.match(test_id):
            raise BaselineError(f"{where}: malformed test id {test_id[:80]!r}")
        if not isinstance(seen, list) or len(seen) != len(runs):
            raise BaselineError(f"{where}: {test_id} must list one status per run ({len(runs)})")
        if not all(s is None or isinstance(s, str) for s in seen):
            raise BaselineError(f"{where}: {test_id}: statuses must be strings or null")
        try:
            tests[test_id] = tuple(None if s is None else Status(str(s)) for s in seen)
        except ValueError as exc:
            raise BaselineError(f"{where}: {test_id}: {exc}") from exc
    return SocBaseline(soc, window, tuple(runs), tests)


def record(
    previous: SocBaseline | None,
    soc: str,
    results: Iterable[ShardResult],
    run: RunInfo,
    window: int | None = None,
) -> SocBaseline:
    """Add tonight's column for ``soc`` and keep the last ``window`` runs.

    A run already recorded (the same workflow run, see ``RunInfo.same_night``) is
    replaced, so a re-run of the report job does not count one night twice. The column
    goes where the run's own date (then its run id) puts it, not at the end: re-running
    an old night's job later must not make that night look like the latest.
    """
    prev = previous or SocBaseline(soc, window or DEFAULT_WINDOW)
    window = window or prev.window
    tonight: dict[str, Status] = {}
    for shard_result in results:
        if shard_result.shard.soc != soc:
            continue
        for r in shard_result.results:
            tonight.setdefault(r.test_id, r.status)
    keep = [i for i, r in enumerate(prev.runs) if not r.same_night(run)]
    at = sum(prev.runs[i].order() <= run.order() for i in keep)
    runs = [prev.runs[i] for i in keep]
    runs.insert(at, run)
    columns = {t: [seen[i] for i in keep] for t, seen in prev.tests.items()}
    for test_id in set(columns) | set(tonight):
        column = columns.setdefault(test_id, [None] * len(keep))
        column.insert(at, tonight.get(test_id))
    start = max(0, len(runs) - window)
    trimmed = {t: tuple(seen[start:]) for t, seen in columns.items()}
    return SocBaseline(
        soc=soc,
        window=window,
        runs=tuple(runs[start:]),
        tests={t: seen for t, seen in trimmed.items() if any(s is not None for s in seen)},
    )


def to_model(files: Iterable[SocBaseline]) -> Baseline:
    """All SoCs' histories as the ``model.Baseline`` the PR report compares against."""
    history: dict[tuple[str, str], Sequence[Status]] = {}
    latest: RunInfo | None = None
    for f in files:
        for test_id in f.tests:
            history[(f.soc, test_id)] = tuple(f.history(test_id))
        run = f.latest_run
        if run is not None and (latest is None or run.order() > latest.order()):
            latest = run
    return Baseline(sha=latest.sha if latest else None, history=history)


def file_name(soc: str) -> str:
    """``<SOC>.json``, the name of one SoC's file in the baselines directory."""
    if not SOC_RE.match(soc):
        raise BaselineError(f"malformed SoC {soc!r}")
    return f"{soc}.json"


def path_for(directory: Path, soc: str) -> Path:
    return directory / file_name(soc)


def load_dir(directory: Path) -> tuple[list[SocBaseline], list[str]]:
    """Every ``<SOC>.json`` in ``directory``; broken files are skipped with a warning."""
    files: list[SocBaseline] = []
    warnings: list[str] = []
    if not directory.is_dir():
        return files, [f"no baseline directory at {directory}; every failure is UNCLASSIFIED"]
    for path in sorted(directory.glob("*.json")):
        try:
            parsed = read(path)
        except ArtifactError as exc:
            warnings.append(f"baseline {path.name} ignored: {exc}")
            continue
        if parsed.soc != path.stem:
            warnings.append(f"baseline {path.name} ignored: it holds SoC {parsed.soc}")
            continue
        files.append(parsed)
    return files, warnings


def load_model(directory: Path) -> tuple[Baseline, list[str]]:
    """The PR report's entry point: a directory of baseline files -> ``model.Baseline``."""
    files, warnings = load_dir(directory)
    return to_model(files), warnings


def load_baseline(path: Path) -> Baseline:
    """``bot.cli``'s hook: a directory of ``<SOC>.json`` files, or one such file.

    Unreadable files are left out (their SoC's failures then read UNCLASSIFIED, never
    PRE-EXISTING): a damaged baseline must not hide a regression.
    """
    if path.is_dir():
        return load_model(path)[0]
    return to_model([read(path)])


def read(path: Path) -> SocBaseline:
    """One baseline file, read through the capped artifact reader."""
    return loads(artifacts.read_bytes(path, "a baseline"), str(path))
