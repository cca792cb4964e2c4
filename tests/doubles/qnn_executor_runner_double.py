"""QnnExecutorRunnerDouble: a test double for ExecuTorch's native ``qnn_executor_runner`` on an x86-64 host.

ExecuTorch's QNN test harness run with ``--enable_x86_64`` executes
``<build_folder>/examples/qualcomm/executor_runner/qnn_executor_runner`` on the host. No x86
build of it exists here, so this script stands in with the same command line and file layout:

    --model_path P.pte --input_list_path L --output_folder_path O [--method_index N]
    [--input_shape_path S] [--output_shape_path S] [--performance_output_path F]

Each line of ``L`` is one inference: space-separated raw input files, relative to the working
folder. The method (the ``N``-th of the program) is run through ExecuTorch's portable runtime
pybindings, whose QnnBackend runs the delegates on the real HTP simulator (the QNN compile and
the simulator are real; only the runner is a double). Outputs are written as
``O/output_<line>_<n>.raw`` in the method's output dtype, as the native runner does. The ABI
bridge of the real-QNN tier (tests/qnn_htp/abi.py) is installed first when the loaded QNN
library needs it. ``tests/qnn_htp/harness.py`` lays it out as an executable in a build folder.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
# ExecuTorch's ScalarType codes (c10) of the dtypes a QNN program takes or returns.
SCALAR_TYPES = {
    0: "uint8",
    1: "int8",
    2: "int16",
    3: "int32",
    4: "int64",
    5: "float16",
    6: "float32",
    7: "float64",
    11: "bool",
    27: "uint16",
    28: "uint32",
}


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="qnn_executor_runner (QnnExecutorRunnerDouble)")
    parser.add_argument("--model_path", required=True)
    parser.add_argument("--input_list_path", required=True)
    parser.add_argument("--output_folder_path", required=True)
    parser.add_argument("--method_index", type=int, default=0)
    parser.add_argument("--input_shape_path")
    parser.add_argument("--output_shape_path")
    parser.add_argument("--performance_output_path")
    parser.add_argument("--dump_intermediate_outputs", action="store_true")
    args, unknown = parser.parse_known_args(argv)
    if args.dump_intermediate_outputs or unknown:
        parser.error(f"not supported by this double: {unknown or ['--dump_intermediate_outputs']}")
    return args


def main(argv: list[str]) -> int:
    args = _arguments(argv)
    import numpy as np
    import torch

    sys.path.insert(0, str(TESTS / "support"))
    from qnn_migrate_tests.qnn_htp.abi import install

    install(Path(os.environ["QNN_SDK_ROOT"]))
    # The extension itself, as portable_lib re-exports it: portable_lib first imports
    # executorch.exir (torchao and the whole export stack, ~6 s of CPU), which a runner that
    # only loads and runs a .pte never needs. torch must be imported first (done above).
    from executorch.extension.pybindings._C import _load_program

    program = _load_program(args.model_path)
    method_name = program.get_method_name(args.method_index)
    method = program.load_method(method_name)
    meta = method.method_meta()
    inputs_meta = [meta.input_tensor_meta(i) for i in range(meta.num_inputs())]
    lines = [line.split() for line in Path(args.input_list_path).read_text().splitlines()]
    lines = [files for files in lines if files]
    output = Path(args.output_folder_path)
    output.mkdir(parents=True, exist_ok=True)
    elapsed = 0.0
    for index, files in enumerate(lines):
        if len(files) != len(inputs_meta):
            print(
                f"line {index}: {len(files)} input files, method takes {len(inputs_meta)}",
                file=sys.stderr,
            )
            return 1
        inputs = []
        for name, info in zip(files, inputs_meta, strict=True):
            dtype = np.dtype(SCALAR_TYPES[info.dtype()])
            array = np.fromfile(name, dtype=dtype).reshape(tuple(info.sizes()))
            inputs.append(torch.from_numpy(array))
        start = time.perf_counter()
        outputs = method.call(inputs)
        elapsed += time.perf_counter() - start
        for n, tensor in enumerate(outputs):
            tensor.detach().contiguous().numpy().tofile(output / f"output_{index}_{n}.raw")
    if args.performance_output_path:
        # The native runner writes the average inference time in ms.
        average = 1000.0 * elapsed / max(len(lines), 1)
        Path(args.performance_output_path).write_text(f"{average}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
