"""The ExecuTorch drift guard: simulated drift stops lowering, the real 1.5.1 passes quietly."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from click.testing import CliRunner
from executorch.backends.qualcomm import _passes as executorch_qnn_passes
from executorch.backends.qualcomm._passes.backends.htp.qnn_htp_pass_manager import (
    QnnHtpPassManager,
)
from qnn_migrate_tests.passes import flows
from torch import nn
from torch.fx.passes.infra.pass_base import PassBase, PassResult

from qnn_migrate.cli import main
from qnn_passes import (
    QnnConfigError,
    UntestedExecuTorchWarning,
    executorch_compat,
    pipeline,
    qnn_export,
    qnn_transform_passes,
)
from qnn_passes.executorch_compat import InstalledPasses

X = torch.randn(1, 4, 8)
FROM_SOURCE = "1.6.0a0+git1234abc"
QNN_EXPORT_WAY = "programs = qnn_export(model, example_inputs"
UPGRADE_WAY = "upgrade qnn-migrate"


class DecomposeFutureOpDouble(PassBase):
    """Test double: an export-stage pass a newer ExecuTorch might add (changes nothing)."""

    def call(self, graph_module: torch.fx.GraphModule) -> PassResult:
        return PassResult(graph_module, False)


def _model() -> nn.Module:
    return nn.Sequential(nn.Conv1d(4, 4, 3), nn.ReLU()).eval()


def _program() -> torch.export.ExportedProgram:
    return torch.export.export(_model(), (X,), strict=True)


@pytest.fixture(scope="module")
def real() -> InstalledPasses:
    return executorch_compat.read_installed()


@pytest.fixture
def fresh_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that has not checked ExecuTorch yet (the real state comes back afterwards)."""
    monkeypatch.setattr(executorch_compat, "_STATE", executorch_compat._ProcessState())


@pytest.fixture
def executorch_with_a_new_htp_export_pass(
    monkeypatch: pytest.MonkeyPatch, fresh_guard: None
) -> Iterator[None]:
    """ExecuTorch's HTP pass manager, patched in-process to run one more export-stage pass."""
    original: Callable[[], list[type]] = QnnHtpPassManager.get_export_passes

    def get_export_passes(cls: type) -> list[type]:
        return [*original(), DecomposeFutureOpDouble]

    monkeypatch.setattr(QnnHtpPassManager, "get_export_passes", classmethod(get_export_passes))
    yield


def _with(
    installed: InstalledPasses, stage: str, edit: Callable[[tuple[str, ...]], tuple[str, ...]]
) -> InstalledPasses:
    """``installed`` with ``edit`` applied to every variant's list of ``stage``."""
    if stage == "export":
        export = {variant: edit(names) for variant, names in installed.export_passes.items()}
        return dataclasses.replace(installed, export_passes=export)
    to_edge = {variant: edit(names) for variant, names in installed.to_edge_passes.items()}
    return dataclasses.replace(installed, to_edge_passes=to_edge)


def _renamed(old: str, new: str) -> Callable[[tuple[str, ...]], tuple[str, ...]]:
    return lambda names: tuple(new if n == old else n for n in names)


LOWERING = ["RunQnnPasses", "LiftQnnConstants"]


def _kinds(passes: list[Any]) -> list[str]:
    return [type(p).__name__ for p in passes]


def _our_warnings(caught: list[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
    return [w for w in caught if issubclass(w.category, UntestedExecuTorchWarning)]


# -- the control: the installed ExecuTorch --------------------------------------------------
def test_the_installed_executorch_1_5_1_is_known_and_passes_with_no_warning(
    real: InstalledPasses, fresh_guard: None
) -> None:
    assert real.version == "1.5.1"
    comparison = executorch_compat.compare(real)
    assert comparison.version_known and comparison.compatible, comparison.drift()
    counts = {v: len(comparison.rows(v, "export")) for v in ("base", "htp", "gpu", "lpai")}
    assert counts == {"base": 19, "htp": 20, "gpu": 20, "lpai": 21}
    assert {c.state for c in comparison.rows(stage="export")} == {"migrated", "unnecessary"}
    assert {c.state for c in comparison.rows(stage="to-edge")} == {"ok"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for backend in ("htp", "gpu", "lpai"):
            qnn_transform_passes(_program(), flows.specs(backend))
    assert _our_warnings(caught) == []


def test_a_local_build_label_is_the_same_release() -> None:
    def comparison(version: str) -> executorch_compat.Comparison:
        return executorch_compat.Comparison(version, ("1.5.1",), ())

    assert comparison("1.5.1+cpu").version_known
    assert not comparison(FROM_SOURCE).version_known
    assert not comparison("1.6.0").version_known


# -- simulated drift, fed to the pure comparison --------------------------------------------
def test_an_extra_export_stage_pass_names_it_the_version_and_both_ways_out(
    real: InstalledPasses,
) -> None:
    drifted = dataclasses.replace(
        real,
        version=FROM_SOURCE,
        export_passes={**real.export_passes, "htp": (*real.export_passes["htp"], "DecomposeGelu")},
    )
    comparison = executorch_compat.compare(drifted)
    assert not comparison.compatible
    assert [(c.variant, c.name, c.state) for c in comparison.drift()] == [
        ("htp", "DecomposeGelu", "unknown")
    ]
    error = executorch_compat.drift_error(comparison, "htp", method="encode")
    assert isinstance(error, QnnConfigError)
    message = str(error)
    assert "DecomposeGelu" in message and "method 'encode'" in message
    assert f"executorch {FROM_SOURCE}" in message and "1.5.1" in message
    assert QNN_EXPORT_WAY in message and UPGRADE_WAY in message
    # Only HTP drifted; a program that went through ExecuTorch's export stage is fine.
    assert executorch_compat.drift_error(comparison, "gpu") is None
    assert executorch_compat.drift_error(comparison, "htp", export_stage_needed=False) is None


def test_a_pass_of_another_variant_in_this_variants_export_stage_is_unknown(
    real: InstalledPasses,
) -> None:
    drifted = dataclasses.replace(
        real,
        export_passes={
            **real.export_passes,
            "gpu": ("DecomposeHardsigmoid", *real.export_passes["gpu"]),
        },
    )
    (row,) = executorch_compat.compare(drifted).drift()
    assert (row.variant, row.name, row.state) == ("gpu", "DecomposeHardsigmoid", "unknown")
    assert "only for lpai" in row.note


def test_a_renamed_export_stage_pass_is_named_under_both_names(real: InstalledPasses) -> None:
    drifted = _with(real, "export", _renamed("DecomposeVar", "DecomposeVariance"))
    comparison = executorch_compat.compare(drifted)
    for variant in ("base", "htp", "gpu", "lpai"):
        assert {(c.name, c.state) for c in comparison.drift(variant)} == {
            ("DecomposeVariance", "unknown"),
            ("DecomposeVar", "gone"),
        }
    message = str(executorch_compat.drift_error(comparison, "lpai"))
    assert "DecomposeVariance" in message and "DecomposeVar " in message
    assert "executorch 1.5.1" in message
    assert QNN_EXPORT_WAY in message and UPGRADE_WAY in message


def test_a_missing_to_edge_pass_stops_even_a_qnn_export_program(real: InstalledPasses) -> None:
    missing = f"{pipeline.EXECUTORCH_PASSES}:FoldQDQ"
    drifted = dataclasses.replace(real, version="1.6.0", classes=real.classes - {missing})
    comparison = executorch_compat.compare(drifted)
    assert {(c.variant, c.name, c.state) for c in comparison.drift()} == {
        (v, "FoldQDQ", "missing") for v in ("base", "htp", "gpu", "lpai")
    }
    error = executorch_compat.drift_error(comparison, "htp", export_stage_needed=False)
    assert isinstance(error, QnnConfigError)
    message = str(error)
    assert "FoldQDQ" in message and "executorch 1.6.0" in message
    assert UPGRADE_WAY in message and "qnn-migrate rewrite --target executorch" in message
    # qnn_export cannot get round a to-edge pass, and the message says so instead of offering it.
    assert QNN_EXPORT_WAY not in message and "qnn_export flow does not help" in message


def test_a_to_edge_pass_added_or_dropped_by_executorch_is_drift(real: InstalledPasses) -> None:
    added = _with(real, "to-edge", lambda names: (*names, "RecomposeGelu"))
    rows = executorch_compat.compare(added).drift("htp")
    assert [(c.name, c.state) for c in rows] == [("RecomposeGelu", "unknown")]
    dropped = _with(real, "to-edge", lambda names: tuple(n for n in names if n != "DecomposeTan"))
    rows = executorch_compat.compare(dropped).drift("lpai")
    assert [(c.name, c.state) for c in rows] == [("DecomposeTan", "dropped")]


# -- the guard in the real lowering entry point ---------------------------------------------
@pytest.fixture
def executorch_that_lists_a_new_htp_export_pass(
    monkeypatch: pytest.MonkeyPatch, fresh_guard: None, real: InstalledPasses
) -> None:
    """The guard reads an ExecuTorch whose HTP pass manager lists one more export-stage pass
    (a double of ``read_installed``: patching the class itself is a patch, refused first by
    qnn_passes.patched_passes, as tests/passes/test_patched_passes.py shows)."""
    export = dict(real.export_passes)
    export["htp"] = (*export["htp"], DecomposeFutureOpDouble.__name__)
    drifted = dataclasses.replace(real, export_passes=export)
    monkeypatch.setattr(executorch_compat, "read_installed", lambda: drifted)


@pytest.mark.usefixtures("executorch_that_lists_a_new_htp_export_pass")
def test_qnn_transform_passes_refuses_a_drifted_executorch_and_qnn_export_gets_round_it() -> None:
    with pytest.raises(QnnConfigError) as caught:
        qnn_transform_passes(_program(), flows.specs("htp"))
    message = str(caught.value)
    assert message.startswith("qnn_transform_passes: method 'forward'")
    assert "DecomposeFutureOpDouble" in message and "executorch 1.5.1" in message
    assert QNN_EXPORT_WAY in message and UPGRADE_WAY in message
    # The first way out works: ExecuTorch's own export stage ran the new pass.
    exported = qnn_export(_model(), (X,), compiler_specs=flows.specs("htp"))
    assert _kinds(qnn_transform_passes(exported, flows.specs("htp"))) == LOWERING
    # Another variant whose lists did not change lowers as before.
    assert _kinds(qnn_transform_passes(_program(), flows.specs("gpu"))) == LOWERING


@pytest.mark.usefixtures("fresh_guard")
def test_qnn_transform_passes_refuses_a_missing_to_edge_pass_before_resolving_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    exported = qnn_export(_model(), (X,))
    monkeypatch.delattr(executorch_qnn_passes, "FoldQDQ")
    for program in (_program(), exported):
        with pytest.raises(QnnConfigError, match="FoldQDQ") as caught:
            qnn_transform_passes(program, flows.specs("htp"))
        assert "executorch 1.5.1" in str(caught.value)
        assert "--target executorch" in str(caught.value)  # the guard's, not the pipeline's


@pytest.mark.parametrize("version", [FROM_SOURCE, "1.6.0"])
@pytest.mark.usefixtures("fresh_guard")
def test_an_unknown_version_with_matching_lists_warns_exactly_once(
    monkeypatch: pytest.MonkeyPatch, real: InstalledPasses, version: str
) -> None:
    reads: list[str] = []

    def read_installed_double() -> InstalledPasses:
        reads.append(version)
        return dataclasses.replace(real, version=version)

    monkeypatch.setattr(executorch_compat, "read_installed", read_installed_double)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for backend in ("htp", "gpu", "htp"):
            qnn_transform_passes(_program(), flows.specs(backend))
        qnn_transform_passes({"a": _program(), "b": _program()}, flows.specs("lpai"))
    (warning,) = _our_warnings(caught)
    assert f"executorch {version}" in str(warning.message) and "1.5.1" in str(warning.message)
    assert warning.filename == __file__  # points at the caller of qnn_transform_passes
    assert reads == [version]  # read once per process


# -- qnn-migrate passes check ----------------------------------------------------------------
def test_check_command_on_the_installed_executorch() -> None:
    result = CliRunner().invoke(main, ["passes", "check"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("executorch 1.5.1: tested")
    for variant in ("base", "htp", "gpu", "lpai"):
        assert f"# {variant}: export-stage passes" in result.output
        assert f"# {variant}: to-edge passes the pipeline relies on" in result.output
    assert any(line.split()[:2] == ["DecomposeExpM1", "migrated"] for line in lines)
    assert any(line.split()[:2] == ["DecomposePad", "unnecessary"] for line in lines)
    assert any(line.split()[:2] == ["FoldQDQ", "ok"] for line in lines)
    assert lines[-1].startswith("compatible:")


@pytest.mark.usefixtures("executorch_with_a_new_htp_export_pass")
def test_check_command_exits_1_on_drift_and_names_it() -> None:
    result = CliRunner().invoke(main, ["passes", "check"])
    assert result.exit_code == 1, result.output
    assert any(
        line.split()[:2] == ["DecomposeFutureOpDouble", "UNKNOWN"]
        for line in result.output.splitlines()
    )
    assert "NOT compatible (1 difference(s): htp export: DecomposeFutureOpDouble" in result.output
    assert QNN_EXPORT_WAY in result.output and UPGRADE_WAY in result.output
    # One variant at a time: GPU did not change.
    gpu = CliRunner().invoke(main, ["passes", "check", "--backend", "gpu"])
    assert gpu.exit_code == 0, gpu.output
    assert "# htp" not in gpu.output


def test_check_help_and_missing_extra_need_no_torch() -> None:
    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"
        "from qnn_migrate.cli import main\n"
        "main(sys.argv[1:])\n"
    )

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-c", code, "passes", "check", *args]
        return subprocess.run(command, capture_output=True, text=True)

    helped = run("--help")
    assert helped.returncode == 0
    assert "Exit 0 when compatible, 1 when not" in " ".join(helped.stdout.split())
    missing = run()
    assert missing.returncode == 1 and "[passes] extra" in missing.stderr
