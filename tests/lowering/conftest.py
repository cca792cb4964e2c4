"""The lowering tier lowers hundreds of programs: torch's bookkeeping accelerated (same results)."""

import torch_speedup

torch_speedup.install()
