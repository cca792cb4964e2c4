"""Import-only stand-in for torchvision.models (a test double)."""

from _standin import standin

inception_v3 = standin("torchvision.models.inception_v3")
mobilenet_v2 = standin("torchvision.models.mobilenet_v2")
vit_b_16 = standin("torchvision.models.vit_b_16")
