"""The canonical flow's options, its handling of programs that already had the export stage, and its bad input."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from executorch.backends.qualcomm._passes import ConvertBmmToMatmul, DecomposeExpM1, DecomposePad
from executorch.backends.qualcomm._passes.qnn_pass_manager import get_qnn_pass_manager_cls
from executorch.backends.qualcomm.serialization.qc_schema import (
    QcomChipset,
    QnnExecuTorchBackendOptions,
    QnnExecuTorchBackendType,
    QnnExecuTorchOptions,
    _soc_info_table,
)
from executorch.backends.qualcomm.serialization.qc_schema_serialize import option_to_flatbuffer
from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn
from executorch.exir import to_edge_transform_and_lower
from executorch.exir.backend.compile_spec_schema import CompileSpec
from qnn_migrate_tests.doubles.qnn_backend import RecordingQnnBackend
from qnn_migrate_tests.passes import canonical, flows
from qnn_migrate_tests.passes.probe_lowerings import outside
from qnn_migrate_tests.passes.probes import BY_NAME as PROBES
from qnn_migrate_tests.passes.zoo import BY_NAME

from qnn_passes import (
    QnnConfigError,
    qnn_compile_config,
    qnn_export,
    qnn_manager_context,
    qnn_partitioners,
    qnn_transform_passes,
)
from qnn_passes.api import EXPORT_PASSES_META, run_export_passes
from qnn_passes.export_stage import EXPORT_STAGE


def _lower(programs: Any, specs: Any, **options: Any) -> RecordingQnnBackend:
    part = {k: options.pop(k) for k in ("skip_mutable_buffer",) if k in options}
    skips = {k: options[k] for k in ("skip_node_id_set", "skip_node_op_set") if k in options}
    with RecordingQnnBackend() as qnn, qnn_manager_context(specs, programs):
        to_edge_transform_and_lower(
            programs,
            transform_passes=qnn_transform_passes(programs, specs, **options),
            partitioner=qnn_partitioners(programs, specs, **skips, **part),
            compile_config=qnn_compile_config(),
        )
    return qnn


def test_export_stage_table_names_every_export_pass_of_every_variant() -> None:
    names = {p.name for p in EXPORT_STAGE}
    for backend in QnnExecuTorchBackendType:
        upstream = {p.__name__ for p in get_qnn_pass_manager_cls(backend).get_export_passes()}
        assert upstream <= names, backend
    assert len(names) == len(EXPORT_STAGE) == 21


def test_options_reach_qnn_as_through_the_wrapper() -> None:
    case = BY_NAME["conv1d_mutable_buffer"]
    model, inputs = case.model()
    specs = flows.specs()
    job = get_qnn_pass_manager_cls()().get_capture_program_passes()
    job[ConvertBmmToMatmul]["activate"] = True
    options: dict[str, Any] = {
        "skip_node_id_set": {"aten_convolution_default"},
        "skip_node_op_set": {"aten.mean.dim"},
        "skip_mutable_buffer": True,
    }
    with RecordingQnnBackend() as old:
        to_edge_transform_and_lower_to_qnn(model, inputs, specs, passes_job=job, **options)
    new = _lower(torch.export.export(model, inputs, strict=True), specs, passes_job=job, **options)
    (a,), (b,) = old.handoffs, new.handoffs
    assert canonical.canonical(b.program) == canonical.without_inputs(
        a.program, canonical.orphaned_inputs(a.program)
    )
    for field in ("skip_node_id_set", "skip_node_op_set", "skip_mutable_buffer"):
        assert getattr(a, field) == getattr(b, field) == options[field]


def test_a_program_from_qnn_export_is_not_transformed_twice() -> None:
    probe = PROBES["scalar_operands"]
    model, inputs = probe.model()
    exported = qnn_export(model, inputs)
    assert exported.graph_module.meta[EXPORT_PASSES_META]
    names = qnn_transform_passes(exported, flows.specs())[0].names
    assert "LiftScalarOperands" not in names and "CheckExportStage" not in names
    with RecordingQnnBackend() as old:
        to_edge_transform_and_lower_to_qnn(model, inputs, flows.specs())
    new = _lower(exported, flows.specs())
    assert canonical.canonical(new.handoffs[0].program) == canonical.canonical(
        old.handoffs[0].program
    )


def test_older_code_that_ran_executorchs_export_passes_itself_lowers_alike() -> None:
    # No qnn_export mark: ExecuTorch's own transform_for_export_pipeline, as code written
    # against the wrapper's internals does. The migrated passes find nothing left to rewrite.
    probe = PROBES["expm1"]
    model, inputs = probe.model()
    ep = torch.export.export(model, inputs, strict=True)
    ep = get_qnn_pass_manager_cls()().transform_for_export_pipeline(ep)
    assert EXPORT_PASSES_META not in ep.graph_module.meta
    with RecordingQnnBackend() as old:
        to_edge_transform_and_lower_to_qnn(model, inputs, flows.specs())
    new = _lower(ep, flows.specs()).handoffs[0].program
    assert outside(new) == outside(old.handoffs[0].program) == []
    assert sorted(str(n.target) for n in new.graph.nodes if n.op == "call_function") == sorted(
        str(n.target) for n in old.handoffs[0].program.graph.nodes if n.op == "call_function"
    )
    # Run the same program again through qnn_export's own path: marked, nothing re-run.
    marked = run_export_passes(torch.export.export(model, inputs, strict=True))
    assert "DecomposeExpM1" not in qnn_transform_passes(marked, flows.specs())[0].names


def _error_chain(err: BaseException) -> list[BaseException]:
    chain = []
    current: BaseException | None = err
    while current is not None:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def test_an_op_the_canonical_flow_cannot_rewrite_names_it_and_the_fallback() -> None:
    class L1CDist(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return torch.cdist(x, y, p=1.0)

    x, y = torch.randn(1, 5, 3), torch.randn(1, 4, 3)
    ep = torch.export.export(L1CDist(), (x, y), strict=True)
    with pytest.raises(Exception) as caught:  # ExecuTorch wraps pass errors
        _lower(ep, flows.specs())
    ours = [e for e in _error_chain(caught.value) if isinstance(e, QnnConfigError)]
    assert ours, caught.value
    message = str(ours[0])
    assert "_cdist_forward" in message and "DecomposeCDist" in message
    assert "qnn_export(" in message


def _specs_for(backend: QnnExecuTorchBackendType) -> list[CompileSpec]:
    options = QnnExecuTorchOptions(
        _soc_info_table[QcomChipset.SM8650], QnnExecuTorchBackendOptions(backend_type=backend)
    )
    return [CompileSpec("qnn_compile_spec", option_to_flatbuffer(options))]


@pytest.mark.parametrize(
    "backend", [QnnExecuTorchBackendType.kDspBackend, QnnExecuTorchBackendType.kUndefinedBackend]
)
def test_an_unknown_backend_variant_is_refused(backend: QnnExecuTorchBackendType) -> None:
    ep = torch.export.export(PROBES["expm1"].model()[0], PROBES["expm1"].inputs(), strict=True)
    with pytest.raises(QnnConfigError, match=rf"backend '{backend}'.*htp.*gpu.*lpai"):
        qnn_transform_passes(ep, _specs_for(backend))


def test_a_pass_table_naming_an_export_stage_pass() -> None:
    model, inputs = PROBES["expm1"].model()
    ep = torch.export.export(model, inputs, strict=True)
    job = get_qnn_pass_manager_cls()().get_capture_program_passes()
    assert DecomposePad in job  # also a to-edge pass upstream: honoured where it is
    qnn_transform_passes(ep, flows.specs(), passes_job=job)
    job[DecomposeExpM1] = {"activate": True, "args_kwargs_defaults": {}}
    with pytest.raises(
        QnnConfigError,
        match=r"DecomposeExpM1, one of QNN's export-stage passes.*qnn_passes\.decompose_expm1",
    ):
        qnn_transform_passes(ep, flows.specs(), passes_job=job)
