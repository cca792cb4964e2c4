"""reexports.py: the cross-file scan for modules that re-export the deprecated name."""

from __future__ import annotations

from qnn_migrate.codemods.deprecations import lower_to_qnn
from qnn_migrate.codemods.reexports import imported_here, reexport_scan


def test_reexport_scan_finds_absolute_relative_and_parenthesized_imports() -> None:
    old = lower_to_qnn().name
    sources: dict[str, str | bytes] = {
        "src/app.py": f"from mypkg.lowering import {old}\n",
        "src/mypkg/consumer.py": f"from .helpers import (\n    a,\n    {old} as lower,\n)\n",
        "src/mypkg/sub/deep.py": f"from ..up import b, {old}  # comment\n",
        "src/mypkg/other.py": f"from mypkg.lowering import {old}_v2\nimport {old}\n",
        "src/bytes.py": f"from pkg.b import {old}\n".encode(),
    }
    assert reexport_scan(sources) == {
        "mypkg.lowering",
        "src.mypkg.helpers",
        "src.mypkg.up",
        "pkg.b",
    }


def test_imported_here_matches_by_the_tail_of_the_path() -> None:
    found = frozenset({"mypkg.lowering", "src.mypkg"})
    assert imported_here("/home/u/proj/src/mypkg/lowering.py", found)
    assert imported_here("src/mypkg/__init__.py", found)
    assert not imported_here("/home/u/proj/src/otherpkg/lowering2.py", found)
    assert not imported_here("/home/u/proj/src/mypkg/helpers.py", found)
    assert not imported_here(None, found)


def test_reexport_scan_leaves_out_executorchs_own_modules() -> None:
    """Every user file imports the name from ExecuTorch; that keeps no module of the run bound
    (a run's own `utils.py` would otherwise match `...qualcomm.utils.utils` by its tail)."""
    user = (
        "from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn\n"
    )
    reexport = "from mypkg.utils import to_edge_transform_and_lower_to_qnn\n"
    assert reexport_scan({"a.py": user}) == frozenset()
    assert reexport_scan({"a.py": user, "b.py": reexport}) == {"mypkg.utils"}
    assert not imported_here("src/utils.py", reexport_scan({"a.py": user}))
