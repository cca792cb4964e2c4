"""``[tool.qnn-migrate]``: found by walking up, checked key by key, flags win over it."""

from __future__ import annotations

from pathlib import Path

import pytest

from qnn_migrate.codemods import config
from qnn_migrate.codemods.config import ConfigError

TARGETS = ("qnn-passes", "executorch")


def _project(tmp_path: Path, table: str, extra: str = "") -> Path:
    (tmp_path / "pyproject.toml").write_text(
        f"[project]\nname = 'x'\n{extra}\n[tool.qnn-migrate]\n{table}"
    )
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    return tmp_path


def test_found_by_walking_up_from_the_paths(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        'target = "executorch"\nexclude = ["gen"]\nextend-exclude = ["*_pb2.py"]\njobs = 2\n',
    )
    found = config.find(str(root / "src" / "pkg"), TARGETS)
    assert found.path == str(root / "pyproject.toml") and found.root == str(root)
    assert (found.target, found.exclude, found.extend_exclude, found.jobs) == (
        "executorch",
        ("gen",),
        ("*_pb2.py",),
        2,
    )
    assert found.line_length == config.DEFAULT_LINE_LENGTH


def test_a_pyproject_without_the_table_is_passed_over_but_gives_its_line_length(
    tmp_path: Path,
) -> None:
    outer = _project(tmp_path, "jobs = 1\n")
    inner = outer / "src" / "pkg"
    (inner / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    found = config.find(str(inner), TARGETS)
    assert found.path == str(outer / "pyproject.toml") and found.jobs == 1
    assert found.line_length == 100  # the nearest file that sets one
    (inner / "pyproject.toml").write_text("[tool.black]\nline-length = 79\n")
    assert config.find(str(inner), TARGETS).line_length == 79


def test_no_config_means_the_current_directory_is_the_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    found = config.find(str(tmp_path), TARGETS)
    assert found.path is None and found.root == str(tmp_path) and found.exclude is None


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("tagret = 'executorch'\n", "unknown key 'tagret' in [tool.qnn-migrate]"),
        ("target = 'tflite'\n", "target must be one of executorch, qnn-passes"),
        ("exclude = 'gen'\n", "exclude must be a list of strings"),
        ("jobs = -1\n", "jobs must be a whole number >= 0"),
        ("jobs = true\n", "jobs must be a whole number >= 0"),
        ("respect-gitignore = 'no'\n", "respect-gitignore must be true or false"),
    ],
)
def test_bad_keys_name_the_file_and_the_key(tmp_path: Path, table: str, message: str) -> None:
    root = _project(tmp_path, table)
    with pytest.raises(ConfigError) as raised:
        config.find(str(root), TARGETS)
    assert str(raised.value).startswith(f"{root / 'pyproject.toml'}: ")
    assert message in str(raised.value)


def test_invalid_toml_is_an_error_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.qnn-migrate\n")
    with pytest.raises(ConfigError, match=r"pyproject\.toml: not valid TOML"):
        config.find(str(tmp_path), TARGETS)


def test_start_directory_is_what_the_paths_share(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.py").write_text("")
    assert config.start_directory([str(tmp_path / "a" / "x.py")]) == str(tmp_path / "a")
    assert config.start_directory([str(tmp_path / "a"), str(tmp_path / "b")]) == str(tmp_path)
