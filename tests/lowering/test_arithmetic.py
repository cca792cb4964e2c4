"""Every pass that rewrites arithmetic computes on the CPU what the graph it rewrote computes (the semantics probes' CPU half).

For each bundle of tests/passes/arithmetic.py: the edge program before the pass (to-edge with
the ops QNN keeps whole), the same program after the pass alone, and eager, run on the CPU;
every output of the pass's graph must equal the input graph's (which equals eager: the
control that the probe computes the model), and the pass must have rewritten something. The
HTP half (tests/qnn_htp/test_arithmetic.py) lowers the same bundles on the simulator.
Hypothesis draws more shapes, reduction dims and orders for the norm, var and RMSNorm passes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from qnn_migrate_tests.passes.arithmetic import BUNDLES, Bundle, cpu_values


@pytest.mark.parametrize("bundle", [pytest.param(b, id=b.name) for b in BUNDLES])
def test_the_pass_keeps_what_the_graph_computes(bundle: Bundle) -> None:
    values = cpu_values(bundle)
    assert values["modified"], f"{bundle.passes[-1]} rewrote nothing in the {bundle.name} probe"
    assert len(values["after"]) == len(bundle.labels)
    for label, eager, before, after in zip(
        bundle.labels, values["eager"], values["before"], values["after"], strict=True
    ):
        np.testing.assert_allclose(before, eager, rtol=1e-5, atol=1e-6, err_msg=label)
        assert after.dtype == before.dtype and after.shape == before.shape, label
        np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5, err_msg=label)


ORDERS = (1.0, 2.0, 3.0, 0.5, math.inf, -math.inf)


@st.composite
def reductions(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...] | None, bool]:
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    dims = draw(
        st.none()
        | st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape), unique=True)
    )
    return shape, (tuple(dims) if dims is not None else None), draw(st.booleans())


def _probe(name: str, fn: object, shape: tuple[int, ...], keep: tuple[object, ...]) -> None:
    bundle = Bundle(
        name,
        (PASSES[name],),
        {"drawn": lambda p, x: fn(x)},
        lambda: (torch.randn(shape),),
        lambda: torch.ones(1),
        keep=keep,
    )  # type: ignore[operator]
    values = cpu_values(bundle)
    np.testing.assert_allclose(values["after"][0], values["eager"][0], rtol=1e-4, atol=1e-5)


PASSES = {
    "norm": "qnn_passes.decompose_linalg_vector_norm:DecomposeLinalgVectorNorm",
    "var": "qnn_passes.decompose_var:DecomposeVar",
    "rms": "qnn_passes.flatten_rms_norm:FlattenRmsNorm",
}


@settings(max_examples=12, deadline=None)
@given(reduction=reductions(), order=st.sampled_from(ORDERS))
def test_drawn_vector_norms(
    reduction: tuple[tuple[int, ...], tuple[int, ...] | None, bool], order: float
) -> None:
    shape, dims, keepdim = reduction
    _probe(
        "norm",
        lambda x: torch.linalg.vector_norm(x, order, dims, keepdim=keepdim),
        shape,
        (torch.ops.aten.linalg_vector_norm.default,),
    )


@settings(max_examples=12, deadline=None)
@given(reduction=reductions(), correction=st.sampled_from((0, 1)))
def test_drawn_variances(
    reduction: tuple[tuple[int, ...], tuple[int, ...] | None, bool], correction: int
) -> None:
    shape, dims, keepdim = reduction
    _probe("var", lambda x: torch.var(x, dims, correction=correction, keepdim=keepdim), shape, ())


@settings(max_examples=8, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=2, max_size=4).map(tuple))
def test_drawn_rms_norms(shape: tuple[int, ...]) -> None:
    _probe(
        "rms",
        lambda x: torch.nn.functional.rms_norm(x, (shape[-1],), eps=1e-6),
        shape,
        (torch.ops.aten.rms_norm.default,),
    )
