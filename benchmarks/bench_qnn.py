"""Wall time and peak memory of a whole lowering on real QNN HTP: the deprecated wrapper against the migrated flow.

    python benchmarks/bench_qnn.py [--subjects bench,bench_8a8w] [--flows deprecated,migrated]
                                   [--blocks 24] [--channels 512] [--repeat 3] [--json FILE]

Timed: model -> ``.pte`` (``flows.FLOWS[name](model, inputs, specs)`` then ``to_executorch``),
QNN HTP compile for SM8650 included, with the real QNN 2.51 host libraries that the real-QNN
test tier lays out (tests/qnn_htp/sdk.py). Not timed: building (and, for ``bench_8a8w``,
quantizing) the model. Each measurement runs in a fresh process (a fork of the tier's clean
fork server, tests/qnn_htp/fresh.py); flows alternate, ``--repeat`` runs each. Peak memory is
the child's peak RSS (``VmHWM``, reset right before the timed part), so both flows are charged
for the model they start from alike.

Subjects: ``bench`` is benchmarks/bench_passes.py's model (``--blocks`` residual blocks of
conv1d + layer norm + linear, ``--channels`` wide) in fp16; ``bench_8a8w`` is that model
quantized 8a8w. A flow is any name in tests/qnn_htp/flows.py's FLOWS, so a third flow is one
more entry there and one more name here.

Targets (each flow against the first, by median): time <= 1.0x, peak RSS <= 1.1x. Exit status
1 if one is missed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))
TIME_TARGET = 1.0
MEMORY_TARGET = 1.1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", default="bench,bench_8a8w")
    parser.add_argument("--flows", default="deprecated,migrated")
    parser.add_argument("--blocks", type=int, default=24)
    parser.add_argument("--channels", type=int, default=512)
    parser.add_argument(
        "--quant-blocks", type=int, default=None, help="blocks of bench_8a8w (default --blocks)"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--linear-to-conv2d", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    from qnn_migrate_tests.qnn_htp.bench_jobs import measure
    from qnn_migrate_tests.qnn_htp.fresh import fresh_runner
    from qnn_migrate_tests.qnn_htp.sdk import ensure_sdk

    runner = fresh_runner(ensure_sdk())
    flows = args.flows.split(",")
    runs: list[dict[str, Any]] = []
    for subject in args.subjects.split(","):
        blocks = (
            args.quant_blocks if subject.endswith("8a8w") and args.quant_blocks else args.blocks
        )
        for r in range(args.repeat):
            order = flows if r % 2 == 0 else flows[::-1]  # alternate, so drift hits both
            for flow in order:
                run = runner.run(
                    measure, flow, subject, blocks, args.channels, args.linear_to_conv2d
                )
                run.update(blocks=blocks, channels=args.channels, repeat=r)
                runs.append(run)
                print(json.dumps(run), file=sys.stderr, flush=True)

    ok = True
    print(
        "| subject | flow | runs | median time (s) | time ratio | median peak RSS (MiB) | RSS ratio | delegates |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for subject in args.subjects.split(","):
        mine = [r for r in runs if r["subject"] == subject]
        base_t = statistics.median(r["seconds"] for r in mine if r["flow"] == flows[0])
        base_m = statistics.median(r["peak_rss_kib"] for r in mine if r["flow"] == flows[0])
        for flow in flows:
            these = [r for r in mine if r["flow"] == flow]
            t = statistics.median(r["seconds"] for r in these)
            m = statistics.median(r["peak_rss_kib"] for r in these)
            tr, mr = t / base_t, m / base_m
            if flow != flows[0]:
                ok &= tr <= TIME_TARGET and mr <= MEMORY_TARGET
            print(
                f"| {subject} ({these[0]['blocks']}x{these[0]['channels']}) | {flow} | {len(these)} "
                f"| {t:.2f} | {tr:.3f} | {m / 1024:.0f} | {mr:.3f} | {these[0]['delegates']} |"
            )
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))
    print(
        f"\ntargets: time <= {TIME_TARGET}x, peak RSS <= {MEMORY_TARGET}x: {'met' if ok else 'MISSED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
