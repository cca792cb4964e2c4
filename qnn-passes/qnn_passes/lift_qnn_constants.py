"""LiftQnnConstants: the QNN flow's own constant lifting, run as the last of its transform passes.

QNN's partitioner and op builders read every constant through the program's signature, so
``get_attr`` constants that the passes created must become program inputs before
partitioning. ExecuTorch 1.5.1 does this in the shared ``to_edge_transform_and_lower`` for
every backend (``lift_constant_tensor_pass`` after any transform passes), which rewrites the
input signature of any backend whose passes leave a ``get_attr``. This pass does it inside
the QNN flow instead, so the QNN pipeline no longer depends on the shared step (which then
finds nothing left to lift)::

    before:  w = get_attr[_conv_weight_0]            x = placeholder   (USER_INPUT)
    after:   _lifted_tensor_constant3 = placeholder  (BUFFER, persistent, state_dict entry)
             x = placeholder                          (USER_INPUT)

It matches ExecuTorch's lift where that is right - same kind (persistent BUFFER), same
``_lifted_tensor_constant<N>`` names, placeholders and specs inserted before the first user
input, the get_attr's meta carried over - and differs where it is not:

* a get_attr with no users is removed, not lifted into an unused input (no orphans);
* several get_attr nodes of one attribute become one input, not one copy each;
* a program without any placeholder is lifted too (upstream returns it unchanged);
* a lifted constant's fake has static sizes, and so do the values computed from it: an
  ExportPass retrace between the pass that made a constant and this one (ExecuTorch's
  I64toI32 is one) fakes the constant again with symbolic sizes, and the ops it feeds inherit
  them (an ``index_select`` by a 10-element constant gets ``val`` of size ``[s29, 3]``). QNN
  declares such dimensions dynamic and the HTP refuses the op (a Gather: "Tensor is expected to
  have a static dimension", op validation error 3110). So when a node's ``val`` has a symbol
  that no input of the program has, the values are propagated again from the inputs;
* with ``check_quant_attrs``, a constant feeding a dequantize must carry
  ``QCOM_QUANT_ATTRS``: if a pass rebuilt the graph after AnnotateGetAttr they are gone and
  QNN would read the weight as float, so it raises :class:`QnnPipelineError` instead.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import torch
from executorch.exir.pass_base import ExportedProgramPassBase, ExportedProgramPassResult
from torch.export import ExportedProgram
from torch.export.graph_signature import (
    ExportGraphSignature,
    InputKind,
    InputSpec,
    TensorArgument,
)
from torch.fx.experimental.symbolic_shapes import free_symbols
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

from qnn_passes import constant_inputs, quant_ops
from qnn_passes.errors import QnnPipelineError

if TYPE_CHECKING:
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode


def _static_fake(
    fake_mode: FakeTensorMode, tensor: torch.Tensor
) -> tuple[torch.Tensor, FakeTensor]:
    """``(tensor to store, its fake)``, the fake with static sizes.

    A fake mode remembers the fake it made for a tensor, and a pass's retrace (ExportPass) may
    have made one with symbolic sizes for a constant it created. ``to_backend`` fakes the
    state dict through the same mode, so QNN's builders would get that one and declare the
    constant's dimensions dynamic, which the HTP refuses for a static tensor (a Gather's
    indices: "Tensor does not have any dynamic dimensions", op validation error 3110). Such a
    constant is stored as a copy, which has no earlier fake.
    """
    val = fake_mode.from_tensor(tensor, static_shapes=True)
    if all(isinstance(d, int) for d in val.shape):
        return tensor, val
    copy = tensor.detach().clone()
    return copy, fake_mode.from_tensor(copy, static_shapes=True)


def _repropagate_stray_symbols(gm: torch.fx.GraphModule, fake_mode: FakeTensorMode) -> None:
    """Recompute every ``val`` from the placeholders' when a node has a symbol no input has.

    The inputs' symbols (a user's dynamic shapes) are kept; a symbol that appears only
    downstream came from a constant faked with symbolic sizes (see the module doc).
    """
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if not all("val" in n.meta for n in placeholders):
        return
    known = set().union(*(free_symbols(n.meta["val"]) for n in placeholders))
    stray = any(
        free_symbols(n.meta.get("val")) - known for n in gm.graph.nodes if n.op == "call_function"
    )
    if not stray:
        return
    FakeTensorProp(gm, fake_mode).propagate_dont_convert_inputs(
        *(n.meta["val"] for n in placeholders)
    )


class LiftQnnConstants(ExportedProgramPassBase):
    """Turn get_attr tensors into persistent-buffer inputs; drop unused ones (see module doc)."""

    def __init__(self, *, check_quant_attrs: bool = True, method: str = "forward") -> None:
        super().__init__()
        self.check_quant_attrs = check_quant_attrs
        self.method = method

    def call(self, exported_program: ExportedProgram) -> ExportedProgramPassResult:
        ep = exported_program
        gm = ep.graph_module
        graph = gm.graph
        get_attrs = [
            n
            for n in graph.nodes
            if n.op == "get_attr" and isinstance(getattr(gm, str(n.target), None), torch.Tensor)
        ]
        if not get_attrs:
            return ExportedProgramPassResult(ep, False)
        if self.check_quant_attrs:
            self._check_quant_attrs(get_attrs)

        specs = list(ep.graph_signature.input_specs)
        first_user_input = next(
            (
                n
                for n in graph.nodes
                if n.op == "placeholder"
                and any(
                    s.kind == InputKind.USER_INPUT and getattr(s.arg, "name", None) == n.name
                    for s in specs
                )
            ),
            None,
        )
        taken = {*ep.state_dict, *ep.constants, *(s.target for s in specs if s.target)}
        numbers = itertools.count(len(ep.graph_signature.buffers))
        fake_mode = constant_inputs.fake_mode_of(gm)
        state_dict = dict(ep.state_dict)
        lifted: dict[str, torch.fx.Node] = {}
        new_specs: list[InputSpec] = []
        for node in get_attrs:
            target = str(node.target)
            if not node.users:
                graph.erase_node(node)
                continue
            placeholder = lifted.get(target)
            if placeholder is None:
                tensor = getattr(gm, target)
                fqn = next(
                    f"_lifted_tensor_constant{i}"
                    for i in numbers
                    if f"_lifted_tensor_constant{i}" not in taken
                )
                taken.add(fqn)
                if first_user_input is None:
                    anchor = graph.inserting_before(next(iter(graph.nodes), None))
                else:
                    anchor = graph.inserting_before(first_user_input)
                with anchor:
                    placeholder = graph.placeholder(fqn)
                placeholder.meta.update(node.meta)
                if fake_mode is not None:
                    tensor, val = _static_fake(fake_mode, tensor)
                else:
                    val = tensor
                val.constant = tensor
                placeholder.meta["val"] = val
                new_specs.append(
                    InputSpec(
                        kind=InputKind.BUFFER,
                        arg=TensorArgument(name=placeholder.name),
                        target=fqn,
                        persistent=True,
                    )
                )
                state_dict[fqn] = tensor
                lifted[target] = placeholder
            node.replace_all_uses_with(placeholder)
            graph.erase_node(node)

        for target in {str(n.target) for n in get_attrs}:
            if hasattr(gm, target) and not any(
                n.op == "get_attr" and n.target == target for n in graph.nodes
            ):
                delattr(gm, target)

        at = next((i for i, s in enumerate(specs) if s.kind == InputKind.USER_INPUT), 0)
        ep._graph_signature = ExportGraphSignature(
            input_specs=[*specs[:at], *new_specs, *specs[at:]],
            output_specs=list(ep.graph_signature.output_specs),
        )
        ep._state_dict = state_dict
        gm.recompile()
        if fake_mode is not None:
            _repropagate_stray_symbols(gm, fake_mode)
        return ExportedProgramPassResult(ep, True)

    def _check_quant_attrs(self, get_attrs: list[torch.fx.Node]) -> None:
        for node in get_attrs:
            feeds_dq = any(quant_ops.is_dequantize(u.target) for u in node.users)
            if feeds_dq and quant_ops.QCOM_QUANT_ATTRS not in node.meta:
                raise QnnPipelineError(
                    f"qnn_passes: in method '{self.method}', constant {node.name} feeds a "
                    "dequantize but has no QCOM quantization attributes: a pass rebuilt the "
                    "graph after AnnotateGetAttr (or AnnotateGetAttr is off). Make "
                    "AnnotateGetAttr run after that pass in dep_table."
                )
