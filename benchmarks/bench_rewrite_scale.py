"""Benchmark ``qnn-migrate rewrite`` on one long generated file, next to libcst alone.

The file: ``--calls`` functions (default 2,000), each calling the old function once among
lines of plain code, about ``--megabytes`` MB in all (default 3). Measured side by side, in
one run, each in a fresh process (time, processor time and peak memory of that process):

1. the floor: libcst parsing the file and printing it back (``parse_module(text).code``),
   which any libcst-based rewrite pays;
2. ``qnn-migrate rewrite --check --no-cache -j1`` on the same file.

Both at a quarter of the size too, so the output shows how each grows with the file: linear
growth is a ratio near 4 between the full and the quarter file (time and memory). Processor
time is the figure to compare on a busy machine; wall time is printed too. The verdict: the
rewrite's memory grows linearly (at most :data:`LINEAR_AT_MOST` times for 4 times the file)
and its processor time grows no faster than libcst's own parse and print of the same files
(at most :data:`AS_LIBCST_GROWS` times libcst's growth): on a loaded machine libcst alone
grows faster than 4x (larger heaps, more cache misses), and no libcst-based tool can do
better than libcst.

    .venv/bin/python benchmarks/bench_rewrite_scale.py [--calls 2000] [--megabytes 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

OLD = "to_edge_transform_and_lower_to_qnn"
HEAD = f'''"""Generated for the benchmark: many lowerings in one module."""

import torch

from executorch.backends.qualcomm.utils.utils import (
    generate_qnn_executorch_compiler_spec,
    {OLD},
)

SOC = "SM8650"
'''
LIBCST = (
    "import sys, libcst\n"
    "text = open(sys.argv[1], encoding='utf-8').read()\n"
    "assert libcst.parse_module(text).code == text\n"
)
# Linear growth from a quarter to the whole file is 4x; allow for the fixed start-up cost
# on one side and noise on a shared machine on the other.
LINEAR_AT_MOST = 5.0
AS_LIBCST_GROWS = 1.25


def generate(calls: int, size: int) -> str:
    """A module of ``calls`` functions with one old call each, about ``size`` bytes."""
    per_call = size // calls
    parts = [HEAD]
    for i in range(calls):
        body = (
            f"\n\ndef lower_{i}(model, sample, backend_options):\n"
            f'    """Lower variant {i} of the model."""\n'
            "    specs = generate_qnn_executorch_compiler_spec(\n"
            "        soc_model=SOC, backend_options=backend_options\n"
            "    )\n"
            f"    edge = {OLD}(model, (sample,), specs)\n"
        )
        filler, j = [], 0
        while len(body) + sum(map(len, filler)) + 40 < per_call:
            filler.append(f"    value_{j} = torch.zeros({j % 7 + 1}, {j % 5 + 1}) * {j}\n")
            j += 1
        parts.append(body + "".join(filler) + "    return edge\n")
    return "".join(parts)


class Measure(NamedTuple):
    wall: float  # seconds
    cpu: float  # user + system seconds of the process
    peak: int  # peak resident memory, bytes


def measure(command: list[str], ok: tuple[int, ...] = (0,)) -> Measure:
    """Run ``command``; its wall time, processor time and peak memory (``wait4``: of that
    process alone, not of every child so far as ``RUSAGE_CHILDREN`` would give)."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    error = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in ok:
        sys.exit(f"{' '.join(command[:6])} ... exited {proc.returncode}:\n{error[-2000:]!r}")
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    return Measure(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * scale)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--megabytes", type=float, default=3.0)
    args = parser.parse_args()
    python = sys.executable
    ours = [python, "-m", "qnn_migrate", "rewrite", "--check", "--no-cache", "-qq", "-j1"]
    results: dict[tuple[str, str], Measure] = {}
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as scratch:
        for label, factor in (("quarter", 4), ("full", 1)):
            text = generate(args.calls // factor, int(args.megabytes * 1e6) // factor)
            path = Path(scratch, f"{label}.py")
            path.write_text(text, encoding="utf-8")
            sizes[label] = len(text.encode())
            print(
                f"{label:>7}: {sizes[label] / 1e6:.2f} MB, {text.count(OLD + '(')} calls",
                flush=True,
            )
            # libcst first, then ours: both see the file in the page cache.
            results[("libcst", label)] = measure([python, "-c", LIBCST, str(path)])
            results[("ours", label)] = measure([*ours, str(path)], ok=(1,))
    print()
    print(f"{'':44} {'wall':>8} {'cpu':>8} {'peak memory':>12}")
    names = {
        "libcst": "(1) libcst parse + print",
        "ours": "(2) qnn-migrate rewrite --check",
    }
    for tool in ("libcst", "ours"):
        for label in ("quarter", "full"):
            m = results[(tool, label)]
            print(
                f"{names[tool]:34} {label:>8}  {m.wall:7.1f}s {m.cpu:7.1f}s "
                f"{m.peak / 2**20:9.0f} MiB"
            )
    print()
    growth = {}
    for tool in ("libcst", "ours"):
        quarter, full = results[(tool, "quarter")], results[(tool, "full")]
        growth[tool] = (full.cpu / quarter.cpu, full.peak / quarter.peak)
        print(
            f"{names[tool]:34} full/quarter: cpu {growth[tool][0]:.1f}x, memory "
            f"{growth[tool][1]:.1f}x (file {sizes['full'] / sizes['quarter']:.1f}x)"
        )
    memory_linear = growth["ours"][1] <= LINEAR_AT_MOST
    cpu_as_libcst = growth["ours"][0] / growth["libcst"][0] <= AS_LIBCST_GROWS
    verdicts = [memory_linear, cpu_as_libcst]
    print(
        f"(2) memory grows linearly (<= {LINEAR_AT_MOST:.0f}x): "
        f"{'met' if memory_linear else 'MISSED'}; cpu grows as (1) does "
        f"({growth['ours'][0] / growth['libcst'][0]:.2f}x its growth, target <= "
        f"{AS_LIBCST_GROWS}x): {'met' if cpu_as_libcst else 'MISSED'}"
    )
    full_ours, full_libcst = results[("ours", "full")], results[("libcst", "full")]
    print(
        f"(2)/(1) on the full file: cpu {full_ours.cpu / full_libcst.cpu:.1f}x, "
        f"memory {full_ours.peak / full_libcst.peak:.1f}x"
    )
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
