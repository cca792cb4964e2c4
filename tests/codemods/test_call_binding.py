"""call_binding.py: the call's arguments bound to the deprecated function's parameters."""

from __future__ import annotations

import pytest
from qnn_migrate_tests.codemods.support import parse_call as _call

from qnn_migrate.codemods.call_binding import BindError, BoundCall, bind_call
from qnn_migrate.codemods.deprecations import lower_to_qnn

PARAMETERS = lower_to_qnn().parameters


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
