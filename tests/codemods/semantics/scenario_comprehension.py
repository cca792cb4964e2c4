"""Calls in a comprehension (the expression form), with specs built inline per call."""

import torch
from executorch.backends.qualcomm.serialization.qc_schema import QcomChipset
from executorch.backends.qualcomm.utils.utils import (
    generate_htp_compiler_spec,
    generate_qnn_executorch_compiler_spec,
    to_edge_transform_and_lower_to_qnn,
)


class Scale(torch.nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.register_buffer("factor", torch.tensor([factor]))

    def forward(self, x):
        return x * self.factor + x


example_inputs = (torch.ones(2, 3),)
RESULT = [
    to_edge_transform_and_lower_to_qnn(
        module,
        example_inputs,
        generate_qnn_executorch_compiler_spec(
            soc_model=QcomChipset.SM8650,
            backend_options=generate_htp_compiler_spec(use_fp16=True),
        ),
        skip_mutable_buffer=True,
    )
    for module in (Scale(2.0).eval(), Scale(-1.0).eval())
]
