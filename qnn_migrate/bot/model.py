"""The values that travel between the bot's steps: shards, per-test results, baselines.

Pure data, no I/O. A shard is planned on a GitHub-hosted runner (``plan``), crosses a
``workflow_dispatch`` as JSON, runs on a device host (``runner``), comes back as JUnit XML
read into a ``ShardResult`` (``results``), and is rendered into one PR comment
(``render``). Every step reads and writes these types, so their JSON form is the contract.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

TEST_ID_RE = re.compile(r"^Test\w+\.test_\w+$")
SHA_RE = re.compile(r"^[0-9a-f]{40}$")
SOC_RE = re.compile(r"^[A-Z0-9]{2,16}$")


class ModelError(ValueError):
    """A shard or result document that does not have the expected shape."""


class Status(StrEnum):
    """Outcome of one expected test in one shard."""

    PASS = "PASS"
    FAIL = "FAIL"  # an assertion mismatch inside the test
    ERROR = "ERROR"  # any other exception raised by the test itself
    INFRA = "INFRA"  # adb, device, runner crash, timeout: not the change's fault
    MISSING = "MISSING"  # expected but never reported: a typo, a lost class, a crash
    SKIP = "SKIP"

    @property
    def is_failure(self) -> bool:
        return self in (Status.FAIL, Status.ERROR, Status.INFRA, Status.MISSING)


class Verdict(StrEnum):
    """How a failure on a PR compares with the latest nightly baseline on the same SoC."""

    NEW = "NEW"
    PRE_EXISTING = "PRE-EXISTING"
    FLAKY = "FLAKY"
    INFRA = "INFRA"
    UNCLASSIFIED = "UNCLASSIFIED"  # no baseline for this test on this SoC


def _require(doc: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    if key not in doc:
        raise ModelError(f"missing field {key!r}")
    value = doc[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    # JSON true/false are Python bools, which are ints: refuse them where a number is due.
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise ModelError(f"field {key!r} has type {type(value).__name__}")
    return value


def _optional(doc: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    """``doc[key]`` when present and not null, checked like ``_require``; else None."""
    if doc.get(key) is None:
        return None
    return _require(doc, key, kind)


def _known(doc: Mapping[str, Any], fields: Iterable[str], what: str) -> None:
    if not isinstance(doc, Mapping):
        raise ModelError(f"a {what} must be a JSON object")
    unknown = sorted(set(doc) - set(fields))
    if unknown:
        raise ModelError(f"unknown {what} field(s): {', '.join(u[:40] for u in unknown[:5])}")


class RunsOn(StrEnum):
    """Where a shard runs."""

    PHONE = "phone"  # a phone of the shard's SoC, through adb
    SIMULATOR = "x86-simulator"  # the x86 HTP simulator: lowered and run on the host
    COMPILE_ONLY = "compile-only"  # lowered only (never planned; the lab refuses it)

    @property
    def label(self) -> str:
        """How reports and baselines name it: ``phone``, ``x86 simulator``, ``compile only``."""
        return self.value.replace("-", " ")


class At(StrEnum):
    """Whose commit a shard runs."""

    HEAD = "head"  # the commit under test: the PR's pinned head, or the nightly's
    # `/qnn test ... --compare base`: the PR's merge base, on the simulator tier; its
    # programs are what the PR's are compared with, and its pass/fail counts for nothing.
    MERGE_BASE = "merge-base"


class Suite(StrEnum):
    """Which tests a shard's matrix holds."""

    QNN = "qnn"  # test_qnn_delegate.py's
    # ExecuTorch's own XNNPACK/portable tests (catalog ``modules``): their programs have a
    # baseline and a place in the comment of their own, apart from the QNN simulator's.
    OTHER_BACKENDS = "other-backends"


# Keys of the shard JSON before RunsOn, At and Suite (runs dispatched then are still read).
_LEGACY_KEYS = ("enable_x86_64", "compile_only", "merge_base", "other_backends")
# What a runner host fills in (``HostShard``): a planned shard leaves them out.
HOST_FIELDS = ("executorch_dir", "adb_host", "device", "device_pool")


def _enum(doc: Mapping[str, Any], key: str, kind: type[StrEnum], default: StrEnum) -> Any:
    value = doc.get(key)
    if value is None:
        return default
    try:
        return kind(value)
    except ValueError as exc:
        choices = ", ".join(repr(k.value) for k in kind)
        raise ModelError(
            f"field {key!r} must be one of {choices}, got {str(value)[:40]!r}"
        ) from exc


def _placement(doc: Mapping[str, Any]) -> tuple[RunsOn, At, Suite]:
    """Where, whose and which suite, from either form of the shard JSON."""
    legacy = [k for k in _LEGACY_KEYS if k in doc]
    if not legacy:
        return (
            _enum(doc, "runs_on", RunsOn, RunsOn.PHONE),
            _enum(doc, "at", At, At.HEAD),
            _enum(doc, "suite", Suite, Suite.QNN),
        )
    mixed = [k for k in ("runs_on", "at", "suite") if k in doc]
    if mixed:
        raise ModelError(
            f"a shard says where it runs either by {', '.join(mixed)} or, as before, by "
            f"{', '.join(legacy)}; not both"
        )
    flags: dict[str, bool] = {}
    for key in legacy:
        value = doc[key]
        if value is not None and not isinstance(value, bool):
            raise ModelError(f"field {key!r} has type {type(value).__name__}")
        flags[key] = bool(value)
    if flags.get("enable_x86_64") and flags.get("compile_only"):
        raise ModelError("enable_x86_64 and compile_only are both set: a shard runs in one place")
    runs_on = (
        RunsOn.COMPILE_ONLY
        if flags.get("compile_only")
        else RunsOn.SIMULATOR
        if flags.get("enable_x86_64")
        else RunsOn.PHONE
    )
    at = At.MERGE_BASE if flags.get("merge_base") else At.HEAD
    suite = Suite.OTHER_BACKENDS if flags.get("other_backends") else Suite.QNN
    return runs_on, at, suite


def _optional_of(doc: Mapping[str, Any], key: str, kind: type) -> Any:
    value = doc.get(key)
    if value is not None and (
        not isinstance(value, kind) or (kind is int and isinstance(value, bool))
    ):
        raise ModelError(f"field {key!r} has type {type(value).__name__}")
    return value


@dataclass(frozen=True)
class Shard:
    """One unit of device work as planned: some tests of one matrix, on one SoC, at one commit.

    Where it runs, whose commit it is and which suite it belongs to are one enum each. What
    only a runner host knows (its checkout, its phones) is not here: see ``HostShard``.
    """

    id: str
    matrix: str
    soc: str
    backend: str
    seed: int
    tests: tuple[str, ...]
    sha: str
    pr: int | None = None
    build_folder: str = "build-android/"
    runs_on: RunsOn = RunsOn.PHONE
    at: At = At.HEAD
    suite: Suite = Suite.QNN
    timeout_s: int = 3600
    per_test_timeout_s: int = 600

    def __post_init__(self) -> None:
        bad = [t for t in self.tests if not TEST_ID_RE.match(t)]
        if bad:
            raise ModelError(f"shard {self.id}: malformed test id(s): {', '.join(bad[:5])}")
        if not SHA_RE.match(self.sha):
            raise ModelError(f"shard {self.id}: sha must be 40 lowercase hex digits")
        if not SOC_RE.match(self.soc):
            raise ModelError(f"shard {self.id}: malformed SoC {self.soc!r}")
        if not self.tests:
            raise ModelError(f"shard {self.id}: no tests")

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "matrix": self.matrix,
            "soc": self.soc,
            "backend": self.backend,
            "seed": self.seed,
            "tests": list(self.tests),
            "sha": self.sha,
            "pr": self.pr,
            "build_folder": self.build_folder,
            "runs_on": self.runs_on.value,
            "at": self.at.value,
            "suite": self.suite.value,
            "timeout_s": self.timeout_s,
            "per_test_timeout_s": self.per_test_timeout_s,
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Shard:
        """A planned shard, from its JSON or from the JSON of the bot before ``runs_on``,
        ``at`` and ``suite`` (four booleans, and the host's fields, left empty)."""
        fields = _shard_fields(doc, host=False)
        return cls(**fields)


def _shard_fields(doc: Mapping[str, Any], *, host: bool) -> dict[str, Any]:
    if not isinstance(doc, Mapping):
        raise ModelError("a shard must be a JSON object")
    known = {f for f in Shard.__dataclass_fields__} | set(_LEGACY_KEYS) | set(HOST_FIELDS)
    unknown = sorted(set(doc) - known)
    if unknown:
        raise ModelError(f"unknown shard field(s): {', '.join(u[:40] for u in unknown[:5])}")
    tests = _require(doc, "tests", list)
    if not all(isinstance(t, str) for t in tests):
        raise ModelError("field 'tests' must be a list of strings")
    pool = doc.get("device_pool") or []
    if not isinstance(pool, list) or not all(isinstance(p, str) for p in pool):
        raise ModelError("field 'device_pool' must be a list of strings")
    runs_on, at, suite = _placement(doc)
    fields: dict[str, Any] = {
        "id": _require(doc, "id", str),
        "matrix": _require(doc, "matrix", str),
        "soc": _require(doc, "soc", str),
        "backend": _require(doc, "backend", str),
        "seed": _require(doc, "seed", int),
        "tests": tuple(tests),
        "sha": _require(doc, "sha", str),
        "pr": _optional_of(doc, "pr", int),
        "build_folder": _optional_of(doc, "build_folder", str) or "build-android/",
        "runs_on": runs_on,
        "at": at,
        "suite": suite,
        "timeout_s": _optional_of(doc, "timeout_s", int) or 3600,
        "per_test_timeout_s": _optional_of(doc, "per_test_timeout_s", int) or 600,
    }
    local = {
        "executorch_dir": _optional_of(doc, "executorch_dir", str),
        "adb_host": _optional_of(doc, "adb_host", str),
        "device": _optional_of(doc, "device", str),
        "device_pool": tuple(pool),
    }
    if host:
        return fields | local
    chosen = [k for k, v in local.items() if v]
    if chosen:  # the old JSON carried them empty; a plan never chooses them
        raise ModelError(f"{', '.join(chosen)} belong to the runner host, not the plan")
    return fields


@dataclass(frozen=True)
class HostShard(Shard):
    """A planned shard as a runner host runs it: with that host's checkout and phones
    (``lab.host_config.HostConfig.apply``, or ``run-shard``'s options)."""

    executorch_dir: str | None = None
    adb_host: str | None = None
    device: str | None = None  # the serial to try first
    device_pool: tuple[str, ...] = ()

    @classmethod
    def of(cls, shard: Shard, **host: Any) -> HostShard:
        """``shard`` on a host; ``host`` sets host fields (a HostShard keeps its others)."""
        fields = {name: getattr(shard, name) for name in Shard.__dataclass_fields__}
        if isinstance(shard, HostShard):
            fields |= {name: getattr(shard, name) for name in HOST_FIELDS}
        return cls(**(fields | host))

    def to_dict(self) -> dict[str, Any]:
        return super().to_dict() | {
            "executorch_dir": self.executorch_dir,
            "adb_host": self.adb_host,
            "device": self.device,
            "device_pool": list(self.device_pool),
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> HostShard:
        """A shard as a host ran it (a result file's), in either form of the JSON."""
        return cls(**_shard_fields(doc, host=True))


@dataclass(frozen=True)
class TestResult:
    """The outcome of one test id in one shard."""

    __test__ = False  # not a pytest test class

    test_id: str
    status: Status
    duration_s: float | None = None
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "test_id": self.test_id,
            "status": self.status.value,
            "duration_s": self.duration_s,
            "message": self.message,
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> TestResult:
        _known(doc, cls.__dataclass_fields__, "test result")
        try:
            status = Status(_require(doc, "status", str))
        except ValueError as exc:
            raise ModelError(f"unknown status {str(doc.get('status'))[:40]!r}") from exc
        duration = _optional(doc, "duration_s", (int, float))
        if duration is not None and not 0 <= duration < float("inf"):
            raise ModelError("field 'duration_s' must be a finite, non-negative number")
        return cls(
            test_id=_require(doc, "test_id", str),
            status=status,
            duration_s=None if duration is None else float(duration),
            message=_optional(doc, "message", str) or "",
        )


@dataclass(frozen=True)
class ShardResult:
    """Everything known about one shard after it ran (or failed to run).

    ``results`` holds exactly one entry per expected test id, in the shard's order:
    completeness is established when the result is built, never assumed later.
    """

    shard: Shard
    results: tuple[TestResult, ...]
    device: str | None = None
    attempts: int = 1
    infra_reason: str | None = None
    log_url: str | None = None
    sdk_version: str | None = None
    device_fingerprint: str | None = None
    command: tuple[str, ...] = ()

    @classmethod
    def complete(cls, shard: Shard, reported: Iterable[TestResult], **kwargs: Any) -> ShardResult:
        """Build a result with one entry per expected test; unreported ones are MISSING.

        Results for ids the shard did not ask for are dropped: they cannot make an
        expected test green.
        """
        by_id: dict[str, TestResult] = {}
        for r in reported:
            by_id.setdefault(r.test_id, r)
        ordered = tuple(
            by_id.get(t) or TestResult(t, Status.MISSING, None, "not reported by the test run")
            for t in shard.tests
        )
        return cls(shard=shard, results=ordered, **kwargs)

    @classmethod
    def all_infra(cls, shard: Shard, reason: str, **kwargs: Any) -> ShardResult:
        return cls(
            shard=shard,
            results=tuple(TestResult(t, Status.INFRA, None, reason) for t in shard.tests),
            infra_reason=reason,
            **kwargs,
        )

    @property
    def expected(self) -> int:
        return len(self.shard.tests)

    @property
    def ran(self) -> int:
        """Tests that actually reported an outcome (not MISSING, not INFRA)."""
        return sum(r.status not in (Status.MISSING, Status.INFRA) for r in self.results)

    def counts(self) -> dict[Status, int]:
        out = {s: 0 for s in Status}
        for r in self.results:
            out[r.status] += 1
        return out

    @property
    def ok(self) -> bool:
        return all(r.status in (Status.PASS, Status.SKIP) for r in self.results)

    def to_dict(self) -> dict[str, Any]:
        return {
            "shard": self.shard.to_dict(),
            "results": [r.to_dict() for r in self.results],
            "device": self.device,
            "attempts": self.attempts,
            "infra_reason": self.infra_reason,
            "log_url": self.log_url,
            "sdk_version": self.sdk_version,
            "device_fingerprint": self.device_fingerprint,
            "command": list(self.command),
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> ShardResult:
        """A result file's object; every field's type is checked, unknown fields refused."""
        _known(doc, cls.__dataclass_fields__, "shard result")
        raw = _require(doc, "shard", dict)
        # A runner host writes the shard as it ran there (``HostShard``, with its fields).
        read = HostShard.from_dict if any(k in raw for k in HOST_FIELDS) else Shard.from_dict
        shard = read(raw)
        raw = _require(doc, "results", list)
        if not all(isinstance(r, dict) for r in raw):
            raise ModelError("field 'results' must be a list of objects")
        results = [TestResult.from_dict(r) for r in raw]
        attempts = _optional(doc, "attempts", int)
        if attempts is not None and attempts < 0:
            raise ModelError("field 'attempts' must not be negative")
        command = doc.get("command", [])
        if not isinstance(command, list) or not all(isinstance(c, str) for c in command):
            raise ModelError("field 'command' must be a list of strings")
        if "attempts" in doc and attempts is None:
            raise ModelError("field 'attempts' must be an integer, not null")
        return cls.complete(
            shard,
            results,
            device=_optional(doc, "device", str),
            attempts=1 if attempts is None else attempts,
            infra_reason=_optional(doc, "infra_reason", str),
            log_url=_optional(doc, "log_url", str),
            sdk_version=_optional(doc, "sdk_version", str),
            device_fingerprint=_optional(doc, "device_fingerprint", str),
            command=tuple(command),
        )


NO_RESULT = "no result from this shard's job (it failed, was cancelled, or uploaded nothing)"


def reconcile(planned: Sequence[Shard], results: Sequence[ShardResult]) -> list[ShardResult]:
    """One result per planned shard, in plan order, judged against the planned test list.

    A shard whose job left no result is INFRA throughout; a result file cannot shrink (or
    grow) its own shard, because completeness is re-established against the plan.
    """
    by_id: dict[str, ShardResult] = {}
    for r in results:
        by_id.setdefault(r.shard.id, r)
    out = []
    for shard in planned:
        got = by_id.get(shard.id)
        if got is None:
            out.append(ShardResult.all_infra(shard, NO_RESULT))
        elif got.shard == shard:
            out.append(got)
        else:
            out.append(
                ShardResult.complete(
                    shard,
                    got.results,
                    device=got.device,
                    attempts=got.attempts,
                    infra_reason=got.infra_reason,
                    log_url=got.log_url,
                    sdk_version=got.sdk_version,
                    device_fingerprint=got.device_fingerprint,
                    command=got.command,
                )
            )
    return out


@dataclass(frozen=True)
class Baseline:
    """Per-SoC, per-test status history from the nightly runs, oldest first."""

    sha: str | None = None
    history: Mapping[tuple[str, str], Sequence[Status]] = field(default_factory=dict)

    def latest(self, soc: str, test_id: str) -> Status | None:
        seen = self.history.get((soc, test_id))
        return seen[-1] if seen else None

    def is_flaky(self, soc: str, test_id: str, window: int = 5) -> bool:
        """A test that flipped between passing and failing within the last ``window`` runs."""
        seen = [s for s in self.history.get((soc, test_id), ()) if s is not Status.SKIP]
        recent = seen[-window:]
        passed = [s is Status.PASS for s in recent if s is not Status.INFRA]
        return any(a != b for a, b in itertools.pairwise(passed))

    def verdict(self, soc: str, result: TestResult) -> Verdict:
        """Compare one failing PR result with the nightly history on the same SoC."""
        if result.status is Status.INFRA:
            return Verdict.INFRA
        if self.is_flaky(soc, result.test_id):
            return Verdict.FLAKY
        last = self.latest(soc, result.test_id)
        if last is None or last is Status.INFRA:
            return Verdict.UNCLASSIFIED
        if last.is_failure:
            return Verdict.PRE_EXISTING
        return Verdict.NEW
