"""engine.py: one file's rewrite; its safety nets (an excerpt gives the whole file's result,
unparsable input is an error) and what the cross-file scan tells it."""

from __future__ import annotations

import pytest
from qnn_migrate_tests.codemods.support import big_module as _big_module

from qnn_migrate.codemods.engine import RewriteError, reexport_scan, rewrite_code, rule_options
from qnn_migrate.codemods.excerpt import MIN_LINES, cut, split_lines

OLD = "to_edge_transform_and_lower_to_qnn"


def test_excerpt_is_used_and_gives_the_whole_file_result() -> None:
    code = _big_module()
    assert len(split_lines(code)) >= MIN_LINES
    excerpt = cut(code, OLD)
    assert excerpt is not None and len(split_lines(excerpt.text)) < len(split_lines(code)) / 3
    fast = rewrite_code(code)
    whole = rewrite_code(code, excerpts=False)
    assert fast.excerpt and not whole.excerpt
    assert (fast.code, fast.sites_rewritten, fast.unfixable) == (
        whole.code,
        whole.sites_rewritten,
        whole.unfixable,
    )
    assert fast.sites_rewritten == 2
    assert [u.line for u in fast.unfixable] == [
        code.splitlines().index(f"        self.assertTrue(callable({OLD}))") + 1
    ]
    assert "def test_30(self):" in fast.code  # dropped methods are back, untouched


def test_excerpt_falls_back_when_dropped_code_could_matter() -> None:
    # A `global` in a dropped function could rebind a module name: use the whole file.
    code = _big_module("\n\ndef rebind():\n    global SPECS\n    SPECS = None\n")
    result = rewrite_code(code)
    assert not result.excerpt
    assert result == rewrite_code(code, excerpts=False)


def test_unparsable_input_is_an_error_not_a_guess() -> None:
    with pytest.raises(RewriteError) as raised:
        rewrite_code(f"def f(:\n    {OLD}(a, b, c)\n")
    assert raised.value.reason.code == "QM903"


def test_executorchs_reexporting_module_keeps_its_import() -> None:
    """export_utils re-exports the old name; rewriting its own calls must not drop the import."""
    code = (
        f"from executorch.backends.qualcomm.utils.utils import {OLD}\n\n\n"
        f"def lower(model, inputs, specs):\n    return {OLD}(model, inputs, specs)\n"
    )
    elsewhere = rewrite_code(code, filename="/src/project/lowering.py")
    reexporter = rewrite_code(
        code, filename="/venv/site-packages/executorch/backends/qualcomm/export_utils.py"
    )
    assert f"import {OLD}" not in elsewhere.code
    assert f"import {OLD}" in reexporter.code
    assert reexporter.sites_rewritten == 1 and f"{OLD}(" not in reexporter.code


def test_a_file_imported_from_keeps_the_name_only_when_the_scan_says_so() -> None:
    code = (
        f"from executorch.backends.qualcomm.utils.utils import {OLD}\n\n\n"
        f"def lower(model, inputs, specs):\n    return {OLD}(model, inputs, specs)\n"
    )
    consumer = f"from mypkg.lowering import {OLD}\n"
    scanned = reexport_scan({"src/consumer.py": consumer, "src/mypkg/lowering.py": code})
    kept = rewrite_code(code, rule_options(imported_from=scanned), filename="src/mypkg/lowering.py")
    dropped = rewrite_code(code, rule_options(), filename="src/mypkg/lowering.py")
    assert f"import {OLD}" in kept.code and [u.kind for u in kept.unfixable] == ["info"]
    assert f"import {OLD}" not in dropped.code and not dropped.unfixable
