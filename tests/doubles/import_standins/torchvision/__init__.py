"""Import-only stand-in for torchvision (a test double; see tests/doubles/import_standins/README.md)."""

from torchvision import models

__all__ = ["models"]
