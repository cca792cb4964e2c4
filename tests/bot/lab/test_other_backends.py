"""bot/lab/other_backends.py: the entry that runs ExecuTorch's own tests of other backends.

A stand-in test module (written per test into a temporary folder on ``sys.path``) takes
the place of ExecuTorch's; the real ones run in tests/qnn_htp/test_scenario_other_backends.py.
"""

from __future__ import annotations

import io
import sys
import textwrap
import unittest
from pathlib import Path
from typing import Any

import pytest

from qnn_migrate.bot.lab import other_backends

STAND_IN = """
import unittest

DRAWN = []


class TestStandIn(unittest.TestCase):
    def setUp(self):
        self.ready = True

    def test_draw(self):
        import torch

        DRAWN.append(torch.rand(3).tolist())


class NotATest:
    pass
"""


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"stand_in_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(STAND_IN))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_setup_environment_binds_the_modules_tests_and_ignores_the_runner_flags(
    stand_in: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["other_backends.py", "--module", stand_in, "--seed", "5", "TestStandIn.test_draw"]
    argv += ["--enable_x86_64", "--executorch_root", "/x", "--artifact_dir", "/y"]
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.setattr(other_backends, "TestStandIn", None, raising=False)
    assert other_backends.setup_environment() == ["other_backends.py", "TestStandIn.test_draw"]
    # The runner's fallback adds -v (unittest's, passed on).
    monkeypatch.setattr(sys, "argv", [*argv, "-v"])
    assert other_backends.setup_environment()[1] == "-v"
    bound = other_backends.TestStandIn  # type: ignore[attr-defined]
    shipped = sys.modules[stand_in].TestStandIn
    assert issubclass(bound, shipped) and bound.__name__ == "TestStandIn"
    assert bound.__module__ == other_backends.__name__
    assert not hasattr(other_backends, "NotATest")


def test_a_module_that_cannot_be_imported_is_named_with_what_to_do() -> None:
    with pytest.raises(other_backends.ModuleNotLoadedError) as caught:
        other_backends.load(["executorch.no_such_tests"], 1126, {})
    message = str(caught.value)
    assert "cannot import the test module executorch.no_such_tests" in message
    assert "check the matrix's modules" in message


@pytest.mark.passes
def test_every_test_starts_from_the_seed_whatever_ran_before(stand_in: str) -> None:
    def draws(seed: int, times: int) -> list[Any]:
        namespace: dict[str, Any] = {}
        assert other_backends.load([stand_in], seed, namespace) == ["TestStandIn"]
        suite = unittest.TestSuite(namespace["TestStandIn"]("test_draw") for _ in range(times))
        assert unittest.TextTestRunner(stream=io.StringIO()).run(suite).wasSuccessful()
        drawn: list[Any] = sys.modules[stand_in].DRAWN
        return drawn[-times:]

    first, second = draws(1126, 2)
    assert first == second  # the second test drew after the first, from the same seed
    assert draws(7, 1) != [first]  # the control: another seed, other numbers
