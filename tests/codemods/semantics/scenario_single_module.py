"""One module, every parameter of the deprecated call set (constant_methods positionally)."""

import torch
from executorch.backends.qualcomm._passes.qnn_pass_manager import get_qnn_pass_manager_cls
from executorch.backends.qualcomm.serialization.qc_schema import QcomChipset
from executorch.backends.qualcomm.utils.utils import (
    generate_htp_compiler_spec,
    generate_qnn_executorch_compiler_spec,
    to_edge_transform_and_lower_to_qnn,
)
from torch.export import Dim


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 4)
        self.register_buffer("scale", torch.full((4,), 0.5))

    def forward(self, x, y):
        return self.linear(x) * self.scale + y


torch.manual_seed(0)
model = Net().eval()
example_inputs = (torch.randn(2, 8), torch.randn(2, 4))
compiler_specs = generate_qnn_executorch_compiler_spec(
    soc_model=QcomChipset.SM8650, backend_options=generate_htp_compiler_spec(use_fp16=True)
)
pass_manager_cls = get_qnn_pass_manager_cls()
batch = Dim("batch", min=1, max=8)
RESULT = to_edge_transform_and_lower_to_qnn(
    model,
    example_inputs,
    compiler_specs,
    {"get_scale": 2},
    dynamic_shapes={"x": {0: batch}, "y": {0: batch}},
    dep_table=pass_manager_cls.get_passes_dependency_for_capture_program(),
    passes_job=pass_manager_cls.get_capture_program_passes(),
    skip_node_id_set={"aten_add_tensor"},
    skip_node_op_set={"aten.mul.Tensor"},
    skip_mutable_buffer=True,
    generate_etrecord=True,
    convert_linear_to_conv2d=True,
)
