"""ExecuTorch's own QNN test harness on real QNN (x86-64, HTP simulator), as shipped and as rewritten.

:func:`prepare` copies the executorch wheel's harness modules that call the deprecated wrapper
(``backends/qualcomm/tests/test_qnn_delegate.py``, ``tests/utils.py``, ``export_utils.py``)
into one folder per flow of :data:`FLOWS`, runs ``qnn-migrate rewrite`` on each rewritten
copy (``rewritten/``: the default canonical ``torch.export.export`` flow;
``rewritten-qnn-export/``: ``--flow qnn-export``), and lays out a build folder whose ``qnn_executor_runner`` is
tests/doubles/qnn_executor_runner_double.py. :func:`run` runs test ids through one flow in a
new process (tests/qnn_htp/harness_main.py) with ``--enable_x86_64`` and returns its record.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qnn_migrate_tests.qnn_htp.sdk import QnnSdk

TESTS = Path(__file__).resolve().parent.parent
DOUBLES = TESTS / "doubles"
HARNESS_MODULES = {
    "test_qnn_delegate.py": "backends/qualcomm/tests/test_qnn_delegate.py",
    "utils.py": "backends/qualcomm/tests/utils.py",
    "export_utils.py": "backends/qualcomm/export_utils.py",
}
RUNNER = "examples/qualcomm/executor_runner/qnn_executor_runner"
# Flow -> the ``qnn-migrate rewrite`` options its copies are made with (None: left as shipped).
REWRITES: dict[str, tuple[str, ...] | None] = {
    "original": None,
    "rewritten": ("--flow", "canonical"),
    "rewritten-qnn-export": ("--flow", "qnn-export"),
}
FLOWS = tuple(REWRITES)


@dataclass(frozen=True)
class HarnessCopies:
    """The prepared folder: original and rewritten copies, the build folder, the rewrite's report."""

    root: Path
    rewrite_exit: int
    rewrite_report: str

    def copies(self, flow: str) -> Path:
        return self.root / flow

    @property
    def build_folder(self) -> Path:
        return self.root / "build-x86"


def _executorch_root() -> Path:
    import executorch

    return Path(next(iter(executorch.__path__)))


def prepare(root: Path) -> HarnessCopies:
    source = _executorch_root()
    exits, reports = [], []
    for flow, options in REWRITES.items():
        (root / flow).mkdir(parents=True, exist_ok=True)
        for name, relative in HARNESS_MODULES.items():
            shutil.copyfile(source / relative, root / flow / name)
        if options is None:
            continue
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "qnn_migrate",
                "rewrite",
                "--no-cache",
                *options,
                str(root / flow),
            ],
            capture_output=True,
            text=True,
        )
        exits.append(proc.returncode)
        reports.append(f"[{flow}] {proc.stdout}{proc.stderr}")
    runner = root / "build-x86" / RUNNER
    runner.parent.mkdir(parents=True, exist_ok=True)
    runner.write_text(
        "#!/bin/sh\n# QnnExecutorRunnerDouble: stands in for the native x86 qnn_executor_runner.\n"
        f'exec "{sys.executable}" "{DOUBLES / "qnn_executor_runner_double.py"}" "$@"\n'
    )
    runner.chmod(0o755)
    (root / "build-x86" / "lib").mkdir(exist_ok=True)
    return HarnessCopies(root, max(exits), "\n".join(reports))


def run(
    copies: HarnessCopies,
    flow: str,
    test_ids: list[str],
    sdk: QnnSdk,
    *,
    seed: int | None = None,
    timeout_s: float = 1800.0,
) -> dict[str, Any]:
    """Run ``test_ids`` through ``flow``'s copies in a new process; its record (see harness_main)."""
    results = copies.root / f"results-{flow}.json"
    results.unlink(missing_ok=True)
    artifacts = copies.root / f"artifacts-{flow}"
    artifacts.mkdir(exist_ok=True)
    env = {
        **os.environ,
        **sdk.environment(),
        "PYTHONPATH": os.pathsep.join(
            [
                str(TESTS / "support"),
                str(DOUBLES / "import_standins"),
                os.environ.get("PYTHONPATH", ""),
            ]
        ).rstrip(os.pathsep),
    }
    env.pop("QNN_EXECUTOR_RUNNER", None)  # the build folder's runner, not one from outside
    command = [
        sys.executable,
        str(TESTS / "qnn_htp" / "harness_main.py"),
        "--copies",
        str(copies.copies(flow)),
        "--results",
        str(results),
        *(["--rewritten"] if REWRITES[flow] is not None else []),
        "--",
        *test_ids,
        "--soc_model",
        "SM8650",
        "--backend",
        "htp",
        "--build_folder",
        str(copies.build_folder),
        "--artifact_dir",
        str(artifacts),
        "--enable_x86_64",
        *(["--seed", str(seed)] if seed is not None else []),
    ]
    proc = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=copies.root, timeout=timeout_s
    )
    if not results.exists():
        raise RuntimeError(
            f"the {flow} harness wrote no results (exit {proc.returncode}):\n{proc.stderr[-6000:]}"
        )
    record: dict[str, Any] = json.loads(results.read_text())
    record["exit"] = proc.returncode
    record["log"] = proc.stderr[-20000:]
    return record
