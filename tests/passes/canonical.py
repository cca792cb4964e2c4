"""A canonical form of an ExportedProgram, for comparing two lowerings of one model exactly.

Names of nodes and of generated constants are incidental (``_lifted_tensor_constant3`` vs
``_lifted_tensor_constant2``, ``aten_view_copy_default_4``); everything else is compared:

* every node is identified by its structure, recursively (a Merkle form): op target,
  arguments (sequences normalized to tuples, nodes replaced by their identity), kwargs,
  the dtype and shape of ``meta["val"]`` and every QNN meta entry (``QCOM_*`` keys and the
  debug handle), with tensors compared by value;
* inputs are identified by kind and target - except constants the passes generated, which
  are identified by value - plus persistence and their constant's value;
* the graph is the identity of its output, and the multiset of all call_function nodes
  (so a dead node is a difference too).

``orphaned_inputs`` names constant inputs that nothing in the graph uses.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

import torch
from executorch.backends.qualcomm.utils import constants as qcom_constants
from torch.export.graph_signature import InputKind

QNN_META_KEYS = frozenset(
    {v for k, v in vars(qcom_constants).items() if k.startswith("QCOM_") and isinstance(v, str)}
    | {"debug_handle"}
)
GENERATED_PREFIX = "_lifted_tensor_constant"


def digest(t: torch.Tensor) -> tuple[Any, ...]:
    t = t.detach().contiguous().cpu()
    flat = t.reshape(-1)
    raw = flat.view(torch.uint8) if t.numel() and t.dtype != torch.bool else flat.to(torch.uint8)
    return ("tensor", str(t.dtype), tuple(t.shape), hashlib.sha1(raw.numpy().tobytes()).hexdigest())


def _dims(shape: Any) -> tuple[Any, ...]:
    return tuple(d if isinstance(d, int) else str(d) for d in shape)


def _value(v: Any, ident: dict[torch.fx.Node, Any]) -> Any:
    if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return ("sym", str(v))
    if isinstance(v, torch.fx.Node):
        return ident[v]
    if isinstance(v, torch.Tensor):
        return digest(v)
    if isinstance(v, (list, tuple, torch.Size)):
        return tuple(_value(x, ident) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((str(k), _value(x, ident)) for k, x in v.items()))
    if isinstance(v, (torch.dtype, torch.memory_format, torch.layout, torch.device)):
        return str(v)
    schema = getattr(v, "_schema", None)
    if schema is not None:
        return ("op", schema.name, schema.overload_name)
    if callable(v):
        return ("callable", getattr(v, "__module__", ""), getattr(v, "__qualname__", repr(v)))
    return v


def _val(node: torch.fx.Node) -> Any:
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        return (str(val.dtype), _dims(val.shape))
    if isinstance(val, (list, tuple)):
        return tuple(
            (str(v.dtype), _dims(v.shape)) if isinstance(v, torch.Tensor) else str(v) for v in val
        )
    return type(val).__name__


def _qnn_meta(node: torch.fx.Node, ident: dict[torch.fx.Node, Any]) -> Any:
    names = {n.name: n for n in node.graph.nodes}
    out = []
    for key in sorted(QNN_META_KEYS & set(node.meta)):
        value = node.meta[key]
        if key == qcom_constants.QCOM_REQUANTIZE and isinstance(value, dict):
            # Keyed by the name of the user that needs the requantize: use its identity.
            value = {str(ident.get(names.get(k), k)): v for k, v in value.items()}
        out.append((key, _value(value, ident)))
    return tuple(out)


def _constant(program: Any, target: str) -> Any:
    value = program.state_dict.get(target, program.constants.get(target))
    return digest(value) if isinstance(value, torch.Tensor) else None


def canonical(program: Any) -> dict[str, Any]:
    """The canonical form of ``program`` (see module docstring)."""
    graph = program.graph_module.graph
    specs = {getattr(s.arg, "name", None): s for s in program.graph_signature.input_specs}
    ident: dict[torch.fx.Node, Any] = {}
    user_index = 0
    for node in graph.nodes:
        if node.op == "placeholder":
            spec = specs[node.name]
            if spec.kind == InputKind.USER_INPUT:
                key: Any = ("user", user_index)
                user_index += 1
            elif str(spec.target).startswith(GENERATED_PREFIX):
                key = ("generated", _constant(program, spec.target))
            else:
                key = (str(spec.kind), spec.target, _constant(program, spec.target))
            ident[node] = ("input", key, _val(node))
        elif node.op == "get_attr":
            ident[node] = ("get_attr", digest(getattr(program.graph_module, node.target)))
        elif node.op == "call_function":
            ident[node] = (
                _value(node.target, ident),
                _value(node.args, ident),
                _value(dict(node.kwargs), ident),
                _val(node),
            )
        else:
            ident[node] = (node.op, _value(node.args, ident))
    # QNN meta may refer to other nodes, so it is added once every node has an identity.
    full = {n: (ident[n], _qnn_meta(n, ident)) for n in graph.nodes}
    inputs = []
    for spec in program.graph_signature.input_specs:
        node = next(n for n in graph.nodes if n.op == "placeholder" and n.name == spec.arg.name)
        inputs.append((str(spec.kind), full[node], spec.persistent))
    output = graph.output_node()
    return {
        "inputs": inputs,
        "outputs": [(str(s.kind), str(s.target)) for s in program.graph_signature.output_specs],
        "graph": _value(output.args, ident),
        "nodes": Counter(full[n] for n in graph.nodes if n.op != "placeholder"),
    }


def orphaned_inputs(program: Any) -> list[str]:
    """Targets of constant inputs whose placeholder has no users (mutated buffers are state)."""
    specs = {getattr(s.arg, "name", None): s for s in program.graph_signature.input_specs}
    mutated = set(program.graph_signature.buffers_to_mutate.values())
    return [
        str(specs[n.name].target)
        for n in program.graph_module.graph.nodes
        if n.op == "placeholder"
        and not n.users
        and specs[n.name].kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)
        and specs[n.name].target not in mutated
    ]


def without_inputs(program: Any, targets: list[str]) -> dict[str, Any]:
    """The canonical form of ``program`` with the inputs for ``targets`` left out."""
    form = canonical(program)
    dropped = set(targets)
    specs = list(program.graph_signature.input_specs)
    form["inputs"] = [
        i for i, s in zip(form["inputs"], specs, strict=True) if s.target not in dropped
    ]
    return form


def upstream_leftovers(program: object) -> tuple[list[str], list[str]]:
    """(orphaned inputs, duplicate copies of a generated constant) in an upstream program."""
    orphans = orphaned_inputs(program)
    form = canonical(program)
    seen: set[object] = set()
    duplicates = []
    for (_, ident, _), spec in zip(
        form["inputs"], program.graph_signature.input_specs, strict=True
    ):  # type: ignore[attr-defined]
        if str(spec.target).startswith(GENERATED_PREFIX):
            if ident in seen:
                duplicates.append(str(spec.target))
            seen.add(ident)
    return orphans, duplicates
