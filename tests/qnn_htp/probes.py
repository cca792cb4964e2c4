"""Small functions the tier's tests run in fresh children (importable, so picklable)."""

from __future__ import annotations

from typing import Any

from qnn_migrate_tests.qnn_htp.lowering import Lowered, LoweringSpec, lower


def abi_state() -> dict[str, Any]:
    from qnn_migrate_tests.qnn_htp import server

    state = server.STATE
    assert state is not None
    return {"htp_api": state.htp_api, "core_api": state.core_api, "bridged": state.bridged}


def lower_twice(spec: LoweringSpec) -> tuple[Lowered, Lowered]:
    """Two lowerings in one process: QNN's process-wide counters make the second differ."""
    return lower(spec), lower(spec)


def lower_unbridged(spec: LoweringSpec) -> str:
    """Lower with the ABI bridge removed; the error QNN gives (the bridge is what makes it work)."""
    from qnn_migrate_tests.qnn_htp import server

    assert server.STATE is not None and server.STATE.bridged
    server.STATE.unbridge()
    try:
        lower(spec)
    except Exception as err:
        return f"{type(err).__name__}: {err}"
    return ""


def bridge_calls(spec: LoweringSpec) -> int:
    from qnn_migrate_tests.qnn_htp import server
    from qnn_migrate_tests.qnn_htp.pairs import assert_matches_reference

    assert_matches_reference(lower(spec), quantized=False)  # bridged, and right
    assert server.STATE is not None
    return server.STATE.calls


def arithmetic_probe(name: str) -> dict[str, Any]:
    """Arithmetic bundle ``name`` lowered through the canonical flow and run on the simulator,
    and its edge program before and after the pass on the CPU (tests/qnn_htp/test_arithmetic.py)."""
    from qnn_migrate_tests.passes.arithmetic import BY_NAME, cpu_values

    spec = LoweringSpec("qnn_migrate_tests.qnn_htp.subjects:arithmetic", (name,), "canonical")
    return {"lowered": lower(spec), **cpu_values(BY_NAME[name])}
