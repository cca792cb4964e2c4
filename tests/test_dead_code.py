"""No dead names in qnn_migrate and qnn_passes: vulture finds none beyond the reviewed allowlist
(tests/dead_code_allowlist.txt), and a planted dead function is found (the control)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from vulture import Vulture

ALLOWLIST = Path(__file__).with_name("dead_code_allowlist.txt")
PACKAGES = ("qnn_migrate", "qnn_passes")


def package_folders() -> list[Path]:
    """Where the packages are (found as Python finds them, wherever they are installed from)."""
    folders = []
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations, package
        folders.append(Path(next(iter(spec.submodule_search_locations))))
    return folders


def allowlist(text: str) -> dict[tuple[str, str], str]:
    """(path, name) -> the reason it is alive, from the allowlist's text."""
    entries: dict[tuple[str, str], str] = {}
    reason = ""
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("== "):
            reason = line[3:].strip()
            continue
        path, _, name = line.partition(" ")
        assert reason and name and " " not in name.strip(), f"line {number}: {line!r}"
        assert (path, name.strip()) not in entries, f"line {number}: listed twice"
        entries[(path, name.strip())] = reason
    return entries


def unused(folders: list[Path]) -> set[tuple[str, str]]:
    """(path from the package folder's parent, name) of everything vulture reports."""
    scanner = Vulture()
    scanner.scavenge([str(folder) for folder in folders])
    found = set()
    for item in scanner.get_unused_code(min_confidence=0):
        path = Path(item.filename).resolve()
        root = next(f.parent for f in folders if path.is_relative_to(f.resolve()))
        found.add((path.relative_to(root.resolve()).as_posix(), item.name))
    return found


def test_no_dead_name_beyond_the_allowlist() -> None:
    listed = allowlist(ALLOWLIST.read_text(encoding="utf-8"))
    found = unused(package_folders())
    unlisted = sorted(found - listed.keys())
    assert unlisted == [], (
        "vulture finds these unused: remove each, or list it in tests/dead_code_allowlist.txt "
        f"under the reason it is alive: {unlisted}"
    )
    stale = sorted(listed.keys() - found)
    assert stale == [], f"listed in tests/dead_code_allowlist.txt but used now: remove {stale}"


def test_control_a_planted_dead_function_is_found(tmp_path: Path) -> None:
    copies = []
    for folder in package_folders():
        copies.append(tmp_path / folder.name)
        shutil.copytree(folder, copies[-1], ignore=shutil.ignore_patterns("__pycache__"))
    (copies[0] / "bot" / "planted.py").write_text(
        '"""A module with a function nothing calls."""\n\n\n'
        "def never_called() -> int:\n    return 1\n",
        encoding="utf-8",
    )
    listed = allowlist(ALLOWLIST.read_text(encoding="utf-8"))
    assert sorted(unused(copies) - listed.keys()) == [
        ("qnn_migrate/bot/planted.py", "never_called")
    ]
