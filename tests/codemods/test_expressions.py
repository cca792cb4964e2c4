"""expressions.py: what evaluating an expression does (duplicable, side-effect free, order)."""

from __future__ import annotations

import libcst as cst
import pytest
from qnn_migrate_tests.codemods.support import parse_call as _call

from qnn_migrate.codemods.expressions import evaluated_before, is_duplicable, is_side_effect_free


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
