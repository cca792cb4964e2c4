"""Errors (and the one warning) raised by qnn_passes; each message says what happened, where, and what to do."""

from __future__ import annotations


class QnnConfigError(ValueError):
    """Bad input to the qnn_passes API: unknown method, unknown pass, bad pass table."""


class PassOrderError(QnnConfigError):
    """The pass tables cannot be solved into an order that keeps the pipeline's invariants."""


class QnnSdkMissingError(RuntimeError):
    """A QNN backend could not start because the QNN SDK libraries are not where the loader looks."""


class QnnPipelineError(RuntimeError):
    """A pipeline invariant failed while the passes ran (e.g. lost quantization attributes)."""


class UntestedExecuTorchWarning(UserWarning):
    """The installed ExecuTorch is not a version qnn_passes was tested with, but its QNN pass lists match."""
