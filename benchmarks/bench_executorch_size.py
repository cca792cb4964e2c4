"""How much code ``--target executorch`` writes: lines added per rewritten call.

On ``examples/`` and on the installed ExecuTorch's own files that call the wrapper (its one
defining module left out), each file is rewritten in memory with ``--target executorch``;
a file's added lines are its output's lines minus its input's, summed over the files with a
rewritten call and divided by the calls rewritten. Nothing is written.

    .venv/bin/python benchmarks/bench_executorch_size.py
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from qnn_migrate.codemods.engine import rewrite_code

OLD = "to_edge_transform_and_lower_to_qnn"
ROOT = Path(__file__).resolve().parent.parent


def measure(files: list[Path]) -> tuple[int, int, int]:
    """(files rewritten, calls rewritten, lines added)."""
    rewritten = calls = added = 0
    for path in files:
        code = path.read_text("utf-8")
        if OLD not in code:
            continue
        result = rewrite_code(code, target="executorch", filename=str(path))
        if result.sites_rewritten:
            rewritten += 1
            calls += result.sites_rewritten
            added += len(result.code.splitlines()) - len(code.splitlines())
    return rewritten, calls, added


def main() -> None:
    spec = importlib.util.find_spec("executorch")  # namespace package: no __file__
    if spec is None or not spec.submodule_search_locations:
        sys.exit("executorch is not installed here; install the [passes] extra first")
    package = Path(next(iter(spec.submodule_search_locations)))
    corpora = {
        "examples/": sorted((ROOT / "examples").rglob("*.py")),
        "executorch 1.5.1": sorted(
            p
            for p in package.rglob("*.py")
            if p.relative_to(package).as_posix() != "backends/qualcomm/utils/utils.py"
        ),
    }
    for name, files in corpora.items():
        rewritten, calls, added = measure(files)
        per_call = added / calls if calls else 0.0
        print(
            f"{name}: {calls} calls in {rewritten} files, {added} lines added, {per_call:.1f} per call"
        )


if __name__ == "__main__":
    main()
