"""QNN's export-stage passes at the to-edge stage: which pass went where, and the passes that run.

ExecuTorch 1.5.1's QNN flow runs 19 passes (plus DecomposeReciprocal on HTP/GPU/LPAI and
DecomposeHardsigmoid on LPAI) on the ATen program between ``torch.export`` and to-edge
(``QnnPassManager.get_export_passes()``). In the canonical flow -
``to_edge_transform_and_lower(torch.export.export(model, inputs), ...)`` - they have no place
to run, so each is accounted for here (``EXPORT_STAGE``; :mod:`qnn_passes.executorch_compat`
compares its names with the installed ExecuTorch's lists before lowering) in one of two states:

* ``migrated``: this package's implementation runs on the edge program at the start of
  ``qnn_transform_passes`` (:func:`export_stage_passes`); where to-edge would decompose the op
  into something QNN cannot run, ``qnn_partitioners`` keeps it whole (:func:`keep_whole`);
* ``unnecessary``: to-edge's own decomposition already gives ops QNN builds (after
  LiftScalarOperands has turned number operands into tensors).

:class:`CheckExportStage` ends the list: an op that one of these passes had to rewrite but
could not (``cdist`` with p != 2, a symbolic size) raises :class:`QnnConfigError` naming the
op, the pass and the fallback (``qnn_export``), instead of lowering to another graph.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportPass
from torch.fx.passes.infra.pass_base import PassResult

from qnn_passes.decompose_as_strided import DecomposeAsStrided
from qnn_passes.decompose_binary_alpha import DecomposeBinaryAlpha
from qnn_passes.decompose_cdist import DecomposeCDist
from qnn_passes.decompose_expm1 import DecomposeExpM1
from qnn_passes.decompose_hardsigmoid import DecomposeHardsigmoid
from qnn_passes.decompose_linalg_vector_norm import DecomposeLinalgVectorNorm
from qnn_passes.decompose_pdist import DecomposePDist
from qnn_passes.decompose_reciprocal import DecomposeReciprocal
from qnn_passes.decompose_roll import DecomposeRoll
from qnn_passes.decompose_var import DecomposeVar
from qnn_passes.errors import QnnConfigError
from qnn_passes.insert_reshape_for_reduce_ops import InsertReshapeForReduceOps
from qnn_passes.lift_scalar_operands import LiftScalarOperands

if TYPE_CHECKING:
    import torch

MIGRATED = "migrated"
UNNECESSARY = "unnecessary"


@dataclass(frozen=True)
class ExportStagePass:
    """Where one of ExecuTorch's export-stage passes went in the canonical flow."""

    name: str
    state: str  # MIGRATED or UNNECESSARY
    runs_as: type[ExportPass] | None  # our implementation, when migrated
    why: str
    variants: tuple[str, ...] = ("base", "htp", "gpu", "lpai")


EXPORT_STAGE: tuple[ExportStagePass, ...] = (
    ExportStagePass(
        "DecomposeReciprocal",
        MIGRATED,
        DecomposeReciprocal,
        "reciprocal -> div(1, x), as the HTP/GPU/LPAI export stage",
        ("htp", "gpu", "lpai"),
    ),
    ExportStagePass(
        "DecomposeHardsigmoid",
        MIGRATED,
        DecomposeHardsigmoid,
        "LPAI has no hardsigmoid; QNN keeps the op whole through to-edge",
        ("lpai",),
    ),
    ExportStagePass(
        "DecomposeAsStrided",
        MIGRATED,
        DecomposeAsStrided,
        "to-edge leaves as_strided_copy, which QNN has no builder for",
    ),
    ExportStagePass(
        "DecomposeBinaryAlpha",
        MIGRATED,
        DecomposeBinaryAlpha,
        "to-edge keeps add/sub's alpha, which QNN's builders ignore",
    ),
    ExportStagePass(
        "DecomposeCDist",
        MIGRATED,
        DecomposeCDist,
        "to-edge leaves _cdist_forward",
    ),
    ExportStagePass(
        "DecomposePDist",
        MIGRATED,
        DecomposePDist,
        "to-edge leaves _pdist_forward",
    ),
    ExportStagePass(
        "DecomposePad",
        UNNECESSARY,
        None,
        "torch.export already gives reflection/replication/constant pads that to-edge "
        "decomposes into ops QNN builds; the graphs are identical",
    ),
    ExportStagePass(
        "DecomposeScaledDotProductAttention",
        UNNECESSARY,
        None,
        "to-edge decomposes it into permute/matmul/mul/_safe_softmax, all QNN ops",
    ),
    ExportStagePass(
        "DecomposeRoll",
        MIGRATED,
        DecomposeRoll,
        "to-edge would give arange/fmod/index_select; roll is kept whole and sliced here",
    ),
    ExportStagePass(
        "DecomposeSelectScatter",
        UNNECESSARY,
        None,
        "to-edge decomposes it into arange/eq/where/expand, all QNN ops",
    ),
    ExportStagePass(
        "DecomposeThreshold",
        UNNECESSARY,
        None,
        "to-edge decomposes it into le/where; the scalar is lifted by LiftScalarOperands",
    ),
    ExportStagePass(
        "DecomposeTriu",
        UNNECESSARY,
        None,
        "to-edge decomposes it into arange/sub/ge/where, the same ops as upstream's pass",
    ),
    ExportStagePass(
        "DecomposeLinalgVectorNorm",
        MIGRATED,
        DecomposeLinalgVectorNorm,
        "to-edge's own decomposition over all elements leaves sum(x, dim=None), which QNN's "
        "reduce builder cannot read; the norm is kept whole and decomposed here",
    ),
    ExportStagePass(
        "DecomposeExpM1",
        MIGRATED,
        DecomposeExpM1,
        "to-edge leaves expm1",
    ),
    ExportStagePass(
        "DecomposeFill",
        UNNECESSARY,
        None,
        "to-edge gives full_like, which QNN builds",
    ),
    ExportStagePass(
        "DecomposeVar",
        MIGRATED,
        DecomposeVar,
        "to-edge leaves var.correction",
    ),
    ExportStagePass(
        "DecomposeFloorDivide",
        UNNECESSARY,
        None,
        "QNN keeps floor_divide whole through to-edge and builds it; the graphs are identical",
    ),
    ExportStagePass(
        "DecomposeWrapWithAutocast",
        UNNECESSARY,
        None,
        "to-edge inlines the wrap_with_autocast higher-order op",
    ),
    ExportStagePass(
        "ConvertSquareToPow",
        UNNECESSARY,
        None,
        "to-edge gives pow.Tensor_Scalar, which LiftScalarOperands makes pow.Tensor_Tensor",
    ),
    ExportStagePass(
        "LiftConstantScalarOperands",
        MIGRATED,
        LiftScalarOperands,
        "QNN's builders take tensor operands",
    ),
    ExportStagePass(
        "InsertReshapeForReduceOps",
        MIGRATED,
        InsertReshapeForReduceOps,
        "QNN's argmax/argmin need an axis",
    ),
)
BY_NAME: Mapping[str, ExportStagePass] = {p.name: p for p in EXPORT_STAGE}

# Order at the start of qnn_transform_passes: decompositions first (they create number
# operands), then the lift, then the reshape for reductions, then the check.
_ORDER = (
    "DecomposeAsStrided",
    "DecomposeBinaryAlpha",
    "DecomposeCDist",
    "DecomposePDist",
    "DecomposeRoll",
    "DecomposeLinalgVectorNorm",
    "DecomposeExpM1",
    "DecomposeVar",
    "DecomposeReciprocal",
    "DecomposeHardsigmoid",
    "LiftConstantScalarOperands",
    "InsertReshapeForReduceOps",
)


def keep_whole() -> list[torch._ops.OpOverload]:
    """ATen ops to-edge must not decompose so that a migrated pass sees them (``ops_to_not_decompose``)."""
    import torch

    return [torch.ops.aten.roll.default, torch.ops.aten.linalg_vector_norm.default]


def export_stage_passes(variant: str, *, method: str = "forward") -> list[ExportPass]:
    """The migrated export-stage passes for ``variant``, in order, ending with :class:`CheckExportStage`."""
    passes: list[ExportPass] = []
    for name in _ORDER:
        entry = BY_NAME[name]
        if variant in entry.variants and entry.runs_as is not None:
            passes.append(entry.runs_as())
    passes.append(CheckExportStage(variant, method=method))
    return passes


def _alpha(node: torch.fx.Node) -> bool:
    return bool(node.kwargs.get("alpha", 1) != 1)


def _no_dim(node: torch.fx.Node) -> bool:
    return (node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")) is None


def _always(node: torch.fx.Node) -> bool:
    return True


def _left_behind(variant: str) -> dict[Any, tuple[str, Any]]:
    """Edge op -> (the export-stage pass that rewrites it, a test whether a node still needs it)."""
    a = exir_ops.edge.aten
    table: dict[Any, tuple[str, Any]] = {
        a.as_strided_copy.default: ("DecomposeAsStrided", _always),
        a.add.Tensor: ("DecomposeBinaryAlpha", _alpha),
        a.sub.Tensor: ("DecomposeBinaryAlpha", _alpha),
        a._cdist_forward.default: ("DecomposeCDist", _always),
        a._pdist_forward.default: ("DecomposePDist", _always),
        a.roll.default: ("DecomposeRoll", _always),
        a.linalg_vector_norm.default: ("DecomposeLinalgVectorNorm", _always),
        a.expm1.default: ("DecomposeExpM1", _always),
        a.var.correction: ("DecomposeVar", _always),
        a.var.dim: ("DecomposeVar", _always),
        a.argmax.default: ("InsertReshapeForReduceOps", _no_dim),
        a.argmin.default: ("InsertReshapeForReduceOps", _no_dim),
    }
    if variant in BY_NAME["DecomposeReciprocal"].variants:
        table[a.reciprocal.default] = ("DecomposeReciprocal", _always)
    if variant in BY_NAME["DecomposeHardsigmoid"].variants:
        table[a.hardsigmoid.default] = ("DecomposeHardsigmoid", _always)
    return table


def pending(graph_module: torch.fx.GraphModule, variant: str) -> list[tuple[str, str, str]]:
    """``(node, op, pass)`` for every node an export-stage pass of ``variant`` still has to rewrite."""
    table = _left_behind(variant)
    found = []
    for node in graph_module.graph.nodes:
        if node.op != "call_function":
            continue
        entry = table.get(node.target)
        if entry is None and "autocast" in str(node.target):
            entry = ("DecomposeWrapWithAutocast", _always)
        if entry is not None and entry[1](node):
            found.append((node.name, str(node.target), entry[0]))
    return found


class CheckExportStage(ExportPass):
    """Refuse a program in which an op an export-stage pass must rewrite is still present."""

    def __init__(self, variant: str, *, method: str = "forward") -> None:
        super().__init__()
        self.variant = variant
        self.method = method

    def call(self, graph_module: torch.fx.GraphModule) -> PassResult:
        for node, op, needed in pending(graph_module, self.variant):
            raise QnnConfigError(
                f"qnn_transform_passes: method '{self.method}' has {op} (node "
                f"'{node}'), which QNN's export-stage pass {needed} must rewrite, "
                "but the to-edge version of that pass cannot rewrite this case (e.g. "
                "another norm than 2 or a symbolic size). Lower this method the old "
                "way: programs = qnn_export(model, example_inputs, compiler_specs=...), "
                "then the same to_edge_transform_and_lower call."
            )
        return PassResult(graph_module, False)
