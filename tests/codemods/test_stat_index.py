"""The stat index: a warm run trusts a clean file by its status, and never a changed one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qnn_migrate.codemods import files, stat_index
from qnn_migrate.codemods.options import RuleOptions
from qnn_migrate.codemods.runner import RunOptions, run
from qnn_migrate.codemods.stat_index import StatIndex

CALL = (
    "from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn\n"
    "edge = to_edge_transform_and_lower_to_qnn(model, inputs, specs)\n"
)
CLEAN = "x = 1\n" + "#" * (len(CALL) - 6)  # the same size as CALL


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the runner reads, in order."""
    seen: list[str] = []
    real = files.read

    def counting(path: str) -> tuple[bytes, os.stat_result]:
        seen.append(os.path.basename(path))
        return real(path)

    monkeypatch.setattr(files, "read", counting)
    return seen


def _tree(tmp_path: Path) -> tuple[Path, list[str]]:
    tree = tmp_path / "src"
    tree.mkdir()
    for name in ("a.py", "b.py", "c.py"):
        (tree / name).write_text(CLEAN)
    (tree / "lower.py").write_text(CALL)
    return tree, [str(tree / n) for n in ("a.py", "b.py", "c.py", "lower.py")]


def _options(tmp_path: Path, tree: Path, target: str = "qnn-passes") -> RunOptions:
    return RunOptions(
        RuleOptions(target),
        mode="check",
        jobs=1,
        cache_dir=str(tmp_path / "cache"),
        roots=(str(tree),),
    )


def test_a_second_run_reads_only_the_file_that_mentions_the_name(
    tmp_path: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stat_index, "SLACK_NS", 0)  # files written just now count as old
    tree, paths = _tree(tmp_path)
    first = run(paths, _options(tmp_path, tree))
    assert reads == ["a.py", "b.py", "c.py", "lower.py", "lower.py"]  # scan, then rewrite
    reads.clear()
    again = run(paths, _options(tmp_path, tree))
    assert reads == ["lower.py"]  # read again: the re-export scan and the cache need its bytes
    assert again == first
    # Control: another target is another index (and another result cache).
    reads.clear()
    run(paths, _options(tmp_path, tree, target="executorch"))
    assert reads[:4] == ["a.py", "b.py", "c.py", "lower.py"]


@pytest.mark.parametrize("keep_times", [False, True], ids=["plain write", "times restored"])
def test_a_file_changed_to_mention_the_name_is_read_and_reported(
    tmp_path: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch, keep_times: bool
) -> None:
    monkeypatch.setattr(stat_index, "SLACK_NS", 0)
    tree, paths = _tree(tmp_path)
    run(paths, _options(tmp_path, tree))
    before = os.stat(paths[1])
    Path(paths[1]).write_text(CALL)  # the same size
    if keep_times:  # what `touch -r` or a tool that keeps times does; st_ctime still moves
        os.utime(paths[1], ns=(before.st_atime_ns, before.st_mtime_ns))
    reads.clear()
    again = run(paths, _options(tmp_path, tree))
    assert "b.py" in reads
    assert [o.changed for o in again] == [False, True, False, True]


def test_a_file_written_in_the_same_tick_as_the_run_is_not_trusted(
    tmp_path: Path, reads: list[str]
) -> None:
    tree, paths = _tree(tmp_path)  # written now: within the real slack of the run's start
    run(paths, _options(tmp_path, tree))
    reads.clear()
    run(paths, _options(tmp_path, tree))
    assert reads == ["a.py", "b.py", "c.py", "lower.py"]  # the rewrite from the result cache


@pytest.mark.parametrize("damage", ["not json", '{"format": 1}', '{"clean": []}', ""])
def test_a_damaged_index_is_ignored_and_rebuilt(
    tmp_path: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    monkeypatch.setattr(stat_index, "SLACK_NS", 0)
    tree, paths = _tree(tmp_path)
    first = run(paths, _options(tmp_path, tree))
    (index_file,) = (tmp_path / "cache").rglob("index/*.json")
    index_file.write_text(damage)
    reads.clear()
    assert run(paths, _options(tmp_path, tree)) == first
    assert len(reads) == 4
    reads.clear()
    run(paths, _options(tmp_path, tree))
    assert reads == ["lower.py"]  # rebuilt by the run that found it damaged


def test_only_directories_get_an_index(tmp_path: Path) -> None:
    tree, paths = _tree(tmp_path)
    assert StatIndex.for_run(str(tmp_path), b"salt", paths) is None
    assert StatIndex.for_run(str(tmp_path), b"salt", [str(tree)]) is not None
