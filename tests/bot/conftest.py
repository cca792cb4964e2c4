"""Fixtures for the bot's tests: the real catalog, the GitHub stand-in and a real PyGithub gateway."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from github_standin.fixtures import BOT_LOGIN, REPO, TOKEN, github_standin  # noqa: F401
from github_standin.server import GitHubStandIn

from qnn_migrate.bot import catalog as catalog_mod
from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.github.client import PyGithubGateway, gateway_for
from qnn_migrate.bot.github.settings import Settings
from qnn_migrate.bot.pr.dispatch import BotContext
from qnn_migrate.bot.pr.render import Links

GOLDEN = Path(__file__).resolve().parent / "golden"
REGEN = os.environ.get("QNN_REGEN_GOLDEN") == "1"


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return catalog_mod.load()


def standin_env(gh: GitHubStandIn) -> dict[str, str]:
    """The environment a workflow step would give the bot, pointed at the stand-in."""
    return {
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_API_URL": gh.base_url,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "4242",
        "QNN_BOT_RETRIES": "3",
        "QNN_BOT_BACKOFF": "0",
        "QNN_BOT_SECONDARY_RATE_WAIT": "0",
        "QNN_BOT_WRITE_INTERVAL": "0",
        "QNN_BOT_TIMEOUT": "10",
    }


@pytest.fixture
def settings(github_standin: GitHubStandIn) -> Settings:  # noqa: F811
    return Settings.from_env(standin_env(github_standin))


@pytest.fixture
def gateway(settings: Settings) -> Iterator[PyGithubGateway]:
    gw = gateway_for(settings)
    yield gw
    gw.close()


@pytest.fixture
def ctx(catalog: Catalog, settings: Settings) -> BotContext:
    return BotContext(
        catalog=catalog, bot_login=BOT_LOGIN, links=Links(settings.repo_url, settings.run_url)
    )


def check_golden(name: str, text: str) -> None:
    """Compare with tests/bot/golden/NAME; QNN_REGEN_GOLDEN=1 rewrites it instead."""
    path = GOLDEN / name
    if REGEN:
        path.write_text(text, "utf-8")
    assert path.exists(), f"{path} missing: run QNN_REGEN_GOLDEN=1 pytest tests/bot"
    assert text == path.read_text("utf-8"), f"{name} differs from the golden file"
