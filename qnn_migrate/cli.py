"""The ``qnn-migrate`` console command: one click group over the project's parts.

Subcommands are imported only when they run, so ``qnn-migrate rewrite`` never pays for
the bot's imports and nothing here imports torch.
"""

from __future__ import annotations

import importlib

import click

# name -> "module:attribute" of a click command or group. Each part of the project owns
# its own lines here; keep them sorted by name.
COMMANDS: dict[str, tuple[str, str]] = {
    "bot": (
        "qnn_migrate.bot.cli.main:bot",
        "PR-comment commands and device runs of the QNN test matrices.",
    ),
    "matrix": (
        "qnn_migrate.bot.cli.main:matrix",
        "List and show the QNN test matrices, SoCs and backends.",
    ),
    "passes": (
        "qnn_passes.cli:passes",
        "Inspect the QNN pass pipeline (needs the [passes] extra).",
    ),
    "rewrite": (
        "qnn_migrate.codemods.cli:rewrite",
        "Rewrite to_edge_transform_and_lower_to_qnn calls to to_edge_transform_and_lower.",
    ),
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def __init__(self, *args: object, lazy: dict[str, tuple[str, str]], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self._lazy:
            return super().get_command(ctx, cmd_name)
        target, _ = self._lazy[cmd_name]
        module_name, attr = target.split(":")
        command = getattr(importlib.import_module(module_name), attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Short help comes from the table above, so `qnn-migrate --help` imports nothing.
        rows = [(name, self._lazy[name][1]) for name in sorted(self._lazy)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    lazy=COMMANDS,
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
