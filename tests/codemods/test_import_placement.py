"""Generic import placement: sorted names in a from-import, imports already around a block."""

from __future__ import annotations

import libcst as cst

from qnn_migrate.codemods.import_placement import (
    ImportItem,
    imported_around,
    member_key,
    with_added,
)
from qnn_migrate.codemods.tree_index import TreeIndex

NEW = ImportItem("executorch.exir", "to_edge_transform_and_lower", "to_edge_transform_and_lower")


def _aliases(*names: str) -> list[cst.ImportAlias]:
    return [cst.ImportAlias(name=cst.Name(n)) for n in names]


def _names(aliases: list[cst.ImportAlias]) -> list[str]:
    return [a.evaluated_name for a in aliases]


def test_names_sort_as_ruff_sorts_them() -> None:
    """Constants, then classes, then the rest; case-insensitive; numbers by value."""
    names = ["zeta", "Alpha", "MAX", "item10", "item9", "Beta", "a"]
    assert _names(sorted(_aliases(*names), key=member_key)) == [
        "MAX",
        "Alpha",
        "Beta",
        "a",
        "item9",
        "item10",
        "zeta",
    ]


def test_added_names_go_to_their_place_only_among_sorted_names() -> None:
    sorted_kept = _aliases("generate_spec", "update_size")
    assert _names(with_added(sorted_kept, _aliases("qnn_edge_config"))) == [
        "generate_spec",
        "qnn_edge_config",
        "update_size",
    ]
    # Control: the user's own (unsorted) order is kept; new names go after it.
    own = _aliases("update_size", "generate_spec")
    assert _names(with_added(own, _aliases("qnn_edge_config"))) == [
        "update_size",
        "generate_spec",
        "qnn_edge_config",
    ]


def _placement(code: str) -> tuple[TreeIndex, cst.SimpleStatementLine]:
    """The index of ``code`` and its statement that imports ``old``."""
    tree = cst.parse_module(code)
    index = TreeIndex(tree)

    class Find(cst.CSTVisitor):
        found: cst.SimpleStatementLine | None = None

        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            if "old" in tree.code_for_node(node):
                self.found = node

    finder = Find()
    tree.visit(finder)
    assert finder.found is not None
    return index, finder.found


def test_an_import_in_a_block_around_counts_once_before_and_in_reach() -> None:
    function = (
        "def f():\n"
        "    from executorch.exir import to_edge_transform_and_lower\n"
        "    try:\n"
        "        from m import old\n"
        "    except ImportError:\n"
        "        pass\n"
    )
    assert imported_around(*_placement(function), NEW)
    after = function.replace("    from executorch.exir", "    pass\n    from executorch.exir", 1)
    later = (
        "def f():\n"
        "    try:\n"
        "        from m import old\n"
        "    except ImportError:\n"
        "        pass\n"
        "    from executorch.exir import to_edge_transform_and_lower\n"
    )
    assert imported_around(*_placement(after), NEW)
    assert not imported_around(*_placement(later), NEW)  # not yet imported at the try
    in_class = (
        "class C:\n"
        "    from executorch.exir import to_edge_transform_and_lower\n"
        "    def f(self):\n"
        "        try:\n"
        "            from m import old\n"
        "        except ImportError:\n"
        "            pass\n"
    )
    assert not imported_around(*_placement(in_class), NEW)  # a class body's names: not seen
    other = function.replace("import to_edge_transform_and_lower", "import something_else")
    assert not imported_around(*_placement(other), NEW)
