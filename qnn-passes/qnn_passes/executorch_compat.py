"""Does the installed ExecuTorch still run the QNN passes qnn_passes was built against?

qnn_passes stands in for two of ExecuTorch's QNN pass lists, per pass-manager variant
(``base``/``htp``/``gpu``/``lpai``): the export stage (``get_export_passes()``, accounted for in
:data:`qnn_passes.export_stage.EXPORT_STAGE`) and the to-edge pipeline
(``get_default_pass_activations()``, reproduced by name in :mod:`qnn_passes.pipeline`, whose
names it resolves to ExecuTorch's classes). An ExecuTorch whose lists differ from these would
be lowered by a pipeline that silently skips or mis-orders a pass, so before the first lowering
in a process the installed lists are compared with the known ones:

* export stage, per variant: every pass ExecuTorch runs must be in ``EXPORT_STAGE``
  (state ``migrated`` or ``unnecessary``), and every pass ``EXPORT_STAGE`` lists for the
  variant must still be run (else ``unknown`` / ``gone``);
* to-edge, per variant: every ExecuTorch class the pipeline tables name (and
  :data:`pipeline.ALSO_KNOWN`) must still be defined where the pipeline looks it up (else
  ``missing``), and ExecuTorch's default to-edge list must name the same passes as
  ``pipeline.ACTIVATIONS`` (else ``unknown`` / ``dropped``). Default on/off states and the
  dependency tables are compared by the test suite, not here.

Drift stops :func:`qnn_passes.qnn_transform_passes` with :class:`QnnConfigError` naming the
passes, the installed version and the ways out; export-stage drift only matters for a program
that did not go through ExecuTorch's own export stage (``qnn_export``). An ExecuTorch version
outside :data:`TESTED_EXECUTORCH` whose lists match lowers, with one
:class:`UntestedExecuTorchWarning` per process. ``qnn-migrate passes check`` prints the
comparison.

:func:`compare` and :func:`drift_error` are pure (they take an :class:`InstalledPasses`, which
tests can make up); :func:`read_installed` is the one reader of the installed ExecuTorch;
:func:`require` is the guard, with its result cached once per process.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qnn_passes import export_stage, pipeline
from qnn_passes.errors import QnnConfigError, UntestedExecuTorchWarning

# The ExecuTorch releases qnn_passes was built and tested for. A local build label is ignored
# ("1.5.1+cpu" is 1.5.1); a build from source ("1.6.0a0+git1234abc") is not one of them.
TESTED_EXECUTORCH: tuple[str, ...] = ("1.5.1",)

EXPORT = "export"
TO_EDGE = "to-edge"

# States of one pass. Known ones:
MIGRATED = export_stage.MIGRATED  # export stage: runs as this package's to-edge pass
UNNECESSARY = export_stage.UNNECESSARY  # export stage: to-edge's own decomposition suffices
OK = "ok"  # to-edge: defined where the pipeline looks it up, and listed as in its tables
# Drift: qnn_transform_passes refuses to lower the variant.
UNKNOWN = "unknown"  # ExecuTorch runs it; qnn_passes does not know it
GONE = "gone"  # export stage: qnn_passes accounts for it; ExecuTorch no longer runs it there
MISSING = "missing"  # to-edge: the pipeline names it; ExecuTorch no longer defines it
DROPPED = "dropped"  # to-edge: the pipeline runs it; ExecuTorch's default list no longer does
DRIFT: frozenset[str] = frozenset({UNKNOWN, GONE, MISSING, DROPPED})


@dataclass(frozen=True)
class InstalledPasses:
    """What one ExecuTorch says about its QNN passes, as names (read, or made up by a test)."""

    version: str
    export_passes: Mapping[str, tuple[str, ...]]  # variant -> get_export_passes() names
    to_edge_passes: Mapping[str, tuple[str, ...]]  # variant -> get_default_pass_activations()
    classes: frozenset[str]  # "module:Class" of every class in relied_on() that resolves


@dataclass(frozen=True)
class PassCheck:
    """One pass of one variant and stage, with its state and what that means."""

    variant: str
    stage: str  # EXPORT or TO_EDGE
    name: str
    state: str
    note: str

    @property
    def drifted(self) -> bool:
        return self.state in DRIFT


@dataclass(frozen=True)
class Comparison:
    """The installed ExecuTorch's QNN passes against the ones qnn_passes knows."""

    version: str
    tested: tuple[str, ...]
    checks: tuple[PassCheck, ...]

    @property
    def version_known(self) -> bool:
        return self.version.split("+", 1)[0] in self.tested

    @property
    def compatible(self) -> bool:
        return not self.drift()

    def rows(self, variant: str | None = None, stage: str | None = None) -> tuple[PassCheck, ...]:
        return tuple(
            c
            for c in self.checks
            if (variant is None or c.variant == variant) and (stage is None or c.stage == stage)
        )

    def drift(self, variant: str | None = None, stage: str | None = None) -> tuple[PassCheck, ...]:
        return tuple(c for c in self.rows(variant, stage) if c.drifted)


# -- what qnn_passes knows (data) ----------------------------------------------------------
def known_export_passes(variant: str) -> tuple[str, ...]:
    """The export-stage passes ``EXPORT_STAGE`` accounts for in ``variant``."""
    return tuple(p.name for p in export_stage.EXPORT_STAGE if variant in p.variants)


def relied_on(variant: str) -> tuple[str, ...]:
    """``"module:Class"`` of every ExecuTorch pass the to-edge pipeline of ``variant`` resolves by name."""
    names = [n for n, _ in pipeline.ACTIVATIONS[variant]]
    for key, before in pipeline.RUNS_AFTER[variant].items():
        names += [key, *before]
    names += [*pipeline.MUST_BE_LAST[variant], *pipeline.SUBSTITUTES]
    qualified = [f"{pipeline.EXECUTORCH_PASSES}:{n}" for n in names]
    return tuple(dict.fromkeys([*qualified, *pipeline.ALSO_KNOWN]))


def _tested_text(tested: Sequence[str]) -> str:
    return ", ".join(tested)


# -- the comparison (pure) -----------------------------------------------------------------
def compare(installed: InstalledPasses, tested: Sequence[str] = TESTED_EXECUTORCH) -> Comparison:
    """Compare ``installed`` with ``EXPORT_STAGE`` and the pipeline tables, variant by variant."""
    checks: list[PassCheck] = []
    for variant in pipeline.VARIANTS:
        checks += _export_checks(variant, installed.export_passes.get(variant, ()))
        checks += _to_edge_checks(variant, installed)
    return Comparison(installed.version, tuple(tested), tuple(checks))


def _export_checks(variant: str, theirs: Iterable[str]) -> list[PassCheck]:
    ours = known_export_passes(variant)
    theirs = tuple(dict.fromkeys(theirs))
    checks = []
    for name in theirs:
        entry = export_stage.BY_NAME.get(name)
        if entry is None or name not in ours:
            known_for = f" only for {'/'.join(entry.variants)}" if entry is not None else ""
            note = f"ExecuTorch runs it at its {variant} export stage; qnn_passes " + (
                f"stands in for it{known_for}"
                if entry is not None
                else "does not know it and has no to-edge version of it"
            )
            checks.append(PassCheck(variant, EXPORT, name, UNKNOWN, note))
        elif entry.runs_as is not None:
            where = f"{entry.runs_as.__module__}.{entry.runs_as.__name__}"
            checks.append(PassCheck(variant, EXPORT, name, entry.state, f"runs as {where}"))
        else:
            checks.append(PassCheck(variant, EXPORT, name, entry.state, entry.why))
    checks += [
        PassCheck(
            variant,
            EXPORT,
            name,
            GONE,
            "qnn_passes stands in for it, but ExecuTorch's export stage no longer runs it",
        )
        for name in ours
        if name not in theirs
    ]
    return checks


def _to_edge_checks(variant: str, installed: InstalledPasses) -> list[PassCheck]:
    listed = {n for n, _ in pipeline.ACTIVATIONS[variant]}
    theirs = installed.to_edge_passes.get(variant, ())
    checks = []
    for path in relied_on(variant):
        module, _, name = path.partition(":")
        if path not in installed.classes:
            state, note = MISSING, f"qnn_passes looks it up in {module}, which no longer defines it"
        elif name in listed and name not in theirs:
            state, note = (
                DROPPED,
                "qnn_passes runs it; ExecuTorch's default to-edge list no longer does",
            )
        elif name in listed:
            state, note = OK, "in both to-edge lists"
        elif path in pipeline.ALSO_KNOWN:
            state, note = OK, f"a user's dep_table may name it; defined in {module}"
        else:
            state, note = OK, f"the runs-before table names it; defined in {module}"
        checks.append(PassCheck(variant, TO_EDGE, name, state, note))
    checks += [
        PassCheck(
            variant,
            TO_EDGE,
            name,
            UNKNOWN,
            "ExecuTorch's default to-edge list has it; qnn_passes' pipeline does not",
        )
        for name in dict.fromkeys(theirs)
        if name not in listed
    ]
    return checks


def _describe(checks: Iterable[PassCheck]) -> str:
    return "; ".join(f"{c.name} ({c.stage} stage, {c.state}: {c.note})" for c in checks)


def drift_error(
    comparison: Comparison,
    variant: str,
    *,
    method: str = "forward",
    export_stage_needed: bool = True,
    where: str = "qnn_transform_passes",
) -> QnnConfigError | None:
    """The error that stops lowering ``method`` to ``variant``, or None if nothing it needs drifted.

    ``export_stage_needed`` is False for a program that went through ExecuTorch's own export
    stage (``qnn_export``): then only the to-edge passes matter.
    """
    to_edge = comparison.drift(variant, TO_EDGE)
    export = comparison.drift(variant, EXPORT) if export_stage_needed else ()
    if not to_edge and not export:
        return None
    head = (
        f"{where}: method '{method}' cannot be lowered to {variant} with the installed "
        f"executorch {comparison.version}: qnn_passes was built and tested for executorch "
        f"{_tested_text(comparison.tested)}, and these QNN passes of this ExecuTorch are not "
        f"the ones it knows: {_describe((*export, *to_edge))}."
    )
    return QnnConfigError(
        f"{head} {ways_out(comparison, to_edge=bool(to_edge))} `qnn-migrate passes check` "
        "prints the whole comparison."
    )


def ways_out(comparison: Comparison, *, to_edge: bool) -> str:
    """What to do about drift; ``to_edge`` when to-edge passes drifted (qnn_export cannot help)."""
    version = comparison.version
    upgrade = f"upgrade qnn-migrate to a release that supports executorch {version}"
    if to_edge:
        return (
            f"Ways out: {upgrade} (or install executorch {_tested_text(comparison.tested)}); "
            "or lower with ExecuTorch's own pass manager, which does not use qnn_passes "
            "(`qnn-migrate rewrite --target executorch` writes that code). The qnn_export "
            "flow does not help here: it replaces only the export stage, and these are "
            "to-edge passes."
        )
    return (
        "Ways out: let ExecuTorch's own export stage run them, with the qnn_export flow: "
        "programs = qnn_export(model, example_inputs, compiler_specs=...), then the same "
        f"to_edge_transform_and_lower call; or {upgrade}."
    )


def untested_message(comparison: Comparison) -> str:
    """The warning for an ExecuTorch version outside ``tested`` whose lists match."""
    return (
        f"qnn_passes: the installed executorch {comparison.version} is not a version "
        f"qnn_passes was built and tested for ({_tested_text(comparison.tested)}); its QNN "
        "export-stage and to-edge pass lists match the ones qnn_passes knows, so lowering goes "
        "on. `qnn-migrate passes check` prints the comparison."
    )


# -- reading the installed ExecuTorch ------------------------------------------------------
def installed_version() -> str:
    """The installed ExecuTorch's version: its distribution's, else ``executorch.version``."""
    try:
        return importlib.metadata.version("executorch")
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        version = importlib.import_module("executorch.version")
    except ImportError:
        return "unknown"
    return str(getattr(version, "__version__", "unknown"))


def _managers() -> dict[str, Any]:
    """Variant -> ExecuTorch's pass-manager class, as the lowering picks it."""
    from executorch.backends.qualcomm._passes.qnn_pass_manager import (
        QnnPassManager,
        get_qnn_pass_manager_cls,
    )
    from executorch.backends.qualcomm.serialization.qc_schema import QnnExecuTorchBackendType

    managers: dict[str, Any] = {"base": QnnPassManager}
    for backend in QnnExecuTorchBackendType:
        if str(backend) in pipeline.VARIANTS:
            managers[str(backend)] = get_qnn_pass_manager_cls(backend)
    return managers


def _resolvable(paths: Iterable[str]) -> frozenset[str]:
    found = set()
    modules: dict[str, Any] = {}
    for path in paths:
        module_name, _, name = path.partition(":")
        if module_name not in modules:
            try:
                modules[module_name] = importlib.import_module(module_name)
            except ImportError:
                modules[module_name] = None
        if isinstance(getattr(modules[module_name], name, None), type):
            found.add(path)
    return frozenset(found)


def read_installed() -> InstalledPasses:
    """Read the installed ExecuTorch's QNN pass lists (changes nothing in ExecuTorch)."""
    managers = _managers()
    export: dict[str, tuple[str, ...]] = {}
    to_edge: dict[str, tuple[str, ...]] = {}
    for variant, manager in managers.items():
        export[variant] = tuple(p.__name__ for p in manager.get_export_passes())
        to_edge[variant] = tuple(p.__name__ for p, _ in manager.get_default_pass_activations())
    wanted = {path for variant in pipeline.VARIANTS for path in relied_on(variant)}
    return InstalledPasses(installed_version(), export, to_edge, _resolvable(sorted(wanted)))


# -- the guard (once per process) ----------------------------------------------------------
@dataclass
class _ProcessState:
    comparison: Comparison | None = None
    warned: bool = False


_STATE = _ProcessState()


def installed_comparison() -> Comparison:
    """:func:`compare` of :func:`read_installed`, computed on first use and kept for the process."""
    if _STATE.comparison is None:
        _STATE.comparison = compare(read_installed())
    return _STATE.comparison


def require(
    variant: str,
    *,
    method: str = "forward",
    export_stage_needed: bool = True,
    where: str = "qnn_transform_passes",
) -> None:
    """Raise :class:`QnnConfigError` if the installed ExecuTorch drifted for this lowering.

    Otherwise, on an ExecuTorch version outside ``TESTED_EXECUTORCH``, warn once per process
    (:class:`UntestedExecuTorchWarning`).
    """
    comparison = installed_comparison()
    error = drift_error(
        comparison,
        variant,
        method=method,
        export_stage_needed=export_stage_needed,
        where=where,
    )
    if error is not None:
        raise error
    if not comparison.version_known and not _STATE.warned:
        _STATE.warned = True
        warnings.warn(untested_message(comparison), UntestedExecuTorchWarning, stacklevel=3)
