"""knowledge.py: what the source proves about a value (a dict of methods or not)."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import (
    MetadataWrapper,
    ParentNodeProvider,
    QualifiedNameProvider,
    ScopeProvider,
)

from qnn_migrate.codemods.deprecations import catalog, lower_to_qnn
from qnn_migrate.codemods.knowledge import Knowledge


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


def test_knowledge_of_specs_that_never_dump() -> None:
    """Specs from the factory without its dump switch never dump; with the switch (by name or
    position, unless `False`), unknown specs, or a list something may change, they may."""
    code = (
        "from executorch.backends.qualcomm.utils.utils import (\n"
        "    generate_qnn_executorch_compiler_spec as spec,\n"
        "    to_edge_transform_and_lower_to_qnn,\n"
        ")\n"
        "def f(soc, opts, unknown, flag):\n"
        "    kept = spec(soc, opts)\n"
        "    changed = spec(soc, opts)\n"
        "    changed.append(flag)\n"
        "    to_edge_transform_and_lower_to_qnn(None, None, kept)\n"
        "    (\n"
        "        kept,\n"
        "        spec(soc, opts, dump_intermediate_outputs=False),\n"
        "        spec(soc, opts, dump_intermediate_outputs=flag),\n"
        "        spec(soc, opts, False, False, False, True),\n"
        "        spec(soc, opts, True, True, True, False),\n"
        "        spec(*unknown),\n"
        "        unknown,\n"
        "        changed,\n"
        "    )\n"
    )
    wrapper = MetadataWrapper(cst.parse_module(code))

    class Metadata(cst.MetadataDependent):
        METADATA_DEPENDENCIES = (QualifiedNameProvider, ScopeProvider, ParentNodeProvider)

    metadata = Metadata()
    function = wrapper.module.body[1]
    assert isinstance(function, cst.FunctionDef) and isinstance(function.body, cst.IndentedBlock)
    last = function.body.body[-1]
    assert isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[0], cst.Expr)
    values = last.body[0].value
    assert isinstance(values, cst.Tuple)
    with metadata.resolve(wrapper):
        knowledge = Knowledge(
            catalog().evidence,
            lambda node: {q.name for q in metadata.get_metadata(QualifiedNameProvider, node, ())},
            lambda node: metadata.get_metadata(ScopeProvider, node, None),
            lambda node: metadata.get_metadata(ParentNodeProvider, node, None),
            keeps_arguments=lower_to_qnn().qualified_names,
        )
        found = [knowledge.never_dumps(e.value) for e in values.elements]
    assert found == [True, True, False, False, True, False, False, False]
