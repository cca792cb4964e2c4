"""StubCorruptingRunner: runs QnnExecutorRunnerDouble, then adds 1.0 to every float32 output.

A deliberately broken runner for the test that a real numerical mismatch in ExecuTorch's
harness ends FAIL with the harness's own message: the QNN compile and the HTP simulator
are real, the outputs the harness compares are made wrong after the fact.
"""

from __future__ import annotations

import array
import subprocess
import sys
from pathlib import Path

DOUBLE = Path(__file__).resolve().parents[2] / "doubles" / "qnn_executor_runner_double.py"


def main() -> int:
    args = sys.argv[1:]
    code = subprocess.call([sys.executable, str(DOUBLE), *args])
    if code != 0 or "--output_folder_path" not in args:
        return code
    folder = Path(args[args.index("--output_folder_path") + 1])
    for raw in sorted(folder.glob("output_*.raw")):
        values = array.array("f")
        values.frombytes(raw.read_bytes()[: len(raw.read_bytes()) // 4 * 4])
        raw.write_bytes(array.array("f", (v + 1.0 for v in values)).tobytes())
    return 0


if __name__ == "__main__":
    sys.exit(main())
