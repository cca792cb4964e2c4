"""Lower a decoder's prefill and decode graphs into one program with two methods."""

from executorch.backends.qualcomm._passes.qnn_pass_manager import QnnPassManager
from executorch.backends.qualcomm.export_utils import to_edge_transform_and_lower_to_qnn
from executorch.backends.qualcomm.utils.utils import generate_qnn_executorch_compiler_spec


def lower_decoder(prefill, decode, prefill_inputs, decode_inputs, backend_options, soc, meta):
    passes_job = QnnPassManager.get_capture_program_passes()
    passes_dependency = QnnPassManager.get_passes_dependency_for_capture_program()
    compile_specs = generate_qnn_executorch_compiler_spec(
        soc_model=soc, backend_options=backend_options, shared_buffer=True
    )
    # prefill and decode share the weights: lower both graphs in one call
    edge_prog_mgr = to_edge_transform_and_lower_to_qnn(
        {"prefill_forward": prefill, "kv_forward": decode},
        {"prefill_forward": prefill_inputs, "kv_forward": decode_inputs},
        {"prefill_forward": compile_specs, "kv_forward": compile_specs},
        constant_methods=meta,
        dep_table=passes_dependency,
        passes_job=passes_job,
        skip_mutable_buffer=False,
    )
    return edge_prog_mgr
