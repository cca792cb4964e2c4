"""github/settings.py: the bot's settings from the environment, the token kept out of sight."""

from __future__ import annotations

import pytest

from qnn_migrate.bot.github.settings import Settings, SettingsError


def test_settings_name_every_missing_variable_and_hide_the_token() -> None:
    with pytest.raises(SettingsError) as info:
        Settings.from_env({"QNN_BOT_APP_ID": "1", "QNN_BOT_RETRIES": "many"})
    text = str(info.value)
    assert "GITHUB_REPOSITORY" in text
    assert "QNN_BOT_APP_INSTALLATION_ID" in text and "QNN_BOT_APP_PRIVATE_KEY" in text
    assert "QNN_BOT_RETRIES='many' is not a number" in text
    with pytest.raises(SettingsError, match="GITHUB_TOKEN"):
        Settings.from_env({"GITHUB_REPOSITORY": "a/b"})
    s = Settings.from_env(
        {"GITHUB_REPOSITORY": "a/b", "GITHUB_TOKEN": "ghp_secret", "GITHUB_RUN_ID": "5"}
    )
    assert "ghp_secret" not in repr(s) and "ghp_secret" not in str(s.token)
    assert s.token is not None and s.token.reveal() == "ghp_secret"
    assert s.run_url == "https://github.com/a/b/actions/runs/5"
    assert s.bot_login == "github-actions[bot]"
