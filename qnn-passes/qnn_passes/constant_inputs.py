"""Constant inputs of an ExportedProgram: read them, add a replacement, drop one nothing uses any more.

A constant reaches a graph in one of two ways: as a placeholder whose input spec is a
parameter, a buffer or a lifted tensor constant (its tensor in ``state_dict`` or
``constants``), or as a ``get_attr`` node (its tensor an attribute of the graph module; what
passes create, lifted to a placeholder at the end of the QNN pipeline).

:func:`drop_if_unused` is how a pass that replaces a weight keeps the program free of orphaned
constants: it removes the old placeholder, its input spec and its tensor entry once nothing
uses it. It never touches user inputs, mutated buffers, or tokens.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import torch
from torch._guards import detect_fake_mode
from torch.export import ExportedProgram
from torch.export.graph_signature import (
    ConstantArgument,
    ExportGraphSignature,
    InputKind,
    InputSpec,
    OutputSpec,
)

_CONSTANT_KINDS = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)


def input_spec(ep: ExportedProgram, node: torch.fx.Node) -> InputSpec | None:
    """The input spec of placeholder ``node``, or None."""
    if node.op != "placeholder":
        return None
    for spec in ep.graph_signature.input_specs:
        if getattr(spec.arg, "name", None) == node.name:
            found: InputSpec = spec
            return found
    return None


def _mutated_buffers(ep: ExportedProgram) -> set[str]:
    return set(ep.graph_signature.buffers_to_mutate.values())


def is_constant(ep: ExportedProgram, node: object) -> bool:
    """True for a get_attr tensor or a parameter/unmutated buffer/lifted-constant placeholder."""
    if not isinstance(node, torch.fx.Node):
        return False
    if node.op == "get_attr":
        owner = node.graph.owning_module
        return isinstance(getattr(owner, str(node.target), None), torch.Tensor)
    spec = input_spec(ep, node)
    return (
        spec is not None
        and spec.kind in _CONSTANT_KINDS
        and not (spec.kind == InputKind.BUFFER and spec.target in _mutated_buffers(ep))
    )


def read(ep: ExportedProgram, node: torch.fx.Node) -> torch.Tensor:
    """The tensor behind constant ``node`` (see :func:`is_constant`)."""
    if node.op == "get_attr":
        value = getattr(node.graph.owning_module, str(node.target))
    else:
        spec = input_spec(ep, node)
        if spec is None or spec.target is None:
            raise KeyError(f"{node.name} is not a constant input of the program")
        value = ep.state_dict.get(spec.target)
        if value is None:
            value = ep.constants[spec.target]
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"constant {node.name} is a {type(value).__name__}, not a tensor")
    return value


def fake_mode_of(gm: torch.fx.GraphModule) -> Any:
    """The FakeTensorMode of the graph's placeholders."""
    return detect_fake_mode(
        tuple(n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder" and "val" in n.meta)
    )


def unique_attr_name(gm: torch.nn.Module, hint: str) -> str:
    base = "".join(c if c.isalnum() or c == "_" else "_" for c in hint)
    for i in itertools.count():
        name = f"{base}_{i}"
        if not hasattr(gm, name):
            return name
    raise AssertionError("unreachable")


def add_get_attr(
    gm: torch.fx.GraphModule, tensor: torch.Tensor, hint: str, *, after: torch.fx.Node
) -> torch.fx.Node:
    """Register ``tensor`` on ``gm`` and return a get_attr node for it, placed after ``after``."""
    name = unique_attr_name(gm, hint)
    # Detached: a view of a parameter would otherwise carry autograd history into the
    # program (and a program holding such a tensor cannot be deep-copied).
    tensor = tensor.detach()
    gm.register_buffer(name, tensor)
    with gm.graph.inserting_after(after):
        node = gm.graph.get_attr(name)
    fake_mode = fake_mode_of(gm)
    node.meta["val"] = (
        fake_mode.from_tensor(tensor, static_shapes=True) if fake_mode is not None else tensor
    )
    return node


def drop_if_unused(ep: ExportedProgram, node: torch.fx.Node) -> bool:
    """Remove constant ``node`` from the program if nothing uses it; True if removed."""
    if node.users or not is_constant(ep, node):
        return False
    gm = ep.graph_module
    if node.op == "get_attr":
        target = str(node.target)
        gm.graph.erase_node(node)
        if not any(n.op == "get_attr" and n.target == target for n in gm.graph.nodes):
            delattr(gm, target)
        return True
    spec = input_spec(ep, node)
    assert spec is not None
    specs = [s for s in ep.graph_signature.input_specs if s is not spec]
    gm.graph.erase_node(node)
    ep._graph_signature = ExportGraphSignature(
        input_specs=specs, output_specs=list(ep.graph_signature.output_specs)
    )
    if not any(s.target == spec.target for s in specs):
        # New dicts: the program may share these with the one it was copied from.
        if spec.target in ep.state_dict:
            ep._state_dict = {k: v for k, v in ep.state_dict.items() if k != spec.target}
        if spec.target in ep.constants:
            ep._constants = {k: v for k, v in ep.constants.items() if k != spec.target}
    return True


def sync_signature(ep: ExportedProgram) -> None:
    """Point the signature's input and output specs at the graph's current nodes, by position.

    A pass that puts a new node in front of a graph output (a squeeze after a conv that was
    an output) must do this, as ExecuTorch's pass manager does after every graph pass.
    """

    def renamed(arg: Any, node: Any) -> Any:
        if isinstance(arg, ConstantArgument) or not isinstance(node, torch.fx.Node):
            return arg
        return dataclasses.replace(arg, name=node.name)

    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    specs = ep.graph_signature.input_specs
    if len(placeholders) != len(specs):
        raise AssertionError(
            f"{len(placeholders)} placeholders but {len(specs)} input specs; a pass lost track"
        )
    outputs = list(ep.graph.output_node().args[0])
    ep._graph_signature = ExportGraphSignature(
        input_specs=[
            InputSpec(s.kind, renamed(s.arg, n), s.target, persistent=s.persistent)
            for s, n in zip(specs, placeholders, strict=True)
        ],
        output_specs=[
            OutputSpec(s.kind, renamed(s.arg, n), s.target)
            for s, n in zip(ep.graph_signature.output_specs, outputs, strict=True)
        ],
    )
