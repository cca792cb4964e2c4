"""``qnn-migrate passes``: look at the QNN pass pipeline (the ``qnn_passes`` library) from the
command line.

This module imports neither qnn_passes, torch nor ExecuTorch at import time, so
``qnn-migrate --help`` stays fast and a missing ``[passes]`` extra is reported by the command
that needs it. It is part of the tool, not of the runtime library: qnn_passes imports neither
click nor qnn_migrate.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import click

from qnn_migrate.cli import extra_missing

_STACK = ("qnn_passes", "torch", "executorch", "torchao")


def _load(name: str) -> ModuleType:
    """``qnn_passes.<name>`` with the torch stack imported; a missing [passes] extra is
    ``qnn_migrate.cli.EXTRA_MISSING``, any other ImportError a bug that propagates."""
    try:
        module = importlib.import_module(f"qnn_passes.{name}")
        importlib.import_module("executorch.backends.qualcomm._passes")  # the torch stack
    except ImportError as err:
        message = extra_missing("passes", "passes", _STACK, err)
        if message is not None:
            raise click.ClickException(message) from err
        raise
    return module


def stack_rows(
    requires: list[str] | None = None, installed: dict[str, str] | None = None
) -> list[tuple[str, str, str, bool]]:
    """torch and torchao as installed, against the ranges qnn-passes declares: (name, installed
    version, range, in range). ``requires`` and ``installed`` default to the installed
    metadata (qnn-passes' Requires-Dist; the packages' versions)."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.version import Version

    if requires is None:
        try:
            requires = metadata.requires("qnn-passes") or []
        except metadata.PackageNotFoundError:
            requires = []
    ranges = {Requirement(r).name.lower(): Requirement(r).specifier for r in requires}
    rows = []
    for name in ("torch", "torchao"):
        if installed is not None:
            version = installed.get(name, "not installed")
        else:
            try:
                version = metadata.version(name)
            except metadata.PackageNotFoundError:
                version = "not installed"
        wanted = ranges.get(name)
        if wanted is None:
            rows.append((name, version, "unknown: qnn-passes' metadata is not installed", True))
            continue
        ok = version != "not installed" and wanted.contains(
            Version(version).public, prereleases=True
        )
        rows.append((name, version, str(wanted), ok))
    return rows


@click.group("passes")
def passes() -> None:
    """Inspect the QNN pass pipeline (needs the [passes] extra)."""


@passes.command("order")
@click.option(
    "--backend",
    type=click.Choice(["htp", "gpu", "lpai"]),
    default="htp",
    show_default=True,
    help="Pass-manager variant, as ExecuTorch defines one per QNN backend.",
)
@click.option(
    "--convert-linear-to-conv2d",
    is_flag=True,
    help="Switch ConvertLinearToConv2d on, as the wrapper's argument of that name does.",
)
@click.option("--all", "show_all", is_flag=True, help="Also list the passes that are off.")
def order(backend: str, convert_linear_to_conv2d: bool, show_all: bool) -> None:
    """Print the solved to-edge pass order for BACKEND, one pass per line."""
    pipeline = _load("pipeline")
    try:
        solved = pipeline.plan(backend, convert_linear_to_conv2d=convert_linear_to_conv2d)
    except pipeline.QnnConfigError as err:
        raise click.ClickException(str(err)) from err
    shown = solved.passes if show_all else solved.active
    click.echo(
        f"# {backend}: {len(solved.active)} of {len(solved.passes)} passes active, "
        "in the order they run"
    )
    for i, p in enumerate(shown, 1):
        notes = []
        if not p.active:
            notes.append("off")
        if p.replaces is not None:
            notes.append(f"qnn_passes, replaces {p.replaces.__module__}.{p.replaces.__name__}")
        suffix = f"  [{'; '.join(notes)}]" if notes else ""
        click.echo(f"{i:3d}. {p.name}{suffix}")
    click.echo("  +. LiftQnnConstants  [qnn_passes; lifts get_attr constants in the QNN flow]")


@passes.command("check")
@click.option(
    "--backend",
    type=click.Choice(["base", "htp", "gpu", "lpai"]),
    default=None,
    help="Show one pass-manager variant only (default: all four).",
)
def check(backend: str | None) -> None:
    """Check that the installed ExecuTorch runs the QNN passes qnn_passes knows.

    Prints the installed ExecuTorch version and whether qnn_passes was tested with it, the
    installed torch and torchao against the ranges qnn-passes declares, then,
    per pass-manager variant, each export-stage pass (ExecuTorch's or qnn_passes') and each
    ExecuTorch to-edge pass the qnn_passes pipeline relies on, with its state: migrated,
    unnecessary or ok are known; unknown, gone, missing or dropped is drift, and
    qnn_transform_passes refuses to lower that variant. Exit 0 when compatible, 1 when not
    (a drift, or torch or torchao outside its range).
    """
    compat = _load("executorch_compat")
    comparison = compat.compare(compat.read_installed())
    tested = ", ".join(comparison.tested)
    if comparison.version_known:
        click.echo(f"executorch {comparison.version}: tested (qnn_passes is built for {tested})")
    else:
        click.echo(
            f"executorch {comparison.version}: NOT tested (qnn_passes is built for {tested}); "
            "it lowers, with a warning, if its passes below are all known"
        )
    stack = stack_rows()
    for name, version, wanted, ok in stack:
        verdict = "in" if ok else "NOT in"
        click.echo(f"{name} {version}: {verdict} the range qnn-passes is tested with ({wanted})")
    variants = [backend] if backend is not None else list(compat.pipeline.VARIANTS)
    for variant in variants:
        for stage, title in (
            (compat.EXPORT, "export-stage passes"),
            (compat.TO_EDGE, "to-edge passes the pipeline relies on"),
        ):
            rows = comparison.rows(variant, stage)
            click.echo(f"\n# {variant}: {title} ({len(rows)})")
            for row in rows:
                state = row.state.upper() if row.drifted else row.state
                click.echo(f"  {row.name:<36} {state:<12} {row.note}")
    drift = [c for v in variants for c in comparison.drift(v)]
    outside = [
        f"{name} {version} (wants {wanted})" for name, version, wanted, ok in stack if not ok
    ]
    if outside and not drift:
        click.echo(
            f"\nNOT compatible: {', '.join(outside)}; qnn_passes is tested with the ranges its "
            "distribution declares (qnn-passes/pyproject.toml): install those versions"
        )
        raise SystemExit(1)
    if not drift:
        click.echo(f"\ncompatible: every pass of {'/'.join(variants)} is one qnn_passes knows")
        return
    where = "; ".join(f"{c.variant} {c.stage}: {c.name} {c.state}" for c in drift)
    to_edge = any(c.stage == compat.TO_EDGE for c in drift)
    click.echo(
        f"\nNOT compatible ({len(drift)} difference(s): {where}); qnn_transform_passes "
        "refuses to lower to a variant with a difference. "
        f"{compat.ways_out(comparison, to_edge=to_edge)}"
    )
    raise SystemExit(1)
