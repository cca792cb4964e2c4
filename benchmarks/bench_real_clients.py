"""Time and peak memory of lowering Hugging Face model code on real QNN HTP: the canonical flow against the wrapper.

    python benchmarks/bench_real_clients.py [--subjects llama,bert-8a8w,...]
                                            [--flows deprecated,canonical] [--repeat 3] [--json FILE]

The subjects are the real-clients tier's (tests/qnn_htp/hf_subjects.py: transformers
architectures from tiny configs, ``NAME`` in fp16 or ``NAME-PRECISION`` quantized; the default
is the tier's whole set). Timed: model -> ``.pte`` through each flow of tests/qnn_htp/flows.py,
the QNN HTP compile for SM8650 included (the real QNN 2.51 host libraries the tier lays out).
Not timed: building and quantizing the model. Every run is a fresh process (a fork of the tier's
clean fork server), one at a time; flows alternate within each repeat and the subject order is
the same every repeat. Peak memory is the child's peak RSS (``VmHWM``, reset right before the
timed part).

Printed, side by side in one table: per subject and flow the median time and peak RSS and their
ratio to the first flow; then the geometric mean of the ratios over the set. Targets (issue
20), for the geometric means: time <= 0.9x, peak RSS <= 1.0x. Exit status 1 if one is missed.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
TIME_TARGET = 0.9
MEMORY_TARGET = 1.0
BUILD = "qnn_htp.hf_subjects:hf"


def _geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def main(argv: list[str]) -> int:
    from qnn_htp.hf_subjects import SUBJECTS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", default=",".join("-".join(s) for s in SUBJECTS))
    parser.add_argument("--flows", default="deprecated,canonical")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    from qnn_htp.bench_jobs import measure_built
    from qnn_htp.fresh import fresh_runner
    from qnn_htp.sdk import ensure_sdk

    runner = fresh_runner(ensure_sdk())
    flows = args.flows.split(",")
    subjects = args.subjects.split(",")
    runs: list[dict[str, Any]] = []
    for r in range(args.repeat):
        for subject in subjects:
            order = flows if r % 2 == 0 else flows[::-1]  # alternate, so drift hits both
            for flow in order:
                run = runner.run(measure_built, flow, BUILD, tuple(subject.split("-")))
                run["repeat"] = r
                runs.append(run)
                print(json.dumps(run), file=sys.stderr, flush=True)
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))

    print(
        "| subject | "
        + " | ".join(f"{f} time (s) | {f} peak RSS (MiB)" for f in flows)
        + " | "
        + " | ".join(f"{f} time ratio | {f} RSS ratio" for f in flows[1:])
        + " | delegates |"
    )
    print("|---" * (1 + 2 * len(flows) + 2 * (len(flows) - 1) + 1) + "|")
    ratios: dict[str, list[tuple[float, float]]] = {f: [] for f in flows[1:]}
    for subject in subjects:
        cells, medians = [], {}
        for flow in flows:
            these = [x for x in runs if x["subject"] == subject and x["flow"] == flow]
            t = statistics.median(x["seconds"] for x in these)
            m = statistics.median(x["peak_rss_kib"] for x in these) / 1024
            medians[flow] = (t, m)
            cells.append(
                f"{t:.2f} ({min(x['seconds'] for x in these):.2f}-"
                f"{max(x['seconds'] for x in these):.2f}) | {m:.0f}"
            )
        base_t, base_m = medians[flows[0]]
        for flow in flows[1:]:
            t, m = medians[flow]
            ratios[flow].append((t / base_t, m / base_m))
            cells.append(f"{t / base_t:.3f} | {m / base_m:.3f}")
        delegates = {x["delegates"] for x in runs if x["subject"] == subject}
        print(f"| {subject} | " + " | ".join(cells) + f" | {sorted(delegates)} |")

    ok = True
    print()
    for flow, pairs in ratios.items():
        t = _geomean([p[0] for p in pairs])
        m = _geomean([p[1] for p in pairs])
        ok &= t <= TIME_TARGET and m <= MEMORY_TARGET
        print(
            f"{flow} against {flows[0]}, geometric mean over {len(pairs)} subjects "
            f"({args.repeat} runs each): time {t:.3f}x, peak RSS {m:.3f}x "
            f"(time range {min(p[0] for p in pairs):.3f}-{max(p[0] for p in pairs):.3f}x)"
        )
    print(
        f"targets: time <= {TIME_TARGET}x, peak RSS <= {MEMORY_TARGET}x: {'met' if ok else 'MISSED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
