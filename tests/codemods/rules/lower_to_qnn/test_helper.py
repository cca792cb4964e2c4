"""helper.py: --target executorch plans a file whole, one helper, its imports where the file's are."""

from __future__ import annotations

from qnn_migrate.codemods.engine import rewrite_code

IMPORT = "from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn\n"


def _rewrite(code: str) -> tuple[str, list[str], int]:
    result = rewrite_code(code, target="executorch", filename="m.py")
    return result.code, [u.code for u in result.unfixable], result.sites_rewritten


def test_one_call_that_cannot_be_rewritten_leaves_the_file_whole() -> None:
    code = (
        f"{IMPORT}\n\ndef a(m, x, s):\n    return to_edge_transform_and_lower_to_qnn(m, x, s)\n"
        "\n\ndef b(*args):\n    return to_edge_transform_and_lower_to_qnn(*args)\n"
    )
    new, codes, rewritten = _rewrite(code)
    assert new == code and rewritten == 0
    assert sorted(codes) == ["QM101", "QM111"]
    # Control: without the call it cannot rewrite, the other one is rewritten.
    new, codes, rewritten = _rewrite(code.split("\n\ndef b")[0] + "\n")
    assert rewritten == 1 and codes == [] and "_lower_to_qnn(m, x, s)" in new


def test_imports_follow_a_lazy_import_into_the_helper() -> None:
    lazy = f"def a(m, x, s):\n    {IMPORT}    return to_edge_transform_and_lower_to_qnn(m, x, s)\n"
    new, _, rewritten = _rewrite(lazy)
    assert rewritten == 1
    helper, rest = new.split("\n\n\ndef a(", 1)
    assert "    from executorch.exir import to_edge_transform_and_lower\n" in helper
    assert "import" not in rest  # the old import went, nothing new at module level
    # Control: an import at module level keeps the new ones there.
    new, _, _ = _rewrite(
        f"{IMPORT}\n\ndef a(m, x, s):\n    return to_edge_transform_and_lower_to_qnn(m, x, s)\n"
    )
    assert new.startswith("import torch\n") and "    from executorch" not in new


def test_the_helper_name_avoids_the_file_s_words() -> None:
    code = f"{IMPORT}_lower_to_qnn = 1\nedge = to_edge_transform_and_lower_to_qnn(m, x, s)\n"
    new, _, _ = _rewrite(code)
    assert "def _lower_to_qnn_1(" in new and "edge = _lower_to_qnn_1(m, x, s)" in new
