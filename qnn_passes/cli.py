"""``qnn-migrate passes``: look at the QNN pass pipeline from the command line.

This module imports neither torch nor ExecuTorch at import time, so ``qnn-migrate --help``
stays fast and a missing ``[passes]`` extra is reported by the command that needs it.
"""

from __future__ import annotations

from types import ModuleType

import click

EXTRA_MISSING = (
    "qnn-migrate passes needs the [passes] extra (torch 2.13, executorch 1.5.1, torchao "
    "0.18), which is not installed here ({error}). Install it from a clone of qnn-migrate "
    "with: pip install -e '.[passes]' (or, from an index that has qnn-migrate: "
    "pip install 'qnn-migrate[passes]')"
)
_STACK = ("torch", "executorch", "torchao")


def _load_pipeline() -> ModuleType:
    try:
        from qnn_passes import pipeline

        pipeline.executorch_pass("FoldQDQ")  # imports the torch stack
    except ImportError as err:
        if (err.name or "").split(".")[0] in _STACK:
            raise click.ClickException(EXTRA_MISSING.format(error=err)) from err
        raise
    return pipeline


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
    pipeline = _load_pipeline()
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
