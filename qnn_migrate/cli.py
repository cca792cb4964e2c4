"""The ``qnn-migrate`` console command: one click group over the project's parts.

Subcommands are imported only when they run, so ``qnn-migrate rewrite`` never pays for
the bot's imports and nothing here imports torch. A part's command tree imports no extra:
every ``--help`` works on the core install, and a command that needs an extra that is not
installed says, when it runs, which extra and how to install it (``EXTRA_MISSING``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
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


# qnn-migrate is installed from its repository (a clone or a git URL), never from an index,
# so this is the one text that says how to add an extra; `qnn-migrate passes` uses it too.
EXTRA_MISSING = (
    "qnn-migrate {command} needs the [{extra}] extra ({missing} is not installed). "
    "From a clone of qnn-migrate: pip install {clone}; from its repository: pip install {git}"
)
REPOSITORY = "git+https://github.com/<owner>/qnn-migrate@<sha>"
# The [passes] extra is the torch stack; the runtime library, qnn-passes, is a project of its
# own in the repository's qnn-passes/ folder, on no index, so it is named by its path or URL.
_INSTALL_LINES = {
    "passes": (
        "-e ./qnn-passes -e '.[passes]'",
        f'"qnn-passes @ {REPOSITORY}#subdirectory=qnn-passes" "qnn-migrate[passes] @ {REPOSITORY}"',
    ),
}


def install_lines(extra: str) -> tuple[str, str]:
    """pip's arguments that add ``extra``: from a clone, and from the repository's URL."""
    return _INSTALL_LINES.get(extra, (f"-e '.[{extra}]'", f'"qnn-migrate[{extra}] @ {REPOSITORY}"'))


# Each part of the project owns its own entry here; keep them sorted by name.
COMMANDS: dict[str, Part] = {
    "bot": Part(
        "qnn_migrate.bot.cli.main",
        "bot",
        "PR-comment commands and device runs of the QNN test matrices.",
        "bot",
        ("github", "defusedxml", "markdown_it"),
    ),
    "matrix": Part(
        "qnn_migrate.bot.cli.matrix",
        "matrix",
        "List and show the QNN test matrices, SoCs and backends.",
    ),
    "passes": Part(
        "qnn_migrate.passes_cli",
        "passes",
        "Inspect the QNN pass pipeline (needs the [passes] extra).",
        "passes",
        ("qnn_passes", "torch", "executorch", "torchao"),
    ),
    "rewrite": Part(
        "qnn_migrate.codemods.cli",
        "rewrite",
        "Rewrite to_edge_transform_and_lower_to_qnn calls to to_edge_transform_and_lower.",
    ),
}


def extra_missing(command: str, extra: str, needs: Iterable[str], exc: ImportError) -> str | None:
    """``EXTRA_MISSING`` for ``qnn-migrate COMMAND`` when ``exc`` is about a module of ``needs``.

    None for any other ImportError (a bug, not a missing extra): the caller re-raises it.
    """
    missing = (exc.name or "").split(".")[0]
    if missing not in needs:
        return None
    clone, git = install_lines(extra)
    return EXTRA_MISSING.format(command=command, extra=extra, missing=missing, clone=clone, git=git)


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use (``COMMANDS``).

    A part imports its extra's modules only in the commands that use them; the ImportError
    such a command raises when the extra is missing becomes ``EXTRA_MISSING`` here (exit 1).
    """

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
            self._raise_extra_missing(cmd_name, exc)
            raise
        command = getattr(module, part.attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{part.module}:{part.attribute} is not a click command")
        return command

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except ImportError as exc:
            self._raise_extra_missing(ctx.invoked_subcommand or "", exc)
            raise

    def _raise_extra_missing(self, name: str, exc: ImportError) -> None:
        """Raise ``EXTRA_MISSING`` if ``exc`` is part ``name``'s extra missing; else return."""
        part = self._parts.get(name)
        if part is None or part.extra is None:
            return
        message = extra_missing(name, part.extra, part.needs, exc)
        if message is not None:
            raise click.ClickException(message) from exc

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
