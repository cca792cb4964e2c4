"""Every reason has a stable code, and docs/rewrite.md lists each code with an example."""

from __future__ import annotations

from pathlib import Path

from qnn_migrate_tests.codemods.codes_table import CODE, documented

from qnn_migrate.codemods import findings
from qnn_migrate.codemods.findings import Reason, Report

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rewrite.md"


def test_every_reason_has_its_own_well_formed_code() -> None:
    reasons = findings.every_reason()
    # A call a noqa comment keeps is reported under the code it suppresses, QM001.
    assert reasons.pop("SUPPRESSED_REWRITE").code == findings.REWRITTEN.code
    codes = [r.code for r in reasons.values()]
    assert len(reasons) >= 30
    assert all(CODE.fullmatch(code) for code in codes), codes
    assert len(set(codes)) == len(codes), "two reasons share a code"


def test_docs_list_every_code_once_with_an_example() -> None:
    rows = documented(DOCS.read_text(encoding="utf-8"))
    codes = {r.code for r in findings.every_reason().values()}
    assert set(rows) == codes, (
        f"missing from docs/rewrite.md: {sorted(codes - set(rows))}; "
        f"documented but unknown: {sorted(set(rows) - codes)}"
    )
    for code, cells in rows.items():
        assert len(cells) == 4 and all(cells), f"{code}: kind, what, example, what to do"


def test_the_docs_check_can_fail() -> None:
    """Control: a table that lacks a code, or lists one twice, does not pass for complete."""
    text = DOCS.read_text(encoding="utf-8")
    assert "QM101" not in documented(text.replace("| QM101 |", "| not a code |"))
    doubled = text.replace("| QM102 |", "| QM101 |")
    assert len(documented(doubled)["QM101"]) == 8  # listed twice: 2 x 4 cells


def test_a_report_keeps_the_code_of_the_reason() -> None:
    report = Report()
    report.leave(3, findings.BAD_CALL.format(problem="no `inputs`"), 4)
    report.note(7, findings.OLD_COMMENT)
    assert [(u.code, u.kind) for u in report.unfixable] == [
        ("QM103", "unfixable"),
        ("QM401", "info"),
    ]
    assert report.unfixable[0].render("a.py").startswith("a.py:3:5: QM103 ")
    assert report.unfixable[1].render("a.py").startswith("a.py:7:1: info: QM401 ")
    assert Reason("QM103", "{x}!").format(x=1) == Reason("QM103", "1!")
