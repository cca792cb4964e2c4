"""qnn_passes/patched_passes.py on the real stack: a replaced ExecuTorch QNN pass method that the
canonical flow would not run is refused, by qnn_transform_passes, with a clear error."""

from __future__ import annotations

import functools
import importlib
import sys
from pathlib import Path
from unittest import mock

import pytest
import torch
from executorch.backends.qualcomm._passes import CanonicalizeConv, DecomposeFloorDivide
from executorch.backends.qualcomm._passes.backends.htp import QnnHtpPassManager
from executorch.backends.qualcomm._passes.qnn_pass_manager import (
    QnnPassManager,
    get_qnn_pass_manager_cls,
)
from executorch.backends.qualcomm.serialization.qc_schema import QnnExecuTorchBackendType
from qnn_migrate_tests.passes import flows
from torch import nn

from qnn_passes import QnnConfigError, qnn_export, qnn_transform_passes
from qnn_passes.patched_passes import (
    EXPORT_METHODS,
    TO_EDGE_METHODS,
    _is_executorch_qnn,
    replaced_methods,
)

X = torch.randn(1, 4, 8)
BACKENDS = (
    QnnExecuTorchBackendType.kHtpBackend,
    QnnExecuTorchBackendType.kGpuBackend,
    QnnExecuTorchBackendType.kLpaiBackend,
)


def _model() -> nn.Module:
    return nn.Sequential(nn.Conv1d(4, 4, 3), nn.ReLU()).eval()


def _program() -> torch.export.ExportedProgram:
    return torch.export.export(_model(), (X,), strict=True)


def test_executorch_s_own_classes_have_no_replaced_method() -> None:
    """The control for every check below: the classes as ExecuTorch 1.5.1 ships them, for
    every backend's pass manager, its export-stage passes and its to-edge passes. Inherited
    methods (QnnHtpPassManager's transform_for_export_pipeline is QnnPassManager's) are not
    patches."""
    classes: set[type] = set()
    for backend in BACKENDS:
        manager = get_qnn_pass_manager_cls(backend)
        classes |= {c for c in manager.__mro__ if _is_executorch_qnn(c)}
        classes |= set(manager.get_export_passes())
        classes |= {p for p, _ in manager.get_default_pass_activations()}
    assert QnnPassManager in classes and QnnHtpPassManager in classes and len(classes) > 50
    assert "transform_for_export_pipeline" not in vars(QnnHtpPassManager)  # inherited
    assert {
        c.__name__: list(replaced_methods(c)) for c in classes if list(replaced_methods(c))
    } == {}
    qnn_transform_passes(_program(), flows.specs())  # and the whole check passes


def test_a_patch_made_in_another_module_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's helper module patches an export-stage pass; the canonical flow would run
    qnn_passes' own version of the stage: refused, naming the class, the function and the
    way out. A program from qnn_export ran ExecuTorch's stage, patch included: accepted."""
    (tmp_path / "user_patches.py").write_text(
        "from executorch.backends.qualcomm._passes import DecomposeFloorDivide\n"
        "def floor_divide_kept(self, graph_module):\n"
        "    return ORIGINAL(self, graph_module)\n"
        "ORIGINAL = DecomposeFloorDivide.call\n"
        "DecomposeFloorDivide.call = floor_divide_kept\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(DecomposeFloorDivide, "call", DecomposeFloorDivide.call)  # restored after
    importlib.import_module("user_patches")
    monkeypatch.delitem(sys.modules, "user_patches")
    with pytest.raises(QnnConfigError) as refused:
        qnn_transform_passes(_program(), flows.specs())
    message = str(refused.value)
    assert "DecomposeFloorDivide.call" in message
    assert "user_patches.floor_divide_kept" in message and "user_patches.py:2" in message
    assert "qnn_export(" in message and "method 'forward'" in message
    qnn_transform_passes(qnn_export(_model(), (X,), compiler_specs=flows.specs()), flows.specs())


def test_a_replaced_to_edge_pass_is_refused_whichever_the_export(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ExecuTorch's CanonicalizeConv never runs here (qnn_passes' own does): refused for a
    program from qnn_export too. A functools.wraps wrapper, which copies the name and the
    module of what it wraps, is still seen."""

    @functools.wraps(CanonicalizeConv.call)
    def logged(self: object, graph_module: object) -> object:
        return None

    monkeypatch.setattr(CanonicalizeConv, "call", logged)
    for program in (_program(), qnn_export(_model(), (X,), compiler_specs=flows.specs())):
        with pytest.raises(QnnConfigError, match=r"CanonicalizeConv\.call.*canonicalize_conv"):
            qnn_transform_passes(program, flows.specs())


@pytest.mark.parametrize("name", sorted(TO_EDGE_METHODS | EXPORT_METHODS))
def test_the_pass_manager_s_methods_the_wrapper_runs(name: str) -> None:
    """Each method of the pass manager's export and to-edge steps, patched on the subclass
    the HTP backend uses with mock.patch.object(autospec=True): its to-edge methods are
    refused always, its export methods only for a program that did not come from qnn_export."""
    exported = qnn_export(_model(), (X,), compiler_specs=flows.specs())
    fresh = _program()
    with mock.patch.object(QnnHtpPassManager, name, autospec=True):
        with pytest.raises(QnnConfigError, match=rf"QnnHtpPassManager\.{name} was replaced"):
            qnn_transform_passes(fresh, flows.specs())
        if name == "get_export_passes":
            # The list no longer matches the passes qnn_export ran: the older check says so.
            with pytest.raises(QnnConfigError, match="a different pass list"):
                qnn_transform_passes(exported, flows.specs())
        elif name in EXPORT_METHODS:
            qnn_transform_passes(exported, flows.specs())
        else:
            with pytest.raises(QnnConfigError, match=rf"QnnHtpPassManager\.{name}"):
                qnn_transform_passes(exported, flows.specs())
    qnn_transform_passes(_program(), flows.specs())  # unpatched again: accepted
