"""The certificate's sums over row blocks (qpsvm.verify.rigorous): the enclosure of the whole
problem from disjoint blocks, as the out-of-core working set computes it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm._numerics import _dense_tdot2, tdot2
from qpsvm.verify.rigorous import (
    binary_dual_lower,
    binary_dual_sums,
    binary_feasible,
    binary_primal_upper,
    combine_dual_sums,
    dual_lower_value,
    intercept_bound,
    primal_upper,
    shortfall,
    slack_cost,
    upper_sum,
)


class Rows:
    """Rows ``lo:hi`` of a formulation, with the attributes the block functions read."""

    def __init__(self, f, lo, hi):
        self.X, self.y = f.X[lo:hi], f.y[lo:hi]
        self.margin, self.sample_weight = f.margin[lo:hi], f.sample_weight[lo:hi]
        self.C, self.fit_intercept = f.C, f.fit_intercept


@settings(deadline=None, max_examples=20)
@given(seed=st.integers(0, 10_000), cuts=st.lists(st.integers(1, 199), max_size=6))
def test_blocks_enclose_the_optimum_like_the_whole(seed, cuts):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(200, 3)) * rng.uniform(0.1, 100.0)
    y = np.where(X[:, 0] + rng.normal(size=200) > 0, 1, -1)
    f = qpsvm.SoftMarginPrimal(X, y, C=0.7, sample_weight=rng.uniform(0.5, 2.0, 200))
    sol = f.solve()
    edges = [0, *sorted(set(cuts)), 200]
    spans = list(itertools.pairwise(edges))
    blocks = [Rows(f, lo, hi) for lo, hi in spans]
    # primal: upper bounds of the blocks' slack costs, combined by an upper sum
    costs = [
        slack_cost(*shortfall(r.margin, r.y, _scores(r.X, sol.w), sol.b), r.sample_weight)
        for r in blocks
    ]
    P = primal_upper(
        upper_sum(sol.w * sol.w), f.C, upper_sum(np.array([c[0] for c in costs])), -np.inf
    )
    whole_P = binary_primal_upper(f, sol.w, sol.b)[0]
    # dual: compensated sums of the blocks
    a = binary_feasible(f, sol.alpha)
    sums = combine_dual_sums(
        [binary_dual_sums(r, a[lo:hi]) for r, (lo, hi) in zip(blocks, spans, strict=True)]
    )
    D = dual_lower_value(sums, intercept_bound(f.margin, f.X, P))
    whole_D = binary_dual_lower(f, sol.alpha, whole_P)[0]
    # the same enclosure up to the bounds' own slack (a few ulps of the objective)
    assert D <= sol.objective <= P
    assert P == pytest.approx(whole_P, rel=1e-13)
    assert D == pytest.approx(whole_D, rel=1e-13)
    assert (P - D) / max(1.0, P) <= 1e-9


def _scores(X, w):
    from qpsvm.verify.rigorous import enclosed_product

    return enclosed_product(X.T, w)


@settings(deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 300), d=st.integers(1, 30))
def test_row_scores_by_column_are_the_same_sums(seed, n, d):
    """tdot2 on a transposed row-major matrix (the scores x_i . w) runs the same operations
    in the same order as the row kernel, one output at a time: bit for bit equal."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 10.0 ** rng.integers(-8, 8, size=(n, d))
    w = rng.normal(size=d)
    s, c = np.zeros(n), np.zeros(n)
    _dense_tdot2(np.asfortranarray(X.T), w, s, c)
    hi, lo = tdot2(X.T, w)
    np.testing.assert_array_equal(hi, s)
    np.testing.assert_array_equal(lo, c)
