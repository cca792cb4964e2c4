"""Fixtures of the real-QNN tier: the SDK root (laid out once) and the fresh-process runner."""

from __future__ import annotations

import os

import pytest

from qnn_htp.fresh import FreshRunner, fresh_runner
from qnn_htp.sdk import QnnSdk, SdkUnavailableError, ensure_sdk


@pytest.fixture(scope="session")
def qnn_sdk() -> QnnSdk:
    """The QNN SDK root; under CI=1 a missing one fails the test (it never skips)."""
    try:
        return ensure_sdk()
    except SdkUnavailableError as err:
        if os.environ.get("CI"):
            pytest.fail(f"real-QNN tier: {err}", pytrace=False)
        pytest.skip(f"real-QNN tier: {err}")


@pytest.fixture(scope="session")
def qnn(qnn_sdk: QnnSdk) -> FreshRunner:
    """Runs a function (e.g. ``qnn_htp.lowering.lower``) in a fresh child of a clean fork server."""
    return fresh_runner(qnn_sdk)
