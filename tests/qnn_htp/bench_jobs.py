"""Benchmark subjects and the measured lowering that benchmarks/bench_qnn.py runs in fresh children."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from qnn_migrate_tests.qnn_htp.subjects import Subject, quantize

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
    built = SUBJECTS[subject](blocks, channels)
    return {"subject": subject, **timed_lowering(flow, built, convert_linear_to_conv2d=l2c)}


def measure_built(flow: str, build: str, args: tuple[Any, ...]) -> dict[str, Any]:
    """As :func:`measure` for the subject ``build(*args)`` ("module:function", e.g.
    ``qnn_htp.hf_subjects:hf``), lowered with its own options."""
    import importlib

    module, _, function = build.partition(":")
    built = getattr(importlib.import_module(module), function)(*args)
    options = {
        "dynamic_shapes": built.dynamic_shapes,
        "convert_linear_to_conv2d": built.convert_linear_to_conv2d,
        **built.lowering_kwargs,
    }
    return {"subject": "-".join(map(str, args)), **timed_lowering(flow, built, **options)}


def timed_lowering(flow: str, built: Subject, **options: Any) -> dict[str, Any]:
    """Time model -> .pte of ``built`` through ``flow``, with the peak RSS reached meanwhile."""
    import gc

    from qnn_migrate_tests.qnn_htp.flows import FLOWS
    from qnn_migrate_tests.qnn_htp.lowering import compiler_specs, describe

    specs = compiler_specs(built.quantized)
    gc.collect()
    before = _status_kib("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS (Linux >= 4.0)
    start = time.perf_counter()
    edge = FLOWS[flow](built.model, built.inputs, specs, **options)
    pte = edge.to_executorch().buffer
    seconds = time.perf_counter() - start
    peak = _status_kib("VmHWM")
    delegates, _ = describe(edge)
    return {
        "flow": flow,
        "seconds": seconds,
        "rss_before_kib": before,
        "peak_rss_kib": peak,
        "pte_bytes": len(pte),
        "delegates": sum(delegates.values()),
    }
