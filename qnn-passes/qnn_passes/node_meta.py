"""What a node inserted by a pass inherits in its meta: provenance, a value, and QNN attributes.

QNN reads an activation's encoding (and ExecuTorch's QNN passes read other ``QCOM_*`` marks)
from the node that produces it. A helper op that only reshapes a tensor - the unsqueeze in
front of a canonicalized conv1d, the permutes around a linear turned conv2d - produces the
same values as its source, so it carries the source's QNN attributes; ExecuTorch's passes do
the same, and keeping that identical keeps lowered graphs identical. Provenance (stack trace,
module stack) comes from the op the helper serves.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

# Meta keys saying where a node came from.
PROVENANCE_META = ("stack_trace", "nn_module_stack", "source_fn_stack", "torch_fn", "from_node")


@functools.cache
def qnn_meta_keys() -> frozenset[str]:
    """Every ``QCOM_*`` meta key ExecuTorch's QNN backend defines."""
    from executorch.backends.qualcomm.utils import constants

    return frozenset(
        v for k, v in vars(constants).items() if k.startswith("QCOM_") and isinstance(v, str)
    )


def helper_meta(served: torch.fx.Node, val: Any, *, qnn_from: torch.fx.Node) -> dict[str, Any]:
    """Meta for a helper op inserted for ``served`` that passes on ``qnn_from``'s values."""
    meta = {k: served.meta[k] for k in PROVENANCE_META if k in served.meta}
    meta.update({k: v for k, v in qnn_from.meta.items() if k in qnn_meta_keys()})
    meta["val"] = val
    return meta
