"""The batch runner: one RunOptions in, one outcome per file out, the same from the cache."""

from __future__ import annotations

from pathlib import Path

from qnn_migrate.codemods.options import RuleOptions
from qnn_migrate.codemods.runner import RunOptions, run

OLD_CALL = (
    "from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn\n"
    "edge = to_edge_transform_and_lower_to_qnn(model, inputs, specs)\n"
    "other = to_edge_transform_and_lower_to_qnn(*args)\n"
)


def test_outcomes_in_input_order_with_codes_and_the_same_from_the_cache(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(OLD_CALL)
    (tmp_path / "b.py").write_text("x = 1\n")
    (tmp_path / "c.py").write_text("to_edge_transform_and_lower_to_qnn(\n")
    paths = [str(tmp_path / name) for name in ("c.py", "a.py", "b.py")]
    options = RunOptions(
        RuleOptions("qnn-passes"), mode="check", jobs=1, cache_dir=str(tmp_path / "cache")
    )
    ticks: list[None] = []
    first = run(paths, RunOptions(**{**options.__dict__, "progress": lambda: ticks.append(None)}))
    assert [o.path for o in first] == paths and len(ticks) == 3
    assert [[(s.kind, s.code) for s in o.sites] for o in first] == [
        [("error", "QM903")],
        [("rewritten", "QM001"), ("unfixable", "QM101")],
        [],
    ]
    assert [o.changed for o in first] == [False, True, False]
    again = run(paths, options)  # from the cache: the same sites, the same codes
    assert [o.sites for o in again] == [o.sites for o in first]
    assert (tmp_path / "a.py").read_text() == OLD_CALL  # check mode writes nothing
