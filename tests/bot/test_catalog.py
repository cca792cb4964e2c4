"""catalog.py: the matrices data file read with the test registry: verbatim matrices, validation."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from qnn_migrate.bot import catalog as catalog_mod
from qnn_migrate.bot.catalog import Catalog, CatalogError, glob_to_re, parse_catalog

# Verbatim from ExecuTorch PR #20738.
CANONICALIZE_CONV = """TestQNNFloatingPointOperator.test_qnn_backend_conv1d, TestQNNFloatingPointOperator.test_qnn_conv1d_batch_norm, TestQNNFloatingPointOperator.test_qnn_backend_conv2d, TestQNNFloatingPointOperator.test_qnn_backend_conv3d_sequential, TestQNNFloatingPointOperator.test_qnn_backend_conv_transpose1d, TestQNNFloatingPointOperator.test_qnn_backend_conv_transpose2d, TestQNNFloatingPointOperator.test_qnn_backend_conv_transpose3d, TestQNNFloatingPointModel.test_qnn_backend_conv1d_relu_log_softmax, TestQNNQuantizedOperator.test_qnn_backend_conv1d, TestQNNQuantizedOperator.test_qnn_conv1d_batch_norm, TestQNNQuantizedOperator.test_qnn_backend_conv2d, TestQNNQuantizedOperator.test_qnn_backend_conv3d_sequential, TestQNNQuantizedOperator.test_qnn_backend_conv_transpose1d, TestQNNQuantizedOperator.test_qnn_backend_conv_transpose2d, TestQNNQuantizedOperator.test_qnn_backend_conv_transpose3d, TestQNNQuantizedModel.test_qnn_backend_conv1d_relu_log_softmax"""
LINEAR_TO_CONV2D = """TestQNNFloatingPointOperator.test_qnn_backend_linear, TestQNNFloatingPointOperator.test_qnn_backend_linear_to_conv2d, TestQNNFloatingPointOperator.test_qnn_backend_linear_shared_weights, TestQNNFloatingPointOperator.test_qnn_backend_linear_to_conv2d_shared_weights, TestQNNQuantizedOperator.test_qnn_backend_linear, TestQNNQuantizedOperator.test_qnn_backend_linear_to_conv2d, TestQNNQuantizedOperator.test_qnn_backend_linear_shared_weights, TestQNNQuantizedOperator.test_qnn_backend_linear_to_conv2d_shared_weights, TestQNNQuantizedOperator.test_qnn_backend_linear_block, TestQNNQuantizedOperator.test_qnn_backend_linear_to_conv2d_block, TestQNNQuantizedOperator.test_qnn_backend_linear_qat"""
TEMPLATE = "python backends/qualcomm/tests/test_qnn_delegate.py ${TEST_MATRIX} --build_folder build-android/ --host ${HOST_NAME} --device ${DEVICE_ID} --soc_model ${SOC_ID} --seed 1126 --backend htp"


def test_matrices_are_the_issue_lists_verbatim(catalog: Catalog) -> None:
    assert catalog.matrices["canonicalize_conv"].tests == tuple(CANONICALIZE_CONV.split(", "))
    assert catalog.matrices["convert_linear_to_conv2d"].tests == tuple(LINEAR_TO_CONV2D.split(", "))
    assert len(catalog.matrices["canonicalize_conv"].tests) == 16
    assert len(catalog.matrices["convert_linear_to_conv2d"].tests) == 11


def test_command_template_with_defaults_is_the_issue_line(catalog: Catalog) -> None:
    argv = catalog.command_argv(
        ["${TEST_MATRIX}"],
        soc="${SOC_ID}",
        backend="htp",
        seed=1126,
        host="${HOST_NAME}",
        device="${DEVICE_ID}",
    )
    assert " ".join(argv) == TEMPLATE


def test_command_argv_keeps_each_value_one_word(catalog: Catalog) -> None:
    argv = catalog.command_argv(
        ["TestA.test_a", "TestB.test_b"],
        soc="SM8650",
        backend="gpu",
        seed=7,
        host="host; rm -rf /",
        device="ser ial",
    )
    assert argv[2:4] == ["TestA.test_a", "TestB.test_b"]
    assert argv[argv.index("--host") + 1] == "host; rm -rf /"
    assert argv[argv.index("--device") + 1] == "ser ial"


def test_socs_backends_and_lab(catalog: Catalog) -> None:
    assert {"SM8350", "SM8450", "SM8475", "SM8550", "SM8650", "SM8750", "SM8850", "SA8295"} <= set(
        catalog.socs
    )
    lpai = sorted(s for s, soc in catalog.socs.items() if "lpai" in soc.backends)
    assert lpai == ["SAR2230P", "SM8850"]
    assert set(catalog.backends) == {"htp", "gpu", "lpai"}
    assert catalog.defaults.seed == 1126 and catalog.defaults.backend == "htp"
    assert catalog.socs["SM8650"].runner_labels == ("self-hosted", "qnn", "sm8650")
    assert not catalog.socs["SA8797"].in_lab


def test_registry_records_its_source(catalog: Catalog) -> None:
    reg = catalog.registry
    assert (reg.package, reg.version) == ("executorch", "1.5.1")
    assert len(catalog.test_ids) == 564
    assert "TestQNNQuantizedOperator.test_qnn_backend_linear_qat" in catalog.test_ids


def _doc() -> dict[str, object]:
    return tomllib.loads(catalog_mod.DEFAULT_PATH.read_text("utf-8"))


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda d: d["matrices"]["canonicalize_conv"]["tests"].append(
                "TestQNNQuantizedOperator.test_qnn_backend_conv2e"
            ),
            "not in the registry.*did you mean TestQNNQuantizedOperator.test_qnn_backend_conv2d",
        ),
        (
            lambda d: d["matrices"]["canonicalize_conv"]["tests"].append("rm -rf"),
            "malformed test id",
        ),
        (lambda d: d["defaults"].update(backend="lpai"), r"\[defaults\] backend lpai not on"),
        (lambda d: d["defaults"].update(socs=["SA8797"]), "has no runner_labels"),
        (lambda d: d["socs"]["SM8650"].update(backends=["npu"]), "unknown backend"),
        (lambda d: d["command"].update(template="python x.py"), "TEST_MATRIX"),
        (lambda d: d["limits"].update(max_socz=3), "unknown key"),
        (lambda d: d["policy"].update(run_roles=["owner"]), "unknown role"),
        (lambda d: d["nightly"].update(matrices=["nope"]), "unknown matrix nope"),
        (
            lambda d: d["matrices"]["other_backends"]["modules"].append("os; import x"),
            "modules must be dotted names under executorch",
        ),
    ],
)
def test_validation_names_the_problem(mutate: object, message: str, catalog: Catalog) -> None:
    doc = _doc()
    mutate(doc)  # type: ignore[operator]
    with pytest.raises(CatalogError, match=message):
        parse_catalog(doc, catalog.registry, "matrices.toml")


def test_load_names_a_missing_registry(tmp_path: Path) -> None:
    text = catalog_mod.DEFAULT_PATH.read_text("utf-8")
    (tmp_path / "m.toml").write_text(text)
    with pytest.raises(CatalogError, match=r"test_registry\.json: not found; run `qnn-migrate"):
        catalog_mod.load(tmp_path / "m.toml")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test_registry.json").write_text(json.dumps({"schema": 1}))
    with pytest.raises(CatalogError, match="needs 'source' and 'classes'"):
        catalog_mod.load(tmp_path / "m.toml")


def test_guards_pick_matrices_from_changed_paths(catalog: Catalog) -> None:
    assert catalog.matrices_for_paths(["backends/qualcomm/_passes/canonicalize_conv.py"]) == (
        "canonicalize_conv",
    )
    assert catalog.matrices_for_paths(
        [
            "qnn-passes/qnn_passes/convert_linear_to_conv2d.py",
            "qnn-passes/qnn_passes/canonicalize_conv.py",
        ]
    ) == ("canonicalize_conv", "convert_linear_to_conv2d")
    assert catalog.matrices_for_paths(["README.md"]) == ()
    assert glob_to_re("backends/**/_passes/*.py").match("backends/qualcomm/_passes/x.py")
    assert not glob_to_re("backends/*/x.py").match("backends/a/b/x.py")


def test_other_backends_is_an_opt_in_simulator_matrix_of_executorch_modules(
    catalog: Catalog,
) -> None:
    other = catalog.matrices["other_backends"]
    assert other.other_backends and not catalog.matrices["canonicalize_conv"].other_backends
    # Opt-in: no guards (`auto` never picks it), not in the nightly unless the config says so.
    assert other.guards == () and "other_backends" not in catalog.nightly_matrices
    assert all(m.startswith("executorch.") for m in other.modules)
    # Its tests are not QNN registry ids; they are known under this matrix only.
    abs_test = "TestAbs.test_fp32_abs"
    assert abs_test in other.tests and abs_test not in catalog.test_ids
    assert catalog.knows("other_backends", abs_test)
    assert not catalog.knows("canonicalize_conv", abs_test)
    assert not catalog.knows("other_backends", "TestQNNFloatingPointOperator.test_qnn_backend_abs")
    argv = catalog.command_argv(
        [abs_test],
        soc="SM8650",
        backend="htp",
        seed=7,
        host="h",
        device="d",
        matrix="other_backends",
    )
    assert argv[:2] == ["python", str(catalog_mod.OTHER_BACKENDS_DRIVER)]
    assert catalog_mod.OTHER_BACKENDS_DRIVER.is_file()
    assert argv[2:4] == ["--module", other.modules[0]] and argv[-3:] == ["--seed", "7", abs_test]
    assert "--device" not in argv and "--host" not in argv


@pytest.mark.passes
def test_the_other_backends_tests_are_in_the_installed_executorch_modules(
    catalog: Catalog,
) -> None:
    """Read from the modules' syntax trees (nothing imported): a renamed test fails here."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec("executorch")
    assert spec is not None and spec.submodule_search_locations
    root = Path(next(iter(spec.submodule_search_locations))).parent
    other = catalog.matrices["other_backends"]
    found: set[str] = set()
    for module in other.modules:
        tree = ast.parse((root / (module.replace(".", "/") + ".py")).read_text("utf-8"))
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            found.update(f"{cls.name}.{f.name}" for f in cls.body if isinstance(f, ast.FunctionDef))
    assert set(other.tests) <= found, sorted(set(other.tests) - found)
    assert "TestAbs.test_fp32_abs_typo" not in found  # the control: a name not there is not
