"""Run the seed's two matrices (bot/matrices.toml, 27 tests) of ExecuTorch's QNN harness through both flows.

    python tests/qnn_htp/run_harness.py [--repeat N] [--ids ID,...] [--folder DIR] [--json FILE]

Each repeat prepares nothing new: the harness copies (the original and the ``qnn-migrate
rewrite`` output of each flow, see harness.FLOWS) are made once in ``--folder`` (a temporary
folder by default); then per repeat every flow runs, two side by side, each in its own process with
``--enable_x86_64`` on the real HTP simulator (tests/qnn_htp/harness.py). Prints a markdown
table: per test, the status in each flow per repeat, subtests, and how often it failed; then
each failure: which output elements missed the harness's check, by how many LSB.
Exit status 1 if a test's outcomes differ between the flows in some repeat.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "support"))

from qnn_migrate_tests.qnn_htp import harness
from qnn_migrate_tests.qnn_htp.real_harness.support import seed_tests
from qnn_migrate_tests.qnn_htp.sdk import ensure_sdk


def _tensor(detail: str, label: str) -> list[float] | None:
    """The values of the harness's ``ref_output:``/``model_output:`` tensor in a failure message."""
    match = re.search(label + r":\s*tensor\((\[.*?\])\)", detail, re.S)
    if match is None:
        return None
    return np.asarray(ast.literal_eval(match.group(1)), dtype=float).ravel().tolist()


def mismatch(detail: str) -> str:
    """Which elements failed the harness's check (atol 0.1, rtol 1) and by how many LSB.

    The LSB is the smallest gap between distinct reference values (a quantized output's scale).
    """
    ref, out = _tensor(detail, "ref_output"), _tensor(detail, "model_output")
    if ref is None or out is None or len(ref) != len(out):
        return detail.strip().splitlines()[0][:200] if detail.strip() else "no detail"
    levels = sorted(set(ref))
    lsb = min((b - a for a, b in itertools.pairwise(levels)), default=0.0)
    bad = [(r, o) for r, o in zip(ref, out, strict=True) if abs(o - r) > 0.1 + abs(r)]
    where = ", ".join(
        f"reference {r:g}, output {o:g}" + (f" ({abs(o - r) / lsb:.1f} LSB)" if lsb else "")
        for r, o in bad[:4]
    )
    return f"{len(bad)} of {len(ref)} elements off: {where}" + (f"; LSB {lsb:g}" if lsb else "")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--ids", default="")
    parser.add_argument("--folder", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    ids = args.ids.split(",") if args.ids else seed_tests()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="qnn-harness-"))
    sdk = ensure_sdk()
    copies = harness.prepare(folder)
    if copies.rewrite_exit != 0:
        print(copies.rewrite_report, file=sys.stderr)
        return 2
    runs: list[dict[str, Any]] = []
    for r in range(args.repeat):
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=2) as pool:
            records = list(
                pool.map(lambda flow: harness.run(copies, flow, ids, sdk), harness.FLOWS)
            )
        runs.append(
            {
                "repeat": r,
                "seconds": round(time.perf_counter() - start, 1),
                **{
                    flow: {"calls": rec["calls"], "tests": rec["tests"], "exit": rec["exit"]}
                    for flow, rec in zip(harness.FLOWS, records, strict=True)
                },
            }
        )
        print(f"repeat {r}: {runs[-1]['seconds']} s", file=sys.stderr, flush=True)
        if args.json:  # after every repeat, so a long run that is stopped keeps what it measured
            args.json.write_text(json.dumps(runs, indent=1))

    differ = False
    flows = harness.FLOWS
    print("| test | " + " | ".join(flows) + " | subtests | failed (" + " / ".join(flows) + ") |")
    print("|---|" + "---|" * (len(flows) + 2))
    for test in ids:
        statuses = {
            flow: [run[flow]["tests"].get(test, {}).get("status", "not run") for run in runs]
            for flow in flows
        }
        differ |= any(len({statuses[flow][r] for flow in flows}) > 1 for r in range(len(runs)))
        subtests = runs[0]["original"]["tests"].get(test, {}).get("subtests", 0)
        cells = " | ".join(" ".join(statuses[flow]) for flow in flows)
        fails = " / ".join(
            f"{sum(s != 'ok' for s in statuses[flow])}/{len(runs)}" for flow in flows
        )
        print(f"| {test} | {cells} | {subtests} | {fails} |")
    failures = [
        (run["repeat"], flow, test, record)
        for run in runs
        for flow in flows
        for test, record in run[flow]["tests"].items()
        if record["status"] not in ("ok", "skipped")
    ]
    if failures:
        print("\nfailures:")
    for repeat, flow, test, record in failures:
        print(
            f"- repeat {repeat}, {flow}, {test}: {record['status']}: {mismatch(record['detail'])}"
        )
    for run in runs:
        lowerings = ", ".join(
            f"{flow} {dict(sorted(run[flow]['calls'].items()))}" for flow in flows
        )
        print(f"\nrepeat {run['repeat']}: {run['seconds']} s; lowerings: {lowerings}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
