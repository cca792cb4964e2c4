"""targets/argument_plan.py: which arguments an expression cannot keep in order, exactly."""

from __future__ import annotations

import libcst as cst
import pytest

from qnn_migrate.codemods.call_binding import BoundCall, bind_call
from qnn_migrate.codemods.deprecations import lower_to_qnn
from qnn_migrate.codemods.targets.argument_plan import plan_arguments
from qnn_migrate.codemods.targets.site import OrderCannotBeKept

# The qnn-passes target's expression order: the context's specs first, then its first use.
ORDER = (
    "compiler_specs",
    "module",
    "inputs",
    "dynamic_shapes",
    "passes_job",
    "dep_table",
    "skip_node_id_set",
    "skip_node_op_set",
    "convert_linear_to_conv2d",
    "skip_mutable_buffer",
    "constant_methods",
    "generate_etrecord",
)


def _moved(call: str) -> tuple[str, ...] | None:
    expression = cst.parse_expression(call)
    assert isinstance(expression, cst.Call)
    bound = bind_call(expression, lower_to_qnn().parameters)
    assert isinstance(bound, BoundCall)
    try:
        plan_arguments(bound, order=ORDER, uses={}, statements=False, work_starts=4)
    except OrderCannotBeKept as cannot:
        return cannot.params
    return None


@pytest.mark.parametrize(
    ("call", "moved"),
    [
        # module is evaluated first, as before: only the two late ones move
        (
            "f(job.build(), x, s, dep_table=job.table(), passes_job=job.passes())",
            ("dep_table", "passes_job"),
        ),
        # specs evaluated before the module in the new expression: both named
        ("f(m.build(), x, make_specs())", ("module", "compiler_specs")),
        # the control: arguments whose order is kept name nothing
        ("f(m.build(), x, s)", None),
    ],
)
def test_the_order_reason_names_exactly_the_arguments_that_move(
    call: str, moved: tuple[str, ...] | None
) -> None:
    assert _moved(call) == moved
