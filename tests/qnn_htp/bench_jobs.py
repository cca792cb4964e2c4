"""Benchmark subjects and the measured lowering that benchmarks/bench_qnn.py runs in fresh children."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from qnn_htp.subjects import Subject, quantize

ROOT = Path(__file__).resolve().parents[2]


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def bench_model(blocks: int, channels: int) -> Subject:
    """benchmarks/bench_passes.py's model (residual conv1d + layer norm + linear blocks), fp16."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_passes import _model

    model, inputs = _model(blocks, channels)
    return Subject(model, inputs, quantized=False)


def bench_model_8a8w(blocks: int, channels: int) -> Subject:
    """The same model, PT2E-quantized 8a8w (per-channel weights) with QnnQuantizer."""
    subject = bench_model(blocks, channels)
    return Subject(quantize(subject.model, subject.inputs, "8a8w"), subject.inputs, quantized=True)


SUBJECTS = {"bench": bench_model, "bench_8a8w": bench_model_8a8w}


def measure(flow: str, subject: str, blocks: int, channels: int, l2c: bool) -> dict[str, Any]:
    """Build (untimed), then time model -> .pte through ``flow`` with the peak RSS it reaches."""
    import gc

    from qnn_htp.flows import FLOWS
    from qnn_htp.lowering import compiler_specs, describe

    built = SUBJECTS[subject](blocks, channels)
    specs = compiler_specs(built.quantized)
    gc.collect()
    before = _status_kib("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS (Linux >= 4.0)
    start = time.perf_counter()
    edge = FLOWS[flow](built.model, built.inputs, specs, convert_linear_to_conv2d=l2c)
    pte = edge.to_executorch().buffer
    seconds = time.perf_counter() - start
    peak = _status_kib("VmHWM")
    delegates, _ = describe(edge)
    return {
        "flow": flow,
        "subject": subject,
        "seconds": seconds,
        "rss_before_kib": before,
        "peak_rss_kib": peak,
        "pte_bytes": len(pte),
        "delegates": sum(delegates.values()),
    }
