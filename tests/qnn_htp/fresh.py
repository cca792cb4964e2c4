"""One lowering per fresh process: each call runs in its own fork of a server that has lowered nothing.

QNN's compiler keeps process-wide counters (tensor ids, ``PICKLE/<n>/forward``) that end up in
the context binary, so a second lowering in a process never byte-matches the first. Every call
of :meth:`FreshRunner.run` therefore runs in a new child, forked from Python's multiprocessing
fork server (``forkserver`` start method), which preloaded :mod:`qnn_htp.server` (imports and
the ABI bridge, nothing lowered). The server is started once per test process with the SDK's
environment (``QNN_SDK_ROOT``, ``QNN_STAGING_DIR``, ``LD_LIBRARY_PATH``), which the test process
itself never gets. A fork is ~0.1 s where a new interpreter costs seconds of imports.

::

    runner = fresh_runner(sdk)
    lowered = runner.run(qnn_htp.lowering.lower, spec)   # any picklable, importable function

The function and its arguments are pickled to the child and its result pickled back, so return
plain data (bytes, numpy arrays). A child that raises raises :class:`FreshProcessError` here with
its traceback; one that dies or overruns the timeout does too.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.forkserver
import os
import traceback
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from qnn_htp.sdk import QnnSdk

TESTS = Path(__file__).resolve().parent.parent
DEFAULT_TIMEOUT_S = 600.0


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
        from qnn_htp import server

        if server.STATE is None:
            raise RuntimeError(
                "the fork server did not preload qnn_htp.server (an import failed there); run "
                "`QNN_HTP_SERVER=1 python -c 'import qnn_htp.server'` from tests/ to see why"
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
        pythonpath = [str(TESTS), *filter(None, os.environ.get("PYTHONPATH", "").split(":"))]
        env = {
            **sdk.environment(),
            "QNN_HTP_SERVER": "1",
            # Python 3.11's fork server does not apply the parent's sys.path before preloading.
            "PYTHONPATH": ":".join(pythonpath),
        }
        self._context.set_forkserver_preload(["qnn_htp.server"])
        with _environment(env):
            multiprocessing.forkserver.ensure_running()

    def run(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` in a new child; its result, or FreshProcessError."""
        receiver, sender = self._context.Pipe(duplex=False)
        child = self._context.Process(
            target=_child_main, args=(sender, fn, args, kwargs), daemon=True
        )
        child.start()
        sender.close()
        self.children += 1
        try:
            if not receiver.poll(self.timeout_s):
                child.kill()
                raise FreshProcessError(f"{_name(fn)}{args!r} ran over {self.timeout_s:.0f} s")
            try:
                message = receiver.recv()
            except EOFError:
                child.join(30)
                raise FreshProcessError(
                    f"{_name(fn)}{args!r}: the child died (exit code {child.exitcode}) without "
                    "a result; its stderr above says why"
                ) from None
        finally:
            receiver.close()
            child.join(30)
        if message[0] != "ok":
            raise FreshProcessError(
                f"{_name(fn)}{args!r} failed in its child: {message[1]}\n{message[2]}"
            )
        return message[1]

    def run_many(self, fn: Callable[..., Any], argument_lists: list[tuple[Any, ...]]) -> list[Any]:
        """``[fn(*args) for args in argument_lists]``, each in its own child, one after another."""
        return [self.run(fn, *args) for args in argument_lists]


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
