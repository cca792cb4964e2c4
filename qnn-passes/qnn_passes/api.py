"""The lowering API that replaces ``to_edge_transform_and_lower_to_qnn`` with the generic ExecuTorch call.

::

    programs = qnn_export(model, example_inputs, dynamic_shapes=None)
    with qnn_manager_context(compiler_specs, programs):
        edge = to_edge_transform_and_lower(
            programs,
            transform_passes=qnn_transform_passes(programs, compiler_specs),
            partitioner=qnn_partitioners(programs, compiler_specs),
            compile_config=qnn_compile_config(),
        )

A model (or program) that is not a dict is the single method "forward" and gets single values
back (a program, a list of passes, a list of partitioners); a dict of methods gets dicts.
Per-method arguments follow the wrapper's rule (:mod:`qnn_passes.methods`).

Where this differs from the wrapper, on purpose:

* ``passes_job`` and ``dep_table`` are copied, never mutated (the wrapper switches
  ``ConvertLinearToConv2d`` on in the caller's dict and writes the program into its kwargs);
* compiler specs keyed by a method that does not exist, a pass table keyed by unknown method
  names, an unknown pass, a cycle in ``dep_table`` raise :class:`QnnConfigError` naming the
  method and the problem;
* constants are lifted inside the QNN passes (:class:`LiftQnnConstants`), and weights the
  passes replace do not stay behind as unused program inputs;
* the AMD MKLDNN guard is applied by ``qnn_manager_context`` (where a backend starts and the
  lowering runs) rather than at export, which runs no real convolution; ``qnn_export``
  sets up the QNN SDK first, as the wrapper does.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, overload

from qnn_passes import executorch_compat, export_stage, patched_passes, pipeline, static_shapes
from qnn_passes.errors import QnnConfigError, QnnSdkMissingError
from qnn_passes.lift_qnn_constants import LiftQnnConstants
from qnn_passes.methods import (
    as_methods,
    method_names,
    per_method,
    per_method_specs,
    per_method_table,
)
from qnn_passes.run_qnn_passes import RunQnnPasses

if TYPE_CHECKING:
    from executorch.backends.qualcomm._passes.qnn_pass_manager import QnnPassManager
    from executorch.backends.qualcomm.serialization.qc_schema import (
        QnnExecuTorchBackendType,
        QnnExecuTorchOptions,
    )
    from executorch.exir import EdgeCompileConfig
    from executorch.exir.backend.compile_spec_schema import CompileSpec
    from executorch.exir.pass_base import ExportedProgramPassBase
    from torch import nn
    from torch.export import ExportedProgram

    from qnn_passes.qnn_partitioner import QnnEdgePartitioner

    Specs: TypeAlias = list[CompileSpec]
    # One list of compile specs for every method, or one per method.
    CompilerSpecs: TypeAlias = Specs | Mapping[str, Specs]
    # What every argument "per method" can be: one value for all, or a dict keyed by method.
    Programs: TypeAlias = ExportedProgram | Mapping[str, ExportedProgram]
    # ExecuTorch's pass tables (QnnPassManager.get_capture_program_passes() and
    # get_passes_dependency_for_capture_program()), shared or keyed by method.
    PassesJob: TypeAlias = (
        Mapping[type, Mapping[str, object]] | Mapping[str, Mapping[type, Mapping[str, object]]]
    )
    DepTable: TypeAlias = (
        Mapping[type, Sequence[type]] | Mapping[str, Mapping[type, Sequence[type]]]
    )
    TransformPasses: TypeAlias = list[ExportedProgramPassBase]

R = TypeVar("R")

# Key in an exported program's graph_module.meta: the export-stage passes qnn_export ran.
EXPORT_PASSES_META = "qnn_passes.export_passes"
# The QNN SDK release ExecuTorch 1.5.1's QNN backend is built against.
QNN_SDK_RELEASE = "QAIRT 2.37"
# Backends qnn_passes lowers to (ExecuTorch defines pass managers for exactly these).
LOWERABLE_VARIANTS = ("htp", "gpu", "lpai")
_BACKEND_LIBRARIES = {"htp": "QnnHtp", "gpu": "QnnGpu", "lpai": "QnnLpai", "dsp": "QnnDsp"}


def _options(specs: Specs) -> QnnExecuTorchOptions:
    from executorch.backends.qualcomm.partition.utils import generate_qnn_executorch_option
    from executorch.backends.qualcomm.serialization.qc_schema_serialize import (
        flatbuffer_to_option,
    )

    options: QnnExecuTorchOptions = flatbuffer_to_option(generate_qnn_executorch_option(specs))
    return options


def backend_of(specs: Specs) -> QnnExecuTorchBackendType:
    """The QnnExecuTorchBackendType that ``specs`` select."""
    backend: QnnExecuTorchBackendType = _options(specs).backend_options.backend_type
    return backend


def variant_of(backend_type: QnnExecuTorchBackendType) -> str:
    """Pipeline variant for a backend type: htp/gpu/lpai, else "base" (as ExecuTorch falls back)."""
    name = str(backend_type)
    return name if name in pipeline.VARIANTS else "base"


def _pass_manager_cls(backend_type: QnnExecuTorchBackendType) -> type[QnnPassManager]:
    from executorch.backends.qualcomm._passes.qnn_pass_manager import get_qnn_pass_manager_cls

    return get_qnn_pass_manager_cls(backend_type)


def _default_backend() -> QnnExecuTorchBackendType:
    from executorch.backends.qualcomm.serialization.qc_schema import QnnExecuTorchBackendType

    return QnnExecuTorchBackendType.kHtpBackend


def _check_debugger(specs: Mapping[str, Specs], is_dict: bool, where: str) -> None:
    # Intermediate tensor dumps key their output by debug handle, which collide across methods.
    if not is_dict or len(specs) == 1:
        return
    dumping = [name for name, s in specs.items() if _options(s).dump_intermediate_outputs]
    if dumping:
        raise QnnConfigError(
            f"{where}: compiler specs for method(s) {dumping} enable dump_intermediate_outputs, "
            f"which supports one method only, but there are {len(specs)} ({list(specs)}). "
            "Lower one method at a time while dumping intermediate outputs."
        )


@overload
def qnn_export(
    model: nn.Module,
    example_inputs: tuple[object, ...],
    dynamic_shapes: object = None,
    *,
    compiler_specs: CompilerSpecs | None = None,
) -> ExportedProgram: ...
@overload
def qnn_export(
    model: Mapping[str, nn.Module],
    example_inputs: tuple[object, ...] | Mapping[str, tuple[object, ...]],
    dynamic_shapes: object = None,
    *,
    compiler_specs: CompilerSpecs | None = None,
) -> dict[str, ExportedProgram]: ...
def qnn_export(
    model: nn.Module | Mapping[str, nn.Module],
    example_inputs: tuple[object, ...] | Mapping[str, tuple[object, ...]],
    dynamic_shapes: object = None,
    *,
    compiler_specs: CompilerSpecs | None = None,
) -> ExportedProgram | dict[str, ExportedProgram]:
    """``torch.export`` (strict) each method and run QNN's export-stage passes on it.

    Args:
        model: an ``nn.Module``/``GraphModule``, or a dict of them keyed by method name.
        example_inputs: a tuple of inputs, or a dict of tuples keyed by method name.
        dynamic_shapes: as for ``torch.export.export``, or a dict keyed by method name.
        compiler_specs: optional; selects the backend whose export-stage passes run
            (HTP's when omitted; LPAI's differ, so pass the specs when lowering to LPAI).

    Returns an ExportedProgram, or a dict of them for a dict of methods.
    """
    from executorch.backends.qualcomm.utils.qnn_sdk_setup import setup_qnn_sdk

    # As the wrapper does, before any tracing: setting up the SDK may download one and
    # re-execute the interpreter, which would throw away a model already traced.
    setup_qnn_sdk()
    import torch

    models = as_methods(model)
    names = list(models)
    inputs = per_method(example_inputs, names)
    shapes = per_method(dynamic_shapes, names)
    specs = per_method_specs(compiler_specs, names) if compiler_specs is not None else None
    if specs is not None:
        _check_debugger(specs, isinstance(model, dict), "qnn_export")

    programs: dict[str, ExportedProgram] = {}
    for name, module in models.items():
        if inputs[name] is None:
            raise QnnConfigError(
                f"qnn_export: no example inputs for method '{name}'; pass a tuple, or a dict "
                f"of tuples keyed by {names}."
            )
        try:
            program = torch.export.export(
                module, inputs[name], dynamic_shapes=shapes[name], strict=True
            )
        except Exception as err:
            err.add_note(f"qnn_export: while exporting method '{name}' (strict=True)")
            raise
        programs[name] = run_export_passes(program, specs[name] if specs is not None else None)
    return programs if isinstance(model, dict) else programs[names[0]]


def run_export_passes(
    program: ExportedProgram, compiler_specs: Specs | None = None
) -> ExportedProgram:
    """QNN's export-stage passes on one exported program (what qnn_export runs after tracing).

    These passes are not migrated to the to-edge stage yet, so they run here, through
    ExecuTorch's own ``transform_for_export_pipeline`` of the backend's pass manager; the
    program is marked with the passes that ran, which ``qnn_transform_passes`` checks.
    """
    backend = backend_of(compiler_specs) if compiler_specs is not None else _default_backend()
    manager = _pass_manager_cls(backend)()
    program = manager.transform_for_export_pipeline(program)
    program.graph_module.meta[EXPORT_PASSES_META] = _export_pass_names(backend)
    return program


def _export_pass_names(backend: QnnExecuTorchBackendType) -> tuple[str, ...]:
    """Names of ExecuTorch's export-stage passes for ``backend``, in order."""
    passes: list[type] = _pass_manager_cls(backend).get_export_passes()  # type: ignore[no-untyped-call]
    return tuple(p.__name__ for p in passes)


def _check_exported(name: str, program: ExportedProgram, backend: QnnExecuTorchBackendType) -> bool:
    """True if qnn_export ran QNN's export-stage passes on ``program`` (for this backend)."""
    needed = _export_pass_names(backend)
    ran = program.graph_module.meta.get(EXPORT_PASSES_META)
    if ran is None:
        return False
    if tuple(ran) != needed:
        missing = [p for p in needed if p not in ran]
        raise QnnConfigError(
            f"qnn_transform_passes: method '{name}' was exported for another QNN backend: its "
            f"compiler specs select {variant_of(backend)}, whose export stage also runs "
            f"{missing or 'a different pass list'}. Call qnn_export(..., "
            "compiler_specs=compiler_specs) with the same specs, or pass the program straight "
            "from torch.export.export."
        )
    return True


def _variant(specs: Specs, name: str, where: str) -> tuple[QnnExecuTorchBackendType, str]:
    """(backend type, pipeline variant) of one method's specs; QnnConfigError if not HTP/GPU/LPAI."""
    backend = backend_of(specs)
    variant = variant_of(backend)
    if variant not in LOWERABLE_VARIANTS:
        raise QnnConfigError(
            f"{where}: the compiler specs of method '{name}' select the QNN backend "
            f"'{backend}', which qnn_passes does not lower to; build them with "
            "generate_htp_compiler_spec, generate_gpu_compiler_spec or "
            f"generate_lpai_compiler_spec (backends {list(LOWERABLE_VARIANTS)})."
        )
    return backend, variant


def _check_job(passes_job: object, variant: str, name: str) -> None:
    """Refuse a passes_job naming one of ExecuTorch's export-stage passes this variant has no to-edge slot for."""
    if not isinstance(passes_job, Mapping):
        return
    to_edge = {n for n, _ in pipeline.ACTIVATIONS[variant]}
    for key in passes_job:
        label = getattr(key, "__name__", None)
        module = getattr(key, "__module__", "")
        entry = export_stage.BY_NAME.get(label) if isinstance(label, str) else None
        if entry is None or label in to_edge or module.startswith("qnn_passes"):
            continue
        where = (
            f"it runs as {entry.runs_as.__module__}.{entry.runs_as.__name__} at the start of "
            "the to-edge stage"
            if entry.runs_as is not None
            else f"to-edge's own decomposition makes it unnecessary ({entry.why})"
        )
        raise QnnConfigError(
            f"qnn_transform_passes: passes_job for method '{name}' names {module}.{label}, one "
            f"of QNN's export-stage passes; in the canonical flow {where}, for every program "
            "not made by qnn_export. Remove it from passes_job."
        )


@overload
def qnn_transform_passes(
    programs: ExportedProgram,
    compiler_specs: CompilerSpecs,
    passes_job: PassesJob | None = None,
    dep_table: DepTable | None = None,
    skip_node_id_set: set[str] | None = None,
    skip_node_op_set: set[str] | None = None,
    convert_linear_to_conv2d: bool = False,
) -> TransformPasses: ...
@overload
def qnn_transform_passes(
    programs: Mapping[str, ExportedProgram],
    compiler_specs: CompilerSpecs,
    passes_job: PassesJob | None = None,
    dep_table: DepTable | None = None,
    skip_node_id_set: set[str] | None = None,
    skip_node_op_set: set[str] | None = None,
    convert_linear_to_conv2d: bool = False,
) -> dict[str, TransformPasses]: ...
def qnn_transform_passes(
    programs: Programs,
    compiler_specs: CompilerSpecs,
    passes_job: PassesJob | None = None,
    dep_table: DepTable | None = None,
    skip_node_id_set: set[str] | None = None,
    skip_node_op_set: set[str] | None = None,
    convert_linear_to_conv2d: bool = False,
) -> TransformPasses | dict[str, TransformPasses]:
    """The QNN to-edge transform passes for each method: ``[RunQnnPasses, LiftQnnConstants]``.

    :class:`RunQnnPasses` runs the solved pipeline (``.passes``: ExecuTorch's QNN passes with
    this package's CanonicalizeConv, ConvertLinearToConv2d and AnnotateGetAttr in place of
    upstream's) as one pass; :class:`LiftQnnConstants` then lifts the constants they created.

    ``passes_job``/``dep_table`` are ExecuTorch-style tables (from
    ``QnnPassManager.get_capture_program_passes()`` /
    ``get_passes_dependency_for_capture_program()``), per method or shared; ExecuTorch's
    CanonicalizeConv, ConvertLinearToConv2d and AnnotateGetAttr in them run as this package's
    implementations. Returns that list, or a dict of lists for a dict of programs.

    Raises :class:`QnnConfigError` if the installed ExecuTorch's QNN pass lists are not the
    ones this package knows (:mod:`qnn_passes.executorch_compat`, checked once per process),
    or if a method was exported with dynamic sizes, which QNN cannot lower
    (:mod:`qnn_passes.static_shapes`: the message says how to lower one method per size).
    """
    progs = as_methods(programs)
    names = list(progs)
    specs = per_method_specs(compiler_specs, names)
    _check_debugger(specs, isinstance(programs, dict), "qnn_transform_passes")
    jobs = per_method_table(passes_job, names, what="passes_job")
    tables = per_method_table(dep_table, names, what="dep_table")
    annotate_get_attr = pipeline.resolve(pipeline.REANNOTATES_GET_ATTR)

    result: dict[str, TransformPasses] = {}
    for name in names:
        backend, variant = _variant(specs[name], name, "qnn_transform_passes")
        static_shapes.check_static(progs[name], name)
        _check_job(jobs[name], variant, name)
        # A program from qnn_export (or marked by older code that ran ExecuTorch's export
        # passes through it) has had them; running the migrated ones again is skipped.
        exported = _check_exported(name, progs[name], backend)
        patched_passes.refuse_ignored_patches(backend, exported=exported, method=name)
        # Before the tables are resolved against ExecuTorch: its passes must be the ones
        # qnn_passes knows (the export-stage ones only if they did not run already).
        executorch_compat.require(variant, method=name, export_stage_needed=not exported)
        solved = pipeline.plan(
            variant,
            jobs[name],
            tables[name],
            convert_linear_to_conv2d=convert_linear_to_conv2d,
            method=name,
        )
        passes = pipeline.instantiate(
            solved,
            program=progs[name],
            compiler_specs=specs[name],
            skip_node_id_set=skip_node_id_set,
            skip_node_op_set=skip_node_op_set,
        )
        if not exported:
            passes = [*export_stage.export_stage_passes(variant, method=name), *passes]
        result[name] = [
            RunQnnPasses(passes, method=name),
            LiftQnnConstants(
                check_quant_attrs=any(p.cls is annotate_get_attr for p in solved.active),
                method=name,
            ),
        ]
    return result if isinstance(programs, dict) else result[names[0]]


@overload
def qnn_partitioners(
    programs: ExportedProgram,
    compiler_specs: CompilerSpecs,
    skip_node_id_set: set[str] | None = None,
    skip_node_op_set: set[str] | None = None,
    skip_mutable_buffer: bool = False,
) -> list[QnnEdgePartitioner]: ...
@overload
def qnn_partitioners(
    programs: Mapping[str, ExportedProgram],
    compiler_specs: CompilerSpecs,
    skip_node_id_set: set[str] | None = None,
    skip_node_op_set: set[str] | None = None,
    skip_mutable_buffer: bool = False,
) -> dict[str, list[QnnEdgePartitioner]]: ...
def qnn_partitioners(
    programs: Programs,
    compiler_specs: CompilerSpecs,
    skip_node_id_set: set[str] | None = None,
    skip_node_op_set: set[str] | None = None,
    skip_mutable_buffer: bool = False,
) -> list[QnnEdgePartitioner] | dict[str, list[QnnEdgePartitioner]]:
    """``[QnnEdgePartitioner(...)]`` per method (a dict of lists for a dict of programs).

    :class:`~qnn_passes.qnn_partitioner.QnnEdgePartitioner` is ExecuTorch's QnnPartitioner
    that also keeps whole the ATen ops the migrated export-stage passes rewrite.
    """
    from qnn_passes.qnn_partitioner import QnnEdgePartitioner

    names = method_names(programs)
    specs = per_method_specs(compiler_specs, names)
    result = {
        name: [
            QnnEdgePartitioner(
                specs[name],
                skip_node_id_set=set() if skip_node_id_set is None else skip_node_id_set,
                skip_node_op_set=set() if skip_node_op_set is None else skip_node_op_set,
                skip_mutable_buffer=skip_mutable_buffer,
            )
        ]
        for name in names
    }
    return result if isinstance(programs, dict) else result[names[0]]


def qnn_compile_config() -> EdgeCompileConfig:
    """The EdgeCompileConfig QNN lowers with (IR validity checks off, as the wrapper)."""
    from executorch.backends.qualcomm.utils.utils import qnn_edge_config

    config: EdgeCompileConfig = qnn_edge_config()
    return config


class QnnManagerSession(contextlib.AbstractContextManager["QnnManagerSession"]):
    """What ``QnnManagerContext`` does inside the wrapper, as a reusable object.

    ``with session: ...`` starts one QNN manager per backend type for the lowering and
    destroys them on exit; ``session.run(fn, *args, **kwargs)`` does the same around one call
    and returns its result, for places a ``with`` block cannot go (a lambda, a comprehension,
    an argument).
    """

    def __init__(self, specs: dict[str, Specs]) -> None:
        self.specs = specs
        self._active: contextlib.AbstractContextManager[object] | None = None

    def __enter__(self) -> QnnManagerSession:
        if self._active is not None:
            raise RuntimeError(
                "qnn_manager_context: this context is already active; create another one "
                "with qnn_manager_context(...) to nest lowerings."
            )
        # Looked up on the module at entry, so the lifecycle module stays the one source.
        from executorch.backends.qualcomm.utils import qnn_manager_lifecycle
        from executorch.backends.qualcomm.utils.qnn_sdk_setup import disable_mkldnn_on_amd

        # The wrapper applies this at its entry. It guards real convolutions on AMD hosts;
        # qnn_export runs none (tracing uses fake tensors), the lowering and anything the
        # caller runs afterwards may, so it is applied here, before a backend starts.
        disable_mkldnn_on_amd()

        context = qnn_manager_lifecycle.QnnManagerContext(self.specs)
        try:
            context.__enter__()
        except RuntimeError as err:
            explained = _explain_start_failure(self.specs)
            if explained is not None:
                raise explained from err
            raise
        self._active = context
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        context, self._active = self._active, None
        return context.__exit__(exc_type, exc, tb) if context is not None else None

    def run(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
        """Enter, return ``fn(*args, **kwargs)``, exit."""
        with self:
            return fn(*args, **kwargs)


def _explain_start_failure(specs: Mapping[str, Specs]) -> QnnSdkMissingError | None:
    """A QnnSdkMissingError if a backend library cannot be loaded, else None (another failure)."""
    from executorch.backends.qualcomm.utils.check_qnn_version import get_qnn_lib_name

    missing: dict[str, list[str]] = {}
    reasons = []
    for name, s in specs.items():
        backend = str(backend_of(s))
        library = get_qnn_lib_name(_BACKEND_LIBRARIES.get(backend, "QnnHtp"))
        try:
            ctypes.CDLL(library)
        except OSError as err:
            if library not in missing:
                reasons.append(str(err))
            missing.setdefault(library, []).append(name)
    if not missing:
        return None
    what = "; ".join(f"{lib} (method(s) {methods})" for lib, methods in missing.items())
    return QnnSdkMissingError(
        f"qnn_manager_context: cannot start the QNN backend, the QNN SDK library {what} "
        f"cannot be loaded ({'; '.join(reasons)}). Install the QNN SDK ({QNN_SDK_RELEASE}), "
        "set QNN_SDK_ROOT to its root and add $QNN_SDK_ROOT/lib/x86_64-linux-clang to "
        f"LD_LIBRARY_PATH (now QNN_SDK_ROOT={os.environ.get('QNN_SDK_ROOT')!r}, "
        f"LD_LIBRARY_PATH={os.environ.get('LD_LIBRARY_PATH')!r})."
    )


def qnn_manager_context(
    compiler_specs: CompilerSpecs, programs: Programs | Mapping[str, object] | object
) -> QnnManagerSession:
    """A :class:`QnnManagerSession` for the methods of ``programs`` (context manager with ``.run``)."""
    names = method_names(programs)
    specs = per_method_specs(compiler_specs, names)
    _check_debugger(specs, isinstance(programs, dict), "qnn_manager_context")
    return QnnManagerSession(specs)
