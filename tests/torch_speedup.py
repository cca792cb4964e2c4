"""A test-suite accelerator for torch.export's decomposition bookkeeping: the same results, less work.

Not a double: nothing torch computes is replaced. Two costs of torch 2.13 that every
``run_decompositions`` (three to five per lowering) pays again, although their work is done:

1. **The CIA-registration walk.** ``_collect_all_valid_cia_ops`` calls
   ``_materialize_cpp_cia_ops`` once per operator namespace, about forty times, and each call
   walks every CompositeImplicitAutograd registration of the C++ dispatcher (about 1,800) to
   create its ``torch.ops`` object. Those objects stay once created, so a walk over the
   registrations a previous walk already made creates nothing. :func:`install` wraps the walk:
   it runs as before when the registrations differ from those of the last walk (a library
   registered or removed ops since), and does nothing when they are the same.
2. **Annotations evaluated per call.** ``OperatorBase.py_impl`` defines an inner function
   annotated ``Callable[_P, _T]`` each time it is called (``_override_composite_implicit_decomp``
   calls it for every CIA op, tens of thousands of times per lowering), and
   ``collections.abc.Callable[...]`` builds a new alias object each time. :func:`install` sets
   ``torch._ops``'s name ``Callable`` to :class:`CachedCallable`, whose subscription returns
   the alias ``collections.abc.Callable`` gives for those arguments, made once, and whose
   ``isinstance`` answers as ``collections.abc.Callable`` does (the module's one other use).

Measured on the fast tier's probes (tests/passes/probe_pte.py: each probe of probes.py through
the wrapper and the canonical flow and serialized, 42 lowerings, one fresh process each way):
53.6 CPU s with both, 82.1 without, a third less (2026-12, a 2-core machine shared with other
work, so both figures are high). The suite installs it where it lowers (tests/passes,
tests/qnn_htp, the real-QNN fork server and the harness runner);
``tests/lowering/test_torch_speedup.py`` checks that it changes no result: those 42 lowerings
give the same .pte bytes with it as without it (a patch that does change the lowering is
caught), a walk skipped regardless misses a newly registered op, and an ``isinstance`` that
says yes to everything is caught. On a torch without these names it does nothing, and
``QNN_TESTS_TORCH_SPEEDUP=0`` turns it off (to rule it out when something looks wrong).
"""

from __future__ import annotations

import collections.abc
import os
from collections.abc import Callable
from typing import Any

_KEY = "CompositeImplicitAutograd"


_MADE: dict[Any, Any] = {}  # Callable[arguments], by arguments


class _CachedSubscript(type):
    def __getitem__(cls, arguments: Any) -> Any:
        try:
            return _MADE[arguments]
        except KeyError:
            made = _MADE[arguments] = collections.abc.Callable[arguments]
            return made
        except TypeError:  # an argument list ([int], ...) cannot be a key: made each time
            return collections.abc.Callable[arguments]

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, collections.abc.Callable)


class CachedCallable(metaclass=_CachedSubscript):
    """``collections.abc.Callable`` for ``torch._ops``: subscriptions made once (see above)."""


def install(*, walk_now: bool = False) -> bool:
    """Install both accelerators (once); False if torch lacks either name or it is turned
    off. ``walk_now``: walk the registrations here (a fork server, whose children then
    inherit the walk)."""
    if os.environ.get("QNN_TESTS_TORCH_SPEEDUP") == "0":
        return False
    import torch
    import torch._export.utils as export_utils
    import torch._ops as ops

    walk: Callable[[], None] | None = getattr(export_utils, "_materialize_cpp_cia_ops", None)
    registrations: Callable[[str], Any] | None = getattr(
        torch._C, "_dispatch_get_registrations_for_dispatch_key", None
    )
    if walk is None or registrations is None or getattr(ops, "Callable", None) is None:
        return False
    if ops.Callable is collections.abc.Callable:
        ops.Callable = CachedCallable  # type: ignore[misc]
    if getattr(walk, "skips_known_registrations", False):
        if walk_now:
            walk()
        return True
    walked: list[Any] = [None]

    def materialize_new_registrations() -> None:
        now = registrations(_KEY)
        if now != walked[0]:
            walk()
            walked[0] = now

    materialize_new_registrations.skips_known_registrations = True  # type: ignore[attr-defined]
    materialize_new_registrations.__wrapped__ = walk  # type: ignore[attr-defined]
    export_utils._materialize_cpp_cia_ops = materialize_new_registrations
    if walk_now:
        materialize_new_registrations()
    return True


def uninstall() -> None:
    """Put torch's own walk and ``Callable`` back (for the tests that compare both)."""
    import torch._export.utils as export_utils
    import torch._ops as ops

    current = export_utils._materialize_cpp_cia_ops
    export_utils._materialize_cpp_cia_ops = getattr(current, "__wrapped__", current)
    if ops.Callable is CachedCallable:
        ops.Callable = collections.abc.Callable  # type: ignore[misc]
