"""Lowering helpers shared by this project's export scripts.

ExecuTorch's QNN backend is optional here: without it, the helpers raise a clear error.
"""

from __future__ import annotations

import logging

try:
    import executorch.backends.qualcomm.utils.utils as qnn_utils
    from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn

    HAS_QNN = True
except ImportError:
    HAS_QNN = False

logger = logging.getLogger(__name__)


def _require_qnn() -> None:
    if not HAS_QNN:
        raise RuntimeError("this helper needs executorch built with the QNN backend")


def lower_one(model, example_inputs, compiler_specs, *, etrecord=False):
    """Lower one module; returns the EdgeProgramManager."""
    _require_qnn()
    logger.info("lowering %s", type(model).__name__)
    return to_edge_transform_and_lower_to_qnn(
        model, example_inputs, compiler_specs, generate_etrecord=etrecord
    )


def lower_each(models, example_inputs, soc, backend_options):
    """Lower several independent modules with the same compiler specs."""
    _require_qnn()
    specs = qnn_utils.generate_qnn_executorch_compiler_spec(
        soc_model=soc, backend_options=backend_options
    )
    return [
        qnn_utils.to_edge_transform_and_lower_to_qnn(model, example_inputs, specs)
        for model in models
    ]


def lower_and_save(named_models, example_inputs, compiler_specs, out_dir):
    """Lower every model and write it next to the others."""
    _require_qnn()
    for name, model in named_models.items():
        try:
            program = to_edge_transform_and_lower_to_qnn(
                model, example_inputs, compiler_specs
            ).to_executorch()
        except RuntimeError:
            logger.exception("could not lower %s", name)
            continue
        with open(f"{out_dir}/{name}.pte", "wb") as f:
            program.write_to_file(f)
