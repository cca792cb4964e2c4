"""One probe per export-stage pass: the canonical flow delegates the same ops as the wrapper and matches eager.

Each probe (tests/passes/probes.py) is lowered three ways under the RecordingQnnBackend double:

* the deprecated wrapper (``to_edge_transform_and_lower_to_qnn``: export-stage passes on the
  ATen program, then to-edge);
* the canonical flow (``torch.export.export`` then ``to_edge_transform_and_lower`` with
  qnn_passes);
* a control: ``torch.export.export`` then ExecuTorch's own to-edge passes and partitioner,
  with nothing in place of the export stage.

"Outside" ops are those of the handed program that QNN's partitioner cannot take whatever the
backend says: no QNN op builder for them (ExecuTorch's node-visitor registry) or listed as not
supported. The wrapper's and the canonical flow's must be equal; for every migrated pass the
control must differ, which shows the check can fail. The canonical program's outputs must
match eager, and an all-zero output must not.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from qnn_migrate_tests.passes import flows
from qnn_migrate_tests.passes.probe_lowerings import canonical_flow, control, outside, wrapper
from qnn_migrate_tests.passes.probes import BY_NAME, Probe, probe_params

from qnn_passes.export_stage import BY_NAME as EXPORT_STAGE
from qnn_passes.export_stage import MIGRATED, pending

# ExecuTorch 1.5.1's DecomposeWrapWithAutocast fails on every wrap_with_autocast it meets
# (tested below); to-edge inlines the higher-order op by itself.
WRAPPER_FAILS = {"autocast"}


def run(probe: Probe, program: Any) -> torch.Tensor:
    _, inputs = probe.model()
    if probe.portable:
        out = flows.run_portable({"forward": program}, {"forward": inputs})["forward"]
        return out[0]
    with torch.no_grad():
        result = copy.deepcopy(program).module()(*inputs)
    return result[0] if isinstance(result, (list, tuple)) else result


def close(actual: torch.Tensor, expected: torch.Tensor) -> bool:
    return actual.shape == expected.shape and torch.allclose(
        actual.float(), expected.float(), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("probe", probe_params())
def test_same_ops_outside_as_the_wrapper(probe: Probe) -> None:
    new = canonical_flow(probe.name)
    assert outside(new) == []
    if probe.name in WRAPPER_FAILS:
        with pytest.raises(Exception, match="DecomposeWrapWithAutocast"):
            wrapper(probe.name)
        return
    old = wrapper(probe.name)
    assert outside(old) == outside(new)
    variant = probe.backend
    assert pending(new.graph_module, variant) == pending(old.graph_module, variant) == []
    if EXPORT_STAGE[probe.export_pass].state == MIGRATED:
        # Without the migrated pass the op is left, outside QNN or with an argument QNN's
        # builder ignores (alpha, an argmax without axis): the comparison can fail.
        plain = control(probe.name)
        assert outside(plain) != [] or pending(plain.graph_module, variant) != []


@pytest.mark.parametrize("probe", probe_params())
def test_outputs_match_eager(probe: Probe) -> None:
    model, inputs = probe.model()
    with torch.no_grad():
        expected = model(*inputs)
    actual = run(probe, canonical_flow(probe.name))
    assert close(actual, expected)
    assert not close(torch.zeros_like(expected), expected)


@pytest.mark.parametrize("name", ["sdpa", "roll", "var", "scalar_operands", "autocast"])
def test_non_strict_export_lowers_alike(name: str) -> None:
    strict, loose = canonical_flow(name, True), canonical_flow(name, False)
    assert outside(loose) == outside(strict) == []
    probe = BY_NAME[name]
    model, inputs = probe.model()
    with torch.no_grad():
        assert close(run(probe, loose), model(*inputs))


def _stray_symbols(program: Any) -> dict[str, set[Any]]:
    """Per node, the symbols of its ``val`` that no input of the program has."""
    from torch.fx.experimental.symbolic_shapes import free_symbols

    nodes = list(program.graph.nodes)
    known = set().union(*(free_symbols(n.meta.get("val")) for n in nodes if n.op == "placeholder"))
    return {
        n.name: stray
        for n in nodes
        if n.op == "call_function" and (stray := free_symbols(n.meta.get("val")) - known)
    }


@pytest.mark.parametrize("probe", probe_params())
def test_a_static_program_reaches_qnn_with_static_shapes(probe: Probe) -> None:
    # QNN declares a symbolic size a dynamic dimension and the HTP refuses ops with those
    # (a Gather of pdist's constant indices: op validation error 3110 on real QNN).
    assert _stray_symbols(canonical_flow(probe.name)) == {}


def test_the_stray_symbol_check_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    # Control: without LiftQnnConstants' re-propagation, pdist's Gathers have such a size.
    from qnn_passes import lift_qnn_constants

    monkeypatch.setattr(lift_qnn_constants, "_repropagate_stray_symbols", lambda gm, mode: None)
    canonical_flow.cache_clear()
    try:
        program = canonical_flow("pdist")
    finally:
        canonical_flow.cache_clear()
    assert set(_stray_symbols(program)) >= {"aten_index_select_default"}
