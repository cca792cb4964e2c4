"""What the fork server holds before it forks a lowering child: imports and the ABI bridge, no lowering.

:mod:`qnn_htp.fresh` starts Python's multiprocessing fork server with this module preloaded
and ``QNN_HTP_SERVER=1`` set. On import it then loads torch, ExecuTorch's QNN modules, the
portable runtime, ``qnn_passes`` and transformers' model code (:func:`qnn_htp.hf_subjects.preload`),
walks torch's CIA registrations once (``tests/torch_speedup.py``), and installs the ABI bridge
(:mod:`qnn_htp.abi`) for the root in ``QNN_SDK_ROOT``. Every child is a fork of that state: nothing was ever lowered in it,
so QNN's process-wide counters start where a fresh process starts them. In any other process
importing this module does nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

from qnn_migrate_tests.qnn_htp.abi import AbiState

SERVER_FLAG = "QNN_HTP_SERVER"
STATE: AbiState | None = None


def _prepare() -> AbiState:
    import torch  # noqa: F401  (first: see qnn_htp.abi)
    from executorch.backends.qualcomm.utils import qnn_sdk_setup, utils  # noqa: F401
    from executorch.extension.pybindings import portable_lib  # noqa: F401
    from qnn_migrate_tests.qnn_htp import hf_subjects
    from qnn_migrate_tests.qnn_htp.abi import install

    import qnn_passes.api  # noqa: F401
    from qnn_migrate_tests import torch_speedup

    _read_cpu_vendor_once(qnn_sdk_setup)
    torch_speedup.install(walk_now=True)  # every child inherits the walk (see torch_speedup)
    hf_subjects.preload()  # and transformers' model code (imported, nothing built)
    return install(Path(os.environ["QNN_SDK_ROOT"]))


def _read_cpu_vendor_once(qnn_sdk_setup: object) -> None:
    """Every lowering asks ExecuTorch whether the host is AMD (``disable_mkldnn_on_amd``); the
    first ask per process runs py-cpuinfo in a new Python interpreter (about 1.2 s of CPU) and
    ExecuTorch keeps the answer in a module global. Asked here once, every child inherits the
    answer. Only the answer is cached: the MKLDNN setting itself is still applied by each
    lowering, as before (nothing QNN is touched)."""
    host_is_amd = getattr(qnn_sdk_setup, "_host_is_amd", None)
    if callable(host_is_amd):
        host_is_amd()


if os.environ.get(SERVER_FLAG) == "1":
    STATE = _prepare()
