"""``# noqa`` comments as ruff reads them (codemods/noqa.py)."""

from __future__ import annotations

from qnn_migrate.codemods import noqa


def test_bare_noqa_suppresses_every_code_and_a_list_only_its_codes() -> None:
    found = noqa.parse(
        "a = f()  # noqa\n"
        "b = f()  # noqa: QM101\n"
        "c = f()  # NOQA:QM001, qm102  QM201\n"
        "d = f()  # noqa: E501\n"
        "e = f()\n"
    )
    assert noqa.suppresses(found, 1, "QM001") and noqa.suppresses(found, 1, "QM999")
    assert noqa.suppresses(found, 2, "QM101") and not noqa.suppresses(found, 2, "QM001")
    assert {c for c in ("QM001", "QM102", "QM201", "QM101") if noqa.suppresses(found, 3, c)} == {
        "QM001",
        "QM102",
        "QM201",
    }
    assert not noqa.suppresses(found, 4, "QM001")  # another tool's code
    assert not noqa.suppresses(found, 5, "QM001")  # control: no comment, nothing suppressed


def test_only_comments_count_never_a_string() -> None:
    found = noqa.parse('s = "# noqa"\nt = """\n# noqa\n"""\nu = 1  # noqa\n')
    assert set(found) == {5}
