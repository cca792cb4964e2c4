"""Every rewrite example of README.md and docs/rewrite.md is what the tool writes for it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from qnn_migrate_tests.docs.examples import Example, examples, unmarked_blocks

from qnn_migrate.codemods.cli import rewrite

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
REWRITE = ROOT / "docs" / "rewrite.md"


def _readme_rewrite_section() -> str:
    text = README.read_text(encoding="utf-8")
    return text.split("## Rewriting your code", 1)[1].split("\n## ", 1)[0]


def _all() -> list[tuple[str, Example]]:
    found = [("README.md", e) for e in examples(README.read_text(encoding="utf-8"), "README.md")]
    docs = REWRITE.read_text(encoding="utf-8")
    found += [("docs/rewrite.md", e) for e in examples(docs, "docs/rewrite.md")]
    return found


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QNN_MIGRATE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def run_example(example: Example, folder: Path) -> str:
    """What ``qnn-migrate rewrite ARGS -`` prints for the example, as a file of ``folder`` (a
    folder with no pyproject.toml above it: the defaults, as in a new project)."""
    name = folder / "example.py"
    result = CliRunner().invoke(
        rewrite, [*example.args, "--stdin-filename", str(name), "-"], input=example.before
    )
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_docs_have_their_examples() -> None:
    found = _all()
    assert [where for where, _ in found].count("README.md") == 1
    assert len(found) >= 3
    assert any("--target" in e.args for _, e in found)


@pytest.mark.parametrize(("where", "example"), _all(), ids=lambda v: getattr(v, "line", v))
def test_each_example_is_what_the_tool_writes(where: str, example: Example, tmp_path: Path) -> None:
    written = run_example(example, tmp_path)
    assert written == example.after, (
        f"{where}:{example.line}: the after block is not what `qnn-migrate rewrite "
        f"{' '.join(example.args)}` writes for the before block; it writes:\n{written}"
    )


def test_the_comparison_can_fail(tmp_path: Path) -> None:
    """Control: the old README headline, whose after block the tool never wrote for it."""
    old = Example(
        1,
        (),
        "model = Net().eval()\n"
        "edge = to_edge_transform_and_lower_to_qnn(model, inputs, specs, skip_node_op_set=ops)\n",
        "model = Net().eval()\nsetup_qnn_sdk()\nprograms = torch.export.export(model, inputs, strict=True)\n",
    )
    assert run_example(old, tmp_path) != old.after


def test_every_python_block_of_the_rewrite_docs_is_a_checked_example() -> None:
    assert unmarked_blocks(REWRITE.read_text(encoding="utf-8")) == [], "docs/rewrite.md"
    assert unmarked_blocks(_readme_rewrite_section()) == [], "README.md, Rewriting your code"
    # Control: an unmarked block is found.
    assert unmarked_blocks("text\n```python\nx = 1\n```\n") == [2]
