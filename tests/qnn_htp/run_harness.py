"""Run the seed's two matrices (bot/matrices.toml, 27 tests) of ExecuTorch's QNN harness through both flows.

    python tests/qnn_htp/run_harness.py [--repeat N] [--ids ID,...] [--folder DIR] [--json FILE]

Each repeat prepares nothing new: the harness copies (original and ``qnn-migrate rewrite``
output) are made once in ``--folder`` (a temporary folder by default); then per repeat the
original and the rewritten harness run side by side, each in its own process with
``--enable_x86_64`` on the real HTP simulator (tests/qnn_htp/harness.py). Prints a markdown
table: per test, the status in each flow per repeat, subtests, and how often it failed.
Exit status 1 if a test's outcomes differ between the flows in some repeat.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from qnn_htp import harness
from qnn_htp.sdk import ensure_sdk
from qnn_htp.test_harness import seed_matrix_ids


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--ids", default="")
    parser.add_argument("--folder", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    ids = args.ids.split(",") if args.ids else seed_matrix_ids()
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
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))

    differ = False
    print("| test | original | rewritten | subtests | failed (original / rewritten) |")
    print("|---|---|---|---|---|")
    for test in ids:
        cells = {}
        fails = {}
        for flow in harness.FLOWS:
            statuses = [run[flow]["tests"].get(test, {}).get("status", "not run") for run in runs]
            cells[flow] = " ".join(statuses)
            fails[flow] = sum(s != "ok" for s in statuses)
        differ |= any(
            run["original"]["tests"].get(test, {}).get("status")
            != run["rewritten"]["tests"].get(test, {}).get("status")
            for run in runs
        )
        subtests = runs[0]["original"]["tests"].get(test, {}).get("subtests", 0)
        print(
            f"| {test} | {cells['original']} | {cells['rewritten']} | {subtests} "
            f"| {fails['original']}/{len(runs)} / {fails['rewritten']}/{len(runs)} |"
        )
    for run in runs:
        print(
            f"\nrepeat {run['repeat']}: {run['seconds']} s; lowerings: original "
            f"{run['original']['calls']}, rewritten {run['rewritten']['calls']}"
        )
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
