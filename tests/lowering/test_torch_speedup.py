"""The suite's accelerator of torch.export's bookkeeping (tests/torch_speedup.py) changes no result.

The first tests check its two pieces in this process; the last ones lower every probe of
probes.py to a .pte in a fresh process with it and in one without it (probe_pte.py), and
compare the bytes.
"""

from __future__ import annotations

import collections.abc
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import torch._export.utils as export_utils
import torch._ops as ops
from qnn_migrate_tests.passes.probes import PROBES

from qnn_migrate_tests import torch_speedup

TESTS = Path(__file__).resolve().parents[1]
PROBE_PTE = Path(__file__).resolve().parents[1] / "passes" / "probe_pte.py"


@pytest.fixture(autouse=True)
def _on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QNN_TESTS_TORCH_SPEEDUP", raising=False)  # the switch that turns it off


@pytest.fixture
def walk_skipped_regardless() -> Iterator[None]:
    """The mistake the accelerator must not make: never walk again after the first walk."""
    torch_speedup.uninstall()
    real = export_utils._materialize_cpp_cia_ops
    real()

    def skipped() -> None:
        return None

    export_utils._materialize_cpp_cia_ops = skipped
    try:
        yield
    finally:
        export_utils._materialize_cpp_cia_ops = real
        torch_speedup.install()


def _collected() -> set[str]:
    return {str(op) for op in export_utils._collect_all_valid_cia_ops()}


def _register(namespace: str) -> torch.library.Library:
    library = torch.library.Library(namespace, "DEF")
    library.define("twice(Tensor x) -> Tensor")
    library.impl("twice", lambda x: x + x, "CompositeImplicitAutograd")
    return library


def test_the_same_ops_are_collected_with_and_without_it() -> None:
    assert torch_speedup.install()
    with_it = _collected()
    torch_speedup.uninstall()
    try:
        without = _collected()
    finally:
        torch_speedup.install()
    assert with_it == without
    assert len(with_it) > 100


def test_an_op_registered_later_is_collected() -> None:
    assert torch_speedup.install()
    _collected()  # walked once
    library = _register("qnn_migrate_speedup_a")
    try:
        assert "qnn_migrate_speedup_a.twice.default" in _collected()
    finally:
        library._destroy()


@pytest.mark.usefixtures("walk_skipped_regardless")
def test_control_a_walk_skipped_regardless_misses_it() -> None:
    library = _register("qnn_migrate_speedup_b")
    try:
        assert "qnn_migrate_speedup_b.twice.default" not in _collected()
    finally:
        library._destroy()


def _answers(cls: object) -> list[bool]:
    """What ``isinstance(x, cls)`` says for a few callables and non-callables."""
    return [isinstance(x, cls) for x in (len, lambda: 0, torch.relu, 3, "s", None)]  # type: ignore[arg-type]


class _SaysYesToEverything(type):
    def __instancecheck__(cls, instance: object) -> bool:
        return True


def test_torch_ops_callable_answers_as_the_real_one() -> None:
    assert torch_speedup.install()
    assert ops.Callable is torch_speedup.CachedCallable
    p, t = ops._P, ops._T
    assert ops.Callable[p, t] is ops.Callable[p, t]  # made once
    assert ops.Callable[p, t] == collections.abc.Callable[p, t]
    assert ops.Callable[[int], str] == collections.abc.Callable[[int], str]  # not hashable
    assert _answers(ops.Callable) == _answers(collections.abc.Callable) == [
        True, True, True, False, False, False,
    ]  # fmt: skip
    # Control: an isinstance that says yes to everything is told apart.
    assert _answers(_SaysYesToEverything("Bad", (), {})) != _answers(collections.abc.Callable)


def test_py_impl_registers_as_before() -> None:
    assert torch_speedup.install()
    library = _register("qnn_migrate_speedup_c")
    try:
        op = torch.ops.qnn_migrate_speedup_c.twice.default
        key = torch._C.DispatchKey.CompositeImplicitAutograd

        def kernel(x: torch.Tensor) -> torch.Tensor:
            return x * 2

        assert op.py_impl(key)(kernel) is kernel
        assert op.py_kernels[key] is kernel
    finally:
        library._destroy()


def _start(mode: str, *probes: str) -> subprocess.Popen[str]:
    """probe_pte.py in a fresh process (see its docstring for the modes)."""
    env = {**os.environ, "PYTHONPATH": str(TESTS / "support"), "QNN_SDK_ROOT": ""}
    env.pop("QNN_TESTS_TORCH_SPEEDUP", None)
    return subprocess.Popen(
        [sys.executable, str(PROBE_PTE), mode, *probes],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=TESTS.parent,
    )


def _result(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=1800)
    assert proc.returncode == 0, err[-4000:]
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def pte_with_and_without() -> dict[str, dict[str, Any]]:
    """Every probe lowered with and without the accelerator, side by side in two processes."""
    runs = {mode: _start(mode) for mode in ("with", "without")}
    return {mode: _result(proc) for mode, proc in runs.items()}


@pytest.mark.xdist_group("torch-speedup-pte")  # one worker runs the fixture's two processes
def test_the_probes_lower_to_the_same_pte_bytes_with_and_without_it(
    pte_with_and_without: dict[str, dict[str, Any]],
) -> None:
    with_it, without = pte_with_and_without["with"], pte_with_and_without["without"]
    assert with_it["speedup_installed"] and not without["speedup_installed"]
    digests = with_it["pte_sha256"]
    assert len(digests) == 2 * len(PROBES)  # each probe through the wrapper and the canonical flow
    serialized = [key for key, digest in digests.items() if not digest.startswith("raised ")]
    assert len(serialized) > len(PROBES), digests  # mostly .pte files, not the same errors
    assert digests == without["pte_sha256"]


@pytest.mark.xdist_group("torch-speedup-pte")
def test_control_a_patch_that_changes_the_lowering_changes_the_bytes(
    pte_with_and_without: dict[str, dict[str, Any]],
) -> None:
    # torch.fx's dead-code elimination turned off leaves a dead node in var's wrapper program.
    altered = _result(_start("keep-dead-code", "var"))
    assert not altered["speedup_installed"]
    var = {k: v for k, v in pte_with_and_without["with"]["pte_sha256"].items() if k[:4] == "var/"}
    assert set(altered["pte_sha256"]) == set(var) == {"var/wrapper", "var/canonical"}
    assert altered["pte_sha256"] != var
