"""Source rewriting with libcst: to_edge_transform_and_lower_to_qnn -> to_edge_transform_and_lower.

Pure transforms; only ``codemods.cli`` reads or writes files. Nothing here imports torch.
"""
