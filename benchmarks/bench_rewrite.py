"""Benchmark ``qnn-migrate rewrite --check`` on the installed ExecuTorch package.

Measured side by side, in one run, on the package's Python files (about 4,100, some two dozen
of which mention the old name):

1. the floor: a Python process that reads every file and searches it for the name;
2. cold: ``qnn-migrate rewrite --check`` on the same tree with an empty result cache (a new
   ``--cache-dir`` each time), so every file that mentions the name is parsed, and the
   cache entries written;
   warm: the same command a second time with that cache, nothing changed: no file parsed,
   libcst never imported (best of ``--repeat`` runs each, interleaved);
3. ``python -m libcst.tool codemod`` running the same rule class on a copy of the tree
   (it writes in place), once: it parses every file.

Targets (issue 18): warm within 1.5x of (1); cold within 8x of (1); (3) at least 100x
slower than cold. The script also rewrites a second copy with qnn-migrate
and checks that both tools produced the same files. What bounds a run from below is printed
too: starting Python and importing the command line (warm), and libcst and the engine too
(cold), which a run pays before it reads a file.

    .venv/bin/python benchmarks/bench_rewrite.py [--repeat 5] [--jobs N] [--skip-libcst]
"""

from __future__ import annotations

import argparse
import filecmp
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

NAME = "to_edge_transform_and_lower_to_qnn"
RULE = "qnn_migrate.codemods.rules.lower_to_qnn.RewriteLowerToQnn"
SEARCH = f"""
import os, sys
found = 0
for directory, _, files in os.walk(sys.argv[1]):
    for name in files:
        if name.endswith(".py"):
            with open(os.path.join(directory, name), "rb") as handle:
                found += b"{NAME}" in handle.read()
print(found)
"""
TARGET_WARM_VS_SEARCH = 1.5
TARGET_COLD_VS_SEARCH = 8.0
TARGET_VS_LIBCST = 100.0


def executorch_root() -> Path:
    spec = importlib.util.find_spec("executorch")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        sys.exit("executorch is not installed here; install the [passes] extra first")
    return Path(next(iter(spec.submodule_search_locations)))


# What users have: Python writes the bytecode of imported modules, so a second start does
# not compile them again (this machine's environment may say otherwise; measured without).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


class Times(NamedTuple):
    wall: float
    cpu: float  # user + system of the command and every process it waited for


def timed(command: list[str], *, cwd: Path | None = None, ok: tuple[int, ...] = (0,)) -> Times:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=ENV)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in ok:
        sys.exit(f"{' '.join(command[:6])} ... exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return Times(elapsed, cpu)


def best(runs: list[Times]) -> Times:
    return min(runs, key=lambda r: r.wall)


def copy_python_files(source: Path, destination: Path) -> int:
    count = 0
    for path in source.rglob("*.py"):
        target = destination / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
        count += 1
    return count


def differing(left: Path, right: Path) -> list[str]:
    different = []
    for path in left.rglob("*.py"):
        relative = path.relative_to(left)
        if not filecmp.cmp(path, right / relative, shallow=False):
            different.append(str(relative))
    return different


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of (1) and (2); best counts")
    parser.add_argument("--jobs", type=int, default=0, help="processes for both tools (0: CPUs)")
    parser.add_argument("--skip-libcst", action="store_true", help="skip (3), which takes minutes")
    args = parser.parse_args()
    jobs = args.jobs or os.cpu_count() or 1

    root = executorch_root()
    files = list(root.rglob("*.py"))
    mentioning = sum(NAME.encode() in p.read_bytes() for p in files)
    python = sys.executable
    print(f"tree: {root}")
    print(f"      {len(files)} Python files, {mentioning} mention {NAME}; {jobs} processes\n")

    ours_command = [python, "-m", "qnn_migrate", "rewrite", "--check", "-qq", "--jobs", str(jobs)]
    start_command = [python, "-c", "import qnn_migrate.cli, qnn_migrate.codemods.cli"]
    start_cold_command = [
        python,
        "-c",
        "import qnn_migrate.codemods.cli, qnn_migrate.codemods.engine",
    ]
    search: list[Times] = []
    cold: list[Times] = []
    warm: list[Times] = []
    start: list[Times] = []
    start_cold: list[Times] = []
    with tempfile.TemporaryDirectory(prefix="bench-rewrite-cache-") as caches:
        # Once untimed: the bytecode of every module a run imports is written, as it is on
        # a user's machine after the first run (or by pip at install time).
        timed([*ours_command, "--cache-dir", str(Path(caches, "warm-up")), str(root)], ok=(0, 1))
        for i in range(args.repeat):  # interleaved, so all see the same (warm) file cache
            cache = ["--cache-dir", str(Path(caches, str(i)))]
            search.append(timed([python, "-c", SEARCH, str(root)]))
            cold.append(timed([*ours_command, *cache, str(root)], ok=(0, 1)))
            warm.append(timed([*ours_command, *cache, str(root)], ok=(0, 1)))
            start.append(timed(start_command))
            start_cold.append(timed(start_cold_command))
    floor, check, again = best(search), best(cold), best(warm)
    spread = f"best of {args.repeat}, median"
    print("                                    wall (best, median)   processor time")
    for label, runs, chosen in (
        ("(1) read + search every file   ", search, floor),
        ("(2) rewrite --check, cold cache", cold, check),
        ("(2) rewrite --check, warm cache", warm, again),
    ):
        median = statistics.median(r.wall for r in runs)
        print(f"{label}  {chosen.wall:6.2f} s  {median:6.2f} s    {chosen.cpu:6.2f} s")
    print(f"    ({spread}; processor time of the best run, its worker processes included)")
    ratio = check.wall / floor.wall
    verdict = "met" if ratio <= TARGET_COLD_VS_SEARCH else "MISSED"
    print(f"    cold = {ratio:.1f}x (1)   target <= {TARGET_COLD_VS_SEARCH:.0f}x: {verdict}")
    print(
        "    of which: start Python, import the CLI, libcst and the engine "
        f"{best(start_cold).wall:.2f} s"
    )
    ratio = again.wall / floor.wall
    verdict = "met" if ratio <= TARGET_WARM_VS_SEARCH else "MISSED"
    print(f"    warm/(1) = {ratio:.2f}x   target <= {TARGET_WARM_VS_SEARCH:.1f}x: {verdict}")
    print(f"    of which: start Python and import the CLI (no libcst) {best(start).wall:.2f} s")
    if args.skip_libcst:
        return 0

    with tempfile.TemporaryDirectory(prefix="bench-rewrite-") as scratch:
        # Both copies keep the package's name, so both tools see executorch/... paths.
        by_libcst = Path(scratch, "libcst", root.name)
        by_us = Path(scratch, "qnn-migrate", root.name)
        copy_python_files(root, by_libcst)
        copy_python_files(root, by_us)
        libcst_command = [
            python, "-m", "libcst.tool", "codemod", "-x", RULE, "--no-format",
            "--hide-progress", "--include-generated", "-j", str(jobs), str(by_libcst),
        ]  # fmt: skip
        libcst = timed(libcst_command, cwd=Path(scratch)).wall
        timed(
            [
                python,
                "-m",
                "qnn_migrate",
                "rewrite",
                "-qq",
                "--no-cache",
                "--jobs",
                str(jobs),
                str(by_us),
            ]
        )
        different = differing(by_libcst, by_us)
        changed = differing(by_us, root)
    speedup = libcst / check.wall
    print(f"(3) libcst.tool codemod, same rule {libcst:7.2f} s   (one run)")
    verdict = "met" if speedup >= TARGET_VS_LIBCST else "MISSED"
    print(f"    (3)/cold = {speedup:.1f}x   target >= {TARGET_VS_LIBCST:.0f}x: {verdict}")
    same = "yes" if not different else f"NO, {len(different)} differ: {different[:5]}"
    print(f"\nsame output from both tools: {same} ({len(changed)} files rewritten)")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
