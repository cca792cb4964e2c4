"""Import-only stand-in for timm.models (a test double)."""

from _standin import standin

inception_v4 = standin("timm.models.inception_v4")
