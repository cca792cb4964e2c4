"""A dict of methods held in a variable, per-method inputs and specs, shared options."""

import torch
from executorch.backends.qualcomm._passes.qnn_pass_manager import get_qnn_pass_manager_cls
from executorch.backends.qualcomm.serialization.qc_schema import QcomChipset
from executorch.backends.qualcomm.utils.utils import (
    generate_htp_compiler_spec,
    generate_qnn_executorch_compiler_spec,
    to_edge_transform_and_lower_to_qnn,
)


class Prefill(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(6, 6)

    def forward(self, tokens):
        return self.proj(tokens) + 1.0


class Decode(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.arange(6.0))

    def forward(self, token):
        return token * self.cache - 2.0


def build_specs(fp16):
    return generate_qnn_executorch_compiler_spec(
        soc_model=QcomChipset.SM8650,
        backend_options=generate_htp_compiler_spec(use_fp16=fp16),
    )


torch.manual_seed(1)
methods = {"prefill": Prefill().eval(), "decode": Decode().eval()}
inputs = {"prefill": (torch.randn(3, 6),), "decode": (torch.randn(1, 6),)}
specs = {"prefill": build_specs(True), "decode": build_specs(False)}
RESULT = to_edge_transform_and_lower_to_qnn(
    methods,
    inputs,
    specs,
    constant_methods={"get_cache_size": 6},
    passes_job=get_qnn_pass_manager_cls().get_capture_program_passes(),
    skip_node_op_set={"aten.sub.Tensor"},
    skip_mutable_buffer=False,
    convert_linear_to_conv2d=True,
)
