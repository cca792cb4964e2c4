"""The per-file result cache: an entry never survives a change to any part of its key, and a
damaged entry is ignored, not trusted."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from qnn_migrate.codemods import cache
from qnn_migrate.codemods.cache import Cache, Entry

ENTRY = Entry(True, ((5, 12, "rewritten", "rewritten", ""),), b"new = 1\n")


class _VersionInfo(tuple[int, int, int, str, int]):
    """A stand-in for ``sys.version_info``: a tuple with ``major`` and ``minor``."""

    @property
    def major(self) -> int:
        return self[0]

    @property
    def minor(self) -> int:
        return self[1]


def _stored(tmp_path: Path) -> tuple[Cache, str]:
    store = Cache(str(tmp_path / "cache"), target="qnn-passes", line_length=88)
    key = store.key(b"old = 1\n", "/src/a.py", "keeps:x")
    store.put(key, ENTRY)
    return store, key


def test_an_entry_is_found_again_under_the_same_key(tmp_path: Path) -> None:
    store, key = _stored(tmp_path)
    assert store.get(key) == ENTRY  # the control for every miss below
    again = Cache(str(tmp_path / "cache"), target="qnn-passes", line_length=88)
    assert again.get(again.key(b"old = 1\n", "/src/a.py", "keeps:x")) == ENTRY
    assert not list((tmp_path / "cache").rglob(".tmp-*"))  # written by rename


@pytest.mark.parametrize(
    "change",
    ["bytes", "path", "context", "target", "line_length", "python", "tool source", "data"],
)
def test_no_entry_survives_a_change_to_any_part_of_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    # The tool is a copy of the package, so that one of its files can change below.
    package = tmp_path / "package"
    shutil.copytree(cache._PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    digest = cache.tool_digest.__wrapped__  # not cached: the files change below
    monkeypatch.setattr(cache, "tool_digest", lambda: digest(package))
    _, key = _stored(tmp_path)
    directory = str(tmp_path / "cache")
    data, path, context = b"old = 1\n", "/src/a.py", "keeps:x"
    settings = {"target": "qnn-passes", "line_length": 88}
    unchanged = Cache(directory, **settings)  # type: ignore[arg-type]
    assert unchanged.key(data, path, context) == key  # the control: same parts, same key
    if change == "bytes":
        data = b"old = 2\n"
    elif change == "path":
        path = "/src/b.py"
    elif change == "context":
        context = ""
    elif change == "target":
        settings["target"] = "executorch"
    elif change == "line_length":
        settings["line_length"] = 100
    elif change == "python":
        # A version no interpreter running this has; still a tuple, as code elsewhere compares
        # sys.version_info with tuples while the patch is in place.
        monkeypatch.setattr(cache.sys, "version_info", _VersionInfo((3, 99, 0, "final", 0)))
    else:  # one file of the tool: the rule's code, or the deprecation data
        edited = package / ("engine.py" if change == "tool source" else "data/deprecations.toml")
        edited.write_bytes(edited.read_bytes() + b"\n# changed\n")
    store = Cache(directory, **settings)  # type: ignore[arg-type]
    assert store.get(store.key(data, path, context)) is None


@pytest.mark.parametrize("damage", ["truncated", "not json", "other key", "edited", "empty"])
def test_a_damaged_entry_is_ignored(tmp_path: Path, damage: str) -> None:
    store, key = _stored(tmp_path)
    (entry_path,) = (tmp_path / "cache").rglob(key)
    text = entry_path.read_text()
    if damage == "truncated":
        entry_path.write_text(text[: len(text) // 2])
    elif damage == "not json":
        entry_path.write_bytes(b"\xff\x00")
    elif damage == "other key":
        stored = json.loads(text)
        stored["key"] = "0" * 64
        entry_path.write_text(json.dumps(stored))
    elif damage == "edited":
        stored = json.loads(text)
        stored["payload"]["changed"] = False  # the checksum no longer matches
        entry_path.write_text(json.dumps(stored))
    else:
        entry_path.write_text("")
    assert store.get(key) is None
    store.put(key, ENTRY)  # rewritten whole
    assert store.get(key) == ENTRY


def test_an_unwritable_cache_only_costs_the_next_run(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")  # a file where the directory should be
    store = Cache(str(blocker), target="qnn-passes", line_length=88)
    key = store.key(b"x", "/a.py")
    store.put(key, ENTRY)
    assert store.get(key) is None


def test_default_directory_follows_xdg_and_the_override() -> None:
    home = os.path.expanduser("~")
    assert cache.default_directory({}) == os.path.join(home, ".cache", "qnn-migrate")
    assert cache.default_directory({"XDG_CACHE_HOME": "/x"}) == "/x/qnn-migrate"
    assert cache.default_directory({"XDG_CACHE_HOME": "/x", cache.ENV: "/y"}) == "/y"
