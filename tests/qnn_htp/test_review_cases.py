"""The review points of ExecuTorch PR #20738 on real QNN HTP: lowered through both flows and run.

Most are zoo entries, lowered and compared in test_zoo.py (the mapping below is checked); the
ones the zoo does not hold are built in qnn_htp.subjects.review and compared here the same way.
"""

from __future__ import annotations

import pytest
from qnn_migrate_tests.qnn_htp import test_zoo
from qnn_migrate_tests.qnn_htp.pairs import (
    assert_matches_reference,
    assert_same_structure,
    lower_both,
    payloads_identical,
)
from qnn_migrate_tests.qnn_htp.session_cache import SessionCache

pytestmark = pytest.mark.qnn_htp
REVIEW = "qnn_migrate_tests.qnn_htp.subjects:review"
# Review point -> zoo ids (test_zoo.py) that lower it on real QNN.
IN_THE_ZOO = {
    "torchao affine block quant": [
        "quant_linear_block_16a4w",
        "linear_3d-16a4w_block",
        "linear_to_conv2d_3d-16a4w_block",
    ],
    "shared weights": [
        "conv1d_shared_weight",
        "linear_shared_weight",
        "linear_to_conv2d_shared_weight",
        "linear_to_conv2d_shared_weight-8a8w",
        "linear_to_conv2d_shared_weight-16a4w",
    ],
    "QAT": ["quant_linear_qat", "linear_3d-8a8w_qat", "linear_3d-16a4w_qat"],
}
# Built here. A userless constant: an unused buffer next to a linear lowered as conv2d; a bare
# constant weight: a conv1d weight that is a plain tensor attribute (torch.export lifts it as a
# constant; the get_attr form only exists between passes and is covered in tests/passes).
BUILT_HERE = ["unused_constant", "constant_conv1d_weight", "dequantize_not_first_user"]
# Both flows fail here, differently. The wrapper's ConvertLinearToConv2d looks at the weight's
# first user only, so the conv gets the int8 weight undequantized; QNN rejects that conv and it
# runs on the CPU, where the portable kernel refuses the int8 weight (0x12): the upstream bug.
# qnn_passes finds the dequantize, the conv is delegated with its dequantized weight, and then
# QNN 2.51 cannot prepare a weight-only dequantize into a conv in an fp16 graph.
FAILS_DIFFERENTLY = {
    "dequantize_not_first_user": {
        "deprecated": "RuntimeError: Failed to execute method forward, error: 0x12",
        "migrated": "Failed to generate Qnn context binary",
    },
}


def test_every_review_point_in_the_zoo_is_lowered_there() -> None:
    ids = {p.id for p in test_zoo._zoo_params() + test_zoo._precision_params()}  # type: ignore[attr-defined]
    for point, cases in IN_THE_ZOO.items():
        assert set(cases) <= ids, point


@pytest.mark.parametrize("name", BUILT_HERE)
def test_review_case_gives_the_same_delegates_and_outputs(
    qnn_cache: SessionCache, name: str
) -> None:
    outcome = lower_both(qnn_cache, REVIEW, (name,))
    if name in FAILS_DIFFERENTLY:
        for flow, message in FAILS_DIFFERENTLY[name].items():
            assert message in outcome.error(flow), flow
        return
    old, new = outcome.ok("deprecated"), outcome.ok("migrated")
    assert_same_structure(old, new)
    assert sum(old.delegates.values()) >= 1
    assert payloads_identical(old, new)
    for result in (old, new):
        assert_matches_reference(result, quantized=False)
