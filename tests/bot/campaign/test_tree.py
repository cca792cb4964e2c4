"""campaign/tree.py: the checkout rewritten in memory as `qnn-migrate rewrite` would, nothing written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from qnn_migrate_tests.bot.campaign.support import BY_HAND, EXPORT_CONV, OLD, fork_files

from qnn_migrate.bot.campaign.tree import TreeError, TreeOptions, rewrite_checkout


def checkout(tmp: Path, files: dict[str, bytes] | None = None) -> Path:
    root = tmp / "checkout"
    for path, data in (files if files is not None else fork_files()).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_the_rewrite_follows_the_config_and_writes_nothing(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    before = snapshot(root)
    tree = rewrite_checkout(root, TreeOptions(jobs=1))
    assert snapshot(root) == before
    assert (tree.target, tree.flow, tree.config) == ("qnn-passes", "canonical", "pyproject.toml")
    assert [f.path for f in tree.changed] == [
        "backends/qualcomm/tests/utils.py",
        "examples/qualcomm/export_conv.py",
    ]
    assert tree.rewritten == 2 and tree.left == 1
    # Excluded by [tool.qnn-migrate] extend-exclude: never read.
    assert all(not f.path.startswith("third_party/") for f in tree.files)
    (left,) = [f for f in tree.files if f.left]
    assert left.path == "examples/qualcomm/by_hand.py" and left.new is None
    assert (
        left.left[0].code == "QM101"
        and left.left[0].line
        == BY_HAND.splitlines().index(
            next(line for line in BY_HAND.splitlines() if f"{OLD}(" in line)
        )
        + 1
    )
    # Control: without the config's exclude, the vendored file is rewritten too.
    (root / "pyproject.toml").write_text('[tool.qnn-migrate]\ntarget = "qnn-passes"\n')
    assert "third_party/vendored.py" in [
        f.path for f in rewrite_checkout(root, TreeOptions(jobs=1)).changed
    ]


@pytest.mark.parametrize(
    ("target", "flow", "expected"),
    [
        ("qnn-passes", "canonical", "torch.export.export(model, example_inputs, strict=True)"),
        ("qnn-passes", "qnn-export", "qnn_export("),
        ("executorch", "canonical", "def _lower_to_qnn("),
        ("executorch", "qnn-export", "def _lower_to_qnn("),
    ],
)
def test_both_targets_and_both_flows(tmp_path: Path, target: str, flow: str, expected: str) -> None:
    root = checkout(tmp_path, {"conv.py": EXPORT_CONV.encode()})
    tree = rewrite_checkout(root, TreeOptions(target=target, flow=flow, jobs=1))
    (f,) = tree.changed
    assert f.new is not None and expected in f.new.decode()
    assert (tree.target, tree.flow) == (target, flow)
    # The digest names the target and flow's output: another pair gives another commit.
    other = rewrite_checkout(
        root,
        TreeOptions(target="executorch" if target == "qnn-passes" else "qnn-passes", jobs=1),
    )
    assert other.changes() != tree.changes()


def test_the_target_comes_from_the_config_unless_given(tmp_path: Path) -> None:
    files = {
        "conv.py": EXPORT_CONV.encode(),
        "pyproject.toml": b'[tool.qnn-migrate]\ntarget = "executorch"\n',
    }
    root = checkout(tmp_path, files)
    assert rewrite_checkout(root, TreeOptions(jobs=1)).target == "executorch"
    assert rewrite_checkout(root, TreeOptions(target="qnn-passes", jobs=1)).target == "qnn-passes"


def test_gitignored_files_are_skipped_as_the_rewrite_skips_them(tmp_path: Path) -> None:
    root = checkout(
        tmp_path, {"conv.py": EXPORT_CONV.encode(), "build_out/conv.py": EXPORT_CONV.encode()}
    )
    (root / ".gitignore").write_text("build_out/\n")
    (root / ".git").mkdir()
    assert [f.path for f in rewrite_checkout(root, TreeOptions(jobs=1)).changed] == ["conv.py"]


def test_paths_narrow_the_rewrite_and_may_not_leave_the_checkout(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    tree = rewrite_checkout(root, TreeOptions(paths=("examples",), jobs=1))
    assert [f.path for f in tree.changed] == ["examples/qualcomm/export_conv.py"]
    for bad in ("../elsewhere", "/etc", "examples/../../x"):
        with pytest.raises(TreeError, match="relative to the checkout"):
            rewrite_checkout(root, TreeOptions(paths=(bad,), jobs=1))
    with pytest.raises(TreeError, match="no such path"):
        rewrite_checkout(root, TreeOptions(paths=("nowhere",), jobs=1))


def test_an_executable_file_keeps_its_mode(tmp_path: Path) -> None:
    root = checkout(tmp_path, {"run.py": EXPORT_CONV.encode(), "lib.py": EXPORT_CONV.encode()})
    os.chmod(root / "run.py", 0o755)
    modes = {f.path: f.mode for f in rewrite_checkout(root, TreeOptions(jobs=1)).changed}
    assert modes == {"lib.py": "100644", "run.py": "100755"}


def test_a_site_left_in_a_rewritten_file_keeps_its_line_in_the_new_text(tmp_path: Path) -> None:
    text = EXPORT_CONV + BY_HAND.split("\n", 2)[2]  # a call it rewrites, then one it leaves
    root = checkout(tmp_path, {"mixed.py": text.encode()})
    (f,) = rewrite_checkout(root, TreeOptions(jobs=1)).files
    assert f.new is not None and len(f.left) == 1
    new_lines = f.new.decode().splitlines()
    assert "**options" in new_lines[f.left[0].line - 1]
    # Control: the line the rewrite reported in the old text is another (it added lines).
    old_line = next(i for i, line in enumerate(text.splitlines(), 1) if "**options" in line)
    assert f.left[0].line != old_line


def test_a_file_that_does_not_parse_is_listed_not_changed(tmp_path: Path) -> None:
    root = checkout(tmp_path, {"broken.py": f"{OLD}(\n".encode()})
    (f,) = rewrite_checkout(root, TreeOptions(jobs=1)).files
    assert f.new is None and f.error and "does not parse" in f.error


def test_a_malformed_config_is_an_error_that_names_it(tmp_path: Path) -> None:
    root = checkout(
        tmp_path,
        {"conv.py": EXPORT_CONV.encode(), "pyproject.toml": b"[tool.qnn-migrate]\nflavour = 1\n"},
    )
    with pytest.raises(TreeError, match=r"unknown key 'flavour'.*default branch"):
        rewrite_checkout(root, TreeOptions(jobs=1))


def test_a_config_above_the_checkout_is_not_the_repositorys(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.qnn-migrate]\ntarget = "executorch"\n')
    root = checkout(tmp_path, {"conv.py": EXPORT_CONV.encode()})
    tree = rewrite_checkout(root, TreeOptions(jobs=1))
    assert tree.config is None and tree.target == "qnn-passes"
