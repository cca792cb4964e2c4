"""Import-only stand-in for torchsr.models (a test double)."""

from _standin import standin

edsr_r16f64 = standin("torchsr.models.edsr_r16f64")
