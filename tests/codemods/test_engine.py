"""The engine's safety nets: excerpts give the same result as whole files; libcst.tool agrees."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from qnn_migrate.codemods.engine import RewriteError, reexport_scan, rewrite_code, rule_options
from qnn_migrate.codemods.excerpt import MIN_LINES, cut, splice, split_lines

ROOT = Path(__file__).resolve().parents[2]
OLD = "to_edge_transform_and_lower_to_qnn"


def _big_module(extra: str = "") -> str:
    """A test-suite-like module: many methods, a few of which call the old API."""
    head = (
        '"""Big test module."""\n\nimport unittest\n\nimport torch\n'
        "from executorch.backends.qualcomm.utils.utils import (\n"
        "    generate_htp_compiler_spec,\n"
        f"    {OLD},\n)\n\nSPECS = []\n\n\n"
        "def helper(x):\n    # a module-level function that does not call the API\n"
        "    return x * 2\n\n\n"
    )
    methods = []
    for i in range(60):
        if i in (7, 41):
            body = (
                f"        edge = {OLD}(self.model, self.inputs, SPECS)  # site {i}\n"
                "        self.assertTrue(edge.methods)\n"
            )
        elif i == 23:
            body = f"        self.assertTrue(callable({OLD}))\n"
        else:
            body = (
                f'        """Method {i}."""\n        y = helper({i})\n'
                "        self.assertEqual(y, y)\n        self.assertIsNotNone(self)\n"
            )
        methods.append(f"    def test_{i}(self):\n{body}\n")
    cls = "class TestBig(unittest.TestCase):\n" + "".join(methods)
    other = "\n\nclass Unrelated:\n" + "".join(
        f"    def m{i}(self):\n        return {i}\n\n" for i in range(40)
    )
    return head + cls + other + extra


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


def test_splice_refuses_changes_to_dropped_lines() -> None:
    code = _big_module()
    excerpt = cut(code, OLD)
    assert excerpt is not None
    stub = excerpt.line_map.index(None)  # a made-up `...` body
    lines = split_lines(excerpt.text)
    lines[stub] = lines[stub].replace("...", "pass")
    assert splice(code, excerpt, "".join(lines)) is None
    assert splice(code, excerpt, excerpt.text) == code


def test_unparsable_input_is_an_error_not_a_guess() -> None:
    with pytest.raises(RewriteError, match="does not parse"):
        rewrite_code(f"def f(:\n    {OLD}(a, b, c)\n")


def test_libcst_tool_runs_the_same_rule(tmp_path: Path) -> None:
    """The rule is a libcst CodemodCommand: `python -m libcst.tool codemod` gives our output."""
    source = (ROOT / "examples" / "lowering_utils.py").read_text()
    path = tmp_path / "lowering_utils.py"
    path.write_text(source)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "libcst.tool",
            "codemod",
            "-x",
            "qnn_migrate.codemods.rules.lower_to_qnn.RewriteLowerToQnn",
            "--no-format",
            "--hide-progress",
            str(path),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert path.read_text() == rewrite_code(source).code


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


def test_the_rule_returns_its_result_instead_of_exposing_state() -> None:
    """``LowerToQnn.run`` gives the new module, the report and the footprint as one value."""
    import libcst as cst

    from qnn_migrate.codemods.rules.lower_to_qnn import LowerToQnn, RuleResult

    rule = LowerToQnn("qnn-passes")
    code = (
        f"from executorch.backends.qualcomm.utils.utils import {OLD}\n\n"
        f"class Fixture:\n    edge = {OLD}(M, X, S)\n    other = {OLD}(*ARGS)\n"
    )
    result = rule.run(cst.parse_module(code))
    assert isinstance(result, RuleResult) and result.module is not None
    assert result.report.rewritten == 1 and result.report.rewritten_at == [(4, 11)]
    assert [(u.line, u.column, u.kind, u.code) for u in result.report.unfixable] == [
        (5, 12, "unfixable", "star-args")
    ]
    footprint = result.footprint
    assert footprint.class_level_sites
    assert footprint.removed_names == frozenset()  # the *ARGS call still uses the import
    assert "to_edge_transform_and_lower" in footprint.import_names
    alone = rule.run(cst.parse_module(code.replace(f"    other = {OLD}(*ARGS)\n", "")))
    assert OLD in alone.footprint.removed_names
    defining = rule.run(cst.parse_module(f"def {OLD}(module, inputs, specs):\n    return 1\n"))
    assert defining.module is None and defining.skipped == "defines the deprecated function"
    # The same rule object runs again with nothing carried over from the last module.
    again = rule.run(cst.parse_module("x = 1\n"))
    assert again.module is None and again.report.unfixable == []


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
