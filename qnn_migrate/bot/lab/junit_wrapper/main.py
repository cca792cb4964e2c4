"""Run ExecuTorch's QNN test script under unittest and write JUnit XML as it goes.

The command line (see the package's docstring), loading the script, and the exit codes:
0 all passed, 1 some did not, 3 the wrapper cannot drive this script (no
``setup_environment``): the caller then runs the script directly with ``-v``; 4 the wrapper
itself failed (it could not write the XML, say): the caller reports the tests it could not
account for as INFRA, never as the change's fault.
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib.util
import os
import sys
import time
import traceback
import unittest
from typing import TextIO

from . import fork, hooks
from .xml_result import XmlTestResult, write_module_error

EXIT_UNUSABLE = 3
EXIT_WRAPPER_FAULT = 4


class SetupEnvironmentError(Exception):
    """The script rejected the command line it was given (a runner/checkout mismatch)."""


def main(
    argv: list[str] | None = None, stream: TextIO | None = None, clock: fork.Clock = time.monotonic
) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--junit-xml", required=True, help="where to write the JUnit XML")
    parser.add_argument("--per-test-timeout", type=float, default=0.0, help="seconds; 0 = none")
    parser.add_argument("--programs", help="record a fingerprint of every lowered program here")
    parser.add_argument(
        "--seed", type=int, help="seed random, NumPy and torch with this as each test starts"
    )
    parser.add_argument(
        "--fork-per-test",
        action="store_true",
        help="run each test in its own child of this process (nothing it does reaches the next)",
    )
    parser.add_argument("script", help="the test script, e.g. backends/.../test_qnn_delegate.py")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    stream = stream or sys.stderr
    faulthandler.enable()

    script = os.path.abspath(args.script)
    suite = os.path.splitext(os.path.basename(script))[0]
    XmlTestResult.xml_path = args.junit_xml
    XmlTestResult.suite_name = suite
    XmlTestResult.per_test_timeout = args.per_test_timeout
    XmlTestResult.seed = args.seed

    # The script's directory comes first on sys.path, as when it runs as a program.
    sys.path.insert(0, os.path.dirname(script))
    try:
        spec = importlib.util.spec_from_file_location(suite, script)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {script}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[suite] = module
        spec.loader.exec_module(module)
    except Exception as exc:  # the script itself is broken: report it, never look green
        write_module_error(
            args.junit_xml, suite, type(exc).__name__, str(exc), traceback.format_exc()
        )
        print(f"junit_wrapper: importing {script} failed:\n{traceback.format_exc()}", file=stream)
        return 1

    if args.programs:
        try:
            XmlTestResult.recorder = hooks.load_recorder(args.programs, module)
        except Exception as exc:  # the tests still run; the report says why nothing was recorded
            hooks.write_recorder_failure(args.programs, f"{type(exc).__name__}: {exc}")
            print(f"junit_wrapper: cannot record programs: {exc}", file=stream)

    setup = getattr(module, "setup_environment", None)
    if not callable(setup):
        print(
            f"junit_wrapper: {script} has no setup_environment(); run it directly with -v",
            file=stream,
        )
        return EXIT_UNUSABLE

    sys.argv = [script, *args.script_args]
    try:
        ut_argv = list(setup())
    except SystemExit as exc:
        message = f"setup_environment() rejected the command line (exit {exc.code})"
        write_module_error(args.junit_xml, suite, SetupEnvironmentError.__name__, message, "")
        print(f"junit_wrapper: {message}", file=stream)
        return 1
    except Exception as exc:
        write_module_error(
            args.junit_xml, suite, type(exc).__name__, str(exc), traceback.format_exc()
        )
        print(f"junit_wrapper: setup_environment() failed:\n{traceback.format_exc()}", file=stream)
        return 1

    if args.per_test_timeout > 0:
        hooks.install_alarm(args.per_test_timeout)
    runner: unittest.TextTestRunner
    if args.fork_per_test and hasattr(os, "fork"):
        runner = fork.ForkingRunner(
            stream=stream, verbosity=2, resultclass=fork.ParentResult, clock=clock
        )
    else:
        if args.fork_per_test:
            print("junit_wrapper: no os.fork here: the tests run in this process", file=stream)
        runner = unittest.TextTestRunner(stream=stream, verbosity=2, resultclass=XmlTestResult)
    program = unittest.main(module=module, argv=ut_argv, testRunner=runner, exit=False)
    result = program.result
    fault = getattr(result, "fault", None)
    if fault:
        print(f"junit_wrapper: {fault}", file=stream)
        return EXIT_WRAPPER_FAULT
    return 0 if result.wasSuccessful() and result.testsRun > 0 else 1


def main_guarded(argv: list[str] | None = None, clock: fork.Clock = time.monotonic) -> int:
    """``main``, with a bug of the wrapper's own read as the runner's fault (exit 4)."""
    try:
        return main(argv, clock=clock)
    except SystemExit:
        raise
    except BaseException:  # a bug here must read as the runner's fault, not the PR's
        print(f"junit_wrapper: internal error:\n{traceback.format_exc()}", file=sys.stderr)
        return EXIT_WRAPPER_FAULT
