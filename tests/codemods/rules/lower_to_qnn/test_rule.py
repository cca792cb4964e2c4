"""rules/lower_to_qnn/rule.py: ``LowerToQnn.run`` returns its whole result and keeps no state."""

from __future__ import annotations

OLD = "to_edge_transform_and_lower_to_qnn"


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
        (5, 12, "unfixable", "QM101")
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


def test_the_helper_docstring_of_an_earlier_version_is_not_reported() -> None:
    """Files rewritten before the helper's docstring stopped naming the old function are the
    tool's own output: a run over them reports nothing (the same text elsewhere is prose)."""
    import libcst as cst

    from qnn_migrate.codemods.rules.lower_to_qnn import LowerToQnn

    old_doc = f'"""{OLD} of ExecuTorch 1.5.1, for this file\'s calls."""'
    rewritten = f"def _lower_to_qnn(module, inputs, compiler_specs):\n    {old_doc}\n    return 1\n"
    rule = LowerToQnn("executorch")
    assert rule.run(cst.parse_module(rewritten)).report.unfixable == []
    # Controls: the same text as a module docstring, or not first in the function, is prose.
    for code in (f"{old_doc}\n", f"def f():\n    x = 1\n    {old_doc}\n"):
        codes = [u.code for u in rule.run(cst.parse_module(code)).report.unfixable]
        assert codes == ["QM208"], code
