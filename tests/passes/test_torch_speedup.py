"""The suite's accelerator of torch.export's bookkeeping (tests/torch_speedup.py) changes no result."""

from __future__ import annotations

import collections.abc
from collections.abc import Iterator

import pytest
import torch
import torch._export.utils as export_utils
import torch._ops as ops
import torch_speedup


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
