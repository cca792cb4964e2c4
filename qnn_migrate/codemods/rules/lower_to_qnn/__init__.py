"""Rule: ``to_edge_transform_and_lower_to_qnn(...)`` becomes ``to_edge_transform_and_lower(...)``.

:class:`LowerToQnn` takes a module tree and returns a :class:`RuleResult` (the new module, or
None, and the report of the sites it left alone); nothing is printed or written. The parts:

* ``mentions`` - every mention of the name (or an alias of it), strings, ``__all__``;
* ``sites`` - which mentions are calls to rewrite (resolved with libcst's scope analysis, so
  aliases, the ``export_utils`` re-export and fully qualified calls are found, and same-named
  things that are *not* ExecuTorch's function are not), and where each call sits;
* ``shapes`` - each site as statements before its statement (wrapped in ``with``), or as one
  expression where statements cannot go (comprehensions, lambdas, compound headers); the
  code itself comes from the target (``codemods/targets``);
* ``imports`` - which imports come and where, which old ones go;
* ``context`` - the tree, its index and scopes, shared by the parts.

``RewriteLowerToQnn``, the same rule as a libcst ``CodemodCommand`` for
``python -m libcst.tool codemod``, lives in ``command.py`` and is importable from here too,
on first use: libcst's codemod package imports ``libcst.matchers`` (a measurable start-up cost, see docs/rewrite.md), which
``qnn-migrate rewrite`` does not need.
"""

from __future__ import annotations

from qnn_migrate.codemods.rules.lower_to_qnn.context import (
    DEFAULT_FLOW,
    DEFAULT_LINE_LENGTH,
    FLOWS,
    RuleOptions,
)
from qnn_migrate.codemods.rules.lower_to_qnn.rule import Footprint, LowerToQnn, RuleResult

__all__ = [
    "DEFAULT_FLOW",
    "DEFAULT_LINE_LENGTH",
    "FLOWS",
    "Footprint",
    "LowerToQnn",
    "RuleOptions",
    "RuleResult",
]


def __getattr__(name: str) -> object:
    """``RewriteLowerToQnn``, the libcst ``CodemodCommand``, imported on first use."""
    if name == "RewriteLowerToQnn":
        from qnn_migrate.codemods.rules.lower_to_qnn.command import RewriteLowerToQnn

        return RewriteLowerToQnn
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
