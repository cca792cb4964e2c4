"""What a node inserted by a pass inherits in its meta: provenance from the op it serves, a value, an encoding."""

from __future__ import annotations

from typing import Any

import torch

from qnn_passes.quant_ops import QCOM_QUANT_ATTRS

# Meta keys saying where a node came from; an inserted helper op inherits them from the op
# it serves, never that op's QNN attributes (requantize maps, layout marks, ...).
PROVENANCE_META = ("stack_trace", "nn_module_stack", "source_fn_stack", "torch_fn", "from_node")


def helper_meta(
    served: torch.fx.Node, val: Any, *, encoding_from: torch.fx.Node | None = None
) -> dict[str, Any]:
    """Meta for a helper op (reshape, permute, ...) inserted for ``served``.

    ``encoding_from`` is the node whose quantization attributes the helper's output shares -
    the tensor it reshapes - because QNN reads an activation's encoding from its producer.
    """
    meta = {k: served.meta[k] for k in PROVENANCE_META if k in served.meta}
    meta["val"] = val
    if encoding_from is not None and QCOM_QUANT_ATTRS in encoding_from.meta:
        meta[QCOM_QUANT_ATTRS] = encoding_from.meta[QCOM_QUANT_ATTRS]
    return meta
