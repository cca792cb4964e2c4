"""Runs ExecuTorch's own tests of other backends (XNNPACK, portable) under the JUnit wrapper.

This file runs on the simulator host inside the ExecuTorch checkout, with ExecuTorch's own
Python, as the "test script" ``junit_wrapper`` loads (``catalog.command_argv`` builds
its command for a matrix with ``modules``): it uses the standard library at import time
and imports nothing from qnn-migrate.

    python .../junit_wrapper --junit-xml OUT.xml --programs P.json other_backends.py \\
        --module executorch.backends.xnnpack.test.ops.test_abs --seed 1126 \\
        TestAbs.test_fp32_abs [the runner's own flags, ignored]

or, to rerun tests by hand where qnn-migrate is installed in ExecuTorch's Python (the
report's reproduction command)::

    python -m qnn_migrate.bot.lab.other_backends --module ... TestAbs.test_fp32_abs

``setup_environment()`` (what the wrapper calls, as for ExecuTorch's QNN script) imports
each ``--module``, puts its test classes in this module's namespace so that unittest finds
``TestAbs.test_fp32_abs`` here, seeds torch before every test (ExecuTorch's tests draw
inputs and weights at random; a fixed seed per test keeps a program the same whatever
shard it lands in) and returns unittest's argv. The tests themselves run unchanged.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import unittest
from typing import Any

# Flags the runner adds to every simulator command; meaningless here, accepted and ignored.
RUNNER_FLAGS = ("--executorch_root", "--artifact_dir", "--build_folder", "--soc_model")
RUNNER_SWITCHES = ("--enable_x86_64", "--compile_only")


class ModuleNotLoadedError(ImportError):
    """A ``--module`` could not be imported: the checkout lacks it, or it fails to import."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="other_backends.py", description=__doc__)
    parser.add_argument("--module", action="append", default=[], help="an ExecuTorch test module")
    parser.add_argument("--seed", type=int, default=1126, help="torch's seed before each test")
    for flag in RUNNER_FLAGS:
        parser.add_argument(flag, help=argparse.SUPPRESS)
    for switch in RUNNER_SWITCHES:
        parser.add_argument(switch, action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("-v", "--verbose", action="store_true", help="unittest's -v")
    parser.add_argument("tests", nargs="*", help="TestClass.test_name")
    return parser


def _seeded(cls: type, seed: int) -> type:
    """A subclass of ExecuTorch's test class whose every test starts from ``seed``."""
    shipped_set_up = cls.setUp  # type: ignore[attr-defined]

    def setUp(self: Any) -> None:
        importlib.import_module("torch").manual_seed(seed)
        shipped_set_up(self)

    return type(cls.__name__, (cls,), {"setUp": setUp, "__module__": __name__})


def load(modules: list[str], seed: int, namespace: dict[str, Any]) -> list[str]:
    """Import ``modules`` and bind their TestCase classes, seeded, in ``namespace``."""
    bound: list[str] = []
    for name in modules:
        try:
            module = importlib.import_module(name)
        except Exception as exc:
            raise ModuleNotLoadedError(
                f"cannot import the test module {name} from the checkout: "
                f"{type(exc).__name__}: {exc}; check the matrix's modules in the bot's config"
            ) from exc
        for key, value in vars(module).items():
            if (
                isinstance(value, type)
                and issubclass(value, unittest.TestCase)
                and value.__module__ == module.__name__
            ):
                namespace[key] = _seeded(value, seed)
                bound.append(key)
    return bound


def setup_environment() -> list[str]:
    """Parse the command line, load the modules; unittest's argv (what the wrapper runs)."""
    args = _parser().parse_args(sys.argv[1:])
    load(args.module, args.seed, globals())
    return [sys.argv[0], *(["-v"] if args.verbose else []), *args.tests]


if __name__ == "__main__":
    unittest.main(module=__name__, argv=setup_environment())
