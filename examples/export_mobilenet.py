#!/usr/bin/env python3
"""Quantize MobileNet V2 and export it for a Snapdragon 8 Gen 3 HTP."""

import argparse

import torch
from executorch.backends.qualcomm.quantizer.quantizer import QnnQuantizer
from executorch.backends.qualcomm.serialization.qc_schema import QcomChipset
from executorch.backends.qualcomm.utils.utils import (
    generate_htp_compiler_spec,
    generate_qnn_executorch_compiler_spec,
    to_edge_transform_and_lower_to_qnn,
)
from executorch.exir.capture._config import ExecutorchBackendConfig
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from torchvision.models import mobilenet_v2


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", default="mv2_qnn.pte")
    args = parser.parse_args()

    model = mobilenet_v2(weights="DEFAULT").eval()
    sample_input = (torch.randn(1, 3, 224, 224),)

    prepared = prepare_pt2e(torch.export.export(model, sample_input).module(), QnnQuantizer())
    prepared(*sample_input)  # calibrate
    quantized = convert_pt2e(prepared)

    compile_spec = generate_qnn_executorch_compiler_spec(
        soc_model=QcomChipset.SM8650,
        backend_options=generate_htp_compiler_spec(use_fp16=False),
    )
    executorch_program = to_edge_transform_and_lower_to_qnn(
        quantized,
        sample_input,
        compile_spec,
        constant_methods={"get_input_size": 224},
        skip_node_op_set={"aten.adaptive_avg_pool2d.default"},
    ).to_executorch(config=ExecutorchBackendConfig(extract_delegate_segments=True))

    with open(args.output, "wb") as f:
        executorch_program.write_to_file(f)


if __name__ == "__main__":
    main()
