"""Test helpers live in one package that shadows nothing (tests/support/qnn_migrate_tests).

pytest imports test modules and conftests by path (``--import-mode=importlib``: as
``tests.<folder>.test_<name>``); everything else under tests/ is a helper, imported as
``qnn_migrate_tests.<folder>.<module>``. Only tests/support is on ``sys.path``. So no module of
tests/ takes a top-level name an installed distribution could own (``github``, ``docs``,
``bot``), and no helper is imported twice under two names (two copies, two identities of each
class). The checks read this process's ``sys.modules`` and ``sys.path``: in a run of the suite
that is every test module and conftest the run collected, and every helper they import.
"""

from __future__ import annotations

import ast
import importlib.metadata
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType

import qnn_migrate_tests

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
SUPPORT = TESTS / "support"
PACKAGE = "qnn_migrate_tests"
# pytest's own names for test modules and conftests, and their placeholder parents.
PYTEST_NAMES = "tests"
# Files that are data, not code run here: the rewrite's golden inputs and outputs.
NOT_CODE = (TESTS / "codemods" / "fixtures",)


def _file_of(module: ModuleType) -> Path | None:
    file = getattr(module, "__file__", None)
    return Path(file).resolve() if file else None


def _named_for(name: str, top: str) -> bool:
    return name == top or name.startswith(top + ".")


def stray_modules(modules: Mapping[str, ModuleType], tests: Path) -> list[str]:
    """The modules whose file is under ``tests`` but whose name is neither the helper package's
    nor pytest's (``tests.…``), as ``name (file)``."""
    strays = []
    for name, module in modules.items():
        file = _file_of(module)
        if file is None or not file.is_relative_to(tests):
            continue
        if not (_named_for(name, PACKAGE) or _named_for(name, PYTEST_NAMES)):
            strays.append(f"{name} ({file.relative_to(tests.parent)})")
    return sorted(strays)


def stray_path_entries(path: Iterable[str], tests: Path) -> list[str]:
    """The ``sys.path`` entries inside ``tests`` other than tests/support (cwd-relative ones
    resolved against the working directory, as Python does)."""
    support = tests / "support"
    return [
        entry
        for entry in path
        if (found := Path(entry or ".").resolve()).is_relative_to(tests) and found != support
    ]


def test_every_module_of_tests_is_a_helper_or_pytests() -> None:
    strays = stray_modules(sys.modules, TESTS)
    assert strays == [], (
        f"imported under a name of their own: {strays}. Import a helper as "
        f"{PACKAGE}.<folder>.<module> (absolute, never relative), never from a test module or "
        "a conftest, and put tests/support, not another folder of tests/, on sys.path"
    )


def test_the_check_reports_a_planted_module() -> None:
    """Control: a module named ``github`` or ``doubles`` whose file is under tests/ is found."""
    planted = {
        "github": ModuleType("github"),
        "doubles.qnn_backend": ModuleType("doubles.qnn_backend"),
        "qnn_migrate_tests.doubles.qnn_backend": ModuleType("ok"),
        "tests.bot.test_model": ModuleType("ok"),
        "json": ModuleType("json"),  # a file outside tests/: not the check's business
    }
    planted["github"].__file__ = str(TESTS / "bot" / "github" / "__init__.py")
    planted["doubles.qnn_backend"].__file__ = str(TESTS / "doubles" / "qnn_backend.py")
    planted["qnn_migrate_tests.doubles.qnn_backend"].__file__ = str(
        TESTS / "doubles" / "qnn_backend.py"
    )
    planted["tests.bot.test_model"].__file__ = str(TESTS / "bot" / "test_model.py")
    planted["json"].__file__ = str(Path(sys.base_prefix) / "lib" / "json" / "__init__.py")
    assert stray_modules(planted, TESTS) == [
        "doubles.qnn_backend (tests/doubles/qnn_backend.py)",
        "github (tests/bot/github/__init__.py)",
    ]


def test_only_tests_support_of_tests_is_on_sys_path() -> None:
    assert str(SUPPORT) in sys.path
    assert stray_path_entries(sys.path, TESTS) == []


def test_the_path_check_reports_a_planted_folder() -> None:
    """Control: tests/ itself, or tests/bot, on sys.path is found; tests/support is not."""
    planted = [str(SUPPORT), str(TESTS), str(TESTS / "bot"), str(ROOT), "/usr/lib/python3"]
    assert stray_path_entries(planted, TESTS) == [str(TESTS), str(TESTS / "bot")]


def test_the_package_is_tests_and_shadows_nothing_installed() -> None:
    assert Path(qnn_migrate_tests.__file__).resolve() == SUPPORT / PACKAGE / "__init__.py"
    assert [Path(p) for p in qnn_migrate_tests.__path__] == [TESTS]
    owners = importlib.metadata.packages_distributions()
    assert PACKAGE not in owners, f"{PACKAGE} is also installed by {owners[PACKAGE]}"
    assert PACKAGE not in sys.stdlib_module_names
    # pytest's placeholder parent, ``tests``, must not be an installed package either: a
    # distribution that ships one (some sdists do) would be imported in its place.
    assert PYTEST_NAMES not in owners, f"tests is installed by {owners[PYTEST_NAMES]}"


# ------------------------------------------------------------------ the folders and the sources


def packages_holding_tests(tests: Path) -> list[str]:
    """Folders under ``tests`` that hold a test module or a conftest and an ``__init__.py``:
    pytest would import their modules as part of a package named after the folder."""
    found = []
    for init in sorted(tests.rglob("__init__.py")):
        folder = init.parent
        if any(folder.glob("test_*.py")) or (folder / "conftest.py").exists():
            found.append(folder.relative_to(tests.parent).as_posix())
    return found


def test_no_folder_of_tests_is_a_package() -> None:
    assert packages_holding_tests(TESTS) == [], (
        "remove the __init__.py: test modules and conftests are imported by path"
    )


def test_the_folder_check_reports_a_planted_package(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    for folder in ("bot", "bot/lab", "doubles", "lowering"):
        (tests / folder).mkdir(parents=True)
    (tests / "bot" / "__init__.py").write_text("")
    (tests / "bot" / "test_model.py").write_text("")
    (tests / "bot" / "lab" / "__init__.py").write_text("")
    (tests / "bot" / "lab" / "conftest.py").write_text("")
    (tests / "doubles" / "__init__.py").write_text("")  # helpers only: allowed
    (tests / "doubles" / "fake_adb.py").write_text("")
    (tests / "lowering" / "test_canonical.py").write_text("")  # no __init__.py: allowed
    assert packages_holding_tests(tests) == ["tests/bot", "tests/bot/lab"]


class _Unknown(Exception):
    """A path expression this reader cannot evaluate."""


def _evaluate(node: ast.expr, names: Mapping[str, object]) -> object:
    """The value of a path expression built from ``__file__``, module constants, literals,
    ``Path(...)``, ``.resolve()``, ``.parent``, ``.parents[n]``, ``/``, ``str()`` and
    ``os.path.dirname``/``abspath``; _Unknown for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str | int):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in names:
            return names[node.id]
        raise _Unknown(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left = _evaluate(node.left, names)
        right = _evaluate(node.right, names)
        if isinstance(left, Path) and isinstance(right, str | Path):
            return left / right
    if isinstance(node, ast.Attribute):
        value = _evaluate(node.value, names)
        if isinstance(value, Path) and node.attr == "parent":
            return value.parent
        if isinstance(value, Path) and node.attr == "parents":
            return value.parents
    if isinstance(node, ast.Subscript):
        value = _evaluate(node.value, names)
        index = _evaluate(node.slice, names)
        if isinstance(index, int) and hasattr(value, "__getitem__"):
            return value[index]  # type: ignore[index]
    if isinstance(node, ast.Call) and len(node.args) <= 1 and not node.keywords:
        func = ast.unparse(node.func)
        args = [_evaluate(a, names) for a in node.args]
        if func in ("Path", "str", "os.path.dirname", "os.path.abspath") and len(args) == 1:
            arg = Path(str(args[0]))
            return {"Path": arg, "str": arg, "os.path.dirname": arg.parent}.get(func, arg)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "resolve" and not args:
            value = _evaluate(node.func.value, names)
            if isinstance(value, Path):
                return value
    raise _Unknown(ast.unparse(node))


def _uses_file_or_tests(node: ast.expr, constants: Mapping[str, ast.expr]) -> bool:
    """Whether the expression is built from ``__file__`` or names tests, through constants."""
    seen: set[str] = set()
    stack = [node]
    while stack:
        for sub in ast.walk(stack.pop()):
            if isinstance(sub, ast.Name):
                if sub.id == "__file__":
                    return True
                if sub.id in constants and sub.id not in seen:
                    seen.add(sub.id)
                    stack.append(constants[sub.id])
            if isinstance(sub, ast.Constant) and sub.value in ("tests", "support"):
                return True
    return False


def sys_path_changes(source: str, file: Path, tests: Path) -> list[str]:
    """The folders a module puts on ``sys.path`` (``sys.path.insert``/``append``, or an
    assignment to an item of it) that lie in ``tests`` other than tests/support, as
    ``line: folder``; an argument built from ``__file__`` that cannot be read is reported too."""
    tree = ast.parse(source)
    constants: dict[str, ast.expr] = {
        node.targets[0].id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
    }
    names: dict[str, object] = {"__file__": file}
    for name, value in constants.items():
        try:
            names[name] = _evaluate(value, names)
        except (_Unknown, TypeError, IndexError):
            continue
    found = []
    for node in ast.walk(tree):
        argument: ast.expr | None = None
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and ast.unparse(node.func) in ("sys.path.insert", "sys.path.append")
            and node.args
        ):
            argument = node.args[-1]
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Subscript) and ast.unparse(t.value) == "sys.path"
            for t in node.targets
        ):
            argument = node.value
        if argument is None or not _uses_file_or_tests(argument, constants):
            continue
        try:
            folder = Path(str(_evaluate(argument, names)))
        except (_Unknown, TypeError, IndexError):
            found.append(f"{node.lineno}: cannot tell which folder {ast.unparse(argument)} is")
            continue
        if folder.is_relative_to(tests) and folder != tests / "support":
            found.append(f"{node.lineno}: {folder.relative_to(tests.parent).as_posix()}")
    return sorted(found, key=lambda line: int(line.split(":", 1)[0]))


def _sources() -> Iterable[Path]:
    for folder in (TESTS, ROOT / "benchmarks"):
        for path in sorted(folder.rglob("*.py")):
            if not any(path.is_relative_to(data) for data in NOT_CODE):
                yield path


def test_no_script_puts_another_folder_of_tests_on_sys_path() -> None:
    found = {
        path.relative_to(ROOT).as_posix(): changes
        for path in _sources()
        if (changes := sys_path_changes(path.read_text(encoding="utf-8"), path, TESTS))
    }
    assert found == {}, (
        f"put tests/support on sys.path and import qnn_migrate_tests.<folder>.<module>: {found}"
    )


def test_the_source_check_reports_a_planted_insert() -> None:
    """Control: a script putting tests/ (or tests/bot) on sys.path is found, in every form the
    suite's scripts use; tests/support and the repository root are not."""
    script = TESTS / "qnn_htp" / "run_something.py"
    source = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "ROOT = Path(__file__).resolve().parents[2]\n"
        "TESTS = ROOT / 'tests'\n"
        "sys.path.insert(0, str(Path(__file__).resolve().parent.parent))\n"
        "sys.path.insert(0, str(TESTS / 'bot'))\n"
        "sys.path.append(os.path.dirname(os.path.dirname(__file__)))\n"
        "sys.path[0] = str(TESTS)\n"
        "sys.path.insert(0, str(TESTS / 'support'))\n"
        "sys.path.insert(0, str(ROOT))\n"
        "sys.path.insert(0, str(ROOT / 'benchmarks'))\n"
        "sys.path.insert(0, where_the_script_is)\n"
        "sys.path.insert(0, str(Path(__file__).with_name('x')))\n"
    )
    assert sys_path_changes(source, script, TESTS) == [
        "5: tests",
        "6: tests/bot",
        "7: tests",
        "8: tests",
        "13: cannot tell which folder str(Path(__file__).with_name('x')) is",
    ]
