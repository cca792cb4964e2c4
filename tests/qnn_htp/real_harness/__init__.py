"""Host-side helpers for running ExecuTorch's real harness through ``bot run-shard``."""
