"""Import-only stand-in for torchvision.models.mobilenetv2 (a test double)."""

from _standin import standin

MobileNet_V2_Weights = standin("torchvision.models.mobilenetv2.MobileNet_V2_Weights")
