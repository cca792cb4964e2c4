"""The ``qnn-migrate`` console command: one click group over the project's parts.

Subcommands are imported only when they run, so ``qnn-migrate rewrite`` never pays for
the bot's imports and nothing here imports torch.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import click


@dataclass(frozen=True)
class Part:
    """One subcommand: where its click object lives, its short help, and the extra it needs."""

    module: str
    attribute: str
    help: str
    extra: str | None = None  # the pip extra that provides its dependencies
    needs: tuple[str, ...] = ()  # top-level modules that extra installs


BOT_EXTRA = ("bot", ("github", "defusedxml", "markdown_it"))

# Each part of the project owns its own entry here; keep them sorted by name.
COMMANDS: dict[str, Part] = {
    "bot": Part(
        "qnn_migrate.bot.cli.main",
        "bot",
        "PR-comment commands and device runs of the QNN test matrices.",
        *BOT_EXTRA,
    ),
    "matrix": Part(
        "qnn_migrate.bot.cli.main",
        "matrix",
        "List and show the QNN test matrices, SoCs and backends.",
        *BOT_EXTRA,
    ),
    "passes": Part(
        "qnn_passes.cli",
        "passes",
        "Inspect the QNN pass pipeline (needs the [passes] extra).",
        "passes",
        ("torch", "executorch", "torchao"),
    ),
    "rewrite": Part(
        "qnn_migrate.codemods.cli",
        "rewrite",
        "Rewrite to_edge_transform_and_lower_to_qnn calls to to_edge_transform_and_lower.",
    ),
}


def missing_extra(name: str, part: Part, exc: ImportError) -> str | None:
    """The message for a part whose extra is not installed, or None for any other ImportError."""
    missing = (exc.name or "").split(".")[0]
    if part.extra is None or missing not in part.needs:
        return None
    return (
        f"`qnn-migrate {name}` needs the [{part.extra}] extra ({missing} is not installed): "
        f"pip install 'qnn-migrate[{part.extra}]'"
    )


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use (``COMMANDS``)."""

    def __init__(self, *args: object, parts: dict[str, Part], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._parts = parts

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._parts})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        part = self._parts.get(cmd_name)
        if part is None:
            return super().get_command(ctx, cmd_name)
        try:
            module = importlib.import_module(part.module)
        except ImportError as exc:
            message = missing_extra(cmd_name, part, exc)
            if message is None:
                raise
            raise click.ClickException(message) from exc
        command = getattr(module, part.attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{part.module}:{part.attribute} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Short help comes from the table above, so `qnn-migrate --help` imports nothing.
        rows = [(name, self._parts[name].help) for name in sorted(self._parts)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    parts=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(package_name="qnn-migrate")
def main() -> None:
    """Move ExecuTorch QNN code off to_edge_transform_and_lower_to_qnn, and prove it on phones.

    \b
    qnn-migrate rewrite src/          rewrite deprecated calls in place
    qnn-migrate rewrite --diff src/   show what would change
    qnn-migrate matrix list           the QNN device test matrices
    qnn-migrate bot parse < comment   try a PR comment command offline
    """


if __name__ == "__main__":
    main()
