"""The pipeline as data: tables equal ExecuTorch 1.5.1's, the solver equals torch.fx's, invariants hold."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from executorch.backends.qualcomm._passes import (
    AnnotateGetAttr as UpstreamAnnotateGetAttr,
)
from executorch.backends.qualcomm._passes import (
    CanonicalizeConv as UpstreamCanonicalizeConv,
)
from executorch.backends.qualcomm._passes import (
    ConvertLinearToConv2d as UpstreamConvertLinearToConv2d,
)
from executorch.backends.qualcomm._passes import FoldQDQ, ResolveDebugHandle, TagQuantIO
from executorch.backends.qualcomm._passes.backends.gpu import QnnGpuPassManager
from executorch.backends.qualcomm._passes.backends.htp import QnnHtpPassManager
from executorch.backends.qualcomm._passes.backends.lpai import QnnLpaiPassManager
from executorch.backends.qualcomm._passes.qnn_pass_manager import QnnPassManager
from executorch.exir.pass_base import ExportPass, PassResult
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.fx.passes.infra.pass_manager import (
    _topological_sort_passes,
    this_before_that_pass_constraint,
)

from qnn_passes import (
    AnnotateGetAttr,
    CanonicalizeConv,
    ConvertLinearToConv2d,
    PassOrderError,
    QnnConfigError,
    pipeline,
)

MANAGERS = {
    "base": QnnPassManager,
    "htp": QnnHtpPassManager,
    "gpu": QnnGpuPassManager,
    "lpai": QnnLpaiPassManager,
}
OURS = {
    UpstreamCanonicalizeConv: CanonicalizeConv,
    UpstreamConvertLinearToConv2d: ConvertLinearToConv2d,
    UpstreamAnnotateGetAttr: AnnotateGetAttr,
}


@pytest.mark.parametrize("variant", pipeline.VARIANTS)
def test_tables_equal_executorch_1_5_1(variant: str) -> None:
    manager = MANAGERS[variant]
    activations = [(p.__name__, on) for p, on in manager.get_default_pass_activations()]
    assert activations == list(pipeline.ACTIVATIONS[variant])
    deps = manager.get_passes_dependency_for_capture_program()
    assert {k.__name__: tuple(v.__name__ for v in vs) for k, vs in deps.items()} == dict(
        pipeline.RUNS_AFTER[variant]
    )


OWN = {p.name for p in pipeline.OWN_PASSES}


def _executorchs(solved: pipeline.Plan) -> list[str]:
    """The active passes of ``solved`` that stand for ExecuTorch's (this package's own left out)."""
    return [p.name for p in solved.active if p.name not in OWN]


def _upstream_order(variant: str, job: Any = None, **kwargs: Any) -> list[str]:
    passes = MANAGERS[variant]().get_to_edge_transform_passes(
        None, passes_job=job, compiler_specs=None, **kwargs
    )
    return [type(p).__name__ for p in passes]


@pytest.mark.parametrize("variant", ["htp", "gpu", "lpai"])
@pytest.mark.parametrize("linear_to_conv", [False, True])
def test_solved_order_equals_executorchs(variant: str, linear_to_conv: bool) -> None:
    solved = pipeline.plan(variant, convert_linear_to_conv2d=linear_to_conv)
    assert _executorchs(solved) == _upstream_order(variant, convert_linear_to_conv2d=linear_to_conv)
    replaced = {p.replaces: p.cls for p in solved.passes if p.replaces is not None}
    assert replaced == OURS


def test_users_job_keyed_by_executorch_classes_is_accepted_and_not_mutated() -> None:
    job = QnnHtpPassManager.get_capture_program_passes()
    job[TagQuantIO]["activate"] = True
    snapshot = copy.deepcopy(job)
    solved = pipeline.plan("htp", job, convert_linear_to_conv2d=True)
    assert job == snapshot  # upstream flips ConvertLinearToConv2d on in the caller's dict
    assert _executorchs(solved) == _upstream_order(
        "htp", copy.deepcopy(job), convert_linear_to_conv2d=True
    )
    classes = {p.cls for p in solved.active}
    assert {CanonicalizeConv, ConvertLinearToConv2d, AnnotateGetAttr, TagQuantIO} <= classes
    assert not classes & set(OURS)


def test_both_a_pass_and_its_replacement_in_one_job_is_an_error() -> None:
    job = QnnHtpPassManager.get_capture_program_passes()
    job[CanonicalizeConv] = {"activate": True, "args_kwargs_defaults": {}}
    with pytest.raises(QnnConfigError, match=r"lists both .*CanonicalizeConv"):
        pipeline.plan("htp", job)


def test_unknown_pass_in_job_names_the_method_and_suggests() -> None:
    job: dict[Any, Any] = dict(QnnHtpPassManager.get_capture_program_passes())
    job["FoldQdq"] = {"activate": True, "args_kwargs_defaults": {}}
    with pytest.raises(
        QnnConfigError, match=r"method 'encode' names an unknown pass 'FoldQdq'.*FoldQDQ"
    ):
        pipeline.plan("htp", job, method="encode")


def test_job_entry_without_activation_flag_is_an_error() -> None:
    job = QnnHtpPassManager.get_capture_program_passes()
    job[FoldQDQ] = {"args_kwargs_defaults": {}}
    with pytest.raises(QnnConfigError, match=r"passes_job\[FoldQDQ\]"):
        pipeline.plan("htp", job)


def test_cycle_in_dep_table_is_named() -> None:
    table = QnnHtpPassManager.get_passes_dependency_for_capture_program()
    table[FoldQDQ] = [*table[FoldQDQ], ResolveDebugHandle]
    with pytest.raises(
        PassOrderError, match=r"method 'forward'.*cycle: .*FoldQDQ.*ResolveDebugHandle"
    ):
        pipeline.plan("htp", dep_table=table)


def test_dependency_on_an_unknown_pass_is_an_error() -> None:
    class NotInJob(ExportPass):
        def call(self, graph_module: Any) -> PassResult:
            return PassResult(graph_module, False)

    table = QnnHtpPassManager.get_passes_dependency_for_capture_program()
    table[FoldQDQ] = [*table[FoldQDQ], NotInJob]
    with pytest.raises(PassOrderError, match="NotInJob, which is neither in passes_job"):
        pipeline.plan("htp", dep_table=table)


def test_custom_pass_in_job_is_ordered_and_built() -> None:
    class Custom(ExportPass):
        def __init__(self, edge_program: Any = None, factor: int = 1) -> None:
            super().__init__()
            self.edge_program, self.factor = edge_program, factor

        def call(self, graph_module: Any) -> PassResult:
            return PassResult(graph_module, False)

    job = QnnHtpPassManager.get_capture_program_passes()
    job[Custom] = {"activate": True, "args_kwargs_defaults": {"edge_program": None, "factor": 3}}
    table = QnnHtpPassManager.get_passes_dependency_for_capture_program()
    table[Custom] = [FoldQDQ]
    table[ResolveDebugHandle] = [*table[ResolveDebugHandle], Custom]
    solved = pipeline.plan("htp", job, table)
    names = [p.name for p in solved.active]
    assert names.index("FoldQDQ") < names.index("Custom") < names.index("ResolveDebugHandle")
    program = object()
    built = pipeline.instantiate(solved, program=program, compiler_specs=[])
    (custom,) = [p for p in built if isinstance(p, Custom)]
    assert (custom.edge_program, custom.factor) == (program, 3)
    assert job[Custom]["args_kwargs_defaults"]["edge_program"] is None  # copied, not filled in


def test_must_be_last_is_checked() -> None:
    job = QnnHtpPassManager.get_capture_program_passes()
    table = QnnHtpPassManager.get_passes_dependency_for_capture_program()
    del table[ResolveDebugHandle]
    job.move_to_end(ResolveDebugHandle, last=False)
    with pytest.raises(PassOrderError, match=r"must end with \['ResolveDebugHandle'\]"):
        pipeline.plan("htp", job, table)


def test_our_passes_refuse_kwargs_they_do_not_take() -> None:
    job = QnnHtpPassManager.get_capture_program_passes()
    job[UpstreamCanonicalizeConv]["args_kwargs_defaults"] = {"edge_program": None, "x": 1}
    solved = pipeline.plan("htp", job)
    with pytest.raises(QnnConfigError, match=r"passes_job\[CanonicalizeConv\].*\['x'\]"):
        pipeline.instantiate(solved, program=None, compiler_specs=[])


@pytest.mark.parametrize("variant", pipeline.VARIANTS)
def test_own_passes_run_between_their_neighbours(variant: str) -> None:
    names = [p.name for p in pipeline.plan(variant).active]
    own = pipeline.own_passes(variant)
    assert [n for n in names if n in OWN] == [p.name for p in own]
    for entry in own:
        at = names.index(entry.name)
        assert all(names.index(n) < at for n in entry.runs_after if n in names), entry
        # Right before the first of runs_before; only other own passes may come between.
        later = [names.index(n) for n in entry.runs_before if n in names]
        assert later and all(names.index(n) > at for n in entry.runs_before), entry
        assert set(names[at + 1 : min(later)]) <= OWN, entry
    if variant == "htp":  # the control: a variant without FlattenRmsNorm does not get it
        assert "FlattenRmsNorm" in names
    else:
        assert "FlattenRmsNorm" not in names


def test_own_pass_a_users_job_switches_off_stays_off() -> None:
    from qnn_passes.flatten_rms_norm import FlattenRmsNorm

    job = QnnHtpPassManager.get_capture_program_passes()
    job[FlattenRmsNorm] = {"activate": False, "args_kwargs_defaults": {}}
    solved = pipeline.plan("htp", job)
    assert "FlattenRmsNorm" not in [p.name for p in solved.active]
    assert "FlattenRmsNorm" in [p.name for p in solved.passes]


def test_own_pass_whose_neighbours_a_dep_table_swapped_is_an_error() -> None:
    from executorch.backends.qualcomm._passes import LayoutTransform, RecomposeRmsNorm

    table = QnnHtpPassManager.get_passes_dependency_for_capture_program()
    table[RecomposeRmsNorm] = [*table.get(RecomposeRmsNorm, []), LayoutTransform]
    with pytest.raises(PassOrderError, match=r"FlattenRmsNorm must run after \['RecomposeRmsNorm'"):
        pipeline.plan("htp", dep_table=table)


def test_unknown_variant() -> None:
    with pytest.raises(QnnConfigError, match="unknown backend variant 'dsp'"):
        pipeline.plan("dsp")


# -- the solver ------------------------------------------------------------------------------
def test_solver_ties_follow_list_order() -> None:
    assert pipeline.solve_order(["a", "b", "c"], {"a": ["c"]}) == ["b", "c", "a"]
    assert pipeline.solve_order(["a", "b"], {"a": ["zzz"]}) == ["a", "b"]


def test_solver_names_the_cycle() -> None:
    with pytest.raises(PassOrderError, match="a -> c -> b -> a"):
        pipeline.solve_order(["a", "b", "c", "d"], {"a": ["c"], "c": ["b"], "b": ["a"]})


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=9),
    data=st.data(),
)
def test_solver_equals_torch_fx(n: int, data: st.DataObject) -> None:
    names = [f"p{i}" for i in range(n)]
    rank = data.draw(st.permutations(names))
    pairs = [(a, b) for a in names for b in names if rank.index(a) < rank.index(b)]
    edges = data.draw(st.lists(st.sampled_from(pairs), max_size=12) if pairs else st.just([]))
    runs_after: dict[str, list[str]] = {}
    for before, after in edges:
        runs_after.setdefault(after, []).append(before)
    constraints = [
        this_before_that_pass_constraint(b, a) for a, bs in runs_after.items() for b in bs
    ]
    assert pipeline.solve_order(names, runs_after) == _topological_sort_passes(names, constraints)
