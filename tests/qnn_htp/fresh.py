"""One lowering per fresh process: each call runs in its own fork of a server that has lowered nothing.

QNN's compiler keeps process-wide counters (tensor ids, ``PICKLE/<n>/forward``) that end up in
the context binary, so a second lowering in a process never byte-matches the first. Every call
of :meth:`FreshRunner.run` therefore runs in a new child, forked from Python's multiprocessing
fork server (``forkserver`` start method), which preloaded :mod:`qnn_migrate_tests.qnn_htp.server` (imports and
the ABI bridge, nothing lowered). The server is started once per test process with the SDK's
environment (``QNN_SDK_ROOT``, ``QNN_STAGING_DIR``, ``LD_LIBRARY_PATH``), which the test process
itself never gets. A fork is ~0.1 s where a new interpreter costs seconds of imports.

::

    runner = fresh_runner(sdk)
    lowered = runner.run(lowering.lower, spec)   # any picklable, importable function

The function and its arguments are pickled to the child and its result pickled back, so return
plain data (bytes, numpy arrays). A child that raises raises :class:`FreshProcessError` here with
its traceback; one that dies or overruns the timeout does too. :meth:`FreshRunner.run_many` and
:meth:`FreshRunner.outcomes` run several calls in children side by side (``MAX_PARALLEL`` at a
time): each child is still a fresh fork of the server, and QNN's counters are per process.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import os
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qnn_migrate_tests.qnn_htp.sdk import QnnSdk

# Where qnn_migrate_tests is found (the fork server starts a new interpreter).
SUPPORT = Path(__file__).resolve().parent.parent / "support"
DEFAULT_TIMEOUT_S = 600.0
# Children of one test process that run at once (run_many, outcomes): two keep both cores busy
# when the other xdist worker is between lowerings, and cost nothing measurable when it is not.
MAX_PARALLEL = max(1, min(2, os.cpu_count() or 1))
Call = tuple[Callable[..., Any], tuple[Any, ...]]


class FreshProcessError(RuntimeError):
    """A call run in a fresh child failed there (exception, crash or timeout)."""


@contextlib.contextmanager
def _environment(changes: Mapping[str, str]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _child_main(
    conn: Any, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    import torch

    # OpenMP's thread pool does not survive fork (hangs and crashes were seen otherwise).
    torch.set_num_threads(1)
    # QNN prints on C stdout; the pickled result is the child's only output that matters.
    os.dup2(2, 1)
    try:
        from qnn_migrate_tests.qnn_htp import server

        if server.STATE is None:
            raise RuntimeError(
                "the fork server did not preload qnn_migrate_tests.qnn_htp.server (an import failed "
                "there); run `QNN_HTP_SERVER=1 PYTHONPATH=tests/support python -c 'import "
                "qnn_migrate_tests.qnn_htp.server'` from the repository root to see why"
            )
        message: tuple[Any, ...] = ("ok", fn(*args, **kwargs))
    except BaseException as err:  # reported to the parent, which raises
        message = ("error", f"{type(err).__name__}: {err}", traceback.format_exc())
    conn.send(message)
    conn.close()


class FreshRunner:
    """Runs functions in fresh forks of the QNN fork server (see the module docstring)."""

    def __init__(self, sdk: QnnSdk, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.sdk = sdk
        self.timeout_s = timeout_s
        self.children = 0
        self._context = multiprocessing.get_context("forkserver")
        pythonpath = [str(SUPPORT), *filter(None, os.environ.get("PYTHONPATH", "").split(":"))]
        env = {
            **sdk.environment(),
            "QNN_HTP_SERVER": "1",
            # Python 3.11's fork server does not apply the parent's sys.path before preloading.
            "PYTHONPATH": ":".join(pythonpath),
        }
        self._context.set_forkserver_preload(["qnn_migrate_tests.qnn_htp.server"])
        with _environment(env):
            multiprocessing.forkserver.ensure_running()

    def run(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` in a new child; its result, or FreshProcessError."""
        child = self._start(fn, args, kwargs)
        child.wait(child.deadline - time.monotonic())
        return child.result()

    def run_many(
        self, fn: Callable[..., Any], argument_lists: Sequence[tuple[Any, ...]]
    ) -> list[Any]:
        """``[fn(*args) for args in argument_lists]``, each in its own child, side by side."""
        return self.run_calls([(fn, args) for args in argument_lists])

    def run_calls(self, calls: Sequence[Call]) -> list[Any]:
        """``[fn(*args) for fn, args in calls]``, each in its own child, side by side; the first
        FreshProcessError (in list order) is raised once every child has finished."""
        results = self.outcomes(calls)
        for result in results:
            if isinstance(result, FreshProcessError):
                raise result
        return results

    def outcomes(
        self, calls: Sequence[Call], parallel: int = MAX_PARALLEL
    ) -> list[Any | FreshProcessError]:
        """Each ``fn(*args)`` of ``calls`` in its own child, up to ``parallel`` at once; per call
        its result or the FreshProcessError it ended with, in the order of ``calls``."""
        results: list[Any | FreshProcessError] = [None] * len(calls)
        pending = list(enumerate(calls))[::-1]
        running: dict[int, _Child] = {}
        while pending or running:
            while pending and len(running) < max(1, parallel):
                index, (fn, args) = pending.pop()
                running[index] = self._start(fn, args, {})
            soonest = min(child.deadline for child in running.values())
            ready = multiprocessing.connection.wait(
                [child.receiver for child in running.values()],
                timeout=max(0.0, soonest - time.monotonic()),
            )
            for index, child in list(running.items()):
                if child.receiver in ready or child.deadline <= time.monotonic():
                    del running[index]
                    try:
                        results[index] = child.result()
                    except FreshProcessError as err:
                        results[index] = err
        return results

    def _start(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _Child:
        receiver, sender = self._context.Pipe(duplex=False)
        process = self._context.Process(
            target=_child_main, args=(sender, fn, args, kwargs), daemon=True
        )
        process.start()
        sender.close()
        self.children += 1
        label = f"{_name(fn)}{args!r}"
        return _Child(process, receiver, label, self.timeout_s, time.monotonic() + self.timeout_s)


@dataclass
class _Child:
    """A started child: its process, the pipe its message comes on, and when it must be done."""

    process: Any
    receiver: Any
    label: str
    timeout_s: float
    deadline: float

    def wait(self, timeout: float) -> bool:
        return bool(self.receiver.poll(max(0.0, timeout)))

    def result(self) -> Any:
        """The child's result (its message must be ready or its deadline past), or raise."""
        try:
            if not self.wait(0):
                self.process.kill()
                raise FreshProcessError(f"{self.label} ran over {self.timeout_s:.0f} s")
            try:
                message = self.receiver.recv()
            except EOFError:
                self.process.join(30)
                raise FreshProcessError(
                    f"{self.label}: the child died (exit code {self.process.exitcode}) without "
                    "a result; its stderr above says why"
                ) from None
        finally:
            self.receiver.close()
            self.process.join(30)
        if message[0] != "ok":
            raise FreshProcessError(f"{self.label} failed in its child: {message[1]}\n{message[2]}")
        return message[1]


def _name(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', fn)}"


_RUNNER: FreshRunner | None = None


def fresh_runner(sdk: QnnSdk) -> FreshRunner:
    """The process's FreshRunner (the fork server is one per process)."""
    global _RUNNER
    if _RUNNER is None:
        _RUNNER = FreshRunner(sdk)
    elif _RUNNER.sdk != sdk:
        raise RuntimeError(f"fork server already started for {_RUNNER.sdk}, not {sdk}")
    return _RUNNER
