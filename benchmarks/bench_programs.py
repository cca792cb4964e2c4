"""The cost of program fingerprints: one shard of ExecuTorch's harness with and without ``--programs``.

    python benchmarks/bench_programs.py [--tests sample|seed|ID,ID...] [--repeat 2]
                                        [--compile-only] [--one-process] [--json FILE]

Runs one shard the way ``bot run-shard`` does on an x86-simulator host: ExecuTorch 1.5.1's
own ``backends/qualcomm/tests/test_qnn_delegate.py`` under the runner's ``junit_wrapper``
with ``--seed 1126`` and ``--fork-per-test`` (each test in its own child of the wrapper;
``--one-process`` runs them in one, as a host with ``fork_per_test = false``), the real QNN 2.51 compile (the libraries and ABI bridge of the
real-QNN tier, tests/qnn_htp) and, with ``--enable_x86_64``, the real HTP simulator behind
tests/doubles/qnn_executor_runner_double.py (the native runner's stand-in). Runs alternate,
with the recorder (``--programs``) and without, ``--repeat`` times each, each in a new
process. Reported per mode: the shard's wall and CPU time (the test process and its
children: the runner double), the median of the runs; with the recorder, also its own time
(``seconds`` in programs.json) and the artifact it adds (programs.json bytes).

Then the recorded runs are compared with each other as the PR report compares a run with
its baseline (``bot.programs.compare_all``): at one commit with the seed applied, every test
should be IDENTICAL.

``--tests``: ``sample`` (one test per class of the seed's matrices, 4 tests), ``seed`` (the
seed's 27 tests, about 8 min per run on an idle 2-core machine) or test ids. ``--compile-only``
lowers and fingerprints without running (the harness then errors in ``verify_output``,
an upstream bug, after the fingerprint is taken), so outputs are not fingerprinted.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))
from qnn_migrate_tests.qnn_htp.real_harness.support import (  # noqa: E402
    harness_env,
    seed_tests,
    wrapper_argv,
    x86_build,
)

SAMPLE = [
    "TestQNNFloatingPointOperator.test_qnn_backend_conv1d",
    "TestQNNQuantizedOperator.test_qnn_backend_linear_qat",
    "TestQNNFloatingPointModel.test_qnn_backend_conv1d_relu_log_softmax",
    "TestQNNQuantizedModel.test_qnn_backend_conv1d_relu_log_softmax",
]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(
    tests: list[str],
    out: Path,
    build: Path,
    env: dict[str, str],
    programs: bool,
    compile_only: bool,
    fork: bool,
) -> dict[str, Any]:
    out.mkdir(parents=True)
    argv = wrapper_argv(
        tests, out, build, programs=programs, fork_per_test=fork, compile_only=compile_only
    )
    cpu, wall = _children_cpu(), time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=out, capture_output=True, text=True, check=False)
    wall, cpu = time.perf_counter() - wall, _children_cpu() - cpu
    (out / "stderr.txt").write_text(proc.stderr)
    record: dict[str, Any] = {"programs": programs, "wall_s": wall, "cpu_s": cpu}
    if programs:
        path = out / "programs.json"
        doc = json.loads(path.read_text()) if path.exists() else {}
        record |= {"bytes": path.stat().st_size if path.exists() else 0}
        record |= {"recorder_s": doc.get("seconds"), "doc": doc}
    return record


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", default="sample")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--compile-only", action="store_true")
    parser.add_argument(
        "--one-process",
        action="store_true",
        help="run the shard's tests in one process (the host key fork_per_test = false)",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    tests = {"sample": SAMPLE, "seed": None}.get(args.tests) or args.tests.split(",")
    tests = tests if args.tests != "seed" else seed_tests()

    from qnn_migrate_tests.qnn_htp.sdk import ensure_sdk

    from qnn_migrate.bot.programs import ProgramVerdict, compare_all, parse_programs

    env = harness_env(ensure_sdk())
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-programs-") as tmp:
        root = Path(tmp)
        build = x86_build(root)
        for i in range(args.repeat):
            for programs in (True, False):
                name = f"{'with' if programs else 'without'}-{i + 1}"
                record = run_once(
                    tests,
                    root / name,
                    build,
                    env,
                    programs,
                    args.compile_only,
                    not args.one_process,
                )
                runs.append(record)
                print(
                    f"{name}: {record['wall_s']:.1f} s wall, {record['cpu_s']:.1f} s CPU"
                    + (
                        f", programs.json {record['bytes']:,} bytes, recorder "
                        f"{record['recorder_s']} s"
                        if programs
                        else ""
                    ),
                    flush=True,
                )
    recorded = [r for r in runs if r["programs"]]
    verdicts: dict[str, int] = {}
    if len(recorded) >= 2:
        first, second = (parse_programs(r["doc"], tests) for r in recorded[:2])
        for c in compare_all(first, second, tests):
            verdicts[c.verdict.value] = verdicts.get(c.verdict.value, 0) + 1
            if c.verdict is not ProgramVerdict.IDENTICAL:
                print(f"  {c.test_id}: {c.verdict.value} {c.note} {'; '.join(c.changes)[:300]}")
    summary: dict[str, Any] = {
        "tests": len(tests),
        "compile_only": args.compile_only,
        "fork_per_test": not args.one_process,
    }
    for mode in (True, False):
        chosen = [r for r in runs if r["programs"] is mode]
        key = "with" if mode else "without"
        summary[key] = {
            "wall_s": round(statistics.median(r["wall_s"] for r in chosen), 1),
            "cpu_s": round(statistics.median(r["cpu_s"] for r in chosen), 1),
        }
    summary["with"] |= {
        "programs_bytes": max(r["bytes"] for r in recorded),
        "recorder_s": max(float(r["recorder_s"] or 0) for r in recorded),
    }
    summary["second_run_vs_first"] = verdicts
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
