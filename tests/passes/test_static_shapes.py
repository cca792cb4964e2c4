"""A program exported with dynamic sizes is refused before any QNN work, with what to do instead.

QNN's HTP builds static shapes only (qnn_passes/static_shapes.py has what QNN 2.51 does with
a dynamic dimension); on real QNN the cases of tests/passes/beyond.py with a dynamic size are
refused in tests/qnn_htp/test_beyond_wrapper.py. Here: the zoo's dynamic batch through both
qnn_passes flows, under the QNN double (the wrapper, the control, hands the partitioner a
program), the message, and a dict of methods where one method is dynamic.
"""

from __future__ import annotations

import pytest
import torch
from qnn_migrate_tests.passes import flows
from qnn_migrate_tests.passes.beyond import BY_NAME as BEYOND
from qnn_migrate_tests.passes.zoo import BY_NAME, REFUSED_CASES
from torch.export import Dim

from qnn_passes import qnn_transform_passes
from qnn_passes.errors import QnnConfigError
from qnn_passes.static_shapes import dynamic_inputs

DYNAMIC = "conv1d_dynamic_batch"


@pytest.mark.parametrize("run", [flows.run_canonical, flows.run_migrated])
def test_a_dynamic_batch_is_refused_with_the_input_its_range_and_the_way_out(run: object) -> None:
    assert DYNAMIC in {c.name for c in REFUSED_CASES}
    with pytest.raises(QnnConfigError) as refused:
        run(BY_NAME[DYNAMIC])  # type: ignore[operator]
    message = str(refused.value)
    assert "qnn_transform_passes: method 'forward' was exported with dynamic sizes" in message
    assert "input 'x' dimension 0" in message and "in [1, 16]" in message
    assert "one method per size" in message and "'forward_8'" in message


def test_control_the_wrapper_hands_the_dynamic_program_to_the_partitioner() -> None:
    record = flows.deprecated(DYNAMIC)
    assert record.handoffs, "the wrapper did not reach the partitioner"


@pytest.mark.parametrize(
    "name", ["dynamic_arange", "dynamic_linear", "dynamic_rms_norm", "dynamic_arange_unsqueeze"]
)
def test_every_dynamic_cut_is_refused(name: str) -> None:
    case = BEYOND[name]
    model, inputs = case.build()
    program = torch.export.export(model, inputs, dynamic_shapes=case.dynamic_shapes())
    assert [(i, d) for i, d, _ in dynamic_inputs(program)] == [
        (program.graph_signature.user_inputs[0], 1)
    ]
    with pytest.raises(QnnConfigError, match="exported with dynamic sizes"):
        qnn_transform_passes(program, flows.specs())


def test_only_the_dynamic_method_of_a_dict_is_named() -> None:
    static = torch.export.export(torch.nn.Linear(4, 4), (torch.randn(2, 4),))
    dynamic = torch.export.export(
        torch.nn.Linear(4, 4), (torch.randn(2, 4),), dynamic_shapes=({0: Dim("rows", max=8)},)
    )
    assert dynamic_inputs(static) == []
    qnn_transform_passes(static, flows.specs())  # the control: a static program is not refused
    with pytest.raises(QnnConfigError, match="method 'decode' was exported") as refused:
        qnn_transform_passes({"encode": static, "decode": dynamic}, flows.specs())
    assert "'encode'" not in str(refused.value)
