"""Fixtures of the real-QNN tier: the SDK root (laid out once), the fresh-process runner, and the
session's shared results of fresh-process calls."""

from __future__ import annotations

import os

import pytest
from qnn_migrate_tests.qnn_htp.fresh import FreshRunner, fresh_runner
from qnn_migrate_tests.qnn_htp.sdk import QnnSdk, SdkUnavailableError, ensure_sdk
from qnn_migrate_tests.qnn_htp.session_cache import SessionCache

from qnn_migrate_tests import torch_speedup

torch_speedup.install()  # torch's bookkeeping accelerated, the same results (see its module)


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


@pytest.fixture(scope="session")
def qnn_cache(qnn: FreshRunner, tmp_path_factory: pytest.TempPathFactory) -> SessionCache:
    """Each lowering (``qnn_cache.lowered([spec, ...])``) or other fresh-process call run once
    per session, its result shared by every test and both xdist workers (see session_cache)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # a worker's base is <the session's base>/popen-gwN
    return SessionCache(qnn, base / "qnn-fresh-results")
