"""Program baselines: per SoC and tier, each test's latest nightly fingerprint (pure).

Stored beside the pass/fail baselines on the ``qnn-baselines`` branch, one file per SoC
and tier, simulator and phone apart (a program compiled on the x86 host for the simulator
is not the phone's)::

    baselines/programs/<SOC>-<tier>.json     tier: "simulator" or "phone"
    baselines/programs/other-backends-<SOC>-<tier>.json
    {
      "schema": 1, "soc": "SM8650", "tier": "simulator",
      "tests": {"TestQNNFloatingPointOperator.test_qnn_backend_conv1d":
                {"sha": "<40 hex: the nightly that recorded it>",
                 "programs": [...], "dropped": 0}}
    }

The second kind holds the other-backends matrix (ExecuTorch's own XNNPACK and portable
tests, ``Suite.OTHER_BACKENDS``), run on the simulator hosts but no QNN program: its file
says ``"suite": "other-backends"``, and the comment gives it a place of its own.

A nightly replaces the entries of the tests it fingerprinted and keeps the others (a test
not run that night keeps its last fingerprint, with the commit it came from). Entries that
could not be fingerprinted are never stored: a baseline only holds programs it can vouch
for. The files are read like every file another job wrote: capped, strict shapes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from qnn_migrate.bot import artifacts
from qnn_migrate.bot.artifacts import ArtifactError
from qnn_migrate.bot.model import SHA_RE, SOC_RE, TEST_ID_RE, ModelError, RunsOn, Shard, Suite
from qnn_migrate.bot.programs import TestPrograms, entry_to_dict, parse_test

SCHEMA = 1
DIRECTORY = "programs"
TIERS = ("simulator", "phone")
MAX_BYTES = 16 * 1024 * 1024
MAX_TESTS = 20_000


OTHER_BACKENDS = "other-backends"


def tier(simulator: bool) -> str:
    return "simulator" if simulator else "phone"


def file_name(soc: str, simulator: bool, other_backends: bool = False) -> str:
    prefix = f"{OTHER_BACKENDS}-" if other_backends else ""
    return f"{prefix}{soc}-{tier(simulator)}.json"


class Place(NamedTuple):
    """Whose programs a baseline holds: a SoC, a tier, and QNN's or the other backends'."""

    soc: str
    simulator: bool
    other_backends: bool = False

    @classmethod
    def of(cls, shard: Shard) -> Place:
        return cls(
            shard.soc, shard.runs_on is RunsOn.SIMULATOR, shard.suite is Suite.OTHER_BACKENDS
        )

    @property
    def file_name(self) -> str:
        return file_name(self.soc, self.simulator, self.other_backends)

    @property
    def words(self) -> str:
        """For warnings: "SM8650 simulator", "other-backends SM8650 simulator"."""
        kind = f"{OTHER_BACKENDS} " if self.other_backends else ""
        return f"{kind}{self.soc} {tier(self.simulator)}"


@dataclass(frozen=True)
class ProgramBaseline:
    """One SoC's and tier's latest fingerprint per test, and the nightly commit of each."""

    soc: str
    simulator: bool
    tests: Mapping[str, TestPrograms] = field(default_factory=dict)
    shas: Mapping[str, str] = field(default_factory=dict)
    other_backends: bool = False

    @property
    def latest_sha(self) -> str | None:
        """The commit most entries come from (the last nightly, in practice)."""
        if not self.shas:
            return None
        counts: dict[str, int] = {}
        for sha in self.shas.values():
            counts[sha] = counts.get(sha, 0) + 1
        return max(counts, key=lambda s: counts[s])

    def updated(self, sha: str, recorded: Mapping[str, TestPrograms]) -> ProgramBaseline:
        """This baseline with the tests ``recorded`` at ``sha`` replaced (unusable ones skipped)."""
        if not SHA_RE.match(sha):
            raise ModelError("a program baseline's sha must be 40 lowercase hex digits")
        usable = {
            t: p
            for t, p in recorded.items()
            if p.problem is None and not any(x.error for x in p.programs)
        }
        return ProgramBaseline(
            self.soc,
            self.simulator,
            {**self.tests, **usable},
            {**self.shas, **dict.fromkeys(usable, sha)},
            self.other_backends,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "soc": self.soc,
            "tier": tier(self.simulator),
            **({"suite": OTHER_BACKENDS} if self.other_backends else {}),
            "tests": {
                t: {"sha": self.shas[t], **entry_to_dict(p)} for t, p in sorted(self.tests.items())
            },
        }


def parse(data: str | bytes, where: str) -> ProgramBaseline:
    """A program baseline file; ArtifactError naming ``where`` if it is not as documented."""
    doc = artifacts.parse_json(data, where)
    try:
        if not isinstance(doc, dict) or set(doc) - {"suite"} != {"schema", "soc", "tier", "tests"}:
            raise ModelError("expected exactly the fields schema, soc, tier, tests (and suite)")
        if doc.get("suite", OTHER_BACKENDS) != OTHER_BACKENDS:
            raise ModelError(f"suite must be {OTHER_BACKENDS!r} when given")
        if doc["schema"] != SCHEMA:
            raise ModelError(f"schema {str(doc['schema'])[:20]!r}, not {SCHEMA}")
        soc, kind, tests = doc["soc"], doc["tier"], doc["tests"]
        if not isinstance(soc, str) or not SOC_RE.match(soc):
            raise ModelError("malformed soc")
        if kind not in TIERS:
            raise ModelError(f"tier must be one of {', '.join(TIERS)}")
        if not isinstance(tests, dict) or len(tests) > MAX_TESTS:
            raise ModelError(f"'tests' must be an object of at most {MAX_TESTS} tests")
        parsed: dict[str, TestPrograms] = {}
        shas: dict[str, str] = {}
        for test_id, entry in tests.items():
            if not TEST_ID_RE.match(test_id) or not isinstance(entry, dict):
                raise ModelError(f"malformed entry {test_id[:80]!r}")
            sha = entry.get("sha")
            if not isinstance(sha, str) or not SHA_RE.match(sha):
                raise ModelError(f"{test_id}: malformed sha")
            body = {k: v for k, v in entry.items() if k != "sha"}
            parsed[test_id] = parse_test(test_id, body)
            shas[test_id] = sha
    except ModelError as exc:
        raise ArtifactError(f"{where}: {exc}") from exc
    return ProgramBaseline(soc, kind == "simulator", parsed, shas, "suite" in doc)


def load(directory: Path, place: Place) -> ProgramBaseline | None:
    """``<directory>/programs/<place's file>``, or None if there is none yet."""
    path = directory / DIRECTORY / place.file_name
    if not path.is_file() or path.is_symlink():
        return None
    return parse(artifacts.read_bytes(path, "a program baseline", MAX_BYTES), str(path))


def dumps(baseline: ProgramBaseline) -> str:
    """The file's text (what ``parse`` reads)."""
    return json.dumps(baseline.to_dict(), separators=(",", ":")) + "\n"


def save(directory: Path, baseline: ProgramBaseline) -> Path:
    path = (
        directory / DIRECTORY / file_name(baseline.soc, baseline.simulator, baseline.other_backends)
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(baseline))
    return path


Recorded = Mapping[Place, Mapping[str, TestPrograms]]


def tonight(planned: Sequence[Shard], results_dir: Path) -> tuple[Recorded, list[str]]:
    """Per place (SoC, tier, suite), the fingerprints tonight's shards recorded; warnings."""
    warnings: list[str] = []
    recorded: dict[Place, dict[str, TestPrograms]] = {}
    for shard in planned:
        got = artifacts.shard_programs(results_dir, shard)
        recorded.setdefault(Place.of(shard), {}).update(got)
        skipped = [t for t, p in got.items() if p.problem]
        if skipped:
            warnings.append(
                f"{shard.id}: {len(skipped)} test(s) not fingerprinted, kept from earlier nights "
                f"({got[skipped[0]].problem})"
            )
    return recorded, warnings


def record_files(
    current: Mapping[str, bytes], recorded: Recorded, sha: str, where: str
) -> tuple[dict[str, str], list[str]]:
    """``recorded`` at ``sha`` added to the files of ``current`` (name -> bytes, as stored).

    Returns the files that change (name -> new text) and warnings; a stored file that does
    not parse starts that SoC's and tier's baseline again, with a warning.
    """
    files: dict[str, str] = {}
    warnings: list[str] = []
    for place, tests in recorded.items():
        name = place.file_name
        base = None
        if name in current:
            try:
                base = parse(current[name], f"{where}/{name}")
            except ArtifactError as exc:
                warnings.append(f"{exc}; starting the {place.words} program baseline again")
        start = ProgramBaseline(place.soc, place.simulator, other_backends=place.other_backends)
        after = (base or start).updated(sha, tests)
        if not after.tests:
            continue  # nothing fingerprinted on this SoC and tier, ever: no file
        text = dumps(after)
        if current.get(name) != text.encode("utf-8"):
            files[name] = text
    return files, warnings


def record_night(
    baselines_dir: Path, planned: Sequence[Shard], results_dir: Path, sha: str
) -> list[str]:
    """Add tonight's fingerprints to each (SoC, tier) file; warnings for what was skipped."""
    recorded, warnings = tonight(planned, results_dir)
    folder = baselines_dir / DIRECTORY
    current: dict[str, bytes] = {}
    for place in recorded:
        path = folder / place.file_name
        if path.is_file() and not path.is_symlink():
            try:
                current[path.name] = artifacts.read_bytes(path, "a program baseline", MAX_BYTES)
            except ArtifactError as exc:
                warnings.append(f"{exc}; starting the {place.words} program baseline again")
    files, more = record_files(current, recorded, sha, str(folder))
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return warnings + more
