"""Fixtures for the bot's tests: the real catalog, the GitHub stand-in and a real PyGithub gateway.

The fake device lab (``lab``) is defined in lab/support.py and registered here, so the lab,
CLI and scenario tests all reach it. Helpers that are not fixtures are in support.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from qnn_migrate_tests.bot.lab.support import hopper, lab  # noqa: F401  (registers the fixtures)
from qnn_migrate_tests.bot.support import standin_env
from qnn_migrate_tests.bot.two_users import job_user_names, two_user_lab  # noqa: F401  (registers the fixtures)
from qnn_migrate_tests.github_standin.fixtures import BOT_LOGIN, github_standin  # noqa: F401
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot import catalog as catalog_mod
from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.github.client import PyGithubGateway, gateway_for
from qnn_migrate.bot.github.settings import Settings
from qnn_migrate.bot.pr.context import BotContext
from qnn_migrate.bot.pr.render import Links


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return catalog_mod.load()


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
