"""``qnn-migrate matrix ...``: list, show and check the matrices data, regenerate the registry.

These commands only read data (``bot/matrices.toml``, an adopter's ``.github/qnn-bot.toml``,
the test registry), so they need nothing beyond the core install: this module imports the
catalog, the registry and ``common``, none of which imports the [bot] extra.
"""

from __future__ import annotations

from pathlib import Path

import click

from qnn_migrate.bot import artifacts
from qnn_migrate.bot import catalog as catalog_mod
from qnn_migrate.bot.artifacts import ArtifactError
from qnn_migrate.bot.cli.common import CATALOG_OPTION, EXIT_FAILED, EXIT_INPUT, fail, load_catalog
from qnn_migrate.bot.registry import RegistryError, extract

MAX_SOURCE_BYTES = 16 * 1024 * 1024  # ExecuTorch 1.5.1's test_qnn_delegate.py is 0.3 MiB


@click.group()
def matrix() -> None:
    """List and show the QNN test matrices, SoCs and backends (bot/matrices.toml)."""


@matrix.command("list")
@CATALOG_OPTION
def matrix_list(catalog_path: Path | None) -> None:
    """Every matrix, SoC and backend, and the defaults of /qnn test."""
    c = load_catalog(catalog_path)
    reg = c.registry
    click.echo(
        f"Matrices ({c.source}; registry: {reg.package} {reg.version}, {len(c.test_ids)} tests):"
    )
    width = max(len(m) for m in c.matrices)
    for m in c.matrices.values():
        click.echo(f"  {m.name:<{width}}  {len(m.tests):>3} tests  {m.description}")
    click.echo("\nSoCs (backends; runner labels):")
    for soc in c.socs.values():
        labels = ", ".join(soc.runner_labels) if soc.in_lab else "no phone in the lab"
        click.echo(f"  {soc.name:<9} {','.join(soc.backends):<13} {labels}")
    click.echo("\nBackends: " + ", ".join(f"{b} ({d})" for b, d in c.backends.items()))
    d = c.defaults
    click.echo(f"Defaults: --soc {','.join(d.socs)} --backend {d.backend} --seed {d.seed}")


@matrix.command("show")
@click.argument("name")
@CATALOG_OPTION
def matrix_show(name: str, catalog_path: Path | None) -> None:
    """One matrix: its tests, guarded paths and the device command line (or one SoC)."""
    c = load_catalog(catalog_path)
    if name.upper() in c.socs:
        soc = c.socs[name.upper()]
        click.echo(f"{soc.name}: backends {', '.join(soc.backends)}")
        click.echo("runner labels: " + (", ".join(soc.runner_labels) or "none (no phone)"))
        return
    if name not in c.matrices:
        hints = catalog_mod.close_matches(name, list(c.matrices) + list(c.socs))
        hint = f"; did you mean {', '.join(hints)}?" if hints else ""
        fail(f"no matrix or SoC named {name!r}{hint} (see `qnn-migrate matrix list`)", EXIT_INPUT)
    m = c.matrices[name]
    click.echo(f"{m.name}: {m.description}")
    if m.origin:
        click.echo(f"origin: {m.origin}")
    click.echo("guards: " + (", ".join(m.guards) or "(none)"))
    click.echo(f"tests ({len(m.tests)}):")
    for t in m.tests:
        click.echo(f"  {t}")
    argv = c.command_argv(
        ["${TEST_MATRIX}"],
        soc="${SOC_ID}",
        backend=c.defaults.backend,
        seed=c.defaults.seed,
        host="${HOST_NAME}",
        device="${DEVICE_ID}",
        matrix=m.name,
    )
    if m.other_backends:
        click.echo("modules: " + ", ".join(m.modules))
        click.echo("runs on: the simulator tier only (no phone), opt-in")
    click.echo("command: " + " ".join(argv))


@matrix.command("check")
@CATALOG_OPTION
def matrix_check(catalog_path: Path | None) -> None:
    """Validate the data file against the registry; exit 2 naming every problem."""
    c = load_catalog(catalog_path)
    click.echo(
        f"ok: {len(c.matrices)} matrices, {len(c.socs)} SoCs ({len(c.lab_socs)} in the lab), "
        f"{len(c.backends)} backends, registry {c.registry.package} {c.registry.version}"
    )


@matrix.command("registry")
@click.option(
    "--from",
    "source",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="ExecuTorch's backends/qualcomm/tests/test_qnn_delegate.py.",
)
@click.option("--version", "version", required=True, help="The executorch version or commit.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path(__file__).parents[1] / "data" / "test_registry.json",
    show_default=True,
)
@click.option("--check", is_flag=True, help="Exit 1 if the file would change; write nothing.")
def matrix_registry(source: Path, version: str, out: Path, check: bool) -> None:
    """Regenerate the test registry from the test file's syntax tree (no import)."""
    try:
        reg = extract(
            artifacts.read_text(source, "the test file", MAX_SOURCE_BYTES), version=version
        )
    except ArtifactError as exc:
        fail(str(exc), EXIT_INPUT)
    except RegistryError as exc:  # it names the file by its path in ExecuTorch
        fail(f"{source}: {exc}", EXIT_INPUT)
    text = reg.to_json()
    if check:
        current = ""
        if out.exists() or out.is_symlink():
            try:
                current = artifacts.read_text(out, "the registry")
            except ArtifactError as exc:
                fail(str(exc), EXIT_INPUT)
        if current != text:
            fail(f"{out} is out of date; run without --check to regenerate", EXIT_FAILED)
        click.echo(f"{out}: up to date ({len(reg.ids())} tests)")
        return
    if not out.parent.is_dir():
        fail(f"{out}: the folder {out.parent} does not exist; create it first", EXIT_INPUT)
    try:
        out.write_text(text, "utf-8")
    except OSError as exc:
        fail(f"{out}: cannot write the registry: {exc.strerror or exc}", EXIT_INPUT)
    click.echo(f"wrote {out}: {len(reg.ids())} tests in {len(reg.classes)} classes, {version}")
