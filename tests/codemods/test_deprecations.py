"""The rewrite's building blocks, each on its own: data, binding, evaluation order, layout."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import (
    MetadataWrapper,
    ParentNodeProvider,
    QualifiedNameProvider,
    ScopeProvider,
)

from qnn_migrate.codemods.call_binding import BindError, BoundCall, bind_call
from qnn_migrate.codemods.deprecations import (
    DeprecationDataError,
    catalog,
    default_target,
    lower_to_qnn,
    parse_catalog,
    target_names,
)
from qnn_migrate.codemods.engine import imported_here, reexport_scan, rewrite_code
from qnn_migrate.codemods.expressions import evaluated_before, is_duplicable, is_side_effect_free
from qnn_migrate.codemods.knowledge import Knowledge
from qnn_migrate.codemods.layout import ArgSpec, CallSpec, Conditional, Printer, Source, Text
from qnn_migrate.codemods.rules.lower_to_qnn.rule import check_targets

ROOT = Path(__file__).resolve().parents[2]

PARAMETERS = lower_to_qnn().parameters


def _call(code: str) -> cst.Call:
    node = cst.parse_expression(code)
    assert isinstance(node, cst.Call)
    return node


# -- the deprecation as data -------------------------------------------------------------
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
    assert [u.reason for u in result.unfixable] == [
        f"{old} is called with no `compiler_specs`; this call would fail as written. Fix it first"
    ]


# -- the cross-file scan for re-exports ----------------------------------------------------
def test_reexport_scan_finds_absolute_relative_and_parenthesized_imports() -> None:
    old = lower_to_qnn().name
    sources: dict[str, str | bytes] = {
        "src/app.py": f"from mypkg.lowering import {old}\n",
        "src/mypkg/consumer.py": f"from .helpers import (\n    a,\n    {old} as lower,\n)\n",
        "src/mypkg/sub/deep.py": f"from ..up import b, {old}  # comment\n",
        "src/mypkg/other.py": f"from mypkg.lowering import {old}_v2\nimport {old}\n",
        "src/bytes.py": f"from pkg.b import {old}\n".encode(),
    }
    assert reexport_scan(sources) == {
        "mypkg.lowering",
        "src.mypkg.helpers",
        "src.mypkg.up",
        "pkg.b",
    }


def test_imported_here_matches_by_the_tail_of_the_path() -> None:
    found = frozenset({"mypkg.lowering", "src.mypkg"})
    assert imported_here("/home/u/proj/src/mypkg/lowering.py", found)
    assert imported_here("src/mypkg/__init__.py", found)
    assert not imported_here("/home/u/proj/src/otherpkg/lowering2.py", found)
    assert not imported_here("/home/u/proj/src/mypkg/helpers.py", found)
    assert not imported_here(None, found)


# -- binding arguments -------------------------------------------------------------------
def test_binding_positional_keyword_and_spliced() -> None:
    bound = bind_call(_call("f(m, x, s, meta, passes_job=j)"), PARAMETERS)
    assert isinstance(bound, BoundCall)
    assert list(bound.args) == [
        "module",
        "inputs",
        "compiler_specs",
        "constant_methods",
        "passes_job",
    ]
    spliced = bind_call(_call('f(*(m, x), s, **{"skip_mutable_buffer": True})'), PARAMETERS)
    assert isinstance(spliced, BoundCall)
    assert list(spliced.args) == ["module", "inputs", "compiler_specs", "skip_mutable_buffer"]


@pytest.mark.parametrize(
    ("code", "kind", "detail"),
    [
        ("f(*args)", "star", "*args"),
        ("f(m, x, s, **options)", "star", "**options"),
        ("f(m, x, s, **{key: 1})", "star", "**{key: 1}"),
        ("f(m, x, s, weight_sharing=True)", "unknown_keyword", "`weight_sharing`"),
        ("f(m, x, s, module=m)", "bad", "`module` given twice"),
        ("f(" + ", ".join("a" * (i + 1) for i in range(13)) + ")", "bad", "13 positional"),
    ],
)
def test_binding_refuses_what_it_cannot_know(code: str, kind: str, detail: str) -> None:
    error = bind_call(_call(code), PARAMETERS)
    assert isinstance(error, BindError)
    assert error.kind == kind and detail in error.detail


def test_binding_keeps_comments_with_their_argument() -> None:
    code = "f(  # why\n    m,  # the model\n    x,\n    # commented out\n    s,\n    # s2,\n)"
    bound = bind_call(_call(code), PARAMETERS)
    assert isinstance(bound, BoundCall)
    assert bound.args["module"].comments_before == ("# why",)
    assert bound.args["module"].trailing_comment == "# the model"
    assert bound.args["compiler_specs"].comments_before == ("# commented out",)
    assert bound.dangling_comments == ("# s2,",)


# -- what evaluation does ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("code", "duplicable", "free"),
    [
        ("specs", True, True),
        ("self.config.specs", True, True),
        ("(a, 1, None)", True, True),
        ("x is not None", True, True),
        ("{a, b}", False, True),
        ('{"k": v}', False, True),
        ("make()", False, False),
        ("d[k]", False, False),
        ("[f() for f in g]", False, False),
    ],
)
def test_duplicable_and_side_effect_free(code: str, duplicable: bool, free: bool) -> None:
    node = cst.parse_expression(code)
    assert is_duplicable(node) is duplicable
    assert is_side_effect_free(node) is free


def test_evaluated_before() -> None:
    call = _call("f(a(), b, c())")
    assert evaluated_before(call, call.args[2]) == [call.func, call.args[0], call.args[1]]
    boolean = cst.parse_expression("x or y()")
    assert isinstance(boolean, cst.BooleanOperation)
    assert evaluated_before(boolean, boolean.left) == []
    assert evaluated_before(boolean, boolean.right) is None  # may not run at all
    conditional = cst.parse_expression("a if t else b")
    assert isinstance(conditional, cst.IfExp)
    assert evaluated_before(conditional, conditional.body) is None


# -- layout ------------------------------------------------------------------------------
def test_printer_flat_hugged_and_exploded() -> None:
    printer = Printer(cst.parse_module(""))
    short = CallSpec("f", (ArgSpec(Text("a")), ArgSpec(Text("b"), "k")))
    assert printer.render(short, "", 0) == "f(a, k=b)"
    long = CallSpec("f", tuple(ArgSpec(Text(f"argument_{i}")) for i in range(6)))
    assert printer.render(long, "", 30) == (
        "f(\n    argument_0, argument_1, argument_2, argument_3, argument_4, argument_5\n)"
    )
    longer = CallSpec("f", tuple(ArgSpec(Text(f"argument_number_{i}")) for i in range(6)))
    assert printer.render(longer, "", 0).endswith("    argument_number_5,\n)")
    single = CallSpec("g", (ArgSpec(CallSpec("h", (ArgSpec(Text("x" * 90)),))),))
    assert printer.render(single, "", 0) == f"g(\n    h(\n        {'x' * 90}\n    )\n)"
    commented = CallSpec("f", (ArgSpec(Text("a"), trailing_comment="# why"),))
    assert printer.render(commented, "", 0) == "f(\n    a,  # why\n)"
    choice = Conditional(Text("a" * 40), Text("b" * 40), Text("c" * 40))
    assert printer.render(choice, "", 10).count("\n") == 4


def test_printer_reindents_a_multiline_user_expression() -> None:
    module = cst.parse_module("x = {\n    'a': 1,  # one\n}\n")
    statement = module.body[0]
    assert isinstance(statement, cst.SimpleStatementLine)
    assign = statement.body[0]
    assert isinstance(assign, cst.Assign)
    printer = Printer(module)
    moved = printer.source(Source(assign.value, ""), "        ")
    assert moved == "{\n            'a': 1,  # one\n        }"


# -- what the source proves about a value ------------------------------------------------
def test_knowledge_of_dicts() -> None:
    code = (
        "import torch\n"
        "class Net(torch.nn.Module):\n    pass\n"
        "def f(annotated: torch.nn.Module, unknown):\n"
        "    net = Net()\n"
        "    methods = {'forward': net}\n"
        "    (annotated, unknown, net, methods, Net().eval(), convert())\n"
    )
    wrapper = MetadataWrapper(cst.parse_module(code))

    class Metadata(cst.MetadataDependent):
        METADATA_DEPENDENCIES = (QualifiedNameProvider, ScopeProvider, ParentNodeProvider)

    metadata = Metadata()
    function = wrapper.module.body[2]
    assert isinstance(function, cst.FunctionDef)
    assert isinstance(function.body, cst.IndentedBlock)
    last = function.body.body[-1]
    assert isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[0], cst.Expr)
    values = last.body[0].value
    assert isinstance(values, cst.Tuple)
    annotated, unknown, net, methods, chained, convert = (e.value for e in values.elements)
    with metadata.resolve(wrapper):
        knowledge = Knowledge(
            catalog().evidence,
            lambda node: {q.name for q in metadata.get_metadata(QualifiedNameProvider, node, ())},
            lambda node: metadata.get_metadata(ScopeProvider, node, None),
            lambda node: metadata.get_metadata(ParentNodeProvider, node, None),
        )
        assert knowledge.is_not_dict(annotated)
        assert knowledge.is_not_dict(net) and knowledge.is_not_dict(chained)
        assert knowledge.is_dict(methods) and not knowledge.is_not_dict(methods)
        assert not knowledge.is_not_dict(unknown) and not knowledge.is_dict(unknown)
        assert not knowledge.is_not_dict(convert)


def test_reexport_scan_leaves_out_executorchs_own_modules() -> None:
    """Every user file imports the name from ExecuTorch; that keeps no module of the run bound
    (a run's own `utils.py` would otherwise match `...qualcomm.utils.utils` by its tail)."""
    user = (
        "from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn\n"
    )
    reexport = "from mypkg.utils import to_edge_transform_and_lower_to_qnn\n"
    assert reexport_scan({"a.py": user}) == frozenset()
    assert reexport_scan({"a.py": user, "b.py": reexport}) == {"mypkg.utils"}
    assert not imported_here("src/utils.py", reexport_scan({"a.py": user}))
