"""The lowering tier lowers hundreds of programs: torch's bookkeeping accelerated (same results)."""

from qnn_migrate_tests import torch_speedup

torch_speedup.install()
