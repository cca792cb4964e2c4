"""The options a rewrite runs with: one object from the command line to the rule.

Plain values only (no libcst here): the batch runner sends them to worker processes and the
result cache hashes them, and a warm run never imports libcst.
"""

from __future__ import annotations

from dataclasses import dataclass

from qnn_migrate.codemods.deprecations import DEFAULT_FLOW

DEFAULT_LINE_LENGTH = 88  # black's and ruff's default


@dataclass(frozen=True)
class RuleOptions:
    """How the rule writes its output; the same for every file of a run.

    ``flow`` (qnn-passes target): "qnn-export" exports with ``qnn_passes.qnn_export`` (which
    also runs QNN's export-stage passes), "canonical" with ``torch.export.export``.
    ``imported_from``: dotted module names that some file of the run imports the old name
    from (see :func:`qnn_migrate.codemods.engine.reexport_scan`); such a module keeps its
    import of the name.
    """

    target: str
    line_length: int = DEFAULT_LINE_LENGTH
    flow: str = DEFAULT_FLOW
    imported_from: frozenset[str] = frozenset()
