"""The project's modules import one another without a circle, type-only imports included."""

from __future__ import annotations

from pathlib import Path

from .import_graph import cycles, edges, module_names

ROOT = Path(__file__).resolve().parents[2]


def _graph(*packages: tuple[Path, str]) -> dict[str, set[str]]:
    modules: dict[str, Path] = {}
    for root, name in packages:
        modules.update(module_names(root, name))
    return edges(modules)


def test_the_project_has_no_import_circle() -> None:
    graph = _graph((ROOT / "qnn_migrate", "qnn_migrate"), (ROOT / "qnn_passes", "qnn_passes"))
    assert "qnn_migrate.codemods.rewrite_plan" in graph  # the graph is the project's
    assert graph["qnn_migrate.codemods.rewrite_plan"] >= {
        "qnn_migrate.codemods.import_placement",
        "qnn_migrate.codemods.import_layout",
    }
    assert cycles(graph) == []


def test_a_planted_circle_is_found_even_through_a_type_only_import(tmp_path: Path) -> None:
    """The control: a circle closed only under ``if TYPE_CHECKING:`` (as the codemods' was:
    import_placement -> rewrite_plan -> import_layout -> import_placement)."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.b import thing\n")
    (package / "b.py").write_text("from . import c\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import other\n"
    )
    (package / "d.py").write_text("import pkg.a\n")  # imports into the circle, not part of it
    assert cycles(_graph((package, "pkg"))) == [["pkg.a", "pkg.b", "pkg.c"]]
    (package / "c.py").write_text("x = 1\n")
    assert cycles(_graph((package, "pkg"))) == []
