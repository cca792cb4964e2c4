"""Each code's page (data/codes.toml): every reason has one, --explain prints it, and the
codes table of docs/rewrite.md is the same data."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from qnn_migrate_tests.codemods.codes_table import documented

from qnn_migrate.codemods import codes, findings
from qnn_migrate.codemods.cli import rewrite

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rewrite.md"


def _disagreements(text: str) -> list[str]:
    rows = documented(text)
    pages = codes.every_code()
    found = [
        f"{code}: in docs/rewrite.md, not in data/codes.toml" for code in rows.keys() - pages.keys()
    ]
    found += [
        f"{code}: in data/codes.toml, not in docs/rewrite.md" for code in pages.keys() - rows.keys()
    ]
    for code in rows.keys() & pages.keys():
        page = pages[code]
        if rows[code] != [page.kind, page.what, page.example, page.fix]:
            found.append(f"{code}: docs/rewrite.md's row {rows[code]} differs from data/codes.toml")
    return found


def test_every_reason_has_a_page_and_the_docs_table_is_the_same_data() -> None:
    reported = {r.code for r in findings.every_reason().values()}
    assert reported == set(codes.every_code())
    assert all(page.kind in codes.KINDS for page in codes.every_code().values())
    assert _disagreements(DOCS.read_text(encoding="utf-8")) == []


def test_the_docs_comparison_can_fail() -> None:
    """Control: a row changed in the docs alone is found."""
    text = DOCS.read_text(encoding="utf-8").replace("pass the arguments explicitly", "give up", 1)
    assert _disagreements(text) == [
        "QM101: docs/rewrite.md's row ['unfixable', "
        + repr(codes.every_code()["QM101"].what)
        + ", '`to_edge_transform_and_lower_to_qnn(*args)`', 'give up'] differs from "
        "data/codes.toml"
    ]


def test_explain_prints_the_page_without_a_path_and_refuses_an_unknown_code() -> None:
    result = CliRunner().invoke(rewrite, ["--explain", "qm101"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("QM101 (unfixable: ")
    assert "Example: `to_edge_transform_and_lower_to_qnn(*args)`" in result.stdout
    assert "What to do: pass the arguments explicitly" in result.stdout
    assert "# noqa: QM101" in result.stdout
    unknown = CliRunner().invoke(rewrite, ["--explain", "QM777"])
    assert (
        unknown.exit_code == 2 and "no code 'QM777'; the codes are QM001, QM101" in unknown.stderr
    )


def test_messages_point_at_explain_not_at_a_repository_file() -> None:
    """An installed copy has no docs/ folder: no message may send a user there."""
    for name, reason in findings.every_reason().items():
        assert "docs/" not in reason.text and ".md" not in reason.text, name
    assert "--explain QM201" in findings.AS_VALUE.text
    helped = CliRunner().invoke(rewrite, ["--help"])
    assert "docs/" not in helped.stdout and "--explain CODE" in helped.stdout
