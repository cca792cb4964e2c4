"""Every production module has a test file of its name, or a line in CONTRIBUTING.md ("Where each
module is tested") naming the test file that covers it; the table holds no stale line."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (ROOT / "qnn_migrate", ROOT / "qnn-passes" / "qnn_passes")
ROW = re.compile(r"^\| `([^`]+\.py)` \| `(tests/[^`]+\.py)` \|$", re.M)


def modules() -> list[Path]:
    return sorted(
        p for package in PACKAGES for p in package.rglob("*.py") if p.name != "__init__.py"
    )


def untested(mods: list[Path], tests: set[str]) -> list[str]:
    """The modules (relative paths) with no ``test_<stem>.py`` anywhere under tests/."""
    return [p.relative_to(ROOT).as_posix() for p in mods if p.stem not in tests]


def table(contributing: str) -> dict[str, str]:
    section = contributing.split("## Where each module is tested", 1)[1].split("\n## ", 1)[0]
    rows = ROW.findall(section)
    assert len(rows) == len({m for m, _ in rows}), "a module is listed twice"
    return dict(rows)


def test_every_module_has_a_test_of_its_name_or_a_line_that_names_one() -> None:
    tests = {p.stem.removeprefix("test_") for p in (ROOT / "tests").rglob("test_*.py")}
    missing = untested(modules(), tests)
    listed = table((ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8"))
    assert sorted(set(missing) - set(listed)) == [], "no test of its name and no line"
    assert sorted(set(listed) - set(missing)) == [], "listed, but it has a test of its name now"
    for module, test in listed.items():
        assert (ROOT / module).is_file(), module
        assert (ROOT / test).is_file(), f"{module}: {test} does not exist"
    # Control: a module with neither is found.
    assert untested([ROOT / "qnn_migrate" / "bot" / "brand_new.py"], tests) == [
        "qnn_migrate/bot/brand_new.py"
    ]
