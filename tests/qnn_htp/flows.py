"""The lowering flows compared on real QNN, by name: each maps (model, inputs, specs) to an EdgeProgramManager.

* ``deprecated``: ExecuTorch's ``to_edge_transform_and_lower_to_qnn``;
* ``migrated``: ``qnn_passes``' API (``qnn_export``) with the generic ``to_edge_transform_and_lower``;
* ``canonical``: the same with the user's own ``torch.export.export`` (what ``qnn-migrate
  rewrite`` writes by default now; the harness test runs it through ExecuTorch's own tests);
* ``qnn_then_xnnpack``: examples/export_qnn_with_xnnpack.py's lowering, the canonical flow with
  ExecuTorch's XnnpackPartitioner after QNN's (one ``to_edge_transform_and_lower``).

Another flow is one more entry in :data:`FLOWS` (a function with the same signature); every
test and the benchmark pick flows by name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

Flow = Callable[..., Any]


def deprecated(
    model: Any,
    inputs: Any,
    specs: Any,
    *,
    dynamic_shapes: Any = None,
    convert_linear_to_conv2d: bool = False,
    **kwargs: Any,
) -> Any:
    from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn

    return to_edge_transform_and_lower_to_qnn(
        model,
        inputs,
        specs,
        dynamic_shapes=dynamic_shapes,
        convert_linear_to_conv2d=convert_linear_to_conv2d,
        **kwargs,
    )


def _lower_exported(
    programs: Any,
    specs: Any,
    *,
    convert_linear_to_conv2d: bool = False,
    skip_node_id_set: set[str] | None = None,
    skip_node_op_set: set[str] | None = None,
    skip_mutable_buffer: bool = False,
    constant_methods: dict[str, Any] | None = None,
) -> Any:
    """Exported program(s) -> ``to_edge_transform_and_lower`` with qnn_passes, as the README shows.

    ``migrated`` and ``canonical`` differ only in how they export; their other options land here.
    """
    from executorch.exir import to_edge_transform_and_lower

    from qnn_passes import (
        qnn_compile_config,
        qnn_manager_context,
        qnn_partitioners,
        qnn_transform_passes,
    )

    skips = {"skip_node_id_set": skip_node_id_set, "skip_node_op_set": skip_node_op_set}
    with qnn_manager_context(specs, programs):
        return to_edge_transform_and_lower(
            programs,
            transform_passes=qnn_transform_passes(
                programs, specs, convert_linear_to_conv2d=convert_linear_to_conv2d, **skips
            ),
            partitioner=qnn_partitioners(
                programs, specs, skip_mutable_buffer=skip_mutable_buffer, **skips
            ),
            constant_methods=constant_methods,
            compile_config=qnn_compile_config(),
        )


def migrated(
    model: Any,
    inputs: Any,
    specs: Any,
    *,
    dynamic_shapes: Any = None,
    **options: Any,
) -> Any:
    """``qnn_passes.qnn_export`` (strict export + ExecuTorch's export-stage passes), then to-edge."""
    from qnn_passes import qnn_export

    return _lower_exported(
        qnn_export(model, inputs, dynamic_shapes, compiler_specs=specs),
        specs,
        **options,
    )


def canonical(
    model: Any,
    inputs: Any,
    specs: Any,
    *,
    dynamic_shapes: Any = None,
    **options: Any,
) -> Any:
    """What ``qnn-migrate rewrite`` writes by default: the user's own ``torch.export.export``."""
    import torch
    from executorch.backends.qualcomm.utils.qnn_sdk_setup import setup_qnn_sdk

    setup_qnn_sdk()
    if isinstance(model, dict):
        shapes = dynamic_shapes or {}
        programs: Any = {
            name: torch.export.export(m, inputs[name], dynamic_shapes=shapes.get(name), strict=True)
            for name, m in model.items()
        }
    else:
        programs = torch.export.export(model, inputs, dynamic_shapes=dynamic_shapes, strict=True)
    return _lower_exported(
        programs,
        specs,
        **options,
    )


def qnn_then_xnnpack(
    model: Any,
    inputs: Any,
    specs: Any,
    *,
    dynamic_shapes: Any = None,
    convert_linear_to_conv2d: bool = False,
    skip_node_op_set: set[str] | None = None,
) -> Any:
    """The example's own function (loaded from its file, as a user runs it), so the tier tests
    the code the example shows."""
    if dynamic_shapes is not None or convert_linear_to_conv2d:
        raise ValueError("qnn_then_xnnpack: the example takes no dynamic shapes and no l2c")
    example = load_example("export_qnn_with_xnnpack")
    return example.lower_qnn_then_xnnpack(model, inputs, specs, skip_node_op_set=skip_node_op_set)


def load_example(name: str) -> Any:
    """examples/<name>.py as the module ``name`` (registered in sys.modules: strict export's
    dynamo imports the module of every global the traced forward reads)."""
    import importlib.util
    import sys

    if name in sys.modules:
        return sys.modules[name]
    path = ROOT / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


FLOWS: dict[str, Flow] = {
    "deprecated": deprecated,
    "migrated": migrated,
    "canonical": canonical,
    "qnn_then_xnnpack": qnn_then_xnnpack,
}
