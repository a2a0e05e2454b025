"""The ranking SVM from relevance labels without forming its pairs: the sorting sweeps, the
grouped certificate and the 1-slack cutting plane (method="one_slack")."""

from __future__ import annotations

import dataclasses
import logging
import math
import pickle
from fractions import Fraction
from unittest.mock import patch

import numba
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm._numerics import gamma
from qpsvm.conventions import C_from_dlib_rank
from qpsvm.formulations.ranking import _group_codes, make_pairs
from qpsvm.solution import Candidate, FormedOnRead
from qpsvm.solvers import one_slack
from qpsvm.solvers.one_slack import _CuttingPlane, _Planes
from qpsvm.verify import box_qp as box_qp_module
from qpsvm.verify import ranking as ranking_module
from qpsvm.verify import ranking_fused, ranking_sweep
from qpsvm.verify.ranking import (
    certify_grouped,
    hinge_upper,
    sorted_hinge_bounds,
    window_dual,
    window_hinge_bounds,
)
from qpsvm.verify.ranking_sweep import (
    layout,
    level_counts,
    level_difference,
    pair_sums,
    plane_counts,
    sorted_by_query,
    window_sides,
)
from qpsvm.verify.rigorous import distance_lower


def ranking_problem(seed, n_queries=6, per_query=8, d=4, levels=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * per_query, d))
    utility = X @ rng.normal(size=d) + 0.7 * rng.normal(size=len(X))
    cuts = np.quantile(utility, np.linspace(0, 1, levels + 1)[1:-1])
    return X, np.digitize(utility, cuts), np.repeat(np.arange(n_queries), per_query)


@settings(deadline=None)  # the first example compiles the sweeps
@given(
    seed=st.integers(0, 2**16),
    levels=st.integers(1, 5),
    queries=st.integers(1, 6),
    rounded=st.booleans(),
)
def test_sweeps_match_the_pairs_one_by_one(seed, levels, queries, rounded):
    # the sums by sorting equal the sums over make_pairs' pairs, ties in the keys included
    rng = np.random.default_rng(seed)
    n = 40
    y = rng.integers(0, levels, n)
    groups = rng.integers(0, queries, n)
    a = rng.normal(size=n)
    b = rng.normal(size=n)
    if rounded:  # many ties between and within the keys
        a, b = np.round(a, 1), np.round(b, 1)
    lay = layout(y.astype(float), _group_codes(groups, n))
    if lay.n_pairs == 0:
        return
    P = make_pairs(y, groups)
    assert lay.n_pairs == len(P)
    cnt, cnt_other, total, magnitude = pair_sums(lay, a, b)
    on = b[P[:, 1]] > a[P[:, 0]]
    assert np.array_equal(cnt, np.bincount(P[on, 0], minlength=n))
    assert np.array_equal(cnt_other, np.bincount(P[on, 1], minlength=n))
    np.testing.assert_allclose(total, np.bincount(P[on, 0], b[P[on, 1]], minlength=n), atol=1e-12)
    np.testing.assert_allclose(
        magnitude, np.bincount(P[on, 0], np.abs(b[P[on, 1]]), minlength=n), atol=1e-12
    )
    # the counts alone (the cutting plane's sweep), compiled and in numpy: the same counts
    for numpy_form in (False, True):
        with patch.object(
            ranking_sweep, "uncompiled", lambda *args, numpy_form=numpy_form: numpy_form
        ):
            alone = pair_sums(lay, a, b, sums=False)
        assert np.array_equal(alone[0], cnt) and np.array_equal(alone[1], cnt_other)
        assert alone[2].size == alone[3].size == 0
    lo, hi = a - 0.5, a + 0.3
    window, cnt_beyond, other_beyond, total_beyond = window_sides(lay, lo, hi, b, 10_000)
    inside = (b[P[:, 1]] > lo[P[:, 0]]) & (b[P[:, 1]] <= hi[P[:, 0]])
    assert sorted(map(tuple, window)) == sorted(map(tuple, P[inside]))
    assert window_sides(lay, lo, hi, b, 0)[0] is None or not inside.any()
    # the window's pass also sums over the pairs beyond it (b_j > hi_i), as the sweep does
    beyond = pair_sums(lay, hi, b)
    assert np.array_equal(cnt_beyond, beyond[0]) and np.array_equal(other_beyond, beyond[1])
    np.testing.assert_allclose(total_beyond, beyond[2], atol=1e-12)
    # thresholds that are non-decreasing functions of b: the cuts by merges list the same
    # window in the same order, with the same sums, as the binary searches
    lo, hi = b - 1.25, b - 0.75
    searched = window_sides(lay, lo, hi, b, 10_000)
    merged = window_sides(lay, lo, hi, b, 10_000, monotone=True)
    for got, want in zip(merged, searched, strict=True):
        assert np.array_equal(got, want)
    inside = (b[P[:, 1]] > lo[P[:, 0]]) & (b[P[:, 1]] <= hi[P[:, 0]])
    assert sorted(map(tuple, merged[0])) == sorted(map(tuple, P[inside]))
    # keys in the same order (a = fl(b - 1)): one sort per query gives the same sums
    shifted = b - 1.0
    once = pair_sums(lay, shifted, b, monotone=True)
    for got, want in zip(once, pair_sums(lay, shifted, b), strict=True):
        assert np.array_equal(got, want)
    # the 1-slack plane's counts at b, by its one compiled call and in numpy
    for numpy_form in (False, True):
        with patch.object(ranking_sweep, "uncompiled", lambda *args, cold=numpy_form: cold):
            coef, count = plane_counts(lay, b, sorted_by_query(lay, b))
        assert np.array_equal(coef, once[0] - once[1]) and count == once[0].sum()
    # at equal scores every pair is short of the margin: the counts by levels alone
    zero = np.zeros(n)
    every = pair_sums(lay, zero - 1.0, zero, monotone=True)
    assert all(np.array_equal(x, y) for x, y in zip(level_counts(lay), every[:2], strict=True))


@settings(deadline=None)
@given(seed=st.integers(0, 2**16), levels=st.integers(2, 5), monotone=st.booleans())
def test_sweep_counts_match_the_pairs_with_infinite_keys(seed, levels, monotone):
    # the compiled sweep (the numpy form takes finite keys only) counts cnt' off each a-key's
    # cut among the b-keys: with keys at +-inf, ties among them and with finite keys, the
    # counts of the pairs one by one
    rng = np.random.default_rng(seed)
    n = 40
    y = rng.integers(0, levels, n).astype(float)
    groups = np.repeat(np.arange(4), 10)
    b = rng.choice([-np.inf, -1.0, 0.0, 0.5, np.inf], size=n)
    a = b - 1.0 if monotone else rng.choice([-np.inf, -1.0, 0.0, np.inf], size=n)
    lay = layout(y, _group_codes(groups, n))
    if lay.n_pairs == 0:
        return
    P = make_pairs(y, groups)
    on = b[P[:, 1]] > a[P[:, 0]]
    for sums in (True, False):  # the sweep, and the sweep of the counts alone
        cnt, cnt_other, _, _ = pair_sums(lay, a, b, monotone=monotone, sums=sums)
        assert np.array_equal(cnt, np.bincount(P[on, 0], minlength=n))
        assert np.array_equal(cnt_other, np.bincount(P[on, 1], minlength=n))


@settings(deadline=None)  # the first example may load the layout's compiled pass
@given(
    seed=st.integers(0, 2**16),
    distinct=st.integers(1, 12),
    queries=st.integers(1, 30),
    sorted_ids=st.booleans(),
    table=st.booleans(),
)
@example(seed=0, distinct=1, queries=1, sorted_ids=True, table=True)  # one level: no pair
def test_layout_ranks_and_counts_as_unique_and_the_pairs_do(
    seed, distinct, queries, sorted_ids, table
):
    # the levels and query codes are np.unique's inverse (few or many distinct values, ties,
    # ids given query by query or not), the pair count and the most levels of a query those
    # of the items compared two by two, by the query-by-level table or by the distinct keys
    rng = np.random.default_rng(seed)
    n = 60
    y = rng.choice(rng.normal(size=distinct), n) * 10.0 ** rng.integers(-3, 3)
    ids = rng.integers(-5, queries, n) * 7
    if sorted_ids:
        ids = np.sort(ids)
    with patch.object(ranking_sweep, "TABLE_CELLS", ranking_sweep.TABLE_CELLS if table else 0):
        lay = layout(y, ids)
    assert np.array_equal(lay.level, np.unique(y, return_inverse=True)[1].ravel())
    assert np.array_equal(lay.query, np.unique(ids, return_inverse=True)[1].ravel())
    assert lay.n_pairs == np.sum((ids[:, None] == ids[None, :]) & (y[:, None] > y[None, :]))
    most = max(len(np.unique(y[ids == q])) for q in np.unique(ids))
    assert lay.max_levels == most


@settings(deadline=None)  # the first example compiles the layout's pass
@given(
    seed=st.integers(0, 2**16),
    distinct=st.integers(1, 10),
    queries=st.integers(1, 30),
    sorted_ids=st.booleans(),
)
@example(seed=0, distinct=9, queries=3, sorted_ids=True)  # more distinct values than it takes
@example(seed=0, distinct=3, queries=3, sorted_ids=False)  # ids not given query by query
def test_the_compiled_layout_is_the_numpy_one(seed, distinct, queries, sorted_ids):
    # ids given query by query and at most FEW_VALUES relevance values: the one compiled pass
    # gives the numpy layout to the last entry and type (levels with ties and -0.0 = 0.0);
    # otherwise it declines and the numpy sorts lay the items out
    rng = np.random.default_rng(seed)
    n = 60
    values = rng.normal(size=distinct) * 10.0 ** rng.integers(-3, 3)
    values[0] = -0.0
    y = rng.choice(values, n)
    y[y == -0.0] = rng.choice([0.0, -0.0], int(np.sum(y == -0.0)))
    ids = rng.integers(-5, queries, n).astype(np.intp) * 7
    if sorted_ids:
        ids = np.sort(ids)
    ok = ranking_sweep._grouped_layout(y, ids)[0]
    assert ok == (sorted_ids and len(np.unique(y)) <= ranking_sweep.FEW_VALUES)
    with patch.object(ranking_sweep, "uncompiled", lambda *args: False):
        fast = layout(y, ids)
    with patch.object(ranking_sweep, "uncompiled", lambda *args: True):
        slow = layout(y, ids)
    for name in ("order", "starts", "level", "query"):
        a, b = getattr(fast, name), getattr(slow, name)
        assert a.dtype == b.dtype and np.array_equal(a, b)
    for name in ("n_pairs", "max_query", "max_levels"):
        assert type(getattr(fast, name)) is int and getattr(fast, name) == getattr(slow, name)
    # the pass's cnt - cnt' of every pair: the levels' counts of the numpy layout, to the bit
    assert slow.difference is None and (fast.difference is None) == (not ok)
    want = level_difference(slow)
    got = level_difference(fast)
    assert got.dtype == want.dtype == np.float64 and np.array_equal(got, want)


@settings(deadline=None)  # the first example compiles the re-sort
@given(
    seed=st.integers(0, 2**16),
    queries=st.integers(1, 6),
    rounded=st.booleans(),
    noise=st.sampled_from([0.0, 1e-3, 0.1, 10.0]),
)
@example(seed=0, queries=1, rounded=False, noise=10.0)  # past the moves' budget: full sort
def test_resort_from_a_nearby_order_is_a_sort_by_query(seed, queries, rounded, noise):
    # from the order of nearby keys (or of unrelated ones), the insertion sort gives each
    # query's items in non-decreasing key, as the full sort does: the same items per query,
    # the same keys in the same places (ties may be ordered differently)
    rng = np.random.default_rng(seed)
    n = 40
    lay = layout(rng.integers(0, 3, n).astype(float), _group_codes(rng.integers(0, queries, n), n))
    old = rng.normal(size=n)
    key = old + noise * rng.normal(size=n)
    if rounded:
        key = np.round(key, 0)
    full = sorted_by_query(lay, key)
    resorted = sorted_by_query(lay, key, start=sorted_by_query(lay, old))
    assert np.array_equal(key[resorted], key[full])
    for q in range(len(lay.starts) - 1):
        part = slice(lay.starts[q], lay.starts[q + 1])
        assert sorted(resorted[part]) == sorted(full[part]) == sorted(lay.order[part])


@settings(deadline=None)  # the first example compiles the regrouping's kernel
@given(
    seed=st.integers(0, 2**16),
    queries=st.integers(1, 6),
    rounded=st.booleans(),
)
def test_the_numpy_regrouping_is_the_compiled_one(seed, queries, rounded):
    # before _by_query is compiled its numpy form regroups the items (a first call): the same
    # order to the item, ties in the keys included, so either path gives the same answer
    rng = np.random.default_rng(seed)
    n = 40
    lay = layout(rng.integers(0, 3, n).astype(float), _group_codes(rng.integers(0, queries, n), n))
    key = rng.normal(size=n)
    perm = np.argsort(np.round(key, 0) if rounded else key)
    compiled = ranking_sweep._by_query(perm, lay.query, lay.starts)
    assert np.array_equal(ranking_sweep._by_query_numpy(perm, lay.query), compiled)
    with patch.object(ranking_sweep, "uncompiled", lambda *args: True):
        numpy_path = sorted_by_query(lay, key)
    assert np.array_equal(
        numpy_path, ranking_sweep._by_query(np.argsort(key), lay.query, lay.starts)
    )


@given(
    seed=st.integers(0, 2**16),
    shape=st.sampled_from([(3, 5), (8, 8), (12, 4)]),
    dependent=st.booleans(),
)
@example(seed=0, shape=(3, 5), dependent=True)
def test_the_gram_fit_is_both_least_squares_fits(seed, shape, dependent):
    # independent rows: (Z_Q Z_Q^T)^{-1} r is the only fit of Z_Q^T alpha = delta for the
    # least-norm delta with Z_Q delta = r (both rank-revealing least squares); a row repeated
    # (dependent rows): no Gram fit, the least squares take over
    rng = np.random.default_rng(seed)
    q, d = shape
    ZQ = rng.normal(size=(min(q, d), d))
    if dependent:
        ZQ = np.vstack([ZQ, ZQ[:1]])
    r = rng.normal(size=ZQ.shape[0])
    alpha = box_qp_module._gram_fit(ZQ, r)
    if dependent:
        assert alpha is None
        return
    delta = box_qp_module._least_squares(ZQ, r)[0]
    fit, rank = box_qp_module._least_squares(ZQ.T, delta)
    assert rank == ZQ.shape[0]
    np.testing.assert_allclose(alpha, fit, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ZQ.T @ alpha, delta, rtol=1e-8, atol=1e-10)


@settings(deadline=None, max_examples=30)
@given(seed=st.integers(0, 2**16), levels=st.integers(2, 3), log_C=st.integers(-3, 1))
def test_the_window_box_qp_meets_its_conditions_by_either_fit(seed, levels, log_C):
    # the window of every pair solved from its sets with the Gram fit and with the least
    # squares alone (as for dependent margins): the same multipliers, within the box, their
    # w = v0 + Z^T alpha, the margins on their sides (KKT of the box QP) within 1e-9
    X, y, groups = ranking_problem(seed, n_queries=3, per_query=6, d=3, levels=levels)
    P = make_pairs(y, groups)
    Z = X[P[:, 0]] - X[P[:, 1]]
    v0, C = np.zeros(3), 10.0**log_C
    answers = []
    for gram in (True, False):
        fit = box_qp_module._gram_fit if gram else (lambda ZQ, r: None)
        with patch.object(box_qp_module, "_gram_fit", fit), window_ascent(True):
            answers.append(box_qp_module.box_qp(Z, v0, C))
    for alpha, w in answers:
        assert np.all(alpha >= 0.0) and np.all(alpha <= C)
        np.testing.assert_allclose(w, v0 + Z.T @ alpha, atol=1e-12)
        g = 1.0 - Z @ w
        assert np.all(g[alpha == 0.0] <= 1e-9) and np.all(g[alpha == C] >= -1e-9)
        assert np.all(np.abs(g[(alpha > 0.0) & (alpha < C)]) <= 1e-9)
    np.testing.assert_allclose(answers[0][1], answers[1][1], atol=1e-9)


@numba.njit
def gram_solve(G, r):
    return ranking_fused._gram_solve(G, G.shape[0], r, np.empty_like(G))


@settings(deadline=None, max_examples=40)
@given(
    seed=st.integers(0, 2**16),
    shape=st.sampled_from([(2, 3), (4, 4), (7, 9), (12, 12)]),
    dependent=st.integers(0, 2),
)
@example(seed=0, shape=(7, 9), dependent=2)
def test_the_pivoted_gram_solve_fits_a_maximal_independent_set(seed, shape, dependent):
    # rows of norms over two decades (the pivots reorder them); each dependent row a sum of
    # two others: the rank is the independent rows', the dropped rows' multipliers 0, and
    # Z_Q^T alpha solves Z_Q delta = r (consistent: r = Z_Q v) as the least-norm delta does
    rng = np.random.default_rng(seed)
    q, d = shape
    ZQ = rng.normal(size=(q, d)) * 10.0 ** rng.uniform(-1, 1, size=(q, 1))
    for _ in range(dependent):
        a, b = rng.choice(ZQ.shape[0], 2, replace=False)
        ZQ = np.insert(ZQ, rng.integers(ZQ.shape[0] + 1), ZQ[a] + ZQ[b], axis=0)
    r = ZQ @ rng.normal(size=d)
    alpha, rank = gram_solve(ZQ @ ZQ.T, r)
    assert rank == np.linalg.matrix_rank(ZQ)
    assert np.count_nonzero(alpha) <= rank
    delta = np.linalg.lstsq(ZQ, r, rcond=None)[0]
    scale = np.max(np.abs(ZQ)) * np.max(np.abs(delta))
    np.testing.assert_allclose(ZQ.T @ alpha, delta, rtol=0.0, atol=1e-8 * scale)


def test_the_window_box_qp_at_a_large_cap_from_the_active_set():
    # dlib's c = 100 on a window of every pair (20 queries of 12, 8 features): with the
    # ascent's sets refused and the smoothed steps disabled the primal active set's sets
    # solve it, to the bit the smoothed steps' own exact sets (the same fit on the same sets)
    X, y, groups = ranking_problem(3, n_queries=20, per_query=12, d=8, levels=3)
    P = make_pairs(y, groups)
    Z = np.ascontiguousarray(X[P[:, 0]] - X[P[:, 1]])
    v0, C = np.zeros(8), C_from_dlib_rank(100.0, P.shape[0])
    with patch.object(box_qp_module, "_ascent_sets", lambda Z, v0, cap: None):
        alpha_newton, w_newton = box_qp_module.box_qp(Z, v0, C)
        with patch.object(box_qp_module, "_newton_solve", None):
            alpha, w = box_qp_module.box_qp(Z, v0, C, rescue=True)
    assert np.array_equal(alpha, alpha_newton) and np.array_equal(w, w_newton)
    on = (alpha > 0.0) & (alpha < C)
    assert 0 < np.count_nonzero(on) <= 8 and np.count_nonzero(alpha == C) > 0


def test_active_set_step_moves_each_pair_to_the_side_its_fit_crossed_to():
    # margin pairs whose multiplier left [0, cap] leave for 0 or cap; a pair at cap whose
    # margin passed 1 and a pair at 0 whose margin fell short of it join the margin
    g = np.array([0.0, 0.0, 0.5, -0.5, 0.3, -0.2])
    quad = np.array([True, True, False, False, False, False])
    linear = np.array([False, False, True, True, False, False])
    new_quad, new_linear = box_qp_module._active_set_step(
        g, quad, linear, np.array([-0.1, 2.0]), 1.0
    )
    assert new_quad.tolist() == [False, False, False, True, True, False]
    assert new_linear.tolist() == [False, True, True, False, False, False]
    # far from the sets (more moves than SET_MOVES) no step is offered
    many = np.full(box_qp_module.SET_MOVES + 1, 0.5)
    none = np.zeros(many.size, dtype=bool)
    assert box_qp_module._active_set_step(many, none, none, np.zeros(0), 1.0) is None


def planes_only(planes: bool):
    """The cutting plane even for problems small enough for one window of every pair."""
    return patch.object(one_slack, "DIRECT_PAIRS", 0 if planes else one_slack.DIRECT_PAIRS)


def window_ascent(ascent: bool):
    """The windows' QP by the coordinate ascent's sets first, or (as before its kernel is
    compiled) by the smoothed Newton steps alone."""
    return patch.object(box_qp_module, "uncompiled", lambda *args: not ascent)


@settings(deadline=None, max_examples=40)
@given(
    seed=st.integers(0, 2**16),
    levels=st.integers(2, 4),
    rounded=st.booleans(),
    sorted_once=st.booleans(),
)
@example(seed=0, levels=2, rounded=True, sorted_once=True)
def test_hinge_upper_bounds_the_exact_hinge_sum(seed, levels, rounded, sorted_once):
    # scores known within err_i of t_i: the bound is above the exact hinge sum over the
    # formed pairs (rational arithmetic) for scores anywhere in their enclosures, with each
    # item's error or, sorted once by t, the largest error for every item
    rng = np.random.default_rng(seed)
    n = 30
    y = rng.integers(0, levels, n)
    groups = rng.integers(0, 4, n)
    t = rng.normal(size=n)
    if rounded:  # ties in the scores and margins of exactly 1
        t = np.round(t, 0)
    err = np.abs(rng.normal(size=n)) * 10.0 ** rng.integers(-16, -1, size=n)
    lay = layout(y.astype(float), _group_codes(groups, n))
    if lay.n_pairs == 0:
        return
    order = sorted_by_query(lay, t) if sorted_once else None
    bound = Fraction(hinge_upper(lay, t, err, order))
    P = make_pairs(y, groups)
    for signs in (rng.uniform(-1, 1, size=n), np.sign(rng.uniform(-1, 1, size=n))):
        exact = [Fraction(t[i]) + Fraction(float(signs[i])) * Fraction(err[i]) for i in range(n)]
        hinge = sum(max(Fraction(0), 1 - exact[i] + exact[j]) for i, j in P)
        assert hinge <= bound


def moved_window(seed, levels, tau, move, rounded):
    """A small problem's window cut at scores ``b`` and ``tau`` and scores ``t`` moved from
    ``b`` by about ``move``, known within ``err``: ``(f, y, groups, b, point, t, err, rng)``,
    or ``None`` where the labels give no problem or the window no point."""
    X, y, groups = ranking_problem(seed, n_queries=4, per_query=8, d=3, levels=levels)
    try:
        f = qpsvm.RankingSVM(X, y=y, groups=groups, C=1.0)
    except qpsvm.InvalidInputError:
        return None
    rng = np.random.default_rng(seed)
    b = X @ rng.normal(size=3)
    if rounded:  # ties, and margins on the windows' thresholds
        b = np.round(b, 1)
    point = window_dual(X, f.C, f.query_layout, b, tau)
    if point is None:
        return None
    t = b + move * rng.normal(size=X.shape[0])
    err = np.abs(rng.normal(size=X.shape[0])) * 10.0 ** rng.integers(-16, -12, size=X.shape[0])
    return f, y, groups, b, point, t, err, rng


@settings(deadline=None, max_examples=60)
@given(
    seed=st.integers(0, 2**16),
    levels=st.integers(2, 4),
    tau=st.sampled_from([1e-2, 0.3, math.inf]),
    move=st.sampled_from([0.0, 1e-9, 1e-3, 1e-2, 0.2]),
    rounded=st.booleans(),
    each_pair=st.booleans(),
    compiled=st.booleans(),
)
@example(seed=0, levels=2, tau=0.3, move=0.0, rounded=True, each_pair=False, compiled=False)
@example(seed=1, levels=3, tau=1e-2, move=1e-2, rounded=False, each_pair=True, compiled=True)
def test_window_hinge_bounds_bound_the_exact_hinge_sum(
    seed, levels, tau, move, rounded, each_pair, compiled
):
    # the hinge sum read off a window's sides (no sweep) at scores t moved from the scores b
    # the window was cut at: whenever the sides are proven to hold, the bound is above the
    # exact hinge sum over the formed pairs (rational arithmetic) for scores anywhere in
    # their enclosures; with every moved item's pairs checked one by one (each_pair) or
    # none; sides that do not move always hold; by the compiled sums or their numpy form
    case = moved_window(seed, levels, tau, move, rounded)
    if case is None:
        return
    f, y, groups, b, point, t, err, rng = case
    lay, n = f.query_layout, b.shape[0]
    with (
        patch.object(ranking_module, "SIDE_ITEMS", 1.0 if each_pair else 0.0),
        patch.object(ranking_module, "uncompiled", lambda *args: not compiled),
    ):
        bounds = window_hinge_bounds(lay, point, t, err)
    if move == 0.0:
        assert bounds is not None
    if bounds is None:
        return
    upper, value = bounds
    P = make_pairs(y, groups)
    for signs in (rng.uniform(-1, 1, size=n), np.sign(rng.uniform(-1, 1, size=n))):
        exact = [Fraction(t[i]) + Fraction(float(signs[i])) * Fraction(err[i]) for i in range(n)]
        hinge = sum(max(Fraction(0), 1 - exact[i] + exact[j]) for i, j in P)
        assert hinge <= Fraction(upper)
    floats = sum(max(0.0, 1.0 - t[i] + t[j]) for i, j in P)
    assert value == pytest.approx(floats, rel=1e-12, abs=1e-12)


@settings(deadline=None)  # the first example may compile the sums
@given(
    seed=st.integers(0, 2**16),
    levels=st.integers(2, 4),
    tau=st.sampled_from([1e-2, 0.3, math.inf]),
    move=st.sampled_from([0.0, 1e-3, 1e-2, 0.2]),
    rounded=st.booleans(),
    most=st.sampled_from([0.0, 3.0, 1e9]),
)
@example(seed=1, levels=3, tau=1e-2, move=1e-2, rounded=False, most=1e9)
def test_the_compiled_side_sums_are_the_numpy_ones(seed, levels, tau, move, rounded, most):
    # window_hinge_bounds' test of the sides and its sums: the compiled pass and its numpy
    # form (a cold process's first calls) give the same verdict and the same floats, moved
    # items' pairs checked (most: how many items may be checked) or not
    case = moved_window(seed, levels, tau, move, rounded)
    if case is None:
        return
    f, _, _, b, point, t, err, _ = case
    lay = f.query_layout
    beyond = lay.n_pairs - point.n_bound - point.window.shape[0]
    limit = ranking_module._move_limit(b, tau, point.n_bound > 0, beyond > 0)
    if limit is None:
        return
    sides = (b, t, err, point.bound_coef, point.window, limit, 1.0 - tau, 1.0 + tau, most)
    top = np.empty(point.window.shape[0])
    compiled = ranking_module._side_sums(lay.query, lay.starts, lay.order, lay.level, *sides, top)
    assert compiled == ranking_module._side_sums_numpy(lay, *sides)


@pytest.mark.parametrize("planes", [False, True])
@pytest.mark.parametrize("levels", [2, 3])
@pytest.mark.parametrize("C", [1e-3, 0.1, 10.0])
def test_one_slack_reaches_the_optimum_of_the_pairs(levels, C, planes):
    # the same optimum as the working set on the formed pairs (P* unique, w* unique), by one
    # window of every pair or by the planes and the finish
    X, y, groups = ranking_problem(levels + 10 * int(C * 1000), levels=levels)
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=C)
    with planes_only(planes):
        sol = f.solve(method="one_slack")
    assert (sol.info["planes"] > 0) == planes and (sol.n_iter > 0) == planes
    assert f._pairs is None  # never formed
    assert sol.status == "optimal" and sol.certificate.passed and sol.certificate.rigorous
    reference = qpsvm.RankingSVM(X, y=y, groups=groups, C=C).solve(method="working_set")
    assert sol.objective == pytest.approx(reference.objective, rel=2e-9)
    bound = reference.certificate.distance_bound + sol.certificate.distance_bound
    assert distance_lower(sol.w, reference.w) <= np.nextafter(bound, np.inf)
    # the rigorous ends enclose the exact objective of w, computed over the formed pairs
    assert sol.certificate.dual_objective <= f.objective(sol.w) <= sol.certificate.primal_objective


#: Random query layouts: binary and graded relevance, one query or several, queries of one
#: item (no pair), tied features and labels, one window of every pair or the planes, each
#: window's QP by the coordinate ascent's sets or by the smoothed Newton steps alone.
LAYOUTS = {
    "seed": st.integers(0, 2**16),
    "sizes": st.lists(st.integers(1, 7), min_size=1, max_size=5),
    "levels": st.integers(2, 4),
    "d": st.integers(1, 4),
    "log_C": st.sampled_from([-3.0, -1.0, 0.0, 1.0, 2.0]),
    "ties": st.booleans(),
    "planes": st.booleans(),
    "ascent": st.booleans(),
}


def relevance_problem(seed, sizes, levels, d, ties):
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    X = rng.normal(size=(n, d))
    y = rng.integers(0, levels, n)
    if ties:  # equal items inside and across queries, equal scores at every w
        X = np.round(X, 0)
        X[n // 2 :] = X[: n - n // 2]
    return X, y, np.repeat(np.arange(len(sizes)), sizes)


def solve_layout(X, y, groups, C, planes, ascent, method=None):
    """The problem and its solution by ``method`` (default: the default method) with the
    planes and the windows' QP as ``planes`` and ``ascent`` say; ``None`` where no query has
    two relevance levels (no pair)."""
    try:
        f = qpsvm.RankingSVM(X, y=y, groups=groups, C=C)
    except qpsvm.InvalidInputError:
        return None
    with planes_only(planes), window_ascent(ascent):
        return f, f.solve(method=method)


@settings(max_examples=25, deadline=None)
@given(**LAYOUTS)
@example(seed=0, sizes=[1, 2, 2], levels=2, d=1, log_C=2.0, ties=True, planes=True, ascent=True)
@example(seed=1, sizes=[7, 7, 7], levels=4, d=2, log_C=2.0, ties=True, planes=True, ascent=True)
@example(seed=0, sizes=[1, 2, 2], levels=2, d=1, log_C=2.0, ties=True, planes=False, ascent=True)
@example(seed=1, sizes=[7, 7, 7], levels=4, d=2, log_C=2.0, ties=True, planes=False, ascent=True)
@example(seed=1, sizes=[7, 7, 7], levels=4, d=2, log_C=2.0, ties=True, planes=False, ascent=False)
def test_one_slack_is_the_exact_optimum(seed, sizes, levels, d, log_C, ties, planes, ascent):
    # binary and graded relevance, queries of one or two items, tied features and labels, by
    # one window of every pair or by the planes, each window's QP by the coordinate ascent's
    # sets or by the smoothed Newton steps alone: the certificate encloses the rational
    # optimum P* (compared exactly), w is within its distance bound of w*, and the proven gap
    # is at most tol
    X, y, groups = relevance_problem(seed, sizes, levels, d, ties)
    solved = solve_layout(X, y, groups, 10.0**log_C, planes, ascent, "one_slack")
    if solved is None:
        return
    sol = solved[1]
    cert = sol.certificate
    assert sol.status == "optimal" and cert.passed and cert.rigorous
    opt = qpsvm.RankingSVM(X, y=y, groups=groups, C=10.0**log_C).solve(method="exact")
    optimum = opt.info["exact"]
    assert Fraction(cert.dual_objective) <= optimum.objective <= Fraction(cert.primal_objective)
    dist2 = sum((Fraction(a) - b) ** 2 for a, b in zip(sol.w, optimum.w, strict=True))
    assert dist2 <= Fraction(cert.distance_bound) ** 2
    assert cert.relative_gap <= 1e-9


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    levels=st.integers(2, 4),
    log_C=st.sampled_from([-2.0, 0.0, 2.0]),
    eps=st.sampled_from([0.0, 1e-6, 1e-2, 1.0]),
    tau=st.sampled_from([1e-12, 1e-2, 0.3, math.inf]),
)
@example(seed=0, levels=3, log_C=2.0, eps=1e-2, tau=0.3)
def test_a_given_dual_point_encloses_the_exact_optimum(seed, levels, log_C, eps, tau):
    # the grouped certificate of a w with a window's dual point given (the solver's own, at
    # any window and any w, optimal or not) and no window of its own: its ends enclose the
    # rational optimum P*, and the exact objective of w is below its upper end
    X, y, groups = ranking_problem(seed, n_queries=3, per_query=5, d=3, levels=levels)
    try:
        f = qpsvm.RankingSVM(X, y=y, groups=groups, C=10.0**log_C)
    except qpsvm.InvalidInputError:
        return  # no query has two relevance levels: no pair
    w = f.solve(method="one_slack").w + eps * np.random.default_rng(seed).normal(size=3)
    scores = X @ w
    point = window_dual(X, f.C, f.query_layout, scores, tau, start=w)
    cert = certify_grouped(f, point.w, point=point, windows=())
    optimum = qpsvm.RankingSVM(X, y=y, groups=groups, C=f.C).solve(method="exact")
    exact = optimum.info["exact"].objective
    assert Fraction(cert.dual_objective) <= exact <= Fraction(cert.primal_objective)
    pairs = make_pairs(y, groups)
    margins = [
        sum(Fraction(v) * (Fraction(X[i, k]) - Fraction(X[j, k])) for k, v in enumerate(point.w))
        for i, j in pairs
    ]
    objective = sum(Fraction(v) ** 2 for v in point.w) / 2 + Fraction(f.C) * sum(
        max(Fraction(0), 1 - m) for m in margins
    )
    assert objective <= Fraction(cert.primal_objective)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    levels=st.integers(2, 4),
    log_eps=st.sampled_from([-14, -10, -6, -2]),
    tau=st.sampled_from([1e-12, 1e-2, 0.3]),
    shift=st.sampled_from([0.0, 1e5]),
)
@example(seed=4, levels=3, log_eps=-10, tau=1e-2, shift=1e5)  # retried: Dot2 proves it
@example(seed=0, levels=3, log_eps=-14, tau=1e-12, shift=1e5)  # not retried: fails both ways
def test_dot2_retry_skipped_only_where_it_cannot_pass(seed, levels, log_eps, tau, shift):
    # the grouped certificate retries with Dot2 only when the plain products' gap is within
    # a few of its rounding allowances: its verdict is the verdict of always retrying, near
    # the optimum and far from it, with features shifted far from 0 (the plain products'
    # rounding then hides gaps that Dot2 proves); the ends enclose the rational optimum P*
    X, y, groups = ranking_problem(seed, n_queries=3, per_query=5, d=3, levels=levels)
    X = X + shift
    try:
        f = qpsvm.RankingSVM(X, y=y, groups=groups, C=0.3)
    except qpsvm.InvalidInputError:
        return  # no query has two relevance levels: no pair
    optimum = qpsvm.RankingSVM(X, y=y, groups=groups, C=0.3).solve(method="exact")
    w_star = np.array([float(v) for v in optimum.info["exact"].w])
    w = w_star + 10.0**log_eps * np.random.default_rng(seed).normal(size=3) * np.abs(w_star)
    point = window_dual(X, f.C, f.query_layout, X @ w, tau, start=w)
    cert = certify_grouped(f, point.w, point=point, windows=())
    with patch.object(ranking_module, "_rounding_hides", lambda *args: True):
        always = certify_grouped(f, point.w, point=point, windows=())
    assert cert.passed == always.passed
    exact = optimum.info["exact"].objective
    assert Fraction(cert.dual_objective) <= exact <= Fraction(cert.primal_objective)


@pytest.mark.parametrize("levels", [2, 3])
@pytest.mark.parametrize("C", [1e-2, 0.1, 1.0])
def test_line_search_planes_bracket_the_optimum(levels, C):
    # every plane is a valid cut, so the planes' dual value stays below P*; the best point's
    # objective is the objective of its w over the formed pairs, never increases, and stays
    # above P* (enclosed by the working set's certificate); the gap closes
    X, y, groups = ranking_problem(3 + levels, levels=levels)
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=C)
    ref = qpsvm.RankingSVM(X, y=y, groups=groups, C=C).solve(method="working_set").certificate
    low, high = ref.dual_objective, ref.primal_objective  # rigorous: low <= P* <= high
    loop = _CuttingPlane(f, f.query_layout.n_pairs, _Planes(f.n_features, C * f.n_pairs))
    last = loop.best.primal
    for it in range(1, 30):
        loop.advance(0.0, it)
        assert loop.best.primal == pytest.approx(f.objective(loop.best.w), rel=1e-12)
        assert loop.dual <= high and loop.best.primal >= low
        assert loop.best.primal <= last
        last = loop.best.primal
    assert loop.gap() < 1e-6


@settings(deadline=None, max_examples=40)
@given(seed=st.integers(0, 2**16), levels=st.integers(2, 4), k=st.floats(1e-6, 1.0))
def test_points_on_the_line_from_zero_keep_its_order(seed, levels, k):
    # on the line from w = 0 the scores fl(k X d), k > 0, are in X d's order (rounding is
    # monotone): the point read in that order, unsorted, is the point sorted for its scores
    X, y, groups = ranking_problem(seed, levels=levels)
    X = np.round(X, 1)  # ties among the scores
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=0.1)
    loop = _CuttingPlane(f, f.query_layout.n_pairs, _Planes(f.n_features, 0.1 * f.n_pairs))
    d = np.random.default_rng(seed).normal(size=X.shape[1])
    end = loop.point(d, X @ d, loop.best)
    kept = loop.point(k * d, k * (X @ d), end, same=True)
    sorted_ = loop.point(k * d, k * (X @ d))
    assert np.array_equal(kept.coef, sorted_.coef) and kept.count == sorted_.count
    assert kept.primal == sorted_.primal


def test_grouped_certificate_bounds_the_true_suboptimality():
    X, y, groups = ranking_problem(3, levels=3)
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=0.5)
    optimum = f.solve(method="one_slack").objective
    rng = np.random.default_rng(0)
    for eps in (1e-6, 1e-3, 1e-1):
        w = f.solve(method="one_slack").w + eps * rng.normal(size=X.shape[1])
        cert = certify_grouped(f, w)
        # upper bound on P(w) from the sweep >= P(w) over the pairs; lower bound <= P*
        assert cert.primal_objective >= f.objective(w) >= optimum
        assert cert.dual_objective <= optimum
        assert cert.gap >= f.objective(w) - optimum
        assert not cert.passed
        binary = f.certify(Candidate(w=w, b=0.0, alpha=np.zeros(f.n_pairs)))
        assert cert.primal_objective == pytest.approx(binary.primal_objective, rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    levels=st.integers(2, 4),
    log_err=st.sampled_from([-16, -12, -6]),
    rounded=st.booleans(),
)
@example(seed=0, levels=3, log_err=-12, rounded=True)
def test_sorted_hinge_value_is_the_hinge_sum_at_its_scores(seed, levels, log_err, rounded):
    # the float value of the bound's sweep is the sum over every pair of max(0, 1 - s_i + s_j)
    # (exact rationals) but for the pairs it selects beyond the margin, each within 2 h of it
    # (h = e + u max |s|, rounded up: at most 3 h over 1), and the rounding of its float sums:
    # N terms of size at most M = 2 + 2 max |s| summed in any order are within N^2 4u M
    X, y, groups = ranking_problem(seed, levels=levels)
    if rounded:  # margins of exactly 1 and ties
        X = np.round(X, 0)
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=1.0)
    lay = f.query_layout
    s = X @ np.random.default_rng(seed).normal(size=X.shape[1])
    err = np.full(len(s), 10.0**log_err)
    upper, value = sorted_hinge_bounds(lay, s, err, sorted_by_query(lay, s))
    exact = sum(max(Fraction(0), 1 - Fraction(s[i]) + Fraction(s[j])) for i, j in f.pairs)
    assert exact <= Fraction(upper)
    top = float(np.max(np.abs(s)))
    h = 10.0**log_err + 2.0**-53 * top
    terms = 2 * f.n_pairs + len(s)
    slack = terms * 4 * 2.0**-53 * (2 + 2 * top) * terms + 3 * h * f.n_pairs
    assert exact - Fraction(slack) <= Fraction(value) <= exact + Fraction(slack)


def test_window_dual_is_dual_feasible_and_matches_its_w():
    # alpha = C on B, alpha_M in [0, C], 0 elsewhere; its w is X^T (C a_B + D_M^T alpha_M)
    X, y, groups = ranking_problem(5, levels=3)
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=0.3)
    w = np.random.default_rng(1).normal(size=X.shape[1])
    s = X @ w
    point = window_dual(f.items, f.C, f.query_layout, s, 0.2)
    assert np.all(point.alpha >= 0) and np.all(point.alpha <= f.C)
    alpha = np.zeros(f.n_pairs)
    index = {tuple(p): k for k, p in enumerate(f.pairs)}
    bound = s[f.pairs[:, 1]] > (s - (1 - 0.2))[f.pairs[:, 0]]  # the sweep's own comparison
    assert np.count_nonzero(bound) == point.n_bound
    alpha[bound] = f.C
    for p, a in zip(point.window, point.alpha, strict=True):
        assert not bound[index[tuple(p)]]
        alpha[index[tuple(p)]] = a
    np.testing.assert_allclose(point.w, f.expansion(alpha), atol=1e-10)
    assert f.dual_objective(alpha) == pytest.approx(
        f.C * point.n_bound + point.alpha.sum() - 0.5 * point.w @ point.w, rel=1e-12
    )


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    levels=st.integers(2, 4),
    tau=st.sampled_from([1e-2, 0.3, math.inf]),
    scale=st.sampled_from([1.0, 1e-3, 1e4]),
    plane=st.booleans(),
)
@example(seed=0, levels=3, tau=0.3, scale=1e4, plane=False)
@example(seed=0, levels=3, tau=0.3, scale=1e4, plane=True)
def test_window_dual_encloses_its_own_expansion(seed, levels, tau, scale, plane):
    # the expansion window_dual encloses with its point (X^T (C a_B) by the pass that gives
    # v_0, or off the product of the 1-slack plane at the same scores, the window's part from
    # its rounded rows) holds the exact X^T (C a_B + D_M^T alpha_M) in rational arithmetic,
    # entry by entry
    X, y, groups = ranking_problem(seed, levels=levels)
    X = X * scale + np.round(X, 0)  # rows of mixed sizes, differences that round
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=0.7 / scale)
    lay = f.query_layout
    s = X @ np.random.default_rng(seed).normal(size=X.shape[1]) / scale
    counts = None
    if plane:  # the plane's pairs s_j > fl(s_i - 1), as the cutting plane counts them
        cnt, cnt_other, _, _ = pair_sums(lay, s - 1.0, s)
        level = ranking_module.level_product(f.items, level_difference(lay))
        counts = ranking_module.counts_products(level, [(cnt - cnt_other).astype(float)])[0]
    if plane:  # the plane's counts are the window's sets' own: v_0 is read off them
        _, coef_bound, window = ranking_module.window_sets(lay, s, tau)
        assert ranking_module._short_pairs(f.items, s, coef_bound, window, counts) is not None
    point = window_dual(f.items, f.C, lay, s, tau, counts=counts)
    hi, lo, err = point.expansion
    coef = [Fraction(f.C) * int(a) for a in point.bound_coef]
    for (i, j), a in zip(point.window, point.alpha, strict=True):
        coef[i] += Fraction(a)
        coef[j] -= Fraction(a)
    for c in range(X.shape[1]):
        exact = sum(k * Fraction(x) for k, x in zip(coef, f.items[:, c], strict=True))
        assert abs(Fraction(hi[c]) + Fraction(lo[c]) - exact) <= Fraction(err[c])


def test_window_dual_reads_no_plane_of_other_scores():
    # a plane counted at other scores than the window's is refused (its counts are not the
    # window's sets' own), and so is one whose columns' squared norms overflowed: v_0 then
    # comes from its own pass, the same point as without it
    X, y, groups = ranking_problem(3, levels=3)
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=0.3)
    lay = f.query_layout
    s = X @ np.random.default_rng(3).normal(size=X.shape[1])
    cnt, cnt_other, _, _ = pair_sums(lay, 0.9 * s - 1.0, 0.9 * s)
    level = ranking_module.level_product(f.items, level_difference(lay))
    other = ranking_module.counts_products(level, [(cnt - cnt_other).astype(float)])[0]
    _, coef_bound, window = ranking_module.window_sets(lay, s, 0.2)
    cnt, cnt_other, _, _ = pair_sums(lay, s - 1.0, s)
    own = ranking_module.counts_products(level, [(cnt - cnt_other).astype(float)])[0]
    overflowed = ranking_module.CountsProduct(f.items, own.coef, own.product, own.squares + np.inf)
    i, j = window[:, 0], window[:, 1]
    for numpy_form in (False, True):  # the compiled check and its numpy form
        with patch.object(ranking_module, "uncompiled", lambda *args, cold=numpy_form: cold):
            assert ranking_module._short_pairs(f.items, s, coef_bound, window, other) is None
            # the plane at the window's own scores is read, unless its columns' norms overflowed
            short = ranking_module._short_pairs(f.items, s, coef_bound, window, own)
            assert np.array_equal(short, s[j] > s[i] - 1.0)
            assert ranking_module._short_pairs(f.items, s, coef_bound, window, overflowed) is None
    point = window_dual(f.items, f.C, lay, s, 0.2, counts=other)
    plain = window_dual(f.items, f.C, lay, s, 0.2)
    assert np.array_equal(point.w, plain.w)
    assert all(np.array_equal(a, b) for a, b in zip(point.expansion, plain.expansion, strict=True))


def test_one_slack_finish_reads_v0_off_its_best_plane():
    # the cutting plane's finish hands its best point's plane to the window, which reads v_0
    # off it: certified, and the optimum the window's own pass gives
    X, y, groups = ranking_problem(6, n_queries=12, per_query=30, d=5, levels=3)
    real = ranking_module._short_pairs
    seen = []

    def spy(*args):
        seen.append(real(*args))
        return seen[-1]

    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=0.01)
    assert f.n_pairs > one_slack.DIRECT_PAIRS
    with patch.object(ranking_module, "_short_pairs", spy):
        sol = f.solve(method="one_slack")
    assert seen and all(read is not None for read in seen)
    assert sol.certificate.passed and sol.certificate.rigorous
    with patch.object(ranking_module, "_short_pairs", lambda *args: None):
        plain = qpsvm.RankingSVM(X, y=y, groups=groups, C=0.01).solve(method="one_slack")
    assert sol.objective == pytest.approx(plain.objective, rel=1e-12)


def test_the_copy_of_x_sums_the_plane_of_w_0(monkeypatch):
    # the compiled copy of a C-ordered float64 X given relevance labels also sums X^T (cnt -
    # cnt') of w = 0 and the columns' squared norms where the planes run (beyond DIRECT_PAIRS
    # pairs, here lowered to none): within gamma_n of the exact sums (rational arithmetic; any
    # order of summation keeps it); at most DIRECT_PAIRS pairs (one window of every pair, no
    # plane), explicit pairs, pair weights, other layouts and the copy before its compile copy
    # X alone
    from qpsvm import _validation
    from qpsvm.formulations import ranking as formulation

    X, y, groups = ranking_problem(7, levels=3)
    for module in (_validation, ranking_sweep):  # the copy and the layout's compiled passes
        monkeypatch.setattr(module, "uncompiled", lambda kernel, rows, budget: False)
    assert qpsvm.RankingSVM(X, y=y, groups=groups).level_sums is None
    monkeypatch.setattr(formulation, "DIRECT_PAIRS", 0)
    monkeypatch.setattr(_validation, "uncompiled", lambda kernel, rows, budget: True)
    assert qpsvm.RankingSVM(X, y=y, groups=groups).level_sums is None
    monkeypatch.setattr(_validation, "uncompiled", lambda kernel, rows, budget: False)
    f = qpsvm.RankingSVM(X, y=y, groups=groups)
    c = f.query_layout.difference
    assert f.level_sums is not None and c is not None
    g = Fraction(gamma(X.shape[0]))
    for j in range(X.shape[1]):
        col = [Fraction(x) for x in X[:, j]]
        exact = sum(x * Fraction(k) for x, k in zip(col, c, strict=True))
        size = sum(abs(x) * abs(Fraction(k)) for x, k in zip(col, c, strict=True))
        squares = sum(x * x for x in col)
        assert abs(Fraction(f.level_sums[0][j]) - exact) <= g * size
        assert abs(Fraction(f.level_sums[1][j]) - squares) <= g * squares
    assert qpsvm.RankingSVM(np.asfortranarray(X), y=y, groups=groups).level_sums is None
    assert qpsvm.RankingSVM(X, pairs=make_pairs(y, groups)).level_sums is None
    weights = np.ones(f.n_pairs)
    assert qpsvm.RankingSVM(X, y=y, groups=groups, pair_weight=weights).level_sums is None


@pytest.mark.parametrize("shape", [(1, 1), (37, 1), (300, 7), (64, 40)])
def test_the_plane_of_w_0_sums_the_same_floats_on_every_path(shape):
    # the copy's pass, the solver's compiled pass and its numpy equivalent (a cold call's):
    # the same floats, one column included (where numpy's own reductions go pairwise)
    from qpsvm._validation import _copy_finite_columns

    rng = np.random.default_rng(shape[0])
    X = rng.normal(size=shape) * 10.0 ** rng.integers(-5, 5, size=shape)
    c = rng.integers(-30, 30, shape[0]).astype(float)
    copied, product, squares = np.empty_like(X), np.zeros(shape[1]), np.zeros(shape[1])
    assert _copy_finite_columns(X, copied, c, product, squares)
    own, own_squares = np.zeros(shape[1]), np.zeros(shape[1])
    ranking_module._columns_squares(X, c, own, own_squares)
    numpy_product, numpy_squares = ranking_module._columns_squares_numpy(X, c)
    assert np.array_equal(copied, X)
    assert np.array_equal(product, own) and np.array_equal(product, numpy_product)
    assert np.array_equal(squares, own_squares) and np.array_equal(squares, numpy_squares)


def test_one_slack_falls_back_to_one_window_of_every_pair(caplog):
    # a cutting plane stopped before its gap reaches STALL_GAP hands over to one window of
    # every pair from its best point: the same certified optimum, without the formed pairs
    X, y, groups = ranking_problem(4, levels=3)
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=100.0)
    with caplog.at_level("WARNING", logger="qpsvm"), planes_only(True):
        sol = f.solve(method="one_slack", max_iter=1)
    assert "solving on the formed pairs" not in caplog.text and f._pairs is None
    assert sol.status == "optimal" and sol.certificate.passed
    assert sol.n_iter == 1 and sol.info["planes"] == 0
    reference = qpsvm.RankingSVM(X, y=y, groups=groups, C=100.0).solve(method="qp")
    assert sol.objective == pytest.approx(reference.objective, rel=2e-9)


def test_one_slack_falls_back_to_the_formed_pairs(caplog):
    # past MAX_WINDOW pairs (here lowered to none) a cutting plane stopped before its gap
    # reaches STALL_GAP hands over to the working set on the formed pairs: the same certified
    # optimum, said at the INFO level (the designed path at large C: no warning)
    X, y, groups = ranking_problem(4, levels=3)
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=100.0)
    with caplog.at_level("INFO", logger="qpsvm"), patch.object(one_slack, "MAX_WINDOW", 0):
        sol = f.solve(method="one_slack", max_iter=1)
    said = [r for r in caplog.records if "solving on the formed pairs" in r.getMessage()]
    assert said and all(r.levelno == logging.INFO for r in said)
    assert sol.status == "optimal" and sol.certificate.passed
    assert sol.info["one_slack_iterations"] == 1
    reference = qpsvm.RankingSVM(X, y=y, groups=groups, C=100.0).solve(method="qp")
    assert sol.objective == pytest.approx(reference.objective, rel=2e-9)


def test_one_slack_needs_relevance_labels():
    X, y, groups = ranking_problem(0)
    pairs = make_pairs(y, groups)
    with pytest.raises(qpsvm.InvalidInputError, match="relevance labels"):
        qpsvm.RankingSVM(X, pairs=pairs).solve(method="one_slack")
    weighted = qpsvm.RankingSVM(X, y=y, groups=groups, pair_weight=np.ones(len(pairs)))
    with pytest.raises(qpsvm.InvalidInputError, match="pair_weight"):
        weighted.solve(method="one_slack")


def test_pairs_from_labels_are_formed_on_demand():
    X, y, groups = ranking_problem(2, levels=3)
    f = qpsvm.RankingSVM(X, y=y, groups=groups)
    assert f._pairs is None and f.n_pairs == len(make_pairs(y, groups))
    assert np.array_equal(f.pairs, make_pairs(y, groups))
    assert f.X.shape == (f.n_pairs, X.shape[1])


def test_dlib_answer_is_bounded_by_the_certified_optimum():
    # dlib's svm_rank_trainer minimises 1/2 ||w||^2 + c mean(pairwise hinge): its answer is
    # feasible, so its objective is at least the certified lower bound, and close to it
    dlib = pytest.importorskip("dlib")
    X, y, groups = ranking_problem(7, n_queries=10, per_query=10, d=5)
    data = dlib.ranking_pairs()
    for q in np.unique(groups):
        pair = dlib.ranking_pair()
        for i in np.flatnonzero(groups == q):
            (pair.relevant if y[i] else pair.nonrelevant).append(dlib.vector(X[i].tolist()))
        data.append(pair)
    trainer = dlib.svm_rank_trainer()
    trainer.c = 10.0
    trainer.epsilon = 1e-6
    df = trainer.train(data)
    w_dlib = np.array([df.weights[i] for i in range(X.shape[1])])
    n_pairs = qpsvm.RankingSVM(X, y=y, groups=groups).n_pairs
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=C_from_dlib_rank(10.0, n_pairs))
    sol = f.solve(method="one_slack")
    assert sol.certificate.dual_objective <= f.objective(w_dlib)
    assert f.objective(w_dlib) == pytest.approx(sol.objective, rel=1e-4)


# the per-pair alpha and xi of the default solve at relevance labels (the 1-slack method),
# formed on first read from the certificate's dual point, in the order of f.pairs


def exact_dual(f, alpha) -> Fraction:
    """``D(alpha) = sum_p alpha_p - 1/2 ||sum_p alpha_p (x_i - x_j)||^2`` in rationals."""
    X = [[Fraction(float(v)) for v in row] for row in np.asarray(f.items)]
    v = [Fraction(0)] * f.n_features
    total = Fraction(0)
    for (i, j), a in zip(f.pairs, alpha, strict=True):
        if a:
            a = Fraction(float(a))
            total += a
            v = [vc + a * (xi - xj) for vc, xi, xj in zip(v, X[i], X[j], strict=True)]
    return total - sum(vc * vc for vc in v) / 2


def assert_certificate_point(f, sol):
    """``sol.alpha`` is the certificate's dual point: in the box, its exact dual value within
    the certified ends (it attains the dual bound the certificate proved), and certified
    alone, with ``w`` and with ``w`` and ``xi`` at the solve's tolerance; ``sol.xi`` are the
    slacks of ``w`` from the data."""
    cert = sol.certificate
    alpha, xi = sol.alpha, sol.xi
    assert alpha.shape == xi.shape == (f.n_pairs,)
    assert np.all(alpha >= 0.0) and np.all(alpha <= f.C)
    assert np.array_equal(xi, f.slacks(sol.w))
    value = exact_dual(f, alpha)
    assert Fraction(cert.dual_objective) <= value <= Fraction(cert.primal_objective)
    if sol.solver == "one_slack":
        # its alpha's own w is the certified point's (the window's expansion); the working
        # set's multipliers on the formed pairs are certified with its w
        assert f.certify(alpha=alpha, tol=cert.tol, reference=False).passed
    assert f.certify(w=sol.w, alpha=alpha, tol=cert.tol, reference=False).passed
    cand = Candidate(w=sol.w, b=0.0, alpha=alpha, xi=xi)
    assert f.certify(cand, tol=cert.tol, reference=False).passed


@settings(max_examples=30, deadline=None)
@given(**LAYOUTS)
@example(seed=0, sizes=[1, 2, 2], levels=2, d=1, log_C=2.0, ties=True, planes=True, ascent=True)
@example(seed=1, sizes=[7, 7, 7], levels=4, d=2, log_C=2.0, ties=True, planes=True, ascent=False)
@example(seed=2, sizes=[7], levels=2, d=3, log_C=0.0, ties=False, planes=False, ascent=True)
@example(seed=3, sizes=[1, 6, 1], levels=3, d=2, log_C=-1.0, ties=False, planes=True, ascent=True)
# handed over to the working set on the formed pairs: its own alpha and xi
@example(
    seed=11520, sizes=[6, 1, 7], levels=4, d=2, log_C=0.0, ties=True, planes=False, ascent=False
)
def test_default_solution_carries_its_certificates_dual_point(
    seed, sizes, levels, d, log_C, ties, planes, ascent
):
    # the default solve of every layout (LAYOUTS) gives alpha and xi per pair on first read
    solved = solve_layout(
        *relevance_problem(seed, sizes, levels, d, ties), 10.0**log_C, planes, ascent
    )
    if solved is None:
        return
    f, sol = solved
    assert sol.method == "one_slack"
    if sol.solver == "one_slack":  # not handed over to the working set on the formed pairs
        # the solve lists no pair: alpha and xi are formed on their first read
        assert f._pairs is None
        assert isinstance(sol.__dict__["_alpha"], FormedOnRead)
        assert isinstance(sol.__dict__["_xi"], FormedOnRead)
    assert_certificate_point(f, sol)


@pytest.mark.parametrize("seed", range(6))
def test_alpha_is_the_optimums_where_its_multipliers_are_unique(seed):
    # normal features, graded relevance: at most d pairs on the margin with independent
    # differences, none at a bound with a zero margin, so the optimum's multipliers are unique
    # (the linear system on the margin pairs): the same bound sets as the rational oracle's and
    # the qp path's, the free multipliers the same to rounding
    X, y, groups = relevance_problem(seed, [6, 6, 6, 6], 3, 3, False)
    C = 0.5
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=C)
    sol = f.solve()
    exact = f.solve(method="exact").info["exact"]
    qp = f.solve(method="qp")
    star = np.array([float(a) for a in exact.alpha])
    free = (star > 0.0) & (star < C)
    Xq = [[Fraction(float(v)) for v in row] for row in X]
    margins = [
        sum((a - b) * c for a, b, c in zip(Xq[i], Xq[j], exact.w, strict=True)) for i, j in f.pairs
    ]
    margin = np.array([r == 1 for r in margins]) & ~free
    assert free.sum() <= f.n_features and not margin.any()  # unique multipliers
    for alpha in (sol.alpha, qp.alpha):
        assert np.array_equal(alpha == 0.0, star == 0.0)
        assert np.array_equal(alpha == C, star == C)
        np.testing.assert_allclose(alpha[free], star[free], rtol=0.0, atol=1e-10 * C)


@pytest.mark.parametrize("levels", [2, 3])
@pytest.mark.parametrize(
    "C, path",
    [(1e-3, "finish"), (1e4, "formed"), (1e-2, "all_pairs_numpy")],
)
def test_each_path_gives_the_certificates_dual_point(levels, C, path):
    # beyond the pairs of one window: the planes' finish (small C), the hand-over to the
    # formed pairs (large C: the working set's own multipliers), and one window of every
    # pair by the numpy code (the compiled pass not taken)
    rng = np.random.default_rng(levels)
    X = rng.normal(size=(600, 4))
    y = rng.integers(0, levels, 600)
    groups = np.repeat(np.arange(30), 20)
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=C)
    uncompiled = patch.object(ranking_fused, "_applies", lambda *args: path != "all_pairs_numpy")
    direct = patch.object(one_slack, "DIRECT_PAIRS", 10**6 if path == "all_pairs_numpy" else 2000)
    # no window of every pair after the planes stall: the pairs formed
    window = patch.object(one_slack, "MAX_WINDOW", 0 if path == "formed" else one_slack.MAX_WINDOW)
    with uncompiled, direct, window:
        sol = f.solve()
    assert f.n_pairs > 2000
    assert sol.method == "one_slack"
    assert (sol.info.get("planes", 0) > 0) == (path == "finish")
    assert (sol.solver == "one_slack") == (path != "formed")
    assert_certificate_point(f, sol)


def assert_sets_per_pair(f, alpha, n_bound, coef, window, window_alpha):
    """``alpha`` per pair has the point's sets: ``C`` on ``n_B`` pairs outside the window with
    ``sum (e_i - e_j) = a_B``, the window's multipliers on its pairs, 0 elsewhere."""
    rows = {(int(i), int(j)): a for (i, j), a in zip(window, window_alpha, strict=True)}
    listed = np.zeros(f.n_items, dtype=np.int64)
    count = 0
    for (i, j), a in zip(map(tuple, f.pairs), alpha, strict=True):
        if (i, j) in rows:
            assert a == rows[(i, j)]
        elif a == f.C:
            count += 1
            listed[i] += 1
            listed[j] -= 1
        else:
            assert a == 0.0
    assert count == n_bound and np.array_equal(listed, coef)


def window_problem():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 3))
    f = qpsvm.RankingSVM(X, y=rng.integers(0, 3, 60), groups=np.repeat(np.arange(6), 10), C=0.1)
    return f, 0.9 * f.solve().w


def test_a_compiled_window_point_is_read_off_the_pass_scores():
    # the compiled certificate's dual point of a window tau < inf (w off the optimum, so the
    # windows read off its scores are tried): per pair, its sets are the pass's n_B, a_B and
    # window multipliers, and its exact dual value is above the pass's bound
    f, w = window_problem()
    args = ranking_fused._arguments(
        f.items, f.C, f.query_layout, w, ranking_module.WINDOW_TAUS, ranking_module.FUSED, 0.0
    )
    out = ranking_fused._certificate(*args)
    best, tau = out[7], out[8]
    assert np.isfinite(tau)
    alpha = ranking_module.pair_multipliers(f, ranking_module.fused_point(f, w, best, tau))
    assert_sets_per_pair(f, alpha, *best)
    assert exact_dual(f, alpha) >= Fraction(out[3])


@pytest.mark.parametrize("tau", [1e-2, 0.3, math.inf])
@pytest.mark.parametrize("extra", [False, True])
def test_a_window_point_per_pair_has_its_sets(tau, extra):
    # window_dual's point off the optimum, every seventh pair joining its window when extra
    # (those of B among them moved into it): per pair, the point's n_B, a_B and multipliers
    f, w = window_problem()
    scores = f.items @ w
    rows = f.pairs[::7] if extra else None
    point = window_dual(f.items, f.C, f.query_layout, scores, tau, extra=rows, start=w)
    alpha = ranking_module.pair_multipliers(f, point)
    assert_sets_per_pair(f, alpha, point.n_bound, point.bound_coef, point.window, point.alpha)


def test_the_formed_fields_pickle_copy_and_replace():
    # the fields formed on read behave as the arrays they form: repr reads neither, pickling,
    # dataclasses.replace and the certificate of the solution see the formed arrays; the
    # certificate of the solution before they are read forms neither (the sweeps certify w
    # without listing a pair, on a problem built afresh as on the solved one)
    X, y, groups = relevance_problem(0, [6, 6, 6], 3, 3, False)
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=1.0)
    sol = f.solve()
    assert "alpha" not in repr(sol) and isinstance(sol.__dict__["_alpha"], FormedOnRead)
    fresh = qpsvm.RankingSVM(X, y=y, groups=groups, C=1.0)
    assert fresh.certify(sol).passed and f.certify(sol).passed
    assert fresh._pairs is None and f._pairs is None
    assert sol.given("alpha") is None and sol.given("xi") is None
    back = pickle.loads(pickle.dumps(sol))
    assert np.array_equal(back.alpha, sol.alpha) and np.array_equal(back.xi, sol.xi)
    moved = dataclasses.replace(sol, objective=0.0)
    assert moved.alpha is sol.alpha and moved.objective == 0.0
    assert f.certify(sol).passed
