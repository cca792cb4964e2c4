"""Source rewriting with libcst: to_edge_transform_and_lower_to_qnn -> to_edge_transform_and_lower.

Pure transforms; only ``codemods.files`` reads or writes source files, ``codemods.runner``
runs them in batches (walk, cache, worker pool) and ``codemods.cli`` is the command line.
Nothing here imports torch.
"""
