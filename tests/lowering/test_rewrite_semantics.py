"""The rewrite keeps what the code does: original and rewritten scripts lower the same programs.

Each scenario in ``semantics/`` is a small script that calls the deprecated wrapper. It runs as
written and as rewritten (both targets), with the real torch and ExecuTorch; only what needs
the QNN SDK (the backend behind ``QnnPartitioner`` and the QNN manager context) is replaced by
``RecordingQnnBackend`` (tests/doubles/qnn_backend.py). What must match:

* the programs handed to the partitioner, method by method: graph, signature and constant
  values. ``--target executorch`` spells out the wrapper's own body, so it must match exactly;
  the default target goes through ``qnn_passes``, which by design drops the weights its passes
  replace instead of leaving them behind as unused inputs (see qnn_passes/api.py), so there the
  wrapper's program is compared without its orphaned inputs, node by node, with argument
  lists and tuples alike;
* the partitioner's compile specs and skip options, and the specs the QNN context was entered
  with;
* the lowered result: methods and constant methods.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
import torch
from qnn_migrate_tests.doubles.qnn_backend import RecordingQnnBackend
from torch.export.graph_signature import InputKind

from qnn_migrate.codemods.engine import rewrite_code, rule_options
from qnn_passes.errors import QnnConfigError

SCENARIOS = Path(__file__).resolve().parents[1] / "codemods" / "semantics"
pytestmark = pytest.mark.xdist_group("rewrite-semantics")  # one worker runs each original once


# The scenario's dynamic batch, which qnn_passes refuses (QNN builds static shapes only:
# qnn_passes.static_shapes) while the wrapper lowers it under the double; on real QNN the
# original fails to compile (tests/qnn_htp/test_codemod_scenarios.py). The qnn-passes target is
# held to the refusal on the scenario as written, and compared on the scenario without it.
DYNAMIC_ARGUMENT = 'dynamic_shapes={"x": {0: batch}, "y": {0: batch}},'
STATIC_SUFFIX = "-static"
REFUSED = {"scenario_single_module": "was exported with dynamic sizes"}


@functools.cache
def _source(scenario: str) -> str:
    if scenario.endswith(STATIC_SUFFIX):
        source = _source(scenario.removesuffix(STATIC_SUFFIX))
        assert DYNAMIC_ARGUMENT in source, "the scenario's dynamic_shapes argument changed"
        return source.replace(DYNAMIC_ARGUMENT, "")
    return (SCENARIOS / f"{scenario}.py").read_text(encoding="utf-8")


def _run(code: str, name: str) -> tuple[RecordingQnnBackend, Any]:
    namespace: dict[str, Any] = {"__name__": f"scenario_{name}"}
    with RecordingQnnBackend() as qnn:
        exec(compile(code, name, "exec"), namespace)
    return qnn, namespace.get("RESULT")


@functools.cache
def _original(scenario: str) -> tuple[RecordingQnnBackend, Any]:
    return _run(_source(scenario), scenario)


def _tensors_equal(left: dict[str, Any], right: dict[str, Any]) -> None:
    assert sorted(left) == sorted(right)
    for key, value in left.items():
        other = right[key]
        if isinstance(value, torch.Tensor):
            assert torch.equal(value, other), key
        else:
            assert value == other, key


def _orphans(program: Any) -> set[str]:
    """Names of constant inputs (weights, buffers, constants) that nothing uses."""
    constant = {InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR}
    kinds = {s.arg.name: s.kind for s in program.graph_signature.input_specs}
    return {
        n.name
        for n in program.graph_module.graph.nodes
        if n.op == "placeholder" and not n.users and kinds.get(n.name) in constant
    }


def _plain(value: Any) -> Any:
    if isinstance(value, torch.fx.Node):
        return ("node", value.name)
    if isinstance(value, list | tuple | torch.Size):
        return tuple(_plain(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _plain(v)) for k, v in value.items()))
    if isinstance(value, torch.SymInt | torch.SymFloat | torch.dtype | torch.device):
        return str(value)
    return value


def _structure(program: Any, drop: set[str], by_target: bool = False) -> dict[str, Any]:
    """The program node by node and its signature, without the inputs named in ``drop``.

    ``by_target``: a placeholder of a constant input is named by what it holds (its kind and
    state target): ``torch.export`` calls a constant it lifts ``b__lifted_tensor_constant0``,
    a pass lifting it after export ``_lifted_tensor_constant0``, for the same value.
    """
    graph = program.graph_module.graph
    names = {
        s.arg.name: f"<{s.kind.name}:{s.target}>"
        for s in program.graph_signature.input_specs
        if by_target and s.target is not None
    }

    def rename(value: Any) -> Any:
        if isinstance(value, tuple) and len(value) == 2 and value[0] == "node":
            return ("node", names.get(value[1], value[1]))
        if isinstance(value, tuple):
            return tuple(rename(v) for v in value)
        return value

    # Placeholders in their own order (where FX lists them among the other nodes is incidental).
    nodes = [
        names.get(n.name, n.name)
        for n in graph.nodes
        if n.op == "placeholder" and n.name not in drop
    ] + [
        (n.op, n.name, str(n.target), rename(_plain(n.args)), rename(_plain(dict(n.kwargs))))
        for n in graph.nodes
        if n.op != "placeholder"
    ]
    inputs = [
        (str(s.kind), names.get(s.arg.name, s.arg.name), s.target, s.persistent)
        for s in program.graph_signature.input_specs
        if s.arg.name not in drop
    ]
    kept = {t for _, name, t, _ in inputs if t is not None}
    values = {
        key: value
        for key, value in {**program.state_dict, **program.constants}.items()
        if key in kept
    }
    outputs = [(str(s.kind), s.arg.name, s.target) for s in program.graph_signature.output_specs]
    return {"nodes": nodes, "inputs": inputs, "outputs": outputs, "values": values}


def _assert_same_program(old: Any, new: Any, *, exact: bool, by_target: bool = False) -> None:
    if exact:
        assert new.graph_module.code == old.graph_module.code
        assert str(new.graph_signature) == str(old.graph_signature)
        _tensors_equal(old.state_dict, new.state_dict)
        _tensors_equal(old.constants, new.constants)
        return
    assert _orphans(new) == set()
    old_form = _structure(old, _orphans(old), by_target)
    new_form = _structure(new, set(), by_target)
    _tensors_equal(old_form.pop("values"), new_form.pop("values"))
    assert new_form == old_form


def _assert_same_result(old: Any, new: Any) -> None:
    if isinstance(old, list):
        assert isinstance(new, list) and len(new) == len(old)
        for o, n in zip(old, new, strict=True):
            _assert_same_result(o, n)
        return
    assert sorted(new.methods) == sorted(old.methods)
    assert new._config_methods == old._config_methods


# (scenario, target, flow): the qnn-passes target in both of its shapes, and executorch.
CASES = [
    ("scenario_single_module-static", "qnn-passes", "qnn-export"),
    ("scenario_single_module-static", "qnn-passes", "canonical"),
    ("scenario_single_module", "executorch", None),
    ("scenario_dict_of_methods", "qnn-passes", "qnn-export"),
    ("scenario_dict_of_methods", "qnn-passes", "canonical"),
    ("scenario_dict_of_methods", "executorch", None),
    ("scenario_comprehension", "qnn-passes", "qnn-export"),
    ("scenario_comprehension", "qnn-passes", "canonical"),
    ("scenario_comprehension", "executorch", None),  # its helper, called in place
]


@pytest.mark.parametrize(
    ("scenario", "target", "flow"),
    CASES,
    ids=[f"{s}-{t}" + (f"-{f}" if f else "") for s, t, f in CASES],
)
def test_rewritten_script_lowers_the_same_programs(
    scenario: str, target: str, flow: str | None
) -> None:
    options = rule_options(target, flow=flow)
    rewritten = rewrite_code(_source(scenario), options, filename=scenario)
    assert rewritten.changed and not rewritten.unfixable
    assert "to_edge_transform_and_lower_to_qnn(" not in rewritten.code
    if flow == "canonical" and scenario != "scenario_comprehension":
        # The canonical flow: the user's own torch.export, after the SDK setup.
        assert "qnn_export" not in rewritten.code
        assert rewritten.code.index("setup_qnn_sdk()") < rewritten.code.index(
            "torch.export.export("
        )
    old_qnn, old_result = _original(scenario)
    new_qnn, new_result = _run(rewritten.code, f"{scenario}-{target}-{flow}")

    assert old_qnn.handoffs, "the original reached no partitioner"
    assert len(new_qnn.handoffs) == len(old_qnn.handoffs)
    for old, new in zip(old_qnn.handoffs, new_qnn.handoffs, strict=True):
        _assert_same_program(
            old.program, new.program, exact=target == "executorch", by_target=flow == "canonical"
        )
        assert new.compile_specs == old.compile_specs
        assert new.skip_node_id_set == old.skip_node_id_set
        assert new.skip_node_op_set == old.skip_node_op_set
        assert new.skip_mutable_buffer == old.skip_mutable_buffer
    assert new_qnn.contexts == old_qnn.contexts
    assert (new_qnn.stopped_by is None) == (old_qnn.stopped_by is None)
    if old_qnn.stopped_by is None:
        _assert_same_result(old_result, new_result)


@pytest.mark.parametrize("flow", ["qnn-export", "canonical"])
def test_the_qnn_passes_target_refuses_a_dynamic_size(flow: str) -> None:
    scenario = "scenario_single_module"
    rewritten = rewrite_code(
        _source(scenario), rule_options("qnn-passes", flow=flow), filename=scenario
    )
    assert rewritten.changed and not rewritten.unfixable
    with pytest.raises(QnnConfigError, match=REFUSED[scenario]):
        _run(rewritten.code, f"{scenario}-refused-{flow}")
    # The control: the same scenario without its dynamic_shapes lowers (test above), and the
    # wrapper lowers the dynamic one under the double.
    assert _original(scenario)[0].handoffs
