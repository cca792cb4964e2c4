"""QnnEdgePartitioner: ExecuTorch's QnnPartitioner, keeping whole the ATen ops the migrated export-stage passes rewrite.

``to_edge_transform_and_lower`` asks every partitioner which ops to keep out of its ATen
decomposition (``ops_to_not_decompose``). QNN's answer is ``get_skip_decomp_table()`` with
its filter; this subclass adds :func:`qnn_passes.export_stage.keep_whole` (``aten.roll``,
``aten.linalg_vector_norm``), which to-edge would otherwise decompose into ops QNN cannot run,
so that DecomposeRoll and DecomposeLinalgVectorNorm see them on the edge program. Partitioning itself is QnnPartitioner's, unchanged;
nothing in ExecuTorch is patched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from executorch.backends.qualcomm.partition.qnn_partitioner import QnnPartitioner

from qnn_passes.export_stage import keep_whole

if TYPE_CHECKING:
    import torch
    from torch.export import ExportedProgram


class QnnEdgePartitioner(QnnPartitioner):
    """QnnPartitioner whose ``ops_to_not_decompose`` also keeps the ops of the migrated passes."""

    def ops_to_not_decompose(
        self, ep: ExportedProgram
    ) -> tuple[list[torch._ops.OpOverload], Callable[[torch.fx.Node], bool] | None]:
        ops, qnn_filter = super().ops_to_not_decompose(ep)
        ours = [op for op in keep_whole() if op not in ops]

        def keep(node: torch.fx.Node) -> bool:
            if node.target in ours:
                return True
            return qnn_filter(node) if qnn_filter is not None else True

        return [*ops, *ours], keep
