"""The public API that `qnn-migrate rewrite` targets: contract, per-method rules, errors."""

from __future__ import annotations

import copy
import subprocess
import sys
from unittest import mock

import pytest
import torch
from executorch.backends.qualcomm._passes.backends.htp import QnnHtpPassManager
from executorch.backends.qualcomm.partition.qnn_partitioner import QnnPartitioner
from executorch.backends.qualcomm.serialization.qc_schema import QcomChipset
from executorch.backends.qualcomm.utils.utils import (
    generate_htp_compiler_spec,
    generate_qnn_executorch_compiler_spec,
)
from executorch.exir import to_edge_transform_and_lower
from qnn_migrate_tests.doubles.qnn_backend import RecordingQnnBackend
from qnn_migrate_tests.passes import flows
from torch import nn

import qnn_passes
from qnn_passes import (
    LiftQnnConstants,
    QnnConfigError,
    QnnManagerSession,
    QnnSdkMissingError,
    RunQnnPasses,
    qnn_compile_config,
    qnn_export,
    qnn_manager_context,
    qnn_partitioners,
    qnn_transform_passes,
)
from qnn_passes.api import EXPORT_PASSES_META
from qnn_passes.methods import per_method, per_method_specs, per_method_table

X = torch.randn(1, 4, 8)


def _model() -> nn.Module:
    return nn.Sequential(nn.Conv1d(4, 4, 3), nn.ReLU()).eval()


def test_per_method_rules_are_the_wrappers() -> None:
    names = ["a", "b"]
    assert per_method(None, names) == {"a": None, "b": None}
    assert per_method({"a": 1, "b": 2}, names) == {"a": 1, "b": 2}
    assert per_method({"a": 1}, names) == {"a": {"a": 1}, "b": {"a": 1}}
    assert per_method((X,), names) == {"a": (X,), "b": (X,)}
    specs = flows.specs()
    assert per_method_specs(specs, names) == {"a": specs, "b": specs}
    with pytest.raises(QnnConfigError, match=r"names method\(s\) \['c'\] that do not exist"):
        per_method_specs({"a": specs, "c": specs}, names)
    with pytest.raises(QnnConfigError, match=r"no entry for method\(s\) \['b'\]"):
        per_method_specs({"a": specs}, names)
    with pytest.raises(QnnConfigError, match="compiler_specs is None"):
        per_method_specs(None, names)
    with pytest.raises(QnnConfigError, match="passes_job is keyed by strings"):
        per_method_table({"a": {}, "bb": {}}, names, what="passes_job")


def test_export_single_and_dict() -> None:
    program = qnn_export(_model(), (X,))
    assert isinstance(program, torch.export.ExportedProgram)
    assert "DecomposeReciprocal" in program.graph_module.meta[EXPORT_PASSES_META]
    programs = qnn_export({"a": _model(), "b": _model()}, {"a": (X,), "b": (X[:, :, :6],)})
    assert list(programs) == ["a", "b"]
    assert programs["b"].graph_signature.user_inputs
    lpai = qnn_export(_model(), (X,), compiler_specs=flows.specs("lpai"))
    assert "DecomposeHardsigmoid" in lpai.graph_module.meta[EXPORT_PASSES_META]


def test_sdk_setup_before_tracing_and_amd_guard_before_the_backend() -> None:
    calls: list[str] = []
    from executorch.backends.qualcomm.utils import qnn_sdk_setup

    real_export = torch.export.export
    with (
        mock.patch.object(qnn_sdk_setup, "setup_qnn_sdk", lambda: calls.append("sdk")),
        mock.patch.object(qnn_sdk_setup, "disable_mkldnn_on_amd", lambda: calls.append("amd")),
        mock.patch.object(
            torch.export,
            "export",
            lambda *a, **k: calls.append(f"export strict={k['strict']}") or real_export(*a, **k),
        ),
    ):
        program = qnn_export(_model(), (X,))
        with RecordingQnnBackend() as qnn:
            qnn_manager_context(flows.specs(), program).run(lambda: calls.append("lowering"))
    assert calls == ["sdk", "export strict=True", "amd", "lowering"]
    assert len(qnn.contexts) == 1


def test_export_errors_name_the_method() -> None:
    class Bad(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.nonexistent()  # type: ignore[attr-defined]

    with pytest.raises(Exception) as info:
        qnn_export({"good": _model(), "bad": Bad()}, {"good": (X,), "bad": (X,)})
    assert "method 'bad'" in "\n".join(getattr(info.value, "__notes__", []))
    with pytest.raises(QnnConfigError, match="no example inputs for method 'forward'"):
        qnn_export(_model(), None)


def test_transform_passes_contract() -> None:
    specs = flows.specs()
    program = qnn_export(_model(), (X,))
    passes = qnn_transform_passes(program, specs)
    assert [type(p) for p in passes] == [RunQnnPasses, LiftQnnConstants]
    assert passes[0].names[-1] == "ResolveDebugHandle"
    programs = {"a": program, "b": qnn_export(_model(), (X,))}
    by_method = qnn_transform_passes(programs, specs)
    assert list(by_method) == ["a", "b"]
    assert by_method["a"] is not by_method["b"]


def test_transform_passes_run_the_export_stage_only_for_programs_qnn_export_did_not_make() -> None:
    from qnn_passes.export_stage import CheckExportStage
    from qnn_passes.lift_scalar_operands import LiftScalarOperands

    program = torch.export.export(_model(), (X,), strict=True)
    fresh = qnn_transform_passes(program, flows.specs())[0].names
    assert fresh[fresh.index("LiftScalarOperands") + 2] == CheckExportStage.__name__
    exported = qnn_transform_passes(qnn_export(_model(), (X,)), flows.specs())[0].names
    assert LiftScalarOperands.__name__ not in exported
    assert fresh[len(fresh) - len(exported) :] == exported
    htp_exported = qnn_export(_model(), (X,))
    with pytest.raises(
        QnnConfigError, match=r"exported for another QNN backend.*lpai.*DecomposeHardsigmoid"
    ):
        qnn_transform_passes(htp_exported, flows.specs("lpai"))


def test_specs_for_a_method_that_does_not_exist() -> None:
    programs = {"encode": qnn_export(_model(), (X,))}
    with pytest.raises(QnnConfigError, match=r"names method\(s\) \['decode'\]"):
        qnn_transform_passes(programs, {"encode": flows.specs(), "decode": flows.specs()})
    with pytest.raises(QnnConfigError, match=r"names method\(s\) \['decode'\]"):
        qnn_partitioners(programs, {"encode": flows.specs(), "decode": flows.specs()})
    with pytest.raises(QnnConfigError, match=r"names method\(s\) \['decode'\]"):
        qnn_manager_context({"encode": flows.specs(), "decode": flows.specs()}, programs)


def test_passes_job_per_method_and_never_mutated() -> None:
    from executorch.backends.qualcomm._passes import FoldQDQ, TagQuantIO

    programs = {"a": qnn_export(_model(), (X,)), "b": qnn_export(_model(), (X,))}
    job_a = QnnHtpPassManager.get_capture_program_passes()
    job_a[TagQuantIO]["activate"] = True
    job_b = QnnHtpPassManager.get_capture_program_passes()
    job_b[FoldQDQ]["activate"] = False
    jobs = {"a": job_a, "b": job_b}
    snapshot = copy.deepcopy(jobs)
    passes = qnn_transform_passes(
        programs, flows.specs(), passes_job=jobs, convert_linear_to_conv2d=True
    )
    assert jobs == snapshot
    names = {m: ps[0].names for m, ps in passes.items()}
    assert "TagQuantIO" in names["a"] and "FoldQDQ" in names["a"]
    assert "TagQuantIO" not in names["b"] and "FoldQDQ" not in names["b"]
    assert "ConvertLinearToConv2d" in names["a"]
    # ExecuTorch's own passes get the program, as in the wrapper (ours read the one they run on).
    fold = next(p for p in passes["a"][0].passes if type(p).__name__ == "FoldQDQ")
    assert fold.edge_program is programs["a"]


def test_partitioners_and_compile_config() -> None:
    program = qnn_export(_model(), (X,))
    (part,) = qnn_partitioners(program, flows.specs(), {"n1"}, {"aten.add.Tensor"}, True)
    assert isinstance(part, QnnPartitioner)
    assert (part.skip_node_id_set, part.skip_node_op_set, part.skip_mutable_buffer) == (
        {"n1"},
        {"aten.add.Tensor"},
        True,
    )
    assert [(s.key, s.value) for s in part.compiler_specs_snapshot] == [
        (s.key, s.value) for s in flows.specs()
    ]
    both = qnn_partitioners({"a": program, "b": program}, flows.specs())
    assert list(both) == ["a", "b"] and all(len(v) == 1 for v in both.values())
    assert qnn_compile_config()._check_ir_validity is False


def test_manager_context_without_the_sdk_says_what_is_missing() -> None:
    program = qnn_export(_model(), (X,))
    context = qnn_manager_context(flows.specs(), program)
    with pytest.raises(QnnSdkMissingError) as info, context:
        pass
    message = str(info.value)
    for needed in (
        "libQnnHtp.so",
        "method(s) ['forward']",
        "QNN_SDK_ROOT",
        "LD_LIBRARY_PATH",
        "QAIRT 2.37",
    ):
        assert needed in message
    with pytest.raises(QnnSdkMissingError, match=r"libQnnGpu\.so"):
        qnn_manager_context(flows.specs("gpu"), program).run(lambda: None)


def test_manager_context_run_and_with() -> None:
    program = qnn_export(_model(), (X,))
    specs = flows.specs()
    with RecordingQnnBackend() as qnn:
        context = qnn_manager_context(specs, program)
        assert isinstance(context, QnnManagerSession)
        assert context.run(lambda a, /, b: a + b, 1, b=2) == 3
        with context, pytest.raises(RuntimeError, match="already active"):
            context.__enter__()
        with pytest.raises(ZeroDivisionError):
            context.run(lambda: 1 / 0)
        # Usable where a with block cannot go: inside an expression.
        edges = [
            qnn_manager_context(specs, p).run(
                to_edge_transform_and_lower,
                p,
                transform_passes=qnn_transform_passes(p, specs),
                partitioner=qnn_partitioners(p, specs),
                compile_config=qnn_compile_config(),
            )
            for p in [program]
        ]
    assert len(edges) == 1 and len(qnn.handoffs) == 1
    assert len(qnn.contexts) == 4  # run, with, run (raising), run in the comprehension
    assert all(list(c) == ["forward"] for c in qnn.contexts)


def test_debugger_guard_allows_one_method_only() -> None:
    dumping = generate_qnn_executorch_compiler_spec(
        soc_model=QcomChipset.SM8650,
        backend_options=generate_htp_compiler_spec(use_fp16=True),
        dump_intermediate_outputs=True,
    )
    one = {"forward": qnn_export(_model(), (X,))}
    qnn_manager_context(dumping, one)
    two = {"a": one["forward"], "b": one["forward"]}
    for call in (
        lambda: qnn_manager_context(dumping, two),
        lambda: qnn_transform_passes(two, dumping),
        lambda: qnn_export({"a": _model(), "b": _model()}, (X,), compiler_specs=dumping),
    ):
        with pytest.raises(
            QnnConfigError, match="dump_intermediate_outputs, which supports one method"
        ):
            call()


def test_import_is_cheap_and_patches_nothing() -> None:
    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"
        "import qnn_passes, qnn_passes.methods, qnn_passes.errors\n"
        "assert 'executorch' not in sys.modules\n"
        "assert set(qnn_passes.__all__) >= {'qnn_export', 'qnn_manager_context', "
        "'qnn_transform_passes', 'qnn_partitioners', 'qnn_compile_config'}\n"
        "try:\n"
        "    qnn_passes.qnn_export\n"
        "except ImportError:\n"
        "    print('needs torch')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "needs torch"


def test_all_names_resolve() -> None:
    for name in qnn_passes.__all__:
        assert getattr(qnn_passes, name) is not None
    with pytest.raises(AttributeError):
        qnn_passes.not_a_name  # noqa: B018
