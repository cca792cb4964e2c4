"""Program fingerprints: what a test lowered, read from a shard's files and compared (pure).

On the runner host, ``bot/lab/program_recorder.py`` writes ``programs.json`` beside the
JUnit file of each attempt: per test, one entry per program the harness lowered (method
signatures, constants, delegates with masked payload hashes, operators left outside
delegates, output hashes and SNR where the test ran the program). That file was written by
a process that ran PR code, so it is data: ``parse_programs`` checks every field's type,
size and alphabet, and a test whose entry is not as documented is *not fingerprinted* with
the reason, never IDENTICAL. ``compare`` puts a test's programs beside the nightly
baseline's for the same SoC and tier and says IDENTICAL, CHANGED (and what), NEW PROGRAM,
NO PROGRAM or NOT FINGERPRINTED.

Limits this cannot lift: a well-formed forgery (PR code writing the baseline's own
fingerprint) reads as IDENTICAL, as a forged JUnit file reads as PASS; fingerprints are
evidence for reviewers, not a security boundary.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from qnn_migrate.bot.model import TEST_ID_RE, ModelError

SCHEMA = 1
MAX_PROGRAMS = 64
MAX_METHODS = 16
MAX_TENSORS = 1024
MAX_DELEGATES = 256
MAX_OPS = 1024
MAX_DIMS = 16
MAX_BLOCKS = 1024
DIGEST_HEX = 8
# Two payloads of one size whose block digests differ in at most this many blocks are the
# same program compiled again: QNN's process-wide counters move a few bytes between
# lowerings (tests/qnn_htp measured up to 235 bytes within one flow, the control 1,431).
TOLERANT_BLOCKS = 8
# Past that tolerance a QNN payload of one size may still be the same program: the counters
# of every lowering before it in its process move with the shard's make-up, and a real change
# early in a shard moves them for every test after it (measured: docs/bot.md, "Seeding").
QNN_BACKEND = "QnnBackend"
COUNTERS_ONLY = " (one size: may be QNN's process-wide counters only)"
# Outputs are compared by their SNR against the harness's reference, not by hash (the
# harness's inputs are random): measured on the real simulator, one program's SNR moved
# 1.1 dB between two runs; the patched-pass control dropped it by 60 dB.
SNR_TOLERANCE_DB = 10.0

_HEX64_RE = re.compile(r"^[0-9a-f]{64}$")
_HEX_RE = re.compile(r"^(?:[0-9a-f]{8})*$")
_NAME_RE = re.compile(r"^[\w.:\-]{1,200}$")
_DTYPE_RE = re.compile(r"^\w{1,32}$")
_DIM_RE = re.compile(r"^[\w+\-*/() ]{1,64}$")
_SUBTEST_RE = re.compile(r"^[ -~]{0,200}$")


class ProgramVerdict(StrEnum):
    """How a test's lowered programs compare with the baseline's."""

    IDENTICAL = "IDENTICAL"
    CHANGED = "CHANGED"
    NEW_PROGRAM = "NEW PROGRAM"  # no baseline fingerprint for this test on this SoC and tier
    NO_PROGRAM = "NO PROGRAM"  # the test lowered nothing
    NOT_FINGERPRINTED = "NOT FINGERPRINTED"  # the fingerprint could not be taken or read


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of a method: name, dtype, shape (symbolic dimensions as text)."""

    name: str
    dtype: str
    shape: tuple[int | str, ...]

    def __str__(self) -> str:
        return f"{self.name}: {self.dtype}[{', '.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class DelegatePrint:
    """One delegate: backend id, payload size, masked payload hash and block digests."""

    backend: str
    size: int
    sha256: str
    block: int
    blocks: str

    def differing_blocks(self, other: DelegatePrint) -> int | None:
        """How many blocks differ, or None when sizes or block sizes differ (not comparable)."""
        if (self.size, self.block, len(self.blocks)) != (
            other.size,
            other.block,
            len(other.blocks),
        ):
            return None
        step = DIGEST_HEX
        return sum(
            self.blocks[i : i + step] != other.blocks[i : i + step]
            for i in range(0, len(self.blocks), step)
        )


@dataclass(frozen=True)
class MethodPrint:
    """One method of a lowered program."""

    name: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    constants: tuple[int, int]  # count, bytes
    delegates: tuple[DelegatePrint, ...]
    outside: tuple[tuple[str, int], ...]  # operator, calls; sorted


@dataclass(frozen=True)
class OutputPrint:
    """One output of a program run by the test: hash and SNR against the reference (dB)."""

    dtype: str
    shape: tuple[int, ...]
    sha256: str
    snr_db: float | None  # None: not a float output, or shapes differ


@dataclass(frozen=True)
class ProgramPrint:
    """One lowered program of a test (or subtest); ``error`` when it could not be taken."""

    subtest: str
    methods: tuple[MethodPrint, ...] = ()
    outputs: tuple[OutputPrint, ...] | None = None
    error: str | None = None


@dataclass(frozen=True)
class TestPrograms:
    """Everything recorded for one test id; ``problem`` says why it cannot be compared."""

    __test__ = False  # not a pytest test class

    test_id: str
    programs: tuple[ProgramPrint, ...] = ()
    problem: str | None = None


# ------------------------------------------------------------------------------ reading


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise ModelError(what)


def _list(value: Any, cap: int, what: str) -> list[Any]:
    _check(isinstance(value, list), f"{what} must be a list")
    _check(len(value) <= cap, f"{what}: {len(value)} entries, over the cap of {cap}")
    return list(value)


def _int(value: Any, what: str, limit: int = 2**53) -> int:
    _check(
        isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= limit,
        f"{what} must be a non-negative integer",
    )
    return int(value)


def _str(value: Any, pattern: re.Pattern[str], what: str) -> str:
    _check(isinstance(value, str) and bool(pattern.match(value)), f"{what} is malformed")
    return str(value)


def _keys(doc: Any, required: set[str], optional: set[str], what: str) -> dict[str, Any]:
    _check(isinstance(doc, dict), f"{what} must be an object")
    missing = required - set(doc)
    unknown = set(doc) - required - optional
    _check(not missing, f"{what} lacks {', '.join(sorted(missing))}")
    _check(
        not unknown, f"{what} has unknown field(s) {', '.join(sorted(u[:40] for u in unknown)[:5])}"
    )
    return dict(doc)


def _tensor(doc: Any, what: str) -> TensorSpec:
    items = _list(doc, 3, what)
    _check(len(items) == 3, f"{what} must be [name, dtype, shape]")
    dims = _list(items[2], MAX_DIMS, f"{what} shape")
    shape = tuple(
        d if isinstance(d, str) and _DIM_RE.match(d) else _int(d, f"{what} dimension") for d in dims
    )
    return TensorSpec(
        _str(items[0], _NAME_RE, f"{what} name"), _str(items[1], _DTYPE_RE, f"{what} dtype"), shape
    )


def _delegate(doc: Any, what: str) -> DelegatePrint:
    d = _keys(doc, {"backend", "size", "sha256", "block", "blocks"}, set(), what)
    size = _int(d["size"], f"{what} size")
    block = _int(d["block"], f"{what} block", 2**40)
    blocks = d["blocks"]
    _check(
        isinstance(blocks, str)
        and len(blocks) <= MAX_BLOCKS * DIGEST_HEX
        and bool(_HEX_RE.match(blocks)),
        f"{what} blocks are malformed",
    )
    _check(
        block > 0 and len(blocks) // DIGEST_HEX == -(-size // block),
        f"{what} blocks do not cover its size",
    )
    return DelegatePrint(
        _str(d["backend"], _NAME_RE, f"{what} backend"),
        size,
        _str(d["sha256"], _HEX64_RE, f"{what} sha256"),
        block,
        blocks,
    )


def _method(doc: Any, what: str) -> MethodPrint:
    m = _keys(doc, {"name", "inputs", "outputs", "constants", "delegates", "outside"}, set(), what)
    name = _str(m["name"], _NAME_RE, f"{what} name")
    where = f"{what} ({name})"
    constants = _list(m["constants"], 2, f"{where} constants")
    _check(len(constants) == 2, f"{where} constants must be [count, bytes]")
    outside = m["outside"]
    _check(
        isinstance(outside, dict) and len(outside) <= MAX_OPS, f"{where} outside must be an object"
    )
    return MethodPrint(
        name,
        tuple(
            _tensor(t, f"{where} input") for t in _list(m["inputs"], MAX_TENSORS, f"{where} inputs")
        ),
        tuple(
            _tensor(t, f"{where} output")
            for t in _list(m["outputs"], MAX_TENSORS, f"{where} outputs")
        ),
        (
            _int(constants[0], f"{where} constant count"),
            _int(constants[1], f"{where} constant bytes"),
        ),
        tuple(
            _delegate(d, f"{where} delegate")
            for d in _list(m["delegates"], MAX_DELEGATES, f"{where} delegates")
        ),
        tuple(
            sorted(
                (_str(k, _NAME_RE, f"{where} operator"), _int(v, f"{where} calls"))
                for k, v in outside.items()
            )
        ),
    )


def _output(doc: Any, what: str) -> OutputPrint:
    o = _keys(doc, {"dtype", "shape", "sha256", "snr_db"}, set(), what)
    snr = o["snr_db"]
    if snr in ("inf", "-inf", "nan"):
        snr = float(snr)
    _check(
        snr is None or (isinstance(snr, int | float) and not isinstance(snr, bool)),
        f"{what} snr_db must be a number, 'inf', '-inf', 'nan' or null",
    )
    return OutputPrint(
        _str(o["dtype"], _DTYPE_RE, f"{what} dtype"),
        tuple(_int(d, f"{what} dimension") for d in _list(o["shape"], MAX_DIMS, f"{what} shape")),
        _str(o["sha256"], _HEX64_RE, f"{what} sha256"),
        None if snr is None else float(snr),
    )


def _program(doc: Any, what: str) -> ProgramPrint:
    p = _keys(doc, {"subtest"}, {"methods", "outputs", "error", "outputs_error"}, what)
    subtest = _str(p["subtest"], _SUBTEST_RE, f"{what} subtest")
    if "error" in p:
        _check(isinstance(p["error"], str), f"{what} error must be text")
        return ProgramPrint(subtest, error=str(p["error"])[:300] or "unknown error")
    methods = tuple(
        _method(m, f"{what} method")
        for m in _list(p.get("methods"), MAX_METHODS, f"{what} methods")
    )
    _check(bool(methods), f"{what} has no methods")
    outputs = None
    if "outputs_error" in p:
        _check(isinstance(p["outputs_error"], str), f"{what} outputs_error must be text")
        return ProgramPrint(subtest, methods, error=f"outputs: {str(p['outputs_error'])[:280]}")
    if p.get("outputs") is not None:
        outputs = tuple(
            _output(o, f"{what} output")
            for o in _list(p["outputs"], MAX_TENSORS, f"{what} outputs")
        )
    return ProgramPrint(subtest, methods, outputs)


def parse_test(test_id: str, doc: Any) -> TestPrograms:
    """One test's entry; a malformed one becomes a TestPrograms with the problem, never raises."""
    try:
        entry = _keys(doc, {"programs", "dropped"}, set(), "the entry")
        dropped = _int(entry["dropped"], "dropped")
        programs = tuple(
            _program(p, f"program {i + 1}")
            for i, p in enumerate(_list(entry["programs"], MAX_PROGRAMS, "programs"))
        )
    except ModelError as exc:
        return TestPrograms(test_id, problem=f"malformed fingerprint: {exc}")
    if dropped:
        return TestPrograms(test_id, programs, f"{dropped} program(s) over the recorder's cap")
    return TestPrograms(test_id, programs)


def parse_programs(doc: Any, expected: Sequence[str]) -> dict[str, TestPrograms]:
    """A ``programs.json`` document, for the ``expected`` test ids only.

    The file as a whole must have the documented shape (else ModelError: the caller makes
    every test of the shard "not fingerprinted" with the reason); an expected test without
    an entry is left out (the caller knows whether it ran); ids nobody asked for are dropped.
    """
    top = _keys(doc, {"schema", "tests"}, {"notes", "failed", "seconds"}, "a programs file")
    _check(
        top["schema"] == SCHEMA,
        f"a programs file has schema {str(top['schema'])[:20]!r}, not {SCHEMA}",
    )
    if "failed" in top:
        raise ModelError(f"the recorder could not start: {str(top['failed'])[:200]}")
    tests = top["tests"]
    _check(isinstance(tests, dict), "'tests' must be an object")
    return {t: parse_test(t, tests[t]) for t in expected if TEST_ID_RE.match(t) and t in tests}


def entry_to_dict(test: TestPrograms) -> dict[str, Any]:
    """The JSON form ``parse_test`` reads (baselines store it); only comparable entries."""

    def tensor(t: TensorSpec) -> list[Any]:
        return [t.name, t.dtype, list(t.shape)]

    def program(p: ProgramPrint) -> dict[str, Any]:
        if p.error is not None:
            return {"subtest": p.subtest, "error": p.error}
        out: dict[str, Any] = {
            "subtest": p.subtest,
            "methods": [
                {
                    "name": m.name,
                    "inputs": [tensor(t) for t in m.inputs],
                    "outputs": [tensor(t) for t in m.outputs],
                    "constants": list(m.constants),
                    "delegates": [vars(d) for d in m.delegates],
                    "outside": dict(m.outside),
                }
                for m in p.methods
            ],
        }
        if p.outputs is not None:
            out["outputs"] = [
                {
                    "dtype": o.dtype,
                    "shape": list(o.shape),
                    "sha256": o.sha256,
                    "snr_db": o.snr_db
                    if o.snr_db is None or math.isfinite(o.snr_db)
                    else str(o.snr_db),
                }
                for o in p.outputs
            ]
        return out

    return {"programs": [program(p) for p in test.programs], "dropped": 0}


# ---------------------------------------------------------------------------- comparing


@dataclass(frozen=True)
class Comparison:
    """One test's verdict and, for CHANGED, what changed (plain text, escaped when rendered)."""

    test_id: str
    verdict: ProgramVerdict
    changes: tuple[str, ...] = ()
    note: str = ""


def _snr_moved(a: float | None, b: float | None) -> bool:
    """Whether an output's SNR moved by more than SNR_TOLERANCE_DB (infinite counts as 200 dB).

    NaN (an output holding NaN) is no number of dB: it moved unless both are NaN."""
    if a is None or b is None:
        return (a is None) != (b is None)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) != math.isnan(b)
    return abs(max(-200.0, min(200.0, a)) - max(-200.0, min(200.0, b))) > SNR_TOLERANCE_DB


def _snr(value: float | None) -> str:
    if value is None:
        return "n/a"
    if math.isnan(value):
        return "NaN (the output holds NaN)"
    return f"{value:.1f} dB" if math.isfinite(value) else f"{value} dB"


def _method_changes(where: str, a: MethodPrint, b: MethodPrint) -> list[str]:
    out = []
    if a.inputs != b.inputs:
        out.append(
            f"{where}signature: inputs ({'; '.join(map(str, a.inputs))}) → ({'; '.join(map(str, b.inputs))})"
        )
    if a.outputs != b.outputs:
        out.append(
            f"{where}signature: outputs ({'; '.join(map(str, a.outputs))}) → ({'; '.join(map(str, b.outputs))})"
        )
    if a.constants != b.constants:
        out.append(
            f"{where}signature: constant inputs {a.constants[0]} ({a.constants[1]} bytes) → "
            f"{b.constants[0]} ({b.constants[1]} bytes)"
        )
    if len(a.delegates) != len(b.delegates):
        out.append(f"{where}delegate count: {len(a.delegates)} → {len(b.delegates)}")
    for i, (x, y) in enumerate(zip(a.delegates, b.delegates, strict=False)):
        if x.backend != y.backend:
            out.append(f"{where}delegate {i + 1}: backend {x.backend} → {y.backend}")
        elif x.sha256 != y.sha256:
            differing = x.differing_blocks(y)
            if differing is None or differing > TOLERANT_BLOCKS:
                blocks = (
                    ""
                    if differing is None
                    else f", {differing} of {len(x.blocks) // DIGEST_HEX} blocks differ"
                    + (COUNTERS_ONLY if x.backend == QNN_BACKEND else "")
                )
                out.append(
                    f"{where}delegate {i + 1} ({x.backend}) payload: {x.size} → {y.size} bytes{blocks}"
                )
    if a.outside != b.outside:
        before, after = dict(a.outside), dict(b.outside)
        moved = [
            f"{op} {before.get(op, 0)}→{after.get(op, 0)}"
            for op in sorted(set(before) | set(after))
            if before.get(op, 0) != after.get(op, 0)
        ]
        out.append(f"{where}ops outside delegates: {', '.join(moved)}")
    return out


def _program_changes(where: str, a: ProgramPrint, b: ProgramPrint) -> list[str]:
    out: list[str] = []
    if [m.name for m in a.methods] != [m.name for m in b.methods]:
        out.append(
            f"{where}methods: {', '.join(m.name for m in a.methods)} → {', '.join(m.name for m in b.methods)}"
        )
    for x, y in zip(a.methods, b.methods, strict=False):
        label = f"{where}{x.name}: " if len(a.methods) > 1 or x.name != "forward" else where
        out += _method_changes(label, x, y)
    if a.outputs is not None and b.outputs is not None:
        # Not the hashes: a harness draws its sample inputs at random (ExecuTorch's do), so
        # equal programs give other outputs; their accuracy against the reference is the claim.
        for i, (p, q) in enumerate(zip(a.outputs, b.outputs, strict=False)):
            if (p.dtype, p.shape) != (q.dtype, q.shape):
                out.append(
                    f"{where}outputs: output {i} {p.dtype}{list(p.shape)} → {q.dtype}{list(q.shape)}"
                )
            elif _snr_moved(p.snr_db, q.snr_db):
                out.append(f"{where}outputs: output {i} SNR {_snr(p.snr_db)} → {_snr(q.snr_db)}")
        if len(a.outputs) != len(b.outputs):
            out.append(f"{where}outputs: {len(a.outputs)} → {len(b.outputs)}")
    return out


def compare(
    base: TestPrograms | None, head: TestPrograms | None, test_id: str, why_missing: str = ""
) -> Comparison:
    """The PR's programs for ``test_id`` against the baseline's (either may be absent)."""
    if head is None:
        return Comparison(
            test_id, ProgramVerdict.NOT_FINGERPRINTED, note=why_missing or "no fingerprint recorded"
        )
    if head.problem:
        return Comparison(test_id, ProgramVerdict.NOT_FINGERPRINTED, note=head.problem)
    errors = [f"program {i + 1}: {p.error}" for i, p in enumerate(head.programs) if p.error]
    if errors:
        return Comparison(test_id, ProgramVerdict.NOT_FINGERPRINTED, note="; ".join(errors)[:300])
    if not head.programs:
        return Comparison(test_id, ProgramVerdict.NO_PROGRAM, note="no program recorded")
    if base is None or base.problem or not base.programs or any(p.error for p in base.programs):
        why = (
            "no baseline fingerprint" if base is None or not base.problem else "baseline not usable"
        )
        return Comparison(test_id, ProgramVerdict.NEW_PROGRAM, note=why)
    changes: list[str] = []
    if len(base.programs) != len(head.programs):
        changes.append(f"programs lowered: {len(base.programs)} → {len(head.programs)}")
    many = len(head.programs) > 1
    for i, (a, b) in enumerate(zip(base.programs, head.programs, strict=False)):
        where = f"program {i + 1}{' ' + b.subtest if b.subtest else ''}: " if many else ""
        changes += _program_changes(where, a, b)
    verdict = ProgramVerdict.CHANGED if changes else ProgramVerdict.IDENTICAL
    return Comparison(test_id, verdict, tuple(changes))


def compare_all(
    base: Mapping[str, TestPrograms],
    head: Mapping[str, TestPrograms],
    tests: Sequence[str],
    why_missing: Mapping[str, str] | None = None,
) -> list[Comparison]:
    """``compare`` for each of ``tests``, in order."""
    why = why_missing or {}
    return [compare(base.get(t), head.get(t), t, why.get(t, "")) for t in tests]
