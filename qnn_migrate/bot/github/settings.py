"""Settings from the environment, in one typed place that hides the token (pure).

``Settings.from_env(os.environ)`` is called only by ``bot.cli``; everything else receives a
``Settings``. Missing variables are all named in one error, with what each is for.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

REPO_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class SettingsError(ValueError):
    """The environment is missing or has malformed variables; the message names them all."""


class Secret:
    """A string that never shows itself in repr, str, logs or tracebacks."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('********')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclass(frozen=True)
class AppCredentials:
    """A GitHub App installation: the bot then comments as ``<slug>[bot]``."""

    app_id: int
    installation_id: int
    private_key: Secret


@dataclass(frozen=True)
class Settings:
    """Everything the bot reads from its environment."""

    repository: str
    token: Secret | None = None
    app: AppCredentials | None = None
    api_url: str = "https://api.github.com"
    server_url: str = "https://github.com"
    bot_login: str = "github-actions[bot]"
    run_url: str | None = None
    run_id: int | None = None  # GITHUB_RUN_ID: this workflow run
    dispatch_ref: str | None = None  # None: the repository's default branch
    retries: int = 5
    backoff_factor: float = 1.0
    secondary_rate_wait: float = 60.0
    timeout_s: int = 30
    write_interval_s: float = 1.0  # GitHub asks integrations to space out writes

    @property
    def repo_url(self) -> str:
        return f"{self.server_url.rstrip('/')}/{self.repository}"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Read ``GITHUB_*`` and ``QNN_BOT_*`` variables; raise naming every missing one.

        Auth is ``GITHUB_TOKEN``, or a GitHub App: ``QNN_BOT_APP_ID``,
        ``QNN_BOT_APP_INSTALLATION_ID`` and ``QNN_BOT_APP_PRIVATE_KEY`` (PEM text).
        """
        missing: list[str] = []
        bad: list[str] = []
        repository = env.get("GITHUB_REPOSITORY", "")
        if not repository:
            missing.append("GITHUB_REPOSITORY (owner/name of the repository)")
        elif not REPO_RE.match(repository):
            bad.append(f"GITHUB_REPOSITORY={repository!r} is not owner/name")

        token = env.get("GITHUB_TOKEN") or None
        app_keys = ("QNN_BOT_APP_ID", "QNN_BOT_APP_INSTALLATION_ID", "QNN_BOT_APP_PRIVATE_KEY")
        app_given = [k for k in app_keys if env.get(k)]
        app: AppCredentials | None = None
        if app_given and len(app_given) < len(app_keys):
            missing += [
                f"{k} (GitHub App auth needs all three)" for k in app_keys if not env.get(k)
            ]
        elif app_given:
            ids = {}
            for key in app_keys[:2]:
                if env[key].isdigit():
                    ids[key] = int(env[key])
                else:
                    bad.append(f"{key} must be a number")
            if len(ids) == 2:
                app = AppCredentials(
                    ids["QNN_BOT_APP_ID"],
                    ids["QNN_BOT_APP_INSTALLATION_ID"],
                    Secret(env["QNN_BOT_APP_PRIVATE_KEY"]),
                )
        if token is None and not app_given:
            missing.append("GITHUB_TOKEN (or the three QNN_BOT_APP_* variables of a GitHub App)")

        def number(key: str, default: float) -> float:
            raw = env.get(key)
            if raw is None or raw == "":
                return default
            try:
                value = float(raw)
            except ValueError:
                bad.append(f"{key}={raw!r} is not a number")
                return default
            if value < 0:
                bad.append(f"{key} must not be negative")
            return value

        retries = int(number("QNN_BOT_RETRIES", 5))
        backoff = number("QNN_BOT_BACKOFF", 1.0)
        secondary = number("QNN_BOT_SECONDARY_RATE_WAIT", 60.0)
        timeout = int(number("QNN_BOT_TIMEOUT", 30))
        write_interval = number("QNN_BOT_WRITE_INTERVAL", 1.0)
        if missing or bad:
            lines = [f"missing: {m}" for m in missing] + [f"invalid: {b}" for b in bad]
            raise SettingsError(
                "the bot's environment is incomplete:\n  "
                + "\n  ".join(lines)
                + "\nSet them in the workflow step's `env:` (see docs/bot.md)."
            )
        server = env.get("GITHUB_SERVER_URL") or "https://github.com"
        run_id = env.get("GITHUB_RUN_ID")
        run_url = f"{server}/{repository}/actions/runs/{run_id}" if run_id else None
        default_login = "github-actions[bot]" if app is None else ""
        bot_login = env.get("QNN_BOT_LOGIN") or default_login
        if not bot_login:
            raise SettingsError(
                "the bot's environment is incomplete:\n  missing: QNN_BOT_LOGIN "
                "(the App's bot login, e.g. qnn-bot[bot], used to find its own comments)"
            )
        return cls(
            repository=repository,
            token=Secret(token) if token else None,
            app=app,
            api_url=(env.get("GITHUB_API_URL") or "https://api.github.com").rstrip("/"),
            server_url=server.rstrip("/"),
            bot_login=bot_login,
            run_url=run_url,
            run_id=int(run_id) if run_id and run_id.isdigit() else None,
            dispatch_ref=env.get("QNN_BOT_DISPATCH_REF") or None,
            retries=retries,
            backoff_factor=backoff,
            secondary_rate_wait=secondary,
            timeout_s=timeout,
            write_interval_s=write_interval,
        )
