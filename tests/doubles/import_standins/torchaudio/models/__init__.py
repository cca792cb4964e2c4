"""Import-only stand-in for torchaudio.models (a test double)."""

from _standin import standin

Wav2Letter = standin("torchaudio.models.Wav2Letter")
