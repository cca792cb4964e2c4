"""Lower one subject through both flows (each in a fresh child) and compare the results.

Lowerings come from the session's SessionCache (qnn_htp.session_cache), keyed by their
LoweringSpec, so the structure, byte and numeric tests of one subject, and any other test that
lowers the same spec (tests/qnn_htp/test_canonical_qnn_htp.py: the deprecated flow), share one
lowering per flow, whichever xdist worker runs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from qnn_migrate_tests.qnn_htp.compare import (
    bytes_differing,
    check_close,
    fp16_lsb,
    mask_signatures,
    nearly_equal,
    same_structure,
    within_lsb,
)
from qnn_migrate_tests.qnn_htp.fresh import FreshProcessError
from qnn_migrate_tests.qnn_htp.lowering import Lowered, LoweringSpec
from qnn_migrate_tests.qnn_htp.session_cache import SessionCache

FLOWS = ("deprecated", "migrated")
# Numeric bounds against the reference. Float (fp16 on HTP) against eager measured 65-72 dB;
# quantized against the fake-quant model 40-170 dB. An all-zero output is at 0 dB.
FLOAT_BOUNDS = {"min_snr_db": 50.0, "max_rel_error": 5e-3}
QUANT_BOUNDS = {"min_snr_db": 30.0, "max_rel_error": 5e-2}


@dataclass(frozen=True)
class Outcome:
    """Both flows' results for one subject (a Lowered, or the error its child raised)."""

    results: dict[str, Lowered | FreshProcessError]

    def ok(self, flow: str) -> Lowered:
        result = self.results[flow]
        if isinstance(result, FreshProcessError):
            raise AssertionError(f"the {flow} flow failed: {result}")
        return result

    def error(self, flow: str) -> str:
        result = self.results[flow]
        assert isinstance(result, FreshProcessError), f"the {flow} flow lowered and ran"
        return str(result)


def lower_flows(
    cache: SessionCache, build: str, args: tuple[Any, ...], flows: tuple[str, ...] = FLOWS
) -> Outcome:
    """``build(*args)`` lowered through each of ``flows`` (side by side where not yet lowered)."""
    results = cache.lowered([LoweringSpec(build, args, flow) for flow in flows])
    return Outcome(dict(zip(flows, results, strict=True)))


def lower_both(cache: SessionCache, build: str, args: tuple[Any, ...]) -> Outcome:
    """Through the deprecated wrapper and the migrated flow (``qnn_export``)."""
    return lower_flows(cache, build, args, FLOWS)


def payloads_identical(a: Lowered, b: Lowered) -> bool:
    return [mask_signatures(p) for p in a.payloads] == [mask_signatures(p) for p in b.payloads]


# How many bytes may vary between fresh lowerings of one subject through one flow. Measured over
# 20 fresh lowerings (10 per flow) of each subject of test_zoo.COMPILE_NOT_DETERMINISTIC: the
# positions that ever varied number 112, 252 and 128, of payloads of 49-53 KiB; two lowerings
# differed in at most 235. The control (linear lowered as conv2d or not) differs in 1,431.
VARYING_BYTES = 512


def assert_payloads_nearly_equal(a: Lowered, b: Lowered, max_bytes: int = VARYING_BYTES) -> None:
    """The masked payloads have one length each and differ in at most ``max_bytes`` bytes."""
    assert len(a.payloads) == len(b.payloads)
    for i, (x, y) in enumerate(zip(a.payloads, b.payloads, strict=True)):
        x, y = mask_signatures(x), mask_signatures(y)
        assert nearly_equal(x, y, max_bytes), (
            f"payload {i}: {len(x)} vs {len(y)} bytes, {bytes_differing(x, y)} of them differ"
        )


def assert_same_structure(a: Lowered, b: Lowered) -> None:
    problems = same_structure(a, b)
    assert not problems, "; ".join(problems)
    assert all(backend == "QnnBackend" for backend in a.backends)


def assert_outputs_within_lsb(a: Lowered, b: Lowered) -> None:
    """Simulator outputs of two lowerings agree within 1 LSB: the output's quantization step
    for a quantized model, fp16's unit in the last place for a float one."""
    for method, outs in a.outputs.items():
        steps = a.extra.get("output_steps", {}).get(method) or [None] * len(outs)
        for i, (x, y) in enumerate(zip(outs, b.outputs[method], strict=True)):
            step = steps[i]
            if step is None:
                assert not a.extra.get("output_steps"), f"{method} output {i}: no quantization step"
                step = fp16_lsb(np.maximum(np.abs(x), np.abs(y)))
            assert within_lsb(x, y, step), (
                f"{method} output {i}: max difference {np.max(np.abs(x - y)):.3g} is over 1 LSB"
            )


def assert_matches_reference(result: Lowered, quantized: bool) -> list[dict[str, float]]:
    bounds = QUANT_BOUNDS if quantized else FLOAT_BOUNDS
    figures = []
    for method, outs in result.outputs.items():
        figures += check_close(
            outs, result.reference[method], what=f"{result.label} {method}", **bounds
        )
    return figures
