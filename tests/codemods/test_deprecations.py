"""deprecations.py: the deprecated API as data (codemods/data/deprecations.toml), and its targets."""

from __future__ import annotations

from pathlib import Path

import pytest

from qnn_migrate.codemods.deprecations import (
    DeprecationDataError,
    catalog,
    default_target,
    lower_to_qnn,
    parse_catalog,
    target_names,
)
from qnn_migrate.codemods.engine import rewrite_code
from qnn_migrate.codemods.rules.lower_to_qnn.rule import check_targets

ROOT = Path(__file__).resolve().parents[2]

PARAMETERS = lower_to_qnn().parameters


def test_bundled_catalog() -> None:
    deprecation = lower_to_qnn()
    assert len(deprecation.parameters) == 12
    assert deprecation.parameters[3] == "constant_methods"
    assert {
        "executorch.backends.qualcomm.utils.utils.to_edge_transform_and_lower_to_qnn",
        "executorch.backends.qualcomm.export_utils.to_edge_transform_and_lower_to_qnn",
    } <= deprecation.qualified_names
    assert deprecation.replacement == "executorch.exir.to_edge_transform_and_lower"
    assert catalog().evidence.is_not_dict_result("torch.nn.Linear")
    assert not catalog().evidence.is_not_dict_result("torch.nn.functional.relu")


def test_malformed_catalog_names_the_key() -> None:
    text = """
[[deprecation]]
name = "f"
qualified_names = ["m.f"]
defining_module = "m"
replacement = "m.g"
since = "1"
reference = "r"
parameters = ["a"]
required = ["b"]
per_method = []
[patchers]
qualified_names = []
[evidence]
not_dict_results = []
not_dict_methods = []
not_dict_annotations = []
dict_annotations = []
module_bases = []
"""
    with pytest.raises(DeprecationDataError, match=r"deprecation\[0\] names \['b'\]"):
        parse_catalog(text)
    with pytest.raises(DeprecationDataError, match="must be a list of strings"):
        parse_catalog(text.replace('parameters = ["a"]', 'parameters = "a"'))
    valid = text.replace('required = ["b"]', 'required = ["a"]').replace(
        "[patchers]",
        '[[deprecation.target]]\nname = "t"\nhelp = "h"\nfirst_use = ["a"]\n[patchers]',
    )
    switch = '[[evidence.dump_switches]]\nfactory = "m.spec"\nparameter = "dump"\n'
    assert parse_catalog(valid + switch + "position = 5\n").evidence.dump_switches == (
        ("m.spec", "dump", 5),
    )
    with pytest.raises(DeprecationDataError, match=r"dump_switches\[0\]: `position`"):
        parse_catalog(valid + switch + 'position = "5"\n')


def test_targets_come_from_the_data_and_each_has_code() -> None:
    assert target_names() == ("qnn-passes", "executorch")
    assert default_target() == "qnn-passes"
    check_targets()  # every named target is implemented, and nothing else is
    for spec in lower_to_qnn().targets:
        assert sorted(spec.first_use) == sorted(PARAMETERS)
    with pytest.raises(ValueError, match="choose one of qnn-passes, executorch"):
        lower_to_qnn().target("nope")


def test_a_target_must_name_every_parameter_once() -> None:
    text = (ROOT / "qnn_migrate" / "codemods" / "data" / "deprecations.toml").read_text()
    broken = text.replace(
        '    "generate_etrecord",\n]\n\n[[deprecation.target]]', "]\n\n[[deprecation.target]]"
    )
    assert broken != text
    with pytest.raises(DeprecationDataError, match=r"target\[0\]\.first_use must name every"):
        parse_catalog(broken)


def test_required_parameters_come_from_the_data() -> None:
    """A call missing a parameter the data marks required is reported, not rewritten."""
    old = lower_to_qnn().name
    code = f"from executorch.backends.qualcomm.utils.utils import {old}\n{old}(m, x)\n"
    result = rewrite_code(code)
    assert not result.changed
    assert [u.code for u in result.unfixable] == ["QM103"]  # a call that would fail
    assert "`compiler_specs`" in result.unfixable[0].reason  # names the missing parameter
