"""What every click command of the bot shares: exit codes, the error printer, the wiring.

This is the one module that reads ``os.environ`` (``environment``), and ``github_session``
is the one place that turns it into settings, a real GitHub gateway and the links the
comments may carry. Exit codes, the same for every command:

* 0 done, including "nothing to do" (and, for ``run-shard``, every test passed or skipped);
* 1 GitHub or settings failure, or some test did not pass;
* 2 bad input: a command that does not parse, a malformed file, a refused shard;
* 3 the PR head moved (``check-head``).

Every module of ``cli/`` imports the [bot] extra's packages (PyGithub, defusedxml,
markdown-it-py, through ``github.client``, ``lab.results`` and ``pr/``) only inside the
commands that use them, so every ``--help``, ``matrix`` and ``device`` work on the core
install; ``qnn_migrate.cli`` turns the ImportError of a command that needs them into the
message that says how to install the extra.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from qnn_migrate.bot import artifacts
from qnn_migrate.bot import catalog as catalog_mod
from qnn_migrate.bot.artifacts import ArtifactError
from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.github.settings import Settings, SettingsError
from qnn_migrate.bot.model import Shard, ShardResult

if TYPE_CHECKING:
    from qnn_migrate.bot.github.client import PyGithubGateway
    from qnn_migrate.bot.pr.render import Links

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INPUT = 2
EXIT_HEAD_MOVED = 3
# A webhook payload: two bodies of 65,536 characters at most, each escaped, and the rest.
MAX_EVENT_BYTES = 4 * 1024 * 1024


def fail(message: str, code: int = EXIT_INPUT) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code``."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


def environment() -> dict[str, str]:
    """A copy of the process environment: the only read of ``os.environ`` in the bot."""
    return dict(os.environ)


def load_catalog(path: Path | None) -> Catalog:
    try:
        return catalog_mod.load(path)
    except catalog_mod.CatalogError as exc:
        fail(str(exc), EXIT_INPUT)


CATALOG_OPTION = click.option(
    "--catalog",
    "catalog_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The matrices data file (default: bot/matrices.toml).",
)


def shards_file_option(help: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The required ``--shards-file`` of the commands that read a planned shard list."""
    return click.option(
        "--shards-file",
        required=True,
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help=help,
    )


def results_dir_option(help: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The required ``--results-dir``: the downloaded shard artifacts (``qnn-result-<id>/``)."""
    return click.option(
        "--results-dir",
        required=True,
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        help=help,
    )


@dataclass(frozen=True)
class GitHubSession:
    """Settings from the environment, the real gateway built from them, and the links."""

    settings: Settings
    gateway: PyGithubGateway
    links: Links


def github_session() -> GitHubSession:
    """Settings -> PyGithub client -> gateway -> links; exit 1 naming what is missing."""
    from qnn_migrate.bot.github.client import gateway_for
    from qnn_migrate.bot.pr.render import Links

    try:
        settings = Settings.from_env(environment())
    except SettingsError as exc:
        fail(str(exc), EXIT_FAILED)
    gateway = gateway_for(settings)
    return GitHubSession(settings, gateway, Links(settings.repo_url, settings.run_url))


def read_shards(path: Path, what: str = "the shard list") -> list[Shard]:
    try:
        return artifacts.read_shards(path, what)
    except ArtifactError as exc:
        fail(str(exc), EXIT_INPUT)


def collect_results(results_dir: Path, planned: Sequence[Shard]) -> list[ShardResult]:
    """Each planned shard's result from its own artifact folder; warnings on stderr."""
    from qnn_migrate.bot.lab import results as junit

    def junit_result(shard: Shard, data: bytes) -> ShardResult:
        return junit.build(shard, junit.parse_junit(data))

    collected = artifacts.collect_results(results_dir, planned, junit_result)
    for warning in collected.warnings:
        warn(warning)
    return list(collected.results)
