"""Jupyter notebooks: code cells rewritten as one module and put back cell by cell, outputs
and metadata untouched, IPython lines kept, a cell that is not Python reported (not broken)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from qnn_migrate.codemods.cli import rewrite

OLD = "to_edge_transform_and_lower_to_qnn"
IMPORT = f"from executorch.backends.qualcomm.utils.utils import {OLD}"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QNN_MIGRATE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def _code(
    source: str, count: int | None = None, outputs: list[Any] | None = None
) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": count,
        "metadata": {"tags": ["keep-me"]},
        "outputs": outputs or [],
        "source": source.splitlines(keepends=True),
    }


def _notebook(*cells: dict[str, Any]) -> dict[str, Any]:
    return {
        "cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# Lowering ü\n"]}, *cells],
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python", "version": "3.11.7"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _write(path: Path, notebook: dict[str, Any]) -> None:
    # nbformat's own layout: one-space indent, sorted keys, non-ASCII as is, a final newline.
    path.write_text(json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


STREAM = [{"name": "stdout", "output_type": "stream", "text": ["executorch 1.5.1\n"]}]


def _two_calls(noqa: str) -> dict[str, Any]:
    return _notebook(
        _code(f"%matplotlib inline\nimport torch\n{IMPORT}", 1),
        _code(
            "!pip list | grep executorch\n"
            f"edge = {OLD}(Net().eval(), (x,), specs)\n"
            "files = !ls\n"
            "edge?",
            2,
            STREAM,
        ),
        _code(f"kept = {OLD}(model, inputs, specs){noqa}", 3),
        _code(f"%%bash\necho {OLD}", 4),
    )


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(rewrite, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _sources(notebook: dict[str, Any]) -> list[str]:
    return ["".join(c["source"]) for c in notebook["cells"]]


def test_a_notebook_with_two_calls_one_suppressed(tmp_path: Path) -> None:
    path = tmp_path / "lower.ipynb"
    before = _two_calls("  # noqa: QM001")
    _write(path, before)
    code, out, _ = _invoke("--check", "--json", str(tmp_path))  # found by the walk
    assert code == 1
    sites = [(s["cell"], s["line"], s["kind"], s["code"]) for s in json.loads(out)["sites"]]
    assert sites == [
        (2, 2, "rewritten", "QM001"),
        (3, 1, "suppressed", "QM001"),
        (4, 2, "unfixable", "QM210"),  # the cell magic names it: reported, not skipped
    ]
    code, _, err = _invoke(str(path))
    assert code == 0 and f"rewrote: {path}" in err
    after = json.loads(path.read_text())
    # Outputs, counts and metadata untouched: only the sources of cells 1 and 2 changed.
    unchanged = copy.deepcopy(after)
    for cell, old in zip(unchanged["cells"], before["cells"], strict=True):
        cell["source"] = old["source"]
    assert unchanged == before
    sources = _sources(after)
    assert sources[1].startswith("%matplotlib inline\nimport torch\n")
    assert "from executorch.exir import to_edge_transform_and_lower" in sources[1]
    assert "from qnn_passes import" in sources[1]
    assert IMPORT in sources[1]  # the suppressed call in cell 3 still uses it
    assert sources[2].startswith("!pip list | grep executorch\n")
    assert sources[2].endswith("files = !ls\nedge?")  # IPython lines back, as they were
    assert "with qnn_manager_context(specs, programs):" in sources[2]
    assert "programs = qnn_export(Net().eval(), (x,), compiler_specs=specs)" in sources[2]
    assert sources[3] == f"kept = {OLD}(model, inputs, specs)  # noqa: QM001"
    assert sources[4] == f"%%bash\necho {OLD}"
    # The layout is nbformat's still: the file is what json.dumps of it writes.
    assert (
        path.read_text() == json.dumps(after, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    )
    # A second run changes nothing.
    assert _invoke("--check", str(path))[0] == 0


def test_the_suppression_is_what_keeps_the_call(tmp_path: Path) -> None:
    """Control: without the noqa comment, cell 3's call is rewritten too."""
    path = tmp_path / "lower.ipynb"
    _write(path, _two_calls(""))
    code, out, _ = _invoke("--check", "--json", str(path))
    kinds = [(s["cell"], s["kind"]) for s in json.loads(out)["sites"]]
    assert code == 1 and (3, "rewritten") in kinds and (3, "suppressed") not in kinds


def test_a_cell_that_is_not_python_is_reported_and_the_others_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "broken.ipynb"
    _write(
        path,
        _notebook(_code(IMPORT), _code("def f(:\n    pass"), _code(f"e = {OLD}(m, (x,), s)")),
    )
    code, _, err = _invoke(str(path))
    assert code == 3
    assert f"{path}:cell 2:1:7: error: QM903 " in err
    sources = _sources(json.loads(path.read_text()))
    assert sources[2] == "def f(:\n    pass"  # left exactly as it was
    assert "to_edge_transform_and_lower(" in sources[3]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{not json", "cannot be processed as a Jupyter notebook"),
        (
            json.dumps(
                {
                    **_notebook(_code(f"{OLD}(m, x, s)")),
                    "metadata": {"kernelspec": {"language": "R"}},
                }
            ),
            "its language is r",
        ),
    ],
)
def test_what_is_not_a_python_notebook_is_an_error_not_a_silent_pass(
    tmp_path: Path, text: str, said: str
) -> None:
    path = tmp_path / "odd.ipynb"
    path.write_text(text + f"\n{OLD}" if text.startswith("{not") else text)
    code, _, err = _invoke(str(path))
    assert code == 3 and "QM910" in err and said in err


def test_a_notebook_on_standard_input_by_its_name(tmp_path: Path) -> None:
    path = tmp_path / "lower.ipynb"
    _write(path, _two_calls(""))
    result = CliRunner().invoke(
        rewrite, ["--stdin-filename", str(path), "-"], input=path.read_text()
    )
    assert result.exit_code == 0
    assert "to_edge_transform_and_lower(" in "".join(_sources(json.loads(result.stdout)))


def test_only_ipython_lines_are_kept_from_the_rule(tmp_path: Path) -> None:
    """A help request (`obj?`) is IPython's; a Python line whose comment ends in "?" is not."""
    path = tmp_path / "q.ipynb"
    _write(
        path,
        _notebook(_code(f"{IMPORT}\nedge = {OLD}(m, (x,), s)  # why?\n{OLD}?")),
    )
    code, out, _ = _invoke("--check", "--json", str(path))
    sites = [(s["line"], s["kind"], s["code"]) for s in json.loads(out)["sites"]]
    assert code == 1 and sites == [(2, "rewritten", "QM001"), (3, "unfixable", "QM210")]
