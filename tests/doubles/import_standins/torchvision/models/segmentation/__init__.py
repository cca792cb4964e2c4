"""Import-only stand-in for torchvision.models.segmentation (a test double)."""

from _standin import standin

deeplabv3 = standin("torchvision.models.segmentation.deeplabv3")
deeplabv3_resnet50 = standin("torchvision.models.segmentation.deeplabv3_resnet50")
deeplabv3_resnet101 = standin("torchvision.models.segmentation.deeplabv3_resnet101")
