"""What runs in a test's own process as it starts and stops: the seed, the recorder, the alarm.

**The seed.** With ``--seed N`` (the runner passes the seed it gave the script's own
``--seed``) the random generators the harness draws from (Python's ``random``, NumPy's and
torch's, those already imported) are seeded with N as each test starts, after its class's
``setUpClass``. ExecuTorch 1.5.1's ``test_qnn_delegate.py`` applies its ``--seed`` only on
the phone path and only once per class (``QnnConfig`` in ``setUpClass``); on the x86 and
compile-only paths it never does, so every run drew new weights and inputs. Seeding each
test makes what a test draws depend on the seed alone, not on the path or on which tests
ran before it in its shard (a PR's shards and the nightly's group tests differently). What
the tests check is unchanged.

**The recorder.** With ``--programs FILE``, ``program_recorder.py`` (beside this package's
folder, in the install and where it is staged) is loaded by path and hooked into the
harness; it is told which test runs.

**The alarm.** The per-test budget is an interval timer armed when a test starts (so
importing the harness, about 10 s for ExecuTorch's, never counts) and re-fired every
``REFIRE_S`` after the budget is spent: unittest's ``subTest`` records an exception raised
inside it and goes on with the next subtest, so a one-shot alarm would bound only the first.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import signal
import sys
import types
from typing import Any

REFIRE_S = 0.5
RECORDER_FILE = "program_recorder.py"


class PerTestTimeout(Exception):
    """Raised inside a test that ran past its budget (results.py classifies it INFRA)."""


# -- the seed -------------------------------------------------------------------------------


def seed_generators(seed: int) -> list[str]:
    """Seed the random generators a harness draws from; the names of those seeded.

    Only modules already imported are seeded (importing torch here would cost a harness
    that does not use it seconds per run). NumPy's legacy generator takes 32 bits.
    """
    random.seed(seed)
    seeded = ["random"]
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed % 2**32)
        seeded.append("numpy")
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)
        seeded.append("torch")
    return seeded


# -- the recorder ---------------------------------------------------------------------------


def load_recorder(path: str, script_module: types.ModuleType) -> Any:
    """program_recorder.py (beside this package's folder, loaded by path), hooked in."""
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), RECORDER_FILE)
    spec = importlib.util.spec_from_file_location("qnn_program_recorder", here)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {here}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    recorder = module.Recorder(path)
    recorder.install(script_module)
    recorder.write()
    return recorder


def write_recorder_failure(path: str, reason: str) -> None:
    """A programs file that says why nothing was recorded (the tests still run)."""
    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({"schema": 1, "tests": {}, "failed": reason[:300]}, handle)
    except OSError:
        pass


# -- the alarm ------------------------------------------------------------------------------


def install_alarm(budget: float) -> None:
    """Make SIGALRM raise ``PerTestTimeout`` for a budget of ``budget`` seconds."""

    def on_alarm(signum: int, frame: types.FrameType | None) -> None:
        raise PerTestTimeout(f"exceeded the per-test budget of {budget:g} s")

    signal.signal(signal.SIGALRM, on_alarm)


def arm_alarm(budget: float) -> None:
    """Fire SIGALRM after ``budget`` seconds, then every ``REFIRE_S`` until disarmed."""
    signal.setitimer(signal.ITIMER_REAL, budget, REFIRE_S)


def disarm_alarm() -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)
