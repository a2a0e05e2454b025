"""The grouped ranking certificate's compiled pass (qpsvm/verify/ranking_fused.py): the same
rigorous bounds as the numpy certificate, enclosing the exact rational optimum."""

from __future__ import annotations

from fractions import Fraction
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm.formulations.ranking import make_pairs
from qpsvm.verify import ranking, ranking_fused
from qpsvm.verify.certificate import GOOD_ENOUGH
from qpsvm.verify.ranking import WindowDual, certify_grouped, grouped_dual_lower
from qpsvm.verify.ranking_fused import fused_certificate


@pytest.fixture(autouse=True)
def compiled_pass(monkeypatch):
    """The compiled pass runs whatever the compile cache holds (it is otherwise compiled only
    once the numpy certificate has certified :data:`~qpsvm.verify.ranking_fused.FUSED_ITEMS`
    items in the process)."""
    monkeypatch.setattr(ranking_fused, "uncompiled", lambda *args: False)


def _problem(seed, n_queries, per_query, d, levels, shift, scale):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * per_query, d))
    utility = X @ rng.normal(size=d) + 0.7 * rng.normal(size=len(X))
    cuts = np.quantile(utility, np.linspace(0, 1, levels + 1)[1:-1])
    y = np.digitize(utility, cuts)
    return scale * X + shift, y, np.repeat(np.arange(n_queries), per_query)


def _fused(f, w, tol=1e-9):
    return fused_certificate(
        f.items, f.C, f.query_layout, w, tol, ranking.WINDOW_TAUS, ranking.FUSED, GOOD_ENOUGH * tol
    )


def _numpy_certificate(f, w):
    with patch.object(ranking, "fused_certificate", lambda *args: None):
        return certify_grouped(f, w)


@settings(max_examples=30, deadline=None)  # the first example compiles the pass
@given(
    seed=st.integers(0, 2**16),
    queries=st.integers(2, 8),
    per_query=st.integers(2, 12),
    d=st.integers(1, 6),
    levels=st.sampled_from([2, 3, 4]),  # binary and graded relevance
    log_C=st.sampled_from([-3.0, -1.0, 0.0, 1.0, 3.0]),
    data=st.sampled_from([(0.0, 1.0), (1e3, 1.0), (0.0, 1e-3), (0.0, 1e3)]),
    eps=st.sampled_from([0.0, 0.0, 1e-12, 1e-6]),
)
@example(seed=0, queries=2, per_query=3, d=1, levels=2, log_C=-3.0, data=(1e3, 1.0), eps=0.0)
@example(seed=0, queries=20, per_query=10, d=5, levels=2, log_C=-1.5, data=(0.0, 1.0), eps=0.0)
@example(seed=3, queries=4, per_query=6, d=2, levels=4, log_C=3.0, data=(1e3, 1.0), eps=0.0)
@example(seed=0, queries=2, per_query=4, d=1, levels=4, log_C=-3.0, data=(1e3, 1.0), eps=0.0)
def test_compiled_bounds_are_the_numpy_ones_and_enclose_the_exact_optimum(
    seed, queries, per_query, d, levels, log_C, data, eps
):
    # where the compiled pass settles the certificate, its primal end is the numpy
    # certificate's to the bit, its dual end is the numpy evaluation of its own dual point to
    # the bit (exactly feasible: C on the pairs short of the window, [0, C] inside it, the
    # window's pairs pairs of the problem), and both certificates enclose the rational
    # optimum P* (compared exactly) and pass or fail together
    X, y, groups = _problem(seed, queries, per_query, d, levels, *data)
    try:
        f = qpsvm.RankingSVM(X, y=y, groups=groups, C=10.0**log_C)
    except qpsvm.InvalidInputError:
        return  # no query has two relevance levels: no pair
    w = f.solve(method="one_slack").w + eps * np.random.default_rng(seed).normal(size=d)
    fused = _fused(f, w)
    reference = _numpy_certificate(f, w)
    cert = certify_grouped(f, w)
    optimum = qpsvm.RankingSVM(X, y=y, groups=groups, C=f.C).solve(method="exact")
    exact = optimum.info["exact"].objective
    for c in (reference, cert):
        assert Fraction(c.dual_objective) <= exact <= Fraction(c.primal_objective)
    if fused is None:  # the numpy certificate ran
        assert cert.primal_objective == reference.primal_objective
        assert cert.dual_objective == reference.dual_objective
        return
    assert cert.passed == reference.passed
    assert fused.bounds.primal == cert.primal_objective == reference.primal_objective
    assert fused.bounds.dual == cert.dual_objective
    assert Fraction(fused.bounds.dual) <= exact <= Fraction(fused.bounds.primal)
    assert np.all(fused.alpha >= 0.0) and np.all(fused.alpha <= f.C)
    pairs = {tuple(p) for p in make_pairs(y, groups).tolist()}
    assert all(tuple(p) in pairs for p in fused.window.tolist())
    # the numpy evaluation of the same point: the same estimate; the compiled bound leaves out
    # the items whose terms are exactly zero (the numpy one adds subnormal weights for them)
    point = WindowDual(fused.n_bound, fused.bound_coef, fused.window, fused.alpha, w)
    value, estimate, _ = grouped_dual_lower(f.items, f.C, point, dot2=False)
    assert estimate == fused.bounds.dual_float and fused.bounds.dual >= value


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    sizes=st.lists(st.integers(1, 9), min_size=1, max_size=5),
    levels=st.integers(2, 4),
    d=st.integers(1, 4),
    log_C=st.sampled_from([-2.0, 0.0, 2.0]),
    ties=st.booleans(),
)
@example(seed=0, sizes=[1, 2, 2], levels=2, d=1, log_C=2.0, ties=True)
def test_compiled_solve_is_the_exact_optimum(seed, sizes, levels, d, log_C, ties):
    # one window of every pair from w = 0 and its certificate in one compiled pass
    # (method="one_slack" on a problem of at most 2000 pairs), binary and graded relevance,
    # tied items: the certificate passes, encloses the rational optimum P* and bounds the
    # distance to w*, and it is the numpy certificate of the same w (primal end equal, dual
    # end at least as high)
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    # ties: small integer features, so items repeat within and across queries
    X = rng.integers(-1, 2, size=(n, d)).astype(float) if ties else rng.normal(size=(n, d))
    groups = np.repeat(np.arange(len(sizes)), sizes)
    try:
        f = qpsvm.RankingSVM(X, y=rng.integers(0, levels, n), groups=groups, C=10.0**log_C)
    except qpsvm.InvalidInputError:
        return  # no query has two relevance levels: no pair
    sol = f.solve(method="one_slack")
    cert = sol.certificate
    assert sol.status == "optimal" and cert.passed and cert.rigorous
    optimum = f.solve(method="exact").info["exact"]
    assert Fraction(cert.dual_objective) <= optimum.objective <= Fraction(cert.primal_objective)
    dist2 = sum((Fraction(a) - b) ** 2 for a, b in zip(sol.w, optimum.w, strict=True))
    assert dist2 <= Fraction(cert.distance_bound) ** 2
    done = ranking.certify_all_pairs(f, np.zeros(d))
    if done is not None:  # the compiled pass settled it: the solve's answer
        assert np.array_equal(done[0], sol.w)
        reference = _numpy_certificate(f, sol.w)
        assert done[1].primal_objective == reference.primal_objective


def test_the_small_grid_point_takes_the_compiled_pass():
    # the regime grid's small ranking point (20 queries x 10 items, binary relevance, dlib's
    # c = 10): the compiled pass settles the certificate of the exact solution, with the
    # numpy certificate's primal end and, for the same dual point, a dual end within the
    # rounding floor of the numpy one (whose window encloses its expansion in two parts, the
    # pairs short of the window's and the window's rows')
    X, y, groups = _problem(0, 20, 10, 5, 2, 0.0, 1.0)
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=10.0 / 300)
    w = f.solve(method="one_slack").w
    fused = _fused(f, w)
    reference = _numpy_certificate(f, w)
    assert fused is not None and reference.passed
    assert fused.bounds.primal == reference.primal_objective
    assert abs(fused.bounds.dual - reference.dual_objective) <= reference.rounding_floor
    assert f.certify(w=w).primal_objective == reference.primal_objective


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_window_rows_by_the_compiled_gather_are_numpys_to_the_bit(seed):
    # each entry of a pair's row is one subtraction x_i - x_j in either form: the same floats,
    # over magnitudes far apart (the difference rounds), repeated pairs and both orders
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(30, 4)) * 10.0 ** rng.integers(-8, 8, size=(30, 4))
    window = rng.integers(0, 30, size=(17, 2))
    expected = X[window[:, 0]] - X[window[:, 1]]
    Z = np.empty_like(expected)
    ranking_fused.pair_differences(X, window.astype(np.intp), Z)
    assert np.array_equal(Z, expected)
    called = []

    def compiled(*args):
        called.append(True)
        return ranking_fused.pair_differences(*args)

    with (
        patch.object(ranking, "uncompiled", lambda *args: False),
        patch.object(ranking, "pair_differences", compiled),
    ):
        assert np.array_equal(ranking._window_rows(X, window), expected)
        assert called  # a dense C-contiguous X takes the compiled gather
        # a Fortran-ordered X takes numpy's
        assert np.array_equal(ranking._window_rows(np.asfortranarray(X), window), expected)
        assert len(called) == 1


def _exact_primal(f, w):
    """``1/2 ||w||^2 + C sum_p max(0, 1 - w . (x_i - x_j))`` in rational arithmetic."""
    w = [Fraction(v) for v in w]
    items = [[Fraction(v) for v in row] for row in f.items.tolist()]
    score = [sum((a * b for a, b in zip(row, w, strict=True)), Fraction(0)) for row in items]
    hinge = sum(max(Fraction(0), 1 - score[i] + score[j]) for i, j in f.pairs.tolist())
    return sum(v * v for v in w) / 2 + Fraction(f.C) * hinge


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    queries=st.integers(2, 6),
    per_query=st.integers(3, 10),
    d=st.integers(1, ranking_fused.ACTIVE_FEATURES),
    levels=st.sampled_from([2, 3, 4]),  # binary and graded relevance, ties within levels
    log_C=st.sampled_from([-3.0, -1.0, 0.0, 1.0, 2.0]),
    data=st.sampled_from([(0.0, 1.0), (1e3, 1.0), (0.0, 1e-3), (0.0, 1e3)]),
)
@example(seed=0, queries=20, per_query=10, d=5, levels=2, log_C=-1.5, data=(0.0, 1.0))
def test_the_active_set_finds_the_exact_optimum(seed, queries, per_query, d, levels, log_C, data):
    # items in general position (continuous features, shifted and scaled), at most
    # ACTIVE_FEATURES features: the one-window solve of a small problem (every pair from
    # w = 0) takes the sets of the primal active-set method, and its point is the exact
    # optimum: its certificate encloses the rational optimum P*, the distance to the rational
    # w* is within its bound, and the exact objective of the float point is within tol of P*
    X, y, groups = _problem(seed, queries, per_query, d, levels, *data)
    try:
        f = qpsvm.RankingSVM(X, y=y, groups=groups, C=10.0**log_C)
    except qpsvm.InvalidInputError:
        return  # no query has two relevance levels: no pair
    args = ranking_fused._arguments(
        f.items, f.C, f.query_layout, np.zeros(d), ranking.WINDOW_TAUS, ranking.FUSED, 0.0
    )
    w, settled, how, *_ = ranking_fused._solve_all_pairs(*args)
    if not settled:  # the sets' check in floating point failed: so did the ascent's
        problem, start, fixed = args
        without = (problem, start, (*fixed[:5], 0, *fixed[6:]))  # the active set switched off
        assert not ranking_fused._solve_all_pairs(*without)[1]
        return
    assert how == ranking_fused.ACTIVE
    cert = f.certify(w=w)
    assert cert.passed and cert.rigorous
    optimum = f.solve(method="exact").info["exact"]
    assert Fraction(cert.dual_objective) <= optimum.objective <= Fraction(cert.primal_objective)
    dist2 = sum((Fraction(a) - b) ** 2 for a, b in zip(w, optimum.w, strict=True))
    assert dist2 <= Fraction(cert.distance_bound) ** 2
    excess = _exact_primal(f, w) - optimum.objective
    assert 0 <= excess <= Fraction(cert.tol) * max(1, abs(optimum.objective))
    if f.solve(method="one_slack").info.get("sets") is not None:  # the compiled pass settled
        assert f.solve(method="one_slack").info["sets"] == "active_set"


def test_the_small_grid_point_takes_the_active_set(monkeypatch):
    # the regime grid's small ranking point (20 queries x 10 items, d = 5): the one-window
    # solve takes the active set's sets; without it (ACTIVE_FEATURES = 0) the ascent's do not
    # settle here and the numpy window's smoothed Newton steps solve it: both answers are
    # certified, and their enclosures of P* overlap
    X, y, groups = _problem(0, 20, 10, 5, 2, 0.0, 1.0)
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=10.0 / 300)
    fast = f.solve(method="one_slack")
    monkeypatch.setattr(ranking_fused, "ACTIVE_FEATURES", 0)
    slow = f.fresh_copy().solve(method="one_slack")
    assert fast.info["sets"] == "active_set" and "sets" not in slow.info
    a, b = fast.certificate, slow.certificate
    assert a.passed and b.passed
    assert max(a.dual_objective, b.dual_objective) <= min(a.primal_objective, b.primal_objective)
