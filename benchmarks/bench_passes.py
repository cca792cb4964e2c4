"""Speed and memory of the qnn_passes pipeline against ExecuTorch's upstream QNN flow, side by side.

    python benchmarks/bench_passes.py [--blocks 24] [--channels 512] [--repeat 5]
                                      [--convert-linear-to-conv2d] [--canonical]

The model is ``--blocks`` residual blocks of conv1d + layer norm + linear (24 x 512 channels:
25 M parameters, 100 MB of fp32 weights). Each measurement runs in a fresh Python process, so
both flows pay the same one-time costs; the flows alternate, ``--repeat`` times each.

Both flows start from the same ``torch.export.export(..., strict=True)`` program (not timed:
it is the user's capture, identical in both, and qnn_export runs exactly that call). Timed:

* upstream: ``QnnHtpPassManager().transform_for_export_pipeline`` -> ``get_to_edge_transform_passes``
  in ``to_edge_transform_and_lower`` (what the deprecated wrapper runs for HTP specs);
* qnn_passes: ``run_export_passes`` (the export stage of ``qnn_export``) ->
  ``qnn_transform_passes`` in ``to_edge_transform_and_lower``.

Neither uses a partitioner (there is no QNN SDK to partition with); both keep ``aten.linear``
whole, as ``QnnPartitioner.ops_to_not_decompose`` asks (the only op of its list in this model),
through ``EdgeCompileConfig.preserve_ops``, so the passes see the graph they see when lowering
to QNN (FixedLinearKeepDim, ConvertLinearToConv2d act on linears). Peak memory growth is the
process's peak resident set during the timed part (``VmHWM``, reset just before it) minus its
resident set right before, compared with the model's weight bytes. After the timed part, each
program is serialized to a .pte to compare sizes and constant bytes.

With ``--canonical`` the capture is timed too, and the two flows are the ones a user writes:

* wrapper: ``torch.export.export(..., strict=True)`` -> the export-stage passes ->
  ``to_edge_transform_and_lower`` with ExecuTorch's to-edge passes (the deprecated wrapper's
  work, without its partitioner);
* canonical: ``torch.export.export(..., strict=True)`` -> ``to_edge_transform_and_lower`` with
  ``qnn_transform_passes`` on the plain program (the export-stage passes at the to-edge stage).

Targets: wall time <= 1.0x upstream's (median of the runs); peak growth <= 1.2x weight bytes
(``--canonical``: <= 1.1x the wrapper's peak growth). Exit status 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TIME_TARGET = 1.0
MEMORY_TARGET = 1.2
CANONICAL_MEMORY_TARGET = 1.1  # peak growth of the canonical flow / the wrapper's
PAIRS = {False: ("upstream", "qnn_passes"), True: ("wrapper", "canonical")}


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak_rss() -> None:
    # Writing 5 to clear_refs resets VmHWM (the peak RSS) to the current RSS (Linux >= 4.0).
    Path("/proc/self/clear_refs").write_text("5")


def _model(blocks: int, channels: int) -> Any:
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv1d(channels, channels, 3, padding=1)
            self.norm = nn.LayerNorm(channels)
            self.fc = nn.Linear(channels, channels)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.conv(x).transpose(1, 2)
            return x + self.fc(torch.relu(self.norm(y))).transpose(1, 2)

    torch.manual_seed(0)
    return nn.Sequential(*[Block() for _ in range(blocks)]).eval(), (torch.randn(1, channels, 64),)


def child(flow: str, blocks: int, channels: int, linear_to_conv: bool) -> dict[str, Any]:
    """One flow, measured in this process."""
    os.environ.setdefault("QNN_SDK_ROOT", "")
    import logging

    logging.disable(logging.WARNING)
    import dataclasses

    import torch
    from executorch.backends.qualcomm._passes.qnn_pass_manager import get_qnn_pass_manager_cls
    from executorch.backends.qualcomm.serialization.qc_schema import (
        QcomChipset,
        QnnExecuTorchBackendType,
    )
    from executorch.backends.qualcomm.utils.utils import (
        generate_htp_compiler_spec,
        generate_qnn_executorch_compiler_spec,
        qnn_edge_config,
    )
    from executorch.exir import to_edge_transform_and_lower

    from qnn_passes import qnn_compile_config, qnn_transform_passes
    from qnn_passes.api import run_export_passes

    specs = generate_qnn_executorch_compiler_spec(
        soc_model=QcomChipset.SM8650, backend_options=generate_htp_compiler_spec(use_fp16=True)
    )
    keep = [torch.ops.aten.linear.default]
    model, inputs = _model(blocks, channels)
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())

    if flow in PAIRS[False]:
        program = torch.export.export(model, inputs, strict=True)
    # Start every flow from a collected heap, so leftovers of the capture are not timed.
    gc.collect()
    _reset_peak_rss()
    rss_before = _status_kib("VmRSS")
    start = time.perf_counter()
    if flow in PAIRS[True]:
        # Export included: the user's capture is part of both flows.
        program = torch.export.export(model, inputs, strict=True)
    if flow in ("upstream", "wrapper"):
        manager = get_qnn_pass_manager_cls(QnnExecuTorchBackendType.kHtpBackend)()
        program = manager.transform_for_export_pipeline(program)
        passes = manager.get_to_edge_transform_passes(
            program, compiler_specs=specs, convert_linear_to_conv2d=linear_to_conv
        )
        edge = to_edge_transform_and_lower(
            program,
            transform_passes=passes,
            compile_config=dataclasses.replace(qnn_edge_config(), preserve_ops=keep),
        )
    else:
        if flow == "qnn_passes":
            program = run_export_passes(program)
        edge = to_edge_transform_and_lower(
            program,
            transform_passes=qnn_transform_passes(
                program, specs, convert_linear_to_conv2d=linear_to_conv
            ),
            compile_config=dataclasses.replace(qnn_compile_config(), preserve_ops=keep),
        )
    seconds = time.perf_counter() - start
    peak = _status_kib("VmHWM")

    lowered = edge.exported_program()
    constant_bytes = 0
    for spec in lowered.graph_signature.input_specs:
        value = lowered.state_dict.get(spec.target, lowered.constants.get(spec.target))
        if isinstance(value, torch.Tensor):
            constant_bytes += value.numel() * value.element_size()
    pte = edge.to_executorch().buffer
    return {
        "flow": flow,
        "seconds": seconds,
        "growth_bytes": (peak - rss_before) * 1024,
        "weight_bytes": weight_bytes,
        "constant_bytes": constant_bytes,
        "inputs": len(lowered.graph_signature.input_specs),
        "pte_bytes": len(pte),
    }


def _run_child(flow: str, args: argparse.Namespace) -> dict[str, Any]:
    command = [
        sys.executable,
        __file__,
        "--child",
        flow,
        "--blocks",
        str(args.blocks),
        "--channels",
        str(args.channels),
    ]
    if args.convert_linear_to_conv2d:
        command.append("--convert-linear-to-conv2d")
    if args.canonical:
        command.append("--canonical")
    env = {**os.environ, "QNN_SDK_ROOT": os.environ.get("QNN_SDK_ROOT", "")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    out = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{flow} run failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _mb(n: float) -> str:
    return f"{n / 1e6:8.1f} MB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=24)
    parser.add_argument("--channels", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--convert-linear-to-conv2d", action="store_true")
    parser.add_argument(
        "--canonical",
        action="store_true",
        help="time the wrapper's work against the canonical flow, torch.export included",
    )
    parser.add_argument("--child", choices=[*PAIRS[False], *PAIRS[True]], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(
            json.dumps(child(args.child, args.blocks, args.channels, args.convert_linear_to_conv2d))
        )
        return 0

    first, second = PAIRS[args.canonical]
    runs: dict[str, list[dict[str, Any]]] = {first: [], second: []}
    for i in range(args.repeat):
        order = [first, second] if i % 2 == 0 else [second, first]
        for flow in order:
            result = _run_child(flow, args)
            runs[flow].append(result)
            print(
                f"  run {i + 1}/{args.repeat} {flow:10s} {result['seconds']:7.2f} s, "
                f"peak growth {_mb(result['growth_bytes'])}",
                flush=True,
            )

    up, ours = runs[first], runs[second]
    weight = up[0]["weight_bytes"]
    t_up = statistics.median(r["seconds"] for r in up)
    t_ours = statistics.median(r["seconds"] for r in ours)
    g_up = max(r["growth_bytes"] for r in up)
    g_ours = max(r["growth_bytes"] for r in ours)
    time_ratio = t_ours / t_up
    memory_ratio = g_ours / (g_up if args.canonical else weight)
    memory_target = CANONICAL_MEMORY_TARGET if args.canonical else MEMORY_TARGET
    print()
    print(
        f"model: {args.blocks} blocks x {args.channels} channels, "
        f"{weight / 4 / 1e6:.1f} M parameters, weights {_mb(weight).strip()}"
        + (", convert_linear_to_conv2d" if args.convert_linear_to_conv2d else "")
    )
    print(f"{'':24s}{first:>14s}{second:>14s}")
    print(f"{'wall time (median)':24s}{t_up:12.2f} s{t_ours:12.2f} s")
    spread = {
        k: (min(r["seconds"] for r in v), max(r["seconds"] for r in v)) for k, v in runs.items()
    }
    print(
        f"{'wall time (min-max)':24s}"
        + "".join(f"{f'{lo:.2f}-{hi:.2f} s':>14s}" for lo, hi in spread.values())
    )
    print(f"{'peak memory growth':24s}{_mb(g_up):>14s}{_mb(g_ours):>14s}")
    print(f"{'program inputs':24s}{up[0]['inputs']:14d}{ours[0]['inputs']:14d}")
    print(
        f"{'constant bytes':24s}{_mb(up[0]['constant_bytes']):>14s}{_mb(ours[0]['constant_bytes']):>14s}"
    )
    print(f"{'.pte size':24s}{_mb(up[0]['pte_bytes']):>14s}{_mb(ours[0]['pte_bytes']):>14s}")
    print()
    time_ok = time_ratio <= TIME_TARGET
    memory_ok = memory_ratio <= memory_target
    print(
        f"wall time ratio {second}/{first}: {time_ratio:.3f} "
        f"(target <= {TIME_TARGET}) {'ok' if time_ok else 'MISSED'}"
    )
    against = f"{first}'s" if args.canonical else "weight bytes"
    print(
        f"peak memory growth / {against}: {memory_ratio:.3f} "
        f"(target <= {memory_target}) {'ok' if memory_ok else 'MISSED'}"
        f"   [{first}: {g_up / weight:.3f}x weights]"
    )
    return 0 if time_ok and memory_ok else 1


if __name__ == "__main__":
    sys.exit(main())
