"""BroadcastStaticOperands: an elementwise op computed from constants alone gets operands of its output's shape, which QNN folds right.

QNN 2.51's HTP evaluates ops whose inputs are all static (parameters, and what is computed from
parameters and constants only) while it prepares the graph, and its folding gets broadcast
operands wrong. Measured on the real compiler and simulator:

* ``ElementWisePower``: for some shapes only the first element is raised to the exponent and
  every other element to the power 0 (``p ** 2`` of a ``[4, 8]`` parameter came out as
  ``[p[0]**2, 1, 1, ...]``, 1.6 dB against eager; ``[8, 8]`` and ``[32, 8]`` were right). Weight
  normalization (wav2vec2's positional conv, ``weight_norm(dim=2)``: ``g * v / sum(|v| ** 2) **
  0.5`` of two parameters, computed on QNN every run) came out at 16 dB;
* ``(p * 2.0 - 1.0).sum(dims)``: the graph does not prepare at all ("Op ... preparation failed",
  then "Failed to generate Qnn context binary"; found by the semantics probes,
  tests/passes/arithmetic.py).

Every number operand is broadcast: LiftScalarOperands makes ``x * 2.0`` a ``mul`` by a 0-d
constant. With the operands at the output's shape both cases are right (measured on the same
shapes), so this pass gives them that shape: a constant operand is stored expanded, a computed
one is expanded by ``expand_copy``. The larger constant exists only while QNN prepares the
graph, which folds it away: the context binary keeps the folded result, as before.

Before / after (``p``: a ``[4, 8]`` parameter, ``c``: the 0-d exponent constant)::

    %y = aten.pow.Tensor_Tensor(%p, %c)                   # [4, 8] ** []
    # ->
    %c2 = get_attr[_qnn_static_operand_0]                # c expanded to [4, 8]
    %y = aten.pow.Tensor_Tensor(%p, %c2)

An op with an operand that is not static (an activation) is left as it is: QNN computes it at
run time, and broadcasts right. Quantized operands are left alone too (a new constant would
need encodings), and so are integer and bool operands (the failures were float arithmetic; an
``expand_copy`` of an integer index that ``triu``'s or ``select_scatter``'s mask computes is
not delegated, with the cast before it). Runs after FoldQDQ and before LayoutTransform (``pipeline.OWN_PASSES``), so
that LayoutTransform lays the new constants out as it does every other.
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
# QNN's elementwise ops with more than one tensor operand.
ELEMENTWISE = frozenset(
    {
        _aten.add.Tensor,
        _aten.sub.Tensor,
        _aten.mul.Tensor,
        _aten.div.Tensor,
        _aten.pow.Tensor_Tensor,
        _aten.maximum.default,
        _aten.minimum.default,
        _aten.where.self,
        _aten.eq.Tensor,
        _aten.ne.Tensor,
        _aten.lt.Tensor,
        _aten.le.Tensor,
        _aten.gt.Tensor,
        _aten.ge.Tensor,
    }
)
PREFIX = "_qnn_static_operand"


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


class BroadcastStaticOperands(ExportedProgramPassBase):
    """Give each elementwise op of static operands operands of its output's shape (see the module doc)."""

    def call(self, exported_program: ExportedProgram) -> ExportedProgramPassResult:
        ep = exported_program
        gm = ep.graph_module
        graph = gm.graph
        static = constant_derived(ep)
        modified = False
        for node in list(graph.nodes):
            if node.op != "call_function" or node.target not in ELEMENTWISE:
                continue
            operands = [a for a in node.args if isinstance(a, torch.fx.Node)]
            if len(operands) < 2 or not all(a in static for a in operands):
                continue
            if any(_quantized(a) for a in (node, *operands) if isinstance(a, torch.fx.Node)):
                continue
            if not all(a.meta["val"].dtype.is_floating_point for a in operands):
                continue  # integer and bool folds were right; an expand of one stays off QNN
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
