"""AnnotateGetAttr: (re)write the QNN quantization attributes of every get_attr constant.

Passes such as CanonicalizeConv and ConvertLinearToConv2d put replacement weights in
``get_attr`` nodes, and QNN reads a constant's encoding from ``meta[QCOM_QUANT_ATTRS]`` of the
constant node itself. Graph rebuilds (``ExportPass.call``, as in I64toI32 and LayoutTransform)
keep only ``val`` in a get_attr's meta, so the attributes are derived again here, from the
dequantize that consumes the constant::

    before:  w = get_attr[...]            (meta: val)
             dq = dequantize_per_channel(w, scales, zero_points, 0, -127, 127, int8)
    after:   w = get_attr[...]            (meta: val, quant_attrs={scales, zero_points, axis,
                                                   quant_min, quant_max, dtype, encoding, ...})

Scheduled after every pass that rebuilds the graph (the pipeline checks this).
**Limit:** the attributes can only be derived while each constant's ``get_attr -> dequantize``
chain is intact. A constant whose dequantize was folded away, or a rebuild after this pass,
leaves the constant without attributes; this pass cannot recover them (and says so by
reporting ``modified=False`` for such a node - nothing to derive from).

Fixes over ExecuTorch 1.5.1's pass of the same name: a get_attr with no users is fine; the
dequantize is looked for among all users, not only the first; two dequantizes of one constant
with different parameters raise instead of silently picking one; the pass calls
``super().__init__()``; ``modified`` is True only if some node's attributes changed.

Arguments are read by schema (per-tensor, per-channel and torchao affine lay them out
differently; see :mod:`qnn_passes.quant_ops`) from the program the pass runs on.
"""

from __future__ import annotations

from typing import Any

import torch
from executorch.backends.qualcomm.builders.utils import get_parameter
from executorch.exir.pass_base import ExportedProgramPassBase, ExportedProgramPassResult
from torch.export import ExportedProgram

from qnn_passes import quant_ops
from qnn_passes.errors import QnnPipelineError


def derive_attrs(ep: ExportedProgram, constant: torch.fx.Node) -> dict[str, Any] | None:
    """Quant attributes of ``constant`` from the dequantizes among its users; None if there is none."""
    found: list[tuple[torch.fx.Node, dict[str, Any]]] = []
    for user in constant.users:
        if quant_ops.is_dequantize(user.target) and user.args[0] is constant:
            found.append((user, quant_ops.quant_attrs(user, lambda n: get_parameter(n, ep))))
    if not found:
        return None
    first_dq, attrs = found[0]
    for dq, other in found[1:]:
        if not quant_ops.attrs_equal(attrs, other):
            raise QnnPipelineError(
                f"AnnotateGetAttr: constant {constant.name} is dequantized by {first_dq.name} "
                f"and {dq.name} with different parameters, but a QNN tensor has one encoding; "
                "give each use its own constant."
            )
    return attrs


class AnnotateGetAttr(ExportedProgramPassBase):
    """Write ``QCOM_QUANT_ATTRS`` on get_attr constants from their dequantize (see module doc)."""

    def __init__(self) -> None:
        super().__init__()

    def call(self, exported_program: ExportedProgram) -> ExportedProgramPassResult:
        modified = False
        for node in exported_program.graph_module.graph.nodes:
            if node.op != "get_attr":
                continue
            attrs = derive_attrs(exported_program, node)
            if attrs is None:
                continue
            current = node.meta.get(quant_ops.QCOM_QUANT_ATTRS)
            if current is None or not quant_ops.attrs_equal(current, attrs):
                node.meta[quant_ops.QCOM_QUANT_ATTRS] = attrs
                modified = True
        return ExportedProgramPassResult(exported_program, modified)
