"""The host's ``python`` for the real-harness tests: installs the real-QNN tier's ABI bridge, then runs.

    python python_wrapper.py SCRIPT ARGS...      run SCRIPT as __main__ with ARGS
    python python_wrapper.py -c CODE ARGS...     run CODE, as ``python -c`` does

A runner host's ``python`` may be a wrapper (docs/runners.md); this is one. It imports torch
first (its libstdc++ must load before the QNN libraries' libc++), then installs
tests/qnn_htp/abi.py's bridge for the QNN 2.51 libraries laid out from the onnxruntime-qnn
wheel (a no-op with a real 2.37 SDK), then hands over.

Two switches make a run go wrong on purpose, for the tests of what the report says then:
``QNN_E2E_KILL_AFTER=N`` kills this process (SIGKILL) once N tests are in the JUnit file
named by ``--junit-xml``, as a host losing the job midway would.
``QNN_E2E_PATCH_CONV1D=1`` patches the seed's pass ``CanonicalizeConv`` (PatchedCanonicalizeConv):
every conv1d it rewrites gets a ReLU after its squeeze, so exactly the tests that lower a
conv1d lower another program (the control of the program fingerprints' comparison). With
``QNN_E2E_PATCH_LOG=FILE`` the patch appends the id of the running test (``Class.method``)
to FILE each time it adds a ReLU: which tests the patch changed, known independently of
the fingerprints.
``QNN_E2E_PATCH_SHARED_LIFT=1`` patches ExecuTorch's shared ``to_edge_transform_and_lower``
(patched_shared_lift.py, PatchedSharedLift): the other-backends matrix's control.
"""

from __future__ import annotations

import os
import re
import runpy
import signal
import sys
import threading
import time
from pathlib import Path


def _kill_after(count: int, xml_path: Path) -> None:
    pattern = re.compile(rb'<testsuite [^>]*\btests="(\d+)"')
    while True:
        try:
            found = pattern.search(xml_path.read_bytes())
        except OSError:
            found = None
        if found and int(found.group(1)) >= count:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.05)


def _log_running_test() -> None:
    """Append the running unittest test's id to $QNN_E2E_PATCH_LOG (if set)."""
    import unittest

    log = os.environ.get("QNN_E2E_PATCH_LOG")
    frame = sys._getframe(1)
    while log and frame is not None:
        case = frame.f_locals.get("self")
        if isinstance(case, unittest.TestCase):
            with open(log, "a", encoding="utf-8") as out:
                out.write(f"{type(case).__name__}.{case._testMethodName}\n")
            return
        frame = frame.f_back


def patch_canonicalize_conv() -> None:
    """PatchedCanonicalizeConv: the pass as shipped, then a ReLU after each conv1d it rewrote."""
    from executorch.backends.qualcomm._passes.canonicalize_conv import CanonicalizeConv
    from executorch.backends.qualcomm._passes.utils import copy_meta
    from executorch.exir.dialects._ops import ops as exir_ops

    shipped = CanonicalizeConv._replace_1d_conv

    def _replace_1d_conv(self, graph_module, node, input_node):  # type: ignore[no-untyped-def]
        shipped(self, graph_module, node, input_node)
        graph = graph_module.graph
        conv = exir_ops.edge.aten.convolution.default
        for squeeze in [u for u in graph.nodes if u.target == exir_ops.edge.aten.squeeze_copy.dims]:
            if getattr(squeeze.args[0], "target", None) is not conv or any(
                u.target == exir_ops.edge.aten.relu.default for u in squeeze.users
            ):
                continue
            with graph.inserting_after(squeeze):
                relu = graph.create_node(
                    "call_function", exir_ops.edge.aten.relu.default, (squeeze,)
                )
                relu.meta = copy_meta(squeeze.meta)
            for user in list(squeeze.users):
                if user is not relu:
                    user.replace_input_with(squeeze, relu)
            _log_running_test()

    CanonicalizeConv._replace_1d_conv = _replace_1d_conv


def _speed_up_torch() -> None:
    """tests/torch_speedup.py's accelerators (torch's bookkeeping, the same results), with the
    CIA registrations walked here, after the harness's modules are imported: with the
    wrapper's --fork-per-test every test's process inherits the walk. Off with
    ``QNN_TESTS_TORCH_SPEEDUP=0``; a harness without ExecuTorch's QNN tests is left as is."""
    try:
        import executorch.backends.qualcomm.tests.utils  # noqa: F401

        from qnn_migrate_tests import torch_speedup
    except ImportError:
        return
    torch_speedup.install(walk_now=True)


def main() -> None:
    import torch  # noqa: F401  (before the QNN libraries)
    from qnn_migrate_tests.qnn_htp.abi import install

    install(Path(os.environ["QNN_SDK_ROOT"]))
    args = sys.argv[1:]
    kill_after = int(os.environ.get("QNN_E2E_KILL_AFTER", "0") or 0)
    if kill_after and "--junit-xml" in args:
        xml = Path(args[args.index("--junit-xml") + 1])
        threading.Thread(target=_kill_after, args=(kill_after, xml), daemon=True).start()
    if args[:1] == ["-c"]:
        sys.argv = ["-c", *args[2:]]
        exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__"})
        return
    script = args[0]
    _speed_up_torch()
    if os.environ.get("QNN_E2E_PATCH_CONV1D") == "1":  # the test run only, not the host checks
        patch_canonicalize_conv()
    if os.environ.get("QNN_E2E_PATCH_SHARED_LIFT") == "1":  # likewise
        from patched_shared_lift import patch_shared_lift

        patch_shared_lift()
    sys.argv = args
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
