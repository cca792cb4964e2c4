"""Records a fingerprint of every program a test harness lowers, from outside the harness.

This file runs on the device host inside the test process, with ExecuTorch's own Python,
next to the ``junit_wrapper`` folder (which loads it by path when given ``--programs FILE``): it
uses the standard library at import time and imports nothing from qnn-migrate; torch and
ExecuTorch are imported only once the harness has loaded them.

Two points are hooked, both by wrapping a class attribute, so the harness runs exactly the
code it would run without them and gets back exactly what it would get:

- ``EdgeProgramManager.to_executorch`` (where every ExecuTorch test serialises what it
  lowered): per method, the user inputs' and outputs' names, dtypes and shapes, the
  constants left in the program (count, bytes), per delegate its backend id, size and a
  hash of its payload with the QNN context header's timestamp zeroed, plus a digest per
  block of the payload (for the tolerant comparison of payloads that vary between
  compiles), and the operators left outside delegates with their call counts;
- ``_assert_outputs_equal(model_output, ref_output)`` of the harness's test base class
  (ExecuTorch's QNN ``TestQNN``; for other backends' tests, the generic harness's
  ``Tester``, where it is a static method), where a test compares what the program
  computed with the eager reference: a hash of each output and its SNR against the
  reference.

A fingerprint that cannot be taken is recorded as an error for that program (and the
harness goes on): the report then says "not fingerprinted" with the reason. The file is
rewritten after every test, so a crash keeps what was recorded before it, and is capped.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import struct
import sys
import tempfile
import time
from collections import Counter
from typing import Any

SCHEMA = 1
MAX_PROGRAMS_PER_TEST = 64
MAX_FILE_BYTES = 4 * 1024 * 1024
# The payload's block digests: at most this many blocks, each at least MIN_BLOCK bytes.
MAX_BLOCKS = 1024
MIN_BLOCK = 256
DIGEST_BYTES = 4
# ExecuTorch's QNN context header: magic, an 8-byte nanosecond timestamp, the binary's size.
_EXIR = "executorch.exir.program._program"
QNN_CONTEXT_MAGIC = struct.pack("<I", 0x5678ABCD)
_HEADER = 20
NO_COMPARE = "no _assert_outputs_equal in the harness: outputs not recorded"


def _module(name: str) -> Any:
    """A module of the torch stack, imported when the harness runs (never at import time:
    the runner host's own environment, and the core install, have no torch)."""
    return importlib.import_module(name)


def mask_qnn_headers(data: bytes) -> bytes:
    """``data`` with the timestamp of every QNN context header zeroed (all else unchanged)."""
    out = bytearray(data)
    at = out.find(QNN_CONTEXT_MAGIC)
    while at >= 0:
        if at + _HEADER <= len(out):
            (size,) = struct.unpack_from("<Q", out, at + 12)
            if size <= len(out) - at - _HEADER:  # a real header: its binary fits after it
                out[at + 4 : at + 12] = bytes(8)
        at = out.find(QNN_CONTEXT_MAGIC, at + 1)
    return bytes(out)


def block_size(size: int) -> int:
    """The block of a payload's digests: MIN_BLOCK, doubled until MAX_BLOCKS cover ``size``."""
    block = MIN_BLOCK
    while block * MAX_BLOCKS < size:
        block *= 2
    return block


def payload_print(backend: str, data: bytes) -> dict[str, Any]:
    """Size, masked hash and per-block digests of one delegate's payload."""
    masked = mask_qnn_headers(data)
    block = block_size(len(masked))
    blocks = "".join(
        hashlib.blake2b(masked[i : i + block], digest_size=DIGEST_BYTES).hexdigest()
        for i in range(0, len(masked), block)
    )
    return {
        "backend": backend,
        "size": len(data),
        "sha256": hashlib.sha256(masked).hexdigest(),
        "block": block,
        "blocks": blocks,
    }


def _tensor_spec(name: str, value: Any) -> list[Any]:
    dtype = str(getattr(value, "dtype", type(value).__name__)).removeprefix("torch.")
    shape = [d if isinstance(d, int) else str(d) for d in getattr(value, "shape", ())]
    return [name, dtype, shape]


def _method_print(name: str, program: Any) -> dict[str, Any]:
    """One method of an ExecutorchProgramManager's exported programs."""
    InputKind = _module("torch.export.graph_signature").InputKind

    graph = program.graph_module.graph
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    inputs, constants, constant_bytes = [], 0, 0
    tensors = {**dict(program.state_dict), **dict(getattr(program, "constants", {}))}
    for spec in program.graph_signature.input_specs:
        node = placeholders.get(spec.arg.name)
        value = node.meta.get("val") if node is not None else None
        if spec.kind == InputKind.USER_INPUT:
            inputs.append(_tensor_spec(spec.arg.name, value))
        else:
            constants += 1
            tensor = tensors.get(spec.target) if spec.target else None
            if tensor is not None and hasattr(tensor, "element_size"):
                constant_bytes += int(tensor.numel()) * int(tensor.element_size())
    outputs = []
    for node in graph.nodes:
        if node.op == "output":
            # Outputs are positional: a node's name says how the graph was built, not the API.
            for i, arg in enumerate(node.args[0]):
                value = arg.meta.get("val") if hasattr(arg, "meta") else arg
                outputs.append(_tensor_spec(f"output_{i}", value))
    delegates, outside = [], Counter[str]()
    modules = dict(program.graph_module.named_modules())
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        target = node.target
        label = getattr(target, "__name__", str(target))
        if label == "executorch_call_delegate":
            lowered = modules.get(node.args[0].target)
            if lowered is not None:
                delegates.append(payload_print(lowered.backend_id, lowered.processed_bytes))
        elif getattr(target, "_name", None):  # an operator (memory planning's alloc is not)
            outside[str(target._name)] += 1
    return {
        "name": name,
        "inputs": inputs,
        "outputs": outputs,
        "constants": [constants, constant_bytes],
        "delegates": delegates,
        "outside": dict(sorted(outside.items())),
    }


def program_print(manager: Any) -> dict[str, Any]:
    """The fingerprint of what ``EdgeProgramManager.to_executorch`` returned."""
    names = sorted(manager.methods)
    return {"methods": [_method_print(n, manager.exported_program(n)) for n in names]}


def _snr_db(actual: Any, reference: Any) -> float | str:
    ref = reference.detach().to("cpu").double().flatten()
    err = actual.detach().to("cpu").double().flatten() - ref
    return snr_db(float((ref * ref).sum()), float((err * err).sum()))


def snr_db(signal: float, noise: float) -> float | str:
    """Signal-to-noise ratio in dB from the two energies; "inf", "-inf" or "nan" as text.

    An output (or reference) holding NaN makes both energies NaN: that is "nan", never a
    number (a NaN compared with ``min``/``max`` reads as whichever bound it is given, and
    so once as a perfect 200 dB)."""
    if math.isnan(noise) or math.isnan(signal):
        return "nan"
    if noise == 0.0:
        return "inf"
    ratio = signal / noise
    if math.isnan(ratio):  # both infinite
        return "nan"
    if ratio == 0.0:
        return "-inf"
    if math.isinf(ratio):
        return "inf"
    return round(10.0 * math.log10(ratio), 3)


def output_print(actual: Any, reference: Any) -> dict[str, Any]:
    """Hash of one output and its SNR against the reference (None where shapes differ)."""
    torch = _module("torch")
    data = actual.detach().to("cpu").contiguous()
    digest = hashlib.sha256(str(data.dtype).encode() + str(list(data.shape)).encode())
    digest.update(data.reshape(-1).view(torch.uint8).numpy().tobytes())
    same = tuple(actual.shape) == tuple(reference.shape)
    snr = _snr_db(actual, reference) if same and actual.dtype.is_floating_point else None
    return {
        "dtype": str(data.dtype).removeprefix("torch."),
        "shape": list(data.shape),
        "sha256": digest.hexdigest(),
        "snr_db": snr,
    }


class Recorder:
    """Keeps the fingerprints of the running test and writes the file after each test."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.tests: dict[str, dict[str, Any]] = {}
        self.current: str | None = None
        self.case: Any = None
        self.notes: list[str] = []
        self.hooked = False
        self.compared: set[int] = set()  # ids of the harness classes whose compare is wrapped
        self.seconds = 0.0
        self.script_module: Any = None

    # -- the test the harness is running -------------------------------------------

    def start(self, test_id: str, case: Any) -> None:
        if not self.hooked and _EXIR in sys.modules:
            self._hook()
        elif self.hooked:
            self._hook_comparisons()  # a harness module imported since (a test's own)
        self.current, self.case = test_id, case
        self.tests.setdefault(test_id, {"programs": [], "dropped": 0})

    def stop(self) -> None:
        self.take()
        self.write_quietly()

    def take(self) -> dict[str, Any]:
        """End the running test; what was recorded for it, for :meth:`put` in another process.

        With the JUnit wrapper's ``--fork-per-test`` the test runs (and is recorded) in a child
        of the process that writes the file: the child sends this back over a pipe.
        """
        self._late()
        test_id = self.current
        self.current, self.case = None, None
        return {
            "test": test_id,
            "record": self.tests.get(test_id) if test_id is not None else None,
            "notes": self.notes,
            "seconds": self.seconds,
        }

    def put(self, taken: dict[str, Any]) -> None:
        """Keep what :meth:`take` returned in a child forked from this recorder.

        The child started from this recorder's state, so its notes and its time are this
        recorder's and then its own: they replace this recorder's.
        """
        test_id, record = taken.get("test"), taken.get("record")
        if isinstance(test_id, str) and isinstance(record, dict):
            self.tests[test_id] = record
        notes, seconds = taken.get("notes"), taken.get("seconds")
        if isinstance(notes, list):
            self.notes = [str(n)[:300] for n in notes]
        if isinstance(seconds, int | float) and math.isfinite(seconds):
            self.seconds = float(seconds)

    def write_quietly(self) -> None:
        """:meth:`write`, with a failure kept as a note (the tests go on; the reader finds
        the file missing or older)."""
        try:
            self.write()
        except OSError as exc:
            self.notes.append(f"could not write {self.path}: {exc}"[:300])

    def _subtest(self) -> str:
        sub = getattr(self.case, "_subtest", None)
        describe = getattr(sub, "_subDescription", None)
        return str(describe())[:200] if callable(describe) else ""

    def _add(self, entry: dict[str, Any]) -> None:
        if self.current is None:
            return  # lowered outside a test (a class fixture): no test to charge it to
        record = self.tests[self.current]
        if len(record["programs"]) >= MAX_PROGRAMS_PER_TEST:
            record["dropped"] += 1
            return
        record["programs"].append({"subtest": self._subtest(), **entry})

    # -- the hooks --------------------------------------------------------------------

    def on_program(self, manager: Any) -> None:
        started = time.perf_counter()
        try:
            entry = program_print(manager)
        except Exception as exc:  # a fingerprint we could not take is said, never guessed
            entry = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        self._add(entry)
        self.seconds += time.perf_counter() - started

    def on_outputs(self, model_output: Any, ref_output: Any) -> None:
        if self.current is None:
            return
        programs = self.tests[self.current]["programs"]
        if not programs or "outputs" in programs[-1] or "error" in programs[-1]:
            return
        started = time.perf_counter()
        try:
            outs = [output_print(a, r) for a, r in zip(model_output, ref_output, strict=False)]
            programs[-1]["outputs"] = outs
        except Exception as exc:
            programs[-1]["outputs_error"] = f"{type(exc).__name__}: {exc}"[:300]
        self.seconds += time.perf_counter() - started

    def install(self, script_module: Any) -> None:
        """Hook now if the harness imported ExecuTorch, else as soon as a test has.

        Importing ExecuTorch here for a harness that does not use it would cost every such
        run the torch import (seconds) and record nothing.
        """
        self.script_module = script_module
        if _EXIR in sys.modules:
            self._hook()

    def _late(self) -> None:
        """ExecuTorch appeared inside the running test: hook it, and say what was missed."""
        if self.hooked or _EXIR not in sys.modules:
            return
        self._hook()
        if self.current is not None:
            self._add(
                {
                    "error": "ExecuTorch was first imported inside this test, before the "
                    "recorder could hook it: what the test lowered is not known"
                }
            )

    def _hook(self) -> None:
        EdgeProgramManager = _module("executorch.exir.program._program").EdgeProgramManager
        self.hooked = True
        original = EdgeProgramManager.to_executorch
        recorder = self

        def to_executorch(manager: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(manager, *args, **kwargs)
            recorder.on_program(result)
            return result

        to_executorch.__wrapped__ = original  # type: ignore[attr-defined]
        EdgeProgramManager.to_executorch = to_executorch
        self._hook_comparisons()
        if not self.compared:
            self.notes.append(NO_COMPARE)

    def _hook_comparisons(self) -> None:
        """Wrap ``_assert_outputs_equal`` of every harness class loaded and not wrapped yet.

        Asked when ExecuTorch is hooked and again as each test starts: the harness module
        that defines the class (the generic ``Tester`` of the other backends' tests) may be
        imported after ExecuTorch is, by the test script or by the test itself.
        """
        recorder = self
        for cls in _harness_classes(self.script_module):
            if id(cls) in self.compared:
                continue
            self.compared.add(id(cls))
            if NO_COMPARE in self.notes:
                self.notes.remove(NO_COMPARE)
            compare = cls.__dict__["_assert_outputs_equal"]
            if isinstance(compare, staticmethod):  # the generic harness's Tester (XNNPACK...)

                def assert_outputs_static(
                    model_output: Any,
                    ref_output: Any,
                    *args: Any,
                    _shipped: Any = compare,
                    **kw: Any,
                ) -> Any:
                    recorder.on_outputs(model_output, ref_output)
                    return _shipped.__func__(model_output, ref_output, *args, **kw)

                setattr(cls, "_assert_outputs_equal", staticmethod(assert_outputs_static))  # noqa: B010
                continue

            def assert_outputs_equal(
                case: Any, model_output: Any, ref_output: Any, *, _compare: Any = compare
            ) -> Any:
                recorder.on_outputs(model_output, ref_output)
                return _compare(case, model_output, ref_output)

            setattr(cls, "_assert_outputs_equal", assert_outputs_equal)  # noqa: B010

    def to_dict(self) -> dict[str, Any]:
        # ``seconds``: time spent fingerprinting, the recorder's own cost in this run.
        return {
            "schema": SCHEMA,
            "tests": self.tests,
            "notes": self.notes,
            "seconds": round(self.seconds, 3),
        }

    def write(self) -> None:
        """Rewrite the file atomically; past the cap, the tests recorded last lose programs."""
        data = json.dumps(self.to_dict(), separators=(",", ":")).encode()
        while len(data) > MAX_FILE_BYTES and any(t["programs"] for t in self.tests.values()):
            biggest = max(self.tests.values(), key=lambda t: len(json.dumps(t["programs"])))
            biggest["dropped"] += len(biggest["programs"])
            biggest["programs"] = []
            data = json.dumps(self.to_dict(), separators=(",", ":")).encode()
        directory = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(prefix=".programs-", suffix=".json", dir=directory)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, self.path)


def _harness_classes(script_module: Any) -> list[type]:
    """Classes that define ``_assert_outputs_equal``: in the script and the modules it loaded."""
    seen: dict[int, type] = {}
    modules = [
        script_module,
        sys.modules.get("executorch.backends.qualcomm.tests.utils"),
        # The Tester of ExecuTorch's other backends' tests (XNNPACK, portable).
        sys.modules.get("executorch.backends.test.harness.tester"),
    ]
    for module in modules:
        for value in list(vars(module).values()) if module is not None else []:
            if isinstance(value, type) and "_assert_outputs_equal" in value.__dict__:
                seen[id(value)] = value
    return list(seen.values())
