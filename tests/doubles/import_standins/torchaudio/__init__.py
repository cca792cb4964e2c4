"""Import-only stand-in for torchaudio (a test double; see tests/doubles/import_standins/README.md)."""

from torchaudio import models

__all__ = ["models"]
