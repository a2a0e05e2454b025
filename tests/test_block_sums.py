"""The certificate's sums over row blocks (qpsvm.verify.rigorous): the enclosure of the whole
problem from disjoint blocks, as the out-of-core working set computes it."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm._numerics import _dense_tdot2, rows_dot2, tdot2
from qpsvm.verify.rigorous import (
    binary_dual_lower,
    binary_dual_sums,
    binary_feasible,
    binary_primal_upper,
    combine_dual_sums,
    dual_lower_value,
    enclosed_product,
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


def _exact_error(M, v, start, hi, lo):
    """``|hi + lo - (M^T v + start_hi + start_lo)|`` in exact rational arithmetic."""
    out = []
    for j in range(M.shape[1]):
        exact = sum(Fraction(M[i, j]) * Fraction(v[i]) for i in range(M.shape[0]))
        if start is not None:
            exact += Fraction(start[0][j]) + Fraction(start[1][j])
        out.append(abs(Fraction(hi[j]) + Fraction(lo[j]) - exact))
    return out


@settings(deadline=None, max_examples=60)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 60),
    start_scale=st.sampled_from([None, 1.0, 1e10, 1e20, 1e200]),
)
@example(seed=0, n=50, start_scale=1e20)  # the start's magnitude once left out of the bound
def test_enclosed_product_holds_in_exact_arithmetic(seed, n, start_scale):
    """enclosed_product's bound holds exactly, a continued sum's start counted among Dot2's
    terms: a start far larger than the products makes every TwoSum error of the size
    u |start|, which a bound over the products alone missed by 1e13 times."""
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(n, 3)) * 10.0 ** rng.integers(-5, 5, size=(n, 3))
    v = rng.normal(size=n)
    start = None
    if start_scale is not None:
        start = (rng.normal(size=3) * start_scale, rng.normal(size=3) * 1e3, np.zeros(3))
    hi, lo, err = enclosed_product(M, v, start)
    for e, bound in zip(_exact_error(M, v, start, hi, lo), err, strict=True):
        assert e <= Fraction(bound)


@settings(deadline=None, max_examples=60)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 60), sparse=st.booleans())
@example(seed=0, n=60, sparse=False)
def test_plain_product_enclosure_holds_in_exact_arithmetic(seed, n, sparse):
    """enclosed_product(dot2=False), one BLAS call with the plain product's bound, holds in
    rational arithmetic, on columns whose products cancel by up to 16 digits."""
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(n, 3)) * 10.0 ** rng.integers(-6, 6, size=(n, 3))
    v = rng.normal(size=n)
    M[0] = -(v[1:] @ M[1:]) / v[0]  # the first row cancels each column's sum, rounded
    if sparse:
        M = sp.csc_matrix(np.where(rng.random(M.shape) < 0.3, 0.0, M))
    hi, lo, err = enclosed_product(M, v, dot2=False)
    assert not np.any(lo)
    dense = M.toarray() if sparse else M
    for e, bound in zip(_exact_error(dense, v, None, hi, lo), err, strict=True):
        assert e <= Fraction(bound)


@settings(deadline=None, max_examples=60)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 60),
    dot2=st.booleans(),
    sparse=st.booleans(),
    slack_scale=st.sampled_from([0.0, 1e-16, 1e-8, 1.0]),
    relative=st.booleans(),
)
@example(seed=0, n=60, dot2=False, sparse=False, slack_scale=1e-16, relative=False)
@example(seed=0, n=60, dot2=False, sparse=False, slack_scale=1e-16, relative=True)
def test_enclosed_product_with_a_slack_on_v_holds_in_exact_arithmetic(
    seed, n, dot2, sparse, slack_scale, relative
):
    """With a slack on v (|v' - v| <= slack; a float slack s is relative, s |v|), the bound
    holds in rational arithmetic for M^T v' at v' = v and at the corners v +- slack (the error
    is linear in v', so the corners of the box are its worst points, column by column: the
    sign of each entry of M)."""
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(n, 3)) * 10.0 ** rng.integers(-6, 6, size=(n, 3))
    v = rng.normal(size=n)
    M[0] = -(v[1:] @ M[1:]) / v[0]  # the first row cancels each column's sum, rounded
    slack = slack_scale * np.abs(v) * rng.random(n)
    if sparse:
        M = sp.csc_matrix(np.where(rng.random(M.shape) < 0.3, 0.0, M))
    hi, lo, err = enclosed_product(M, v, dot2=dot2, slack=slack_scale if relative else slack)
    if relative:
        box = [Fraction(slack_scale) * abs(Fraction(v[i])) for i in range(n)]
    else:
        box = [Fraction(slack[i]) for i in range(n)]
    dense = M.toarray() if sparse else M
    for j in range(3):
        for corner in (None, 1, -1):
            moved = [Fraction(v[i]) for i in range(n)]
            if corner is not None:  # each v_i moved by its slack towards the sign of corner M_ij
                moved = [
                    m + corner * (1 if dense[i, j] >= 0 else -1) * box[i]
                    for i, m in enumerate(moved)
                ]
            exact = sum(Fraction(dense[i, j]) * moved[i] for i in range(n))
            assert abs(Fraction(hi[j]) + Fraction(lo[j]) - exact) <= Fraction(err[j])


def test_enclosed_product_beyond_the_splitting_limit_is_bounded_as_a_plain_product():
    """Entries of magnitude 2^1000 overflow Dekker's splitting, and tdot2 falls back to the
    plain product: the bound is then the plain product's, and holds exactly."""
    rng = np.random.default_rng(3)
    M = rng.normal(size=(40, 2)) * 2.0**1000
    v = rng.normal(size=40) * 2.0**-60
    hi, lo, err = enclosed_product(M, v)
    assert np.all(np.isfinite(err))
    for e, bound in zip(_exact_error(M, v, None, hi, lo), err, strict=True):
        assert e <= Fraction(bound)


@settings(deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 200), d=st.integers(1, 40))
def test_sparse_row_scores_in_one_pass_are_the_same_sums(seed, n, d):
    """The scores of CSR rows (rows_dot2, one pass along each row) run Dot2 over the same
    terms in the same order as tdot2 on the transpose: bit for bit equal."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.3, format="csr", random_state=seed)
    X.data *= 10.0 ** rng.integers(-8, 8, size=X.nnz)
    w = rng.normal(size=d)
    hi, lo, _ = rows_dot2(X, w)
    ref_hi, ref_lo = tdot2(sp.csr_matrix(X.T), w)
    np.testing.assert_array_equal(hi, ref_hi)
    np.testing.assert_array_equal(lo, ref_lo)


@settings(deadline=None, max_examples=40)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 40), d=st.integers(2, 30))
def test_sparse_scores_enclosure_holds_in_exact_arithmetic(seed, n, d):
    """The enclosure of CSR rows' scores (the one-pass path of enclosed_product) holds in
    rational arithmetic, on rows whose products cancel by up to 16 digits."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.5, format="csr", random_state=seed)
    X.data *= 10.0 ** rng.integers(-6, 6, size=X.nnz)
    w = rng.normal(size=d)
    # a column that cancels each row's sum: x_i0 w_0 = -(the rest), rounded
    w[0] = 1.0
    dense = X.toarray()
    dense[:, 0] = -(dense[:, 1:] @ w[1:])
    X = sp.csr_matrix(dense)
    hi, lo, err = enclosed_product(X.T, w)
    for i in range(n):
        exact = sum(Fraction(dense[i, j]) * Fraction(w[j]) for j in range(d))
        assert abs(Fraction(hi[i]) + Fraction(lo[i]) - exact) <= Fraction(err[i])


def test_exact_zero_terms_add_nothing_to_the_bound():
    """enclosed_product with a slack on v: an entry v_i = 0 with no slack is an exactly zero
    term, left out of the bound (before, rounding its zero weight outward gave it a subnormal
    one, about 1e-323, whose products cost a hundred cycles each): rows of size 1e300 there
    add nothing to a bound of the other rows' size, 1e-300 times 1e-16."""
    rng = np.random.default_rng(0)
    M = rng.normal(size=(40, 3)) * 1e-300
    M[::2] = 1e300
    v = rng.normal(size=40)
    v[::2] = 0.0
    slack = np.zeros(40)
    hi, lo, err = enclosed_product(M, v, dot2=False, slack=slack)
    assert np.all(err < 1e-300)
    for e, bound in zip(_exact_error(M, v, None, hi, lo), err, strict=True):
        assert e <= Fraction(bound)
