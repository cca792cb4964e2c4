"""The zoo's known outcomes on real QNN HTP (SM8650): each case that does not simply lower alike in both flows, and why.

Read by tests/qnn_htp/test_zoo.py (deprecated wrapper vs qnn_passes) and
tests/qnn_htp/test_canonical_qnn_htp.py (the canonical flow), which expect these outcomes.
"""

from __future__ import annotations

# Lowerings that fail the same way in both flows: upstream (ExecuTorch 1.5.1 / QNN 2.51).
FAILS_IN_BOTH: dict[str, tuple[str, str]] = {}


# Lowerings only the deprecated wrapper fails: what it fails with, why, and the delegates the
# migrated flow lowers to instead.
FAILS_ONLY_DEPRECATED = {
    "conv1d_padding_same": (
        "IndexError: tuple index out of range",
        "padding='same' with an even kernel becomes an asymmetric constant_pad_nd without a "
        "pad value; ExecuTorch 1.5.1's op_pad builder reads node.args[2] unconditionally. "
        "qnn_passes' partitioner declines an op whose builder raises, so the pad runs on the "
        "CPU and the conv is delegated",
        {"forward": 1},
    ),
    "conv1d_mutable_buffer": (
        "Failed to execute method forward",
        "the buffer is written (copy_ of the conv's mean) and never read, so QnnPartitioner "
        "gives its placeholder to the delegate as an unused constant; the delegate then writes "
        "a buffer it holds no memory for ('Tensor ID 14 clientBuf is null', QNN error 6004). "
        "qnn_passes keeps such a buffer a program input (qnn_passes.qnn_partitioner)",
        {"forward": 1},
    ),
    "conv1d_mutable_buffer-skip_mutable_buffer": (
        "Failed to execute method forward",
        "the same with skip_mutable_buffer=True: the unused-constant tagging ignores that flag",
        {"forward": 1},
    ),
}


# Payloads that legitimately differ (simulator outputs are then compared within 1 LSB).
PAYLOAD_DIFFERS = {
    "conv1d_shared_weight": (
        "upstream lifts a weight shared by two convs once per use, so QNN gets the same static "
        "tensor twice; qnn_passes lifts it once (the context holds one tensor fewer)"
    ),
    "linear_to_conv2d_shared_weight": (
        "as conv1d_shared_weight: the tied weight, reshaped for conv2d, reaches QNN once instead "
        "of twice"
    ),
    "linear_to_conv2d_shared_weight-8a8w": "as linear_to_conv2d_shared_weight, quantized",
    "linear_to_conv2d_shared_weight-16a4w": "as linear_to_conv2d_shared_weight, quantized",
}


# Subjects whose context binary varies between fresh lowerings through one flow: up to a few
# hundred scattered bytes (zero in some runs, leftovers in others, as if QNN wrote memory it never
# set). The two flows differ no more than that, and sometimes not at all, so the payloads must
# have one length and differ in at most pairs.VARYING_BYTES bytes, and outputs agree within 1 LSB.
COMPILE_NOT_DETERMINISTIC = {
    **{
        f"{name}-16a4w_block": "QNN 2.51's compile of block-wise 4-bit weights"
        for name in ("linear_3d", "linear_to_conv2d_3d")
    },
    "conv1d_groups_dilation_stride": "QNN 2.51's compile of this grouped, dilated, strided conv",
}


# Outputs that do not match eager in either flow (payloads byte-identical between flows).
NUMERICS_WRONG_IN_BOTH = {
    **{
        f"{name}-16a4w_block": (
            "4-bit weights in blocks of 4 input channels come out of QNN 2.51 at -5 dB SNR "
            "against the fake-quant model, the same in both flows (the zoo's blocks of 8 over "
            "16 inputs, quant_linear_block_16a4w, are right)"
        )
        for name in ("linear_3d", "linear_to_conv2d_3d")
    },
    "conv_transpose3d_output_padding": (
        "QNN 2.51 HTP computes this dilated, strided 3-D transposed conv with output padding at "
        "~16 dB SNR against eager; the program both flows hand it computes right on the CPU "
        "(tests/lowering/test_numerics.py)"
    ),
}
