"""Time and peak memory of lowering Hugging Face model code on real QNN HTP: the canonical flow against the wrapper, per model, with medians and spreads.

    python benchmarks/bench_real_clients.py [--subjects llama,bert-8a8w,...] [--repeat 5]
                                            [--flows deprecated,canonical] [--json FILE]
                                            [--from-json FILE]

The subjects are the real-clients tier's (tests/qnn_htp/hf_subjects.py: transformers
architectures from tiny configs, ``NAME`` in fp16 or ``NAME-PRECISION`` quantized; the default
is the set the tier lowers through both flows, ``SUBJECTS``). Timed: model -> ``.pte`` through
each flow of tests/qnn_htp/flows.py, the QNN HTP compile for SM8650 included (the real QNN 2.51
host libraries the tier lays out). Not timed: building and quantizing the model. Every run is
a fresh process (a fork of the tier's clean fork server), one at a time; within each repeat the
flows run back to back, in alternating order (the wrapper first in even repeats, the
canonical flow first in odd ones), and the subject order is the same every repeat. Peak memory
is the child's peak RSS (``VmHWM``, reset right before the timed part). A flow that fails on a
subject (the wrapper cannot lower wav2vec2, say) is reported as failing, with no ratio.

Printed per subject and flow: the median time, its spread (min-max, and the interquartile range
as a share of the median) and the median peak RSS; per subject the canonical flow's time as a
share of the wrapper's, as the median of the per-repeat ratios (each pair of runs back to back,
so slow drift of the machine cancels) with a 95 % bootstrap interval of that median (2,000
resamples, fixed seed). An interval that lies below 1.0 is a real gain, one above 1.0 a real
loss; one that straddles 1.0 is noise at this number of runs. Then the geometric mean over the
subjects. Targets (issue 31): on every subject both flows lower, the median ratio <= 1.0 and
peak RSS <= 1.0x. Exit status 1 if one is missed. The machine should be idle: under load the
spread grows and single-run ratios of 0.67-1.66 were seen.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))
TIME_TARGET = 1.0
MEMORY_TARGET = 1.0
BUILD = "qnn_migrate_tests.qnn_htp.hf_subjects:hf"
RESAMPLES = 2000


def _geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def _iqr_share(values: list[float]) -> float:
    """Interquartile range as a share of the median (0 for fewer than 4 values)."""
    if len(values) < 4:
        return 0.0
    q1, _, q3 = statistics.quantiles(values, n=4)
    return (q3 - q1) / statistics.median(values)


def median_interval(values: list[float], *, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the median of ``values`` (fixed seed: reproducible)."""
    rng = random.Random(31)
    medians = sorted(
        statistics.median(rng.choices(values, k=len(values))) for _ in range(RESAMPLES)
    )
    low = medians[int((1 - level) / 2 * RESAMPLES)]
    high = medians[int((1 + level) / 2 * RESAMPLES) - 1]
    return low, high


def paired_ratios(runs: list[dict[str, Any]], subject: str, base: str, flow: str) -> list[float]:
    """``flow``'s time over ``base``'s in each repeat where both lowered ``subject``."""
    by_repeat: dict[int, dict[str, float]] = {}
    for run in runs:
        if run["subject"] == subject and "seconds" in run:
            by_repeat.setdefault(run["repeat"], {})[run["flow"]] = run["seconds"]
    return [
        pair[flow] / pair[base]
        for _, pair in sorted(by_repeat.items())
        if {flow, base} <= set(pair)
    ]


def measure(subjects: list[str], flows: list[str], repeat: int) -> list[dict[str, Any]]:
    """Every (repeat, subject, flow) lowering in a fresh child, flows alternating per repeat."""
    from qnn_migrate_tests.qnn_htp.bench_jobs import measure_built
    from qnn_migrate_tests.qnn_htp.fresh import FreshProcessError, fresh_runner
    from qnn_migrate_tests.qnn_htp.sdk import ensure_sdk

    runner = fresh_runner(ensure_sdk())
    runs: list[dict[str, Any]] = []
    for r in range(repeat):
        for subject in subjects:
            order = flows if r % 2 == 0 else flows[::-1]  # alternate, so drift hits both
            for flow in order:
                try:
                    run = runner.run(measure_built, flow, BUILD, tuple(subject.split("-")))
                except FreshProcessError as err:
                    last = str(err).strip().splitlines()[-1]
                    run = {"subject": subject, "flow": flow, "error": last[:300]}
                run["repeat"] = r
                runs.append(run)
                print(json.dumps(run), file=sys.stderr, flush=True)
    return runs


def report(runs: list[dict[str, Any]], subjects: list[str], flows: list[str]) -> bool:
    """Print the tables; True if the targets are met."""
    base = flows[0]
    print(
        "| subject | flow | runs | median time (s) | min-max (s) | IQR / median "
        "| median peak RSS (MiB) | delegates |"
    )
    print("|---|---|---|---|---|---|---|---|")
    lowered: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for subject in subjects:
        for flow in flows:
            these = [x for x in runs if x["subject"] == subject and x["flow"] == flow]
            ok = [x for x in these if "seconds" in x]
            if len(ok) < len(these) or not ok:
                error = next((x["error"] for x in these if "error" in x), "no run")
                print(f"| {subject} | {flow} | {len(these)} | fails: {error[:120]} | | | | |")
                continue
            lowered[(subject, flow)] = ok
            seconds = [x["seconds"] for x in ok]
            rss = statistics.median(x["peak_rss_kib"] for x in ok) / 1024
            print(
                f"| {subject} | {flow} | {len(ok)} | {statistics.median(seconds):.2f} "
                f"| {min(seconds):.2f}-{max(seconds):.2f} | {_iqr_share(seconds):.1%} "
                f"| {rss:.0f} | {sorted({x['delegates'] for x in ok})} |"
            )

    met = True
    for flow in flows[1:]:
        print(
            f"\n{flow} against {base}, per subject both lower: median of the per-repeat time "
            "ratios, its 95 % bootstrap interval, and the ratio of median peak RSS"
        )
        print("| subject | time ratio | 95 % interval | verdict | RSS ratio |")
        print("|---|---|---|---|---|")
        time_ratios, rss_ratios = [], []
        for subject in subjects:
            if (subject, flow) not in lowered or (subject, base) not in lowered:
                continue
            ratios = paired_ratios(runs, subject, base, flow)
            ratio = statistics.median(ratios)
            low, high = median_interval(ratios)
            verdict = "faster" if high < 1.0 else "slower" if low > 1.0 else "within noise"
            rss = statistics.median(x["peak_rss_kib"] for x in lowered[(subject, flow)])
            rss_base = statistics.median(x["peak_rss_kib"] for x in lowered[(subject, base)])
            time_ratios.append(ratio)
            rss_ratios.append(rss / rss_base)
            met &= ratio <= TIME_TARGET and rss / rss_base <= MEMORY_TARGET
            print(
                f"| {subject} | {ratio:.3f} | {low:.3f}-{high:.3f} | {verdict} "
                f"| {rss / rss_base:.3f} |"
            )
        if time_ratios:
            print(
                f"\ngeometric mean over {len(time_ratios)} subjects: time {_geomean(time_ratios):.3f}x "
                f"(range {min(time_ratios):.3f}-{max(time_ratios):.3f}), peak RSS "
                f"{_geomean(rss_ratios):.3f}x"
            )
    print(
        f"targets, every subject both lower: median time ratio <= {TIME_TARGET}, peak RSS ratio "
        f"<= {MEMORY_TARGET}: {'met' if met else 'MISSED'}"
    )
    return met


def main(argv: list[str]) -> int:
    from qnn_migrate_tests.qnn_htp.hf_subjects import SUBJECTS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", default=",".join("-".join(s) for s in SUBJECTS))
    parser.add_argument("--flows", default="deprecated,canonical")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write every run here")
    parser.add_argument("--from-json", type=Path, help="report runs written by --json")
    args = parser.parse_args(argv)

    flows = args.flows.split(",")
    subjects = args.subjects.split(",")
    if args.from_json:
        runs = json.loads(args.from_json.read_text())
    else:
        runs = measure(subjects, flows, args.repeat)
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))
    return 0 if report(runs, subjects, flows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
