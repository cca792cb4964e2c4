"""The test suite's helpers, importable under one name: ``qnn_migrate_tests``.

This package's ``__path__`` is the tests/ folder itself, so a helper is imported by where it
lives: ``qnn_migrate_tests.qnn_htp.sdk`` is tests/qnn_htp/sdk.py and
``qnn_migrate_tests.doubles.qnn_backend`` is tests/doubles/qnn_backend.py. Helpers stay beside
the tests they serve (with the data files they find through ``Path(__file__)``), yet only this
folder, tests/support, is on ``sys.path`` (pytest's ``pythonpath`` setting; scripts run as
subprocesses put it there themselves). A bare top-level name for a test folder (``bot``,
``passes``, ``docs``, ``github``) could shadow an installed distribution, and a helper imported
under two names would be two modules with two identities of every class in it.

Import helpers absolutely (``from qnn_migrate_tests.github_standin.server import
GitHubStandIn``), never relatively, and never from a test module or a conftest: pytest imports
those itself (``--import-mode=importlib``, as ``tests.<folder>.test_<name>``), and a second
import would make a second copy. tests/test_helpers_package.py checks all of this.
"""

from __future__ import annotations

from pathlib import Path

# tests/support/qnn_migrate_tests/__init__.py -> tests/
__path__ = [str(Path(__file__).resolve().parents[2])]
