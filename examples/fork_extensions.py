"""Calls the rewrite leaves alone and reports: it never guesses what they mean."""

import functools

from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn


def lower_with_weight_sharing(model, inputs, specs):
    # `weight_sharing` exists only in this project's fork of the wrapper
    return to_edge_transform_and_lower_to_qnn(model, inputs, specs, weight_sharing=True)


def lower_with(options, model, inputs, specs):
    return to_edge_transform_and_lower_to_qnn(model, inputs, specs, **options)


# the function itself is handed to a pipeline that calls it later
LOWERING_BACKENDS = {
    "qnn": functools.partial(to_edge_transform_and_lower_to_qnn, skip_mutable_buffer=True),
}
