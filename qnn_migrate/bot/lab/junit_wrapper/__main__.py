"""``python path/to/junit_wrapper ARGS``: load the wrapper by path into this process and run it.

The folder is loaded as the package ``qnn_junit_wrapper`` from wherever it is (the bot's
install, or its copy staged for a job user), so nothing of qnn-migrate needs to be
importable. Python puts the folder itself first on ``sys.path`` when it runs it; that entry is
taken out again, so the harness's imports find what they would find running as a program
(``main`` puts the script's folder first).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from types import ModuleType

PACKAGE = "qnn_junit_wrapper"
HERE = os.path.dirname(os.path.abspath(__file__))
# main.EXIT_WRAPPER_FAULT, which cannot be read from main.py when main.py is what failed.
EXIT_WRAPPER_FAULT = 4


def load(name: str = PACKAGE) -> ModuleType:
    """This folder's ``main`` module, its package loaded by path as ``name`` (once a process)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(HERE, "__init__.py"), submodule_search_locations=[HERE]
        )
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load the JUnit wrapper from {HERE}")
        package = importlib.util.module_from_spec(spec)
        sys.modules[name] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"{name}.main")


def run() -> int:
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == HERE:
        del sys.path[0]
    try:
        main = load()
    except Exception:  # a broken wrapper is the runner's fault, never the PR's
        print(f"junit_wrapper: cannot load {HERE}:\n{traceback.format_exc()}", file=sys.stderr)
        return EXIT_WRAPPER_FAULT
    code: int = main.main_guarded()
    return code


if __name__ == "__main__":
    sys.exit(run())
