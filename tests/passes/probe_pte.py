"""Lower the probes of probes.py to .pte files; print each one's sha256 and the CPU time, as JSON.

    python tests/passes/probe_pte.py with|without|keep-dead-code [PROBE ...]

test_torch_speedup.py runs it in a fresh process per mode (tests/support on PYTHONPATH, QNN_SDK_ROOT
set to "" as tests/conftest.py sets it). Each probe (all of them, or those named) goes through
the deprecated wrapper and the canonical flow under RecordingQnnBackend, as the fast tier
lowers it, and the program handed to the partitioner is serialized (``flows.serialize``).

- ``with``: tests/torch_speedup.py installed, as the suite runs;
- ``without``: torch as users have it;
- ``keep-dead-code``: the control, a patch that does change the lowering (torch.fx's dead-code
  elimination turned off), so that a comparison of digests is shown to see a change.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time


def _patch(mode: str) -> None:
    if mode == "with":
        from qnn_migrate_tests import torch_speedup

        assert torch_speedup.install(), "torch_speedup did not install on this torch"
    elif mode == "keep-dead-code":
        import torch.fx

        torch.fx.Graph.eliminate_dead_code = lambda self, *args, **kwargs: False  # type: ignore[method-assign]
    elif mode != "without":
        raise SystemExit(f"probe_pte: unknown mode {mode!r}; say with, without or keep-dead-code")


def _speedup_installed() -> bool:
    import torch._export.utils as export_utils

    return bool(getattr(export_utils._materialize_cpp_cia_ops, "skips_known_registrations", False))


def main(mode: str, names: list[str]) -> None:
    started = time.process_time()
    _patch(mode)
    from qnn_migrate_tests.passes import flows
    from qnn_migrate_tests.passes.probe_lowerings import canonical_flow, wrapper
    from qnn_migrate_tests.passes.probes import PROBES

    digests: dict[str, str] = {}
    for probe in PROBES:
        if names and probe.name not in names:
            continue
        for flow, lower in (("wrapper", wrapper), ("canonical", canonical_flow)):
            try:
                buffer = flows.serialize({"forward": lower(probe.name)}).buffer
            except Exception as error:
                # The wrapper's known failure (autocast), a program the portable runtime has
                # no kernel for (sdpa's _safe_softmax): compared as the digest is.
                digests[f"{probe.name}/{flow}"] = f"raised {type(error).__name__}: {error}"
                continue
            digests[f"{probe.name}/{flow}"] = hashlib.sha256(buffer).hexdigest()
    result = {
        "mode": mode,
        "speedup_installed": _speedup_installed(),
        "cpu_s": round(time.process_time() - started, 2),
        "pte_sha256": digests,
    }
    # The last line of stdout: ExecuTorch's passes print warnings there too.
    print("\n" + json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
