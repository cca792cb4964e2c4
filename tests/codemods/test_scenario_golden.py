"""Golden pairs of the rewrite: ``<case>.in.py`` -> ``<case>.out.py`` (+ ``<case>.report.txt``).

Each case runs once through the rule (and once more on its output, which must be a fixed
point). Regenerate after a deliberate change with ``python tests/codemods/rewrite_goldens.py``.
"""

from __future__ import annotations

import ast
from functools import cache

import pytest
from qnn_migrate_tests.codemods.rewrite_goldens import (
    Case,
    cases,
    read,
    render_report,
    report_codes,
)

from qnn_migrate.codemods.engine import FileResult, rewrite_code

CASES = cases()


@cache
def _result(case: Case) -> FileResult:
    return rewrite_code(read(case.source), case.options(), filename=case.filename)


def test_there_are_enough_cases() -> None:
    # The issue asks for at least 40 golden pairs covering every supported form.
    assert len([c for c in CASES if c.target == "qnn-passes"]) >= 40
    assert [c for c in CASES if c.target == "executorch"]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden(case: Case) -> None:
    result = _result(case)
    assert result.code == read(case.expected), (
        f"{case.name}: output differs from {case.expected.name}; if the change is intended, "
        "run python tests/codemods/rewrite_goldens.py and review the diff"
    )
    expected_report = read(case.report) if case.report.exists() else ""
    report = render_report(result.unfixable)
    assert report_codes(report) == report_codes(expected_report), (
        f"{case.name}: the sites reported differ from {case.report.name} (line, column, code)"
    )
    # The whole text too: what a user reads is part of the golden (three reports once went
    # stale on a reworded message while the codes still matched).
    assert report == expected_report, (
        f"{case.name}: the report's text differs from {case.report.name}; if the change is "
        "intended, run python tests/codemods/rewrite_goldens.py and review the diff"
    )
    assert result.changed == (result.code != read(case.source))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_output_is_a_fixed_point(case: Case) -> None:
    once = _result(case)
    twice = rewrite_code(once.code, case.options(), filename=case.filename)
    assert not twice.changed, f"{case.name}: a second run changed the rewritten code"
    assert twice.sites_rewritten == 0
    ast.parse(once.code)  # what is written is Python


def test_every_site_is_rewritten_or_reported() -> None:
    """No call of the old name silently survives: it is rewritten, or listed with a reason."""
    for case in CASES:
        result = _result(case)
        if "to_edge_transform_and_lower_to_qnn(" in result.code:
            assert result.unfixable, f"{case.name}: an old call is left but nothing is reported"


def _too_long(code: str, source: str, width: int) -> list[int]:
    """Lines of ``code`` that are not in ``source`` and are wider than ``width`` (a trailing
    ``# noqa`` pragma not counted, as ruff does). A user's line where --target executorch
    only renamed the call (shorter than the widest line that called the old name) is the
    user's, not new."""
    old = set(source.splitlines())
    widest = max(
        (len(line) for line in old if "to_edge_transform_and_lower_to_qnn(" in line), default=0
    )
    return [
        number
        for number, line in enumerate(code.splitlines(), 1)
        if line not in old
        and len(line.split("  # noqa", 1)[0]) > width
        and not ("_lower_to_qnn(" in line and "def " not in line and len(line) < widest)
    ]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_new_lines_fit_the_line_length(case: Case) -> None:
    """Every line the rewrite writes fits the project's line length."""
    width = case.options().line_length
    assert _too_long(_result(case).code, read(case.source), width) == [], case.name


def test_line_length_check_can_fail() -> None:
    """Control: output written for a 120-column project has lines an 88-column one rejects."""
    case = next(c for c in CASES if c.name == "qnn-passes/line_length_from_config")
    assert _too_long(_result(case).code, read(case.source), 88)
