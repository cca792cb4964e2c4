"""A test-suite accelerator for torch.export's decomposition bookkeeping: the same results, less work.

Not a double: nothing torch computes is replaced. torch 2.13's ``_collect_all_valid_cia_ops``
(asked by every ``run_decompositions``, so three to five times per lowering) calls
``_materialize_cpp_cia_ops`` once per operator namespace, about forty times, and each call walks
every CompositeImplicitAutograd registration of the C++ dispatcher (about 1,800) to create its
``torch.ops`` object. Those objects stay once created, so a walk over the registrations a
previous walk already made creates nothing: measured, a sixth of the CPU of a lowering.

:func:`install` wraps the walk: it runs as before when the registrations differ from those of
the last walk (a library registered or removed ops since), and does nothing when they are the
same. The suite installs it where it lowers (tests/passes, tests/qnn_htp and the real-QNN fork
server); ``tests/passes/test_torch_speedup.py`` checks that the valid CIA ops torch collects
are the same with it, including after a new op is registered (the control: a walk skipped
regardless would miss it). On a torch without these functions it does nothing, and
``QNN_TESTS_TORCH_SPEEDUP=0`` turns it off (to rule it out when something looks wrong).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

_KEY = "CompositeImplicitAutograd"


def install(*, walk_now: bool = False) -> bool:
    """Wrap ``torch._export.utils._materialize_cpp_cia_ops`` (once); False if not there or
    turned off. ``walk_now``: walk the registrations here (a fork server, whose children then
    inherit the walk)."""
    if os.environ.get("QNN_TESTS_TORCH_SPEEDUP") == "0":
        return False
    import torch
    import torch._export.utils as export_utils

    walk: Callable[[], None] | None = getattr(export_utils, "_materialize_cpp_cia_ops", None)
    registrations: Callable[[str], Any] | None = getattr(
        torch._C, "_dispatch_get_registrations_for_dispatch_key", None
    )
    if walk is None or registrations is None:
        return False
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
    """Put torch's own walk back (for the test that compares both)."""
    import torch._export.utils as export_utils

    current = export_utils._materialize_cpp_cia_ops
    export_utils._materialize_cpp_cia_ops = getattr(current, "__wrapped__", current)
