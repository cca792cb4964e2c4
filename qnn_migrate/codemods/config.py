"""The ``[tool.qnn-migrate]`` table of ``pyproject.toml``: where it is, what it says.

Found as ruff finds its own: walking up from the directory the PATH arguments share (the
current directory for standard input), the first ``pyproject.toml`` that has a
``[tool.qnn-migrate]`` table is the configuration, and its directory is the project root that
exclusion patterns are relative to. Without one, the project root is the current directory.
The line length the rewrite aims for is read from ``[tool.ruff]`` or ``[tool.black]`` of the
nearest ``pyproject.toml`` that sets one (else 88, both tools' default). Command-line flags
win over the file.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Collection, Sequence
from typing import Any, NamedTuple

TABLE = "qnn-migrate"
DEFAULT_LINE_LENGTH = 88  # ruff's and black's default
KEYS = ("target", "exclude", "extend-exclude", "jobs", "respect-gitignore", "force-exclude")


class ConfigError(ValueError):
    """The configuration file is malformed; the message names the file and the key."""


class Config(NamedTuple):
    """What ``[tool.qnn-migrate]`` set (None: not set) and where it was found."""

    path: str | None = None  # the pyproject.toml, None when there is none
    root: str = "."  # the project root: exclusion patterns are relative to it
    target: str | None = None
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    jobs: int | None = None
    respect_gitignore: bool | None = None
    force_exclude: bool | None = None
    line_length: int = DEFAULT_LINE_LENGTH


def _strings(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f'{where} must be a list of strings, like ["generated", "*_pb2.py"]')
    return tuple(value)


def _boolean(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false")
    return value


def parse_table(table: dict[str, Any], path: str, targets: Collection[str]) -> dict[str, Any]:
    """The settings of one ``[tool.qnn-migrate]`` table, checked; keyed by field name."""
    settings: dict[str, Any] = {}
    for key, value in table.items():
        where = f"{path}: [tool.{TABLE}] {key}"
        if key not in KEYS:
            known = ", ".join(KEYS)
            raise ConfigError(f"{path}: unknown key {key!r} in [tool.{TABLE}] (known: {known})")
        if key == "target":
            if value not in targets:
                raise ConfigError(f"{where} must be one of {', '.join(sorted(targets))}")
            settings["target"] = value
        elif key in ("exclude", "extend-exclude"):
            settings[key.replace("-", "_")] = _strings(value, where)
        elif key == "jobs":
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConfigError(f"{where} must be a whole number >= 0 (0: one per CPU)")
            settings["jobs"] = value
        else:
            settings[key.replace("-", "_")] = _boolean(value, where)
    return settings


def _line_length(data: dict[str, Any], path: str) -> int | None:
    tools = data.get("tool", {})
    for tool in ("ruff", "black"):
        table = tools.get(tool, {}) if isinstance(tools, dict) else {}
        value = table.get("line-length") if isinstance(table, dict) else None
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"{path}: [tool.{tool}] line-length must be a whole number >= 1")
        return value
    return None


def _load(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML ({error})") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read ({error.strerror or error})") from None


def start_directory(paths: Sequence[str]) -> str:
    """The directory the PATH arguments share, where the search for the config starts."""
    absolute = [os.path.abspath(p) for p in paths if p != "-"]
    if not absolute:
        return os.getcwd()
    common = os.path.commonpath(absolute)
    return common if os.path.isdir(common) else os.path.dirname(common)


def find(start: str, targets: Collection[str]) -> Config:
    """The configuration for a run whose paths share the directory ``start``."""
    line_length: int | None = None
    current = os.path.abspath(start)
    while True:
        candidate = os.path.join(current, "pyproject.toml")
        if os.path.isfile(candidate):
            data = _load(candidate)
            if line_length is None:
                line_length = _line_length(data, candidate)
            tools = data.get("tool", {})
            table = tools.get(TABLE) if isinstance(tools, dict) else None
            if table is not None:
                if not isinstance(table, dict):
                    raise ConfigError(f"{candidate}: [tool.{TABLE}] must be a table")
                return Config(
                    path=candidate,
                    root=current,
                    line_length=line_length or DEFAULT_LINE_LENGTH,
                    **parse_table(table, candidate, targets),
                )
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return Config(root=os.getcwd(), line_length=line_length or DEFAULT_LINE_LENGTH)
