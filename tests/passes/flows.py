"""Lowering a zoo case through the deprecated wrapper and through qnn_passes, under RecordingQnnBackend.

Both flows run for real (torch.export, to_edge, every QNN pass); only what needs the QNN SDK
is replaced by tests/doubles/qnn_backend.py's RecordingQnnBackend: the backend behind
QnnPartitioner (partition() records the handed program, delegates nothing) and the QNN
manager context. Records are cached per process because several tests read one case.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

import torch
from executorch.backends.qualcomm.serialization.qc_schema import (
    QcomChipset,
    QnnExecuTorchOptions,
    _soc_info_table,
)
from executorch.backends.qualcomm.serialization.qc_schema_serialize import option_to_flatbuffer
from executorch.backends.qualcomm.utils.utils import (
    generate_gpu_compiler_spec,
    generate_htp_compiler_spec,
    generate_lpai_compiler_spec,
    generate_qnn_executorch_compiler_spec,
    to_edge_transform_and_lower_to_qnn,
)
from executorch.exir import EdgeProgramManager, to_edge_transform_and_lower
from executorch.exir.backend.compile_spec_schema import CompileSpec
from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer
from qnn_migrate_tests.doubles.qnn_backend import RecordingQnnBackend
from qnn_migrate_tests.passes.zoo import BY_NAME, Case

from qnn_passes import (
    qnn_compile_config,
    qnn_export,
    qnn_manager_context,
    qnn_partitioners,
    qnn_transform_passes,
)


@functools.cache
def specs(backend: str = "htp") -> list[CompileSpec]:
    """Compiler specs for a backend variant, as a user would build them."""
    if backend == "htp":
        return generate_qnn_executorch_compiler_spec(
            soc_model=QcomChipset.SM8650,
            backend_options=generate_htp_compiler_spec(use_fp16=True),
        )
    if backend == "gpu":
        return generate_qnn_executorch_compiler_spec(
            soc_model=QcomChipset.SM8650, backend_options=generate_gpu_compiler_spec()
        )
    if backend == "lpai":
        # generate_qnn_executorch_compiler_spec asks the QNN SDK for its version before it
        # accepts LPAI; with no SDK here, build the same options without that gate.
        options = QnnExecuTorchOptions(
            _soc_info_table[QcomChipset.SM8850], generate_lpai_compiler_spec()
        )
        return [CompileSpec("qnn_compile_spec", option_to_flatbuffer(options))]
    raise ValueError(backend)


def method_names(case: Case) -> list[str]:
    model, _ = case.model()
    return list(model) if isinstance(model, dict) else ["forward"]


def inputs_by_method(case: Case) -> dict[str, tuple[torch.Tensor, ...]]:
    model, inputs = case.model()
    return dict(inputs) if isinstance(model, dict) else {"forward": inputs}


def eager(case: Case) -> dict[str, Any]:
    model, _ = case.model()
    # A copy: running a model with state (mutated buffers) must not change the cached one.
    model = copy.deepcopy(model)
    modules = model if isinstance(model, dict) else {"forward": model}
    with torch.no_grad():
        return {name: modules[name](*x) for name, x in inputs_by_method(case).items()}


def run_deprecated(case: Case, backend: str = "htp", **kwargs: Any) -> RecordingQnnBackend:
    """``to_edge_transform_and_lower_to_qnn`` under the double."""
    model, inputs = case.model()
    with RecordingQnnBackend() as qnn:
        to_edge_transform_and_lower_to_qnn(
            model,
            inputs,
            specs(backend),
            dynamic_shapes=case.dynamic_shapes,
            convert_linear_to_conv2d=case.convert_linear_to_conv2d,
            **kwargs,
        )
    return qnn


def run_migrated(
    case: Case,
    backend: str = "htp",
    *,
    edit_passes: Callable[[list[Any]], list[Any]] | None = None,
    **kwargs: Any,
) -> RecordingQnnBackend:
    """The qnn_passes API with the generic ``to_edge_transform_and_lower``, under the double.

    ``edit_passes`` may change each method's solved pass list (``RunQnnPasses.passes``), e.g.
    to stop before a pass; the QNN lift after it stays.
    """
    model, inputs = case.model()
    s = specs(backend)
    with RecordingQnnBackend() as qnn:
        programs = qnn_export(model, inputs, case.dynamic_shapes, compiler_specs=s)
        transform = qnn_transform_passes(
            programs, s, convert_linear_to_conv2d=case.convert_linear_to_conv2d, **kwargs
        )
        if edit_passes is not None:
            for run, _lift in transform.values() if isinstance(transform, dict) else [transform]:
                run.passes = edit_passes(run.passes)
        with qnn_manager_context(s, programs):
            to_edge_transform_and_lower(
                programs,
                transform_passes=transform,
                partitioner=qnn_partitioners(programs, s),
                compile_config=qnn_compile_config(),
            )
    return qnn


def run_canonical(
    case: Case, backend: str = "htp", *, strict: bool = True, **kwargs: Any
) -> RecordingQnnBackend:
    """The canonical flow, under the double: the user's own ``torch.export.export`` per method,
    then ``to_edge_transform_and_lower`` with qnn_passes' transform passes and partitioners."""
    model, inputs = case.model()
    s = specs(backend)
    modules = model if isinstance(model, dict) else {"forward": model}
    args = inputs if isinstance(model, dict) else {"forward": inputs}
    with RecordingQnnBackend() as qnn:
        exported = {
            name: torch.export.export(
                m, args[name], dynamic_shapes=case.dynamic_shapes, strict=strict
            )
            for name, m in modules.items()
        }
        programs: Any = exported if isinstance(model, dict) else exported["forward"]
        with qnn_manager_context(s, programs):
            to_edge_transform_and_lower(
                programs,
                transform_passes=qnn_transform_passes(
                    programs, s, convert_linear_to_conv2d=case.convert_linear_to_conv2d, **kwargs
                ),
                partitioner=qnn_partitioners(programs, s),
                compile_config=qnn_compile_config(),
            )
    return qnn


@functools.cache
def canonical_flow(name: str) -> RecordingQnnBackend:
    return run_canonical(BY_NAME[name])


@functools.cache
def deprecated(name: str) -> RecordingQnnBackend:
    return run_deprecated(BY_NAME[name])


@functools.cache
def migrated(name: str) -> RecordingQnnBackend:
    return run_migrated(BY_NAME[name])


def handed(record: RecordingQnnBackend, case: Case) -> dict[str, Any]:
    """``{method: program handed to the partitioner}``."""
    return record.programs(method_names(case))


def run_portable(programs: dict[str, Any], inputs: dict[str, tuple[Any, ...]]) -> dict[str, Any]:
    """Serialize ``programs`` to a .pte and run every method in ExecuTorch's portable runtime."""
    manager = EdgeProgramManager(
        {name: copy.deepcopy(p) for name, p in programs.items()},
        compile_config=qnn_compile_config(),
    )
    # The loaded module reads the .pte from this buffer and may return tensors in its planned
    # memory: keep the buffer alive while it runs, and copy the outputs out.
    buffer = manager.to_executorch().buffer
    module = _load_for_executorch_from_buffer(buffer)
    outputs = {
        name: [t.clone() for t in module.run_method(name, inputs[name])] for name in programs
    }
    del module
    del buffer
    return outputs


def serialize(programs: dict[str, Any]) -> Any:
    """The ExecutorchProgramManager for ``programs`` (its ``.buffer`` is the .pte)."""
    manager = EdgeProgramManager(
        {name: copy.deepcopy(p) for name, p in programs.items()},
        compile_config=qnn_compile_config(),
    )
    return manager.to_executorch()


def serialized_constants(executorch_program: Any) -> int:
    """Number of constant tensor values (tensors backed by constant data) in a .pte."""
    return sum(
        1
        for plan in executorch_program.executorch_program.execution_plan
        for v in plan.values
        if type(v.val).__name__ == "Tensor" and v.val.data_buffer_idx > 0
    )


def constant_bytes(program: Any) -> int:
    """Bytes of every constant input (parameters, buffers, lifted constants) of ``program``."""
    total = 0
    for spec in program.graph_signature.input_specs:
        if spec.target is None:
            continue
        value = program.state_dict.get(spec.target, program.constants.get(spec.target))
        if isinstance(value, torch.Tensor):
            total += value.numel() * value.element_size()
    return total
