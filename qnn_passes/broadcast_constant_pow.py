"""BroadcastConstantPow: a ``pow`` computed from constants alone gets operands of its output's shape, which QNN folds right.

QNN 2.51's HTP evaluates an ``ElementWisePower`` whose two inputs are both static (a
parameter, or computed from parameters and constants only) while it prepares the graph, and
it gets the broadcast wrong: for some shapes only the first element is raised to the exponent
and every other element to the power 0 (``p ** 2`` of a ``[4, 8]`` parameter came out as
``[p[0]**2, 1, 1, ...]``, 1.6 dB against eager; a ``[8, 8]`` one was right). Every migrated
``pow`` has a broadcast operand: LiftScalarOperands makes ``x ** 2.0`` a ``pow`` by a 0-d
constant. The case that matters is weight normalization (wav2vec2's positional conv,
``weight_norm(dim=2)``): the weight is ``g * v / (sum(|v| ** 2) ** 0.5)`` of two parameters,
computed on QNN every run, and came out at 16 dB. With both operands at the output's shape
QNN's folding is right (measured on the same shapes), so this pass gives them that shape:
a constant operand is stored expanded; a computed one is expanded by ``expand_copy``.

Before / after (``p``: a ``[4, 8]`` parameter, ``c``: the 0-d exponent constant)::

    %y = aten.pow.Tensor_Tensor(%p, %c)                   # [4, 8] ** []
    # ->
    %c2 = get_attr[_qnn_pow_operand_0]                   # c expanded to [4, 8]
    %y = aten.pow.Tensor_Tensor(%p, %c2)

A ``pow`` with an operand that is not static (an activation) is left as it is: QNN computes
it at run time, and broadcasts right. Quantized operands are left alone too (a new constant
would need encodings). Runs after FoldQDQ and before LayoutTransform (``pipeline.OWN_PASSES``),
so that LayoutTransform lays the new constants out as it does every other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportedProgramPassBase, ExportedProgramPassResult

from qnn_passes import constant_inputs
from qnn_passes.node_meta import helper_meta, qnn_meta_keys

if TYPE_CHECKING:
    from torch.export import ExportedProgram

_aten = exir_ops.edge.aten
POWS = (_aten.pow.Tensor_Tensor,)
PREFIX = "_qnn_pow_operand"


def constant_derived(ep: ExportedProgram) -> set[torch.fx.Node]:
    """The nodes of ``ep`` whose values depend on constants alone (parameters, unmutated
    buffers, lifted constants, get_attr tensors and what deterministic ops compute from them)."""
    found: set[torch.fx.Node] = set()
    for node in ep.graph.nodes:  # topological order: inputs first
        if node.op in ("get_attr", "placeholder"):
            if constant_inputs.is_constant(ep, node):
                found.add(node)
        elif (
            node.op == "call_function"
            and not node.is_impure()
            and all(arg in found for arg in node.all_input_nodes)
        ):
            found.add(node)
    return found


def _quantized(node: torch.fx.Node) -> bool:
    return any(key in node.meta for key in qnn_meta_keys() if "quant" in key)


class BroadcastConstantPow(ExportedProgramPassBase):
    """Give each ``pow`` of static operands operands of its output's shape (see the module doc)."""

    def call(self, exported_program: ExportedProgram) -> ExportedProgramPassResult:
        ep = exported_program
        gm = ep.graph_module
        graph = gm.graph
        static = constant_derived(ep)
        modified = False
        for node in list(graph.nodes):
            if node.op != "call_function" or node.target not in POWS:
                continue
            operands = node.args[:2]
            if not all(isinstance(a, torch.fx.Node) and a in static for a in operands):
                continue
            if any(_quantized(a) for a in (node, *operands) if isinstance(a, torch.fx.Node)):
                continue
            shape = list(node.meta["val"].shape)
            if not all(isinstance(s, int) for s in shape):
                continue
            for operand in dict.fromkeys(operands):
                assert isinstance(operand, torch.fx.Node)
                if list(operand.meta["val"].shape) == shape:
                    continue
                full = self._full(ep, node, operand, shape)
                node.replace_input_with(operand, full)
                constant_inputs.drop_if_unused(ep, operand)
                modified = True
        if modified:
            graph.lint()
            gm.recompile()
        return ExportedProgramPassResult(ep, modified)

    def _full(
        self, ep: ExportedProgram, user: torch.fx.Node, operand: torch.fx.Node, shape: list[int]
    ) -> torch.fx.Node:
        """``operand`` at ``shape``: a new constant if it is one, else an ``expand_copy``."""
        gm = ep.graph_module
        if constant_inputs.is_constant(ep, operand):
            value = constant_inputs.read(ep, operand).expand(shape).contiguous()
            anchor = user.prev if user.prev.op != "root" else operand
            constant = constant_inputs.add_get_attr(gm, value, PREFIX, after=anchor)
            constant.meta.update(helper_meta(user, constant.meta["val"], qnn_from=operand))
            return constant
        with gm.graph.inserting_before(user):
            expanded: torch.fx.Node = gm.graph.call_function(
                _aten.expand_copy.default, (operand, shape)
            )
        expanded.meta = helper_meta(user, operand.meta["val"].expand(shape), qnn_from=operand)
        return expanded
