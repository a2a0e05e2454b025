"""Composed ranking problems (``RankingSVM(loss=, penalty=)``): every combination solved exactly
and certified, against the rational oracle (squared hinge + L2 is a hard margin with one slack
coordinate per pair), an LP solver (hinge + L1 is a linear program), an independent CVXPY
statement on the formed differences, and the mirrored binary problem; certificates enclose the
optimum, reject perturbed answers and bound the suboptimality of any candidate within 2x;
intercepts are refused with the reason; the hinge + L2 default is today's ``RankingSVM``."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from conftest import composed_optimum
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import qpsvm
from qpsvm.exceptions import InvalidInputError

COMBINATIONS = [
    (loss, pen)
    for loss, pen in itertools.product(("hinge", "squared_hinge"), ("l2", "l1", "l1_l2"))
    if (loss, pen) != ("hinge", "l2")
]


def ranking_data(seed: int, n: int = 24, d: int = 4, queries: int = 4):
    """Items with graded relevance from a noisy linear score, in ``queries`` groups."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    rel = np.digitize(X @ rng.normal(size=d) + rng.normal(size=n), [-1.0, 0.0, 1.0])
    return X, rel, np.repeat(np.arange(queries), n // queries)


@pytest.fixture(scope="module")
def data():
    return ranking_data(0)


def independent_optimum(Z, weights, C, loss, penalty, l1_ratio=0.5):
    """The problem stated from scratch on the formed differences ``Z`` and solved by Clarabel
    at tight tolerances (no qpsvm code)."""
    return composed_optimum(Z, weights, C, loss, penalty, l1_ratio=l1_ratio)


@pytest.mark.parametrize(("loss", "penalty"), COMBINATIONS)
def test_every_combination_is_exact(data, loss, penalty):
    X, rel, groups = data
    f = qpsvm.RankingSVM(X, y=rel, groups=groups, C=0.5, loss=loss, penalty=penalty)
    assert isinstance(f, qpsvm.ComposedRanking)
    sol = f.solve()
    cert = sol.certificate
    assert cert.passed and cert.rigorous and cert.relative_gap <= 1e-9
    reference = independent_optimum(f.X.materialize(), f.sample_weight, 0.5, loss, penalty)
    assert sol.objective == pytest.approx(reference, rel=1e-8)
    # the CVXPY problem qpsvm built states the same objective (Newton's method solves none)
    if sol.solver == "newton":
        f.solve(method="qp")
    assert f.problem.value == pytest.approx(sol.objective, rel=1e-7)
    assert sol.b == 0.0 and sol.xi.shape == (f.n_pairs,)
    # a perturbed w is rejected, with a gap between its true suboptimality and twice it
    w = sol.w * 1.01 + 0.01
    other = f.certify(w=w)
    true = f.objective(w) - sol.objective
    assert not other.passed
    floor = 1e-9 * max(1.0, sol.objective)
    assert true - floor <= other.gap <= 2.0 * true + floor
    assert (other.distance_bound is None) == (penalty == "l1")


def test_squared_hinge_l2_equals_the_rational_oracle():
    """``min 1/2||w||^2 + C sum_p xi_p^2`` s.t. ``z_p.w >= 1 - xi_p`` is the hard margin on the
    rows ``(z_p, e_p / sqrt(2C))`` with weights ``(w, sqrt(2C) xi)``: with ``C = 2`` the rows
    are rational, and the oracle's exact optimum must lie in the certified enclosure."""
    rng = np.random.default_rng(3)
    X = rng.integers(-8, 9, size=(12, 3)) / 4.0  # dyadic: the differences are exact floats
    rel = rng.integers(0, 3, size=12)
    f = qpsvm.RankingSVM(X, y=rel, groups=np.repeat([0, 1], 6), C=2.0, loss="squared_hinge")
    sol = f.solve()
    Z = f.X.materialize()
    rows = np.hstack([Z, np.eye(len(Z)) / 2.0])  # 1 / sqrt(2C) = 1/2, exact
    mirrored = np.vstack([rows, -rows])
    labels = np.r_[np.ones(len(Z)), -np.ones(len(Z))]
    oracle = qpsvm.HardMargin(mirrored, labels, fit_intercept=False).solve(method="exact")
    optimum = oracle.info["exact"].objective
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)


def test_hinge_l1_equals_the_linear_program(data):
    """Hinge + L1 is the LP ``min sum_j (p_j + q_j) + C sum_p s_p xi_p`` with ``w = p - q``,
    solved by HiGHS."""
    X, rel, groups = data
    C = 0.5
    f = qpsvm.RankingSVM(X, y=rel, groups=groups, C=C, loss="hinge", penalty="l1")
    sol = f.solve()
    Z = f.X.materialize()
    m, d = Z.shape
    cost = np.r_[np.ones(2 * d), C * f.sample_weight]
    # -(Z p - Z q) - xi <= -1
    A = np.hstack([-Z, Z, -np.eye(m)])
    lp = linprog(cost, A_ub=A, b_ub=-np.ones(m), bounds=(0, None), method="highs")
    assert lp.status == 0
    assert sol.certificate.lower <= lp.fun * (1 + 1e-9)
    assert sol.objective == pytest.approx(lp.fun, rel=1e-9)


@pytest.mark.parametrize(("loss", "penalty"), COMBINATIONS)
def test_ranking_is_the_mirrored_binary_problem(data, loss, penalty):
    """A ranking problem with ``C = 2c`` is the binary problem without intercept on the
    differences and their negatives with ``C = c`` (:func:`qpsvm.conventions.C_from_pair_svm`):
    each pair's loss counted twice."""
    X, rel, groups = data
    f = qpsvm.RankingSVM(X, y=rel, groups=groups, C=1.0, loss=loss, penalty=penalty)
    Z = f.X.materialize()
    binary = qpsvm.SoftMarginPrimal(
        np.vstack([Z, -Z]),
        np.r_[np.ones(len(Z)), -np.ones(len(Z))],
        0.5,
        loss=loss,
        penalty=penalty,
        intercept="none",
    )
    a, b = f.solve(), binary.solve()
    assert a.objective == pytest.approx(b.objective, rel=1e-9)
    assert a.certificate.lower <= b.certificate.upper
    assert b.certificate.lower <= a.certificate.upper


def test_defaults_are_todays_ranking_svm(data):
    """hinge + L2 (the defaults, or given) is RankingSVM itself, with the same solution."""
    X, rel, groups = data
    plain = qpsvm.RankingSVM(X, y=rel, groups=groups, C=0.5)
    given_ = qpsvm.RankingSVM(
        X, y=rel, groups=groups, C=0.5, loss="hinge", penalty="l2", intercept="none"
    )
    assert type(plain) is type(given_) is qpsvm.RankingSVM
    assert plain.query_layout is not None  # the 1-slack layout of relevance labels is kept
    a, b = plain.solve(), given_.solve()
    np.testing.assert_array_equal(a.w, b.w)
    # the generic route states the same problem
    generic = qpsvm.ComposedRanking(X, y=rel, groups=groups, C=0.5)
    assert generic.solve().objective == pytest.approx(a.objective, rel=1e-9)


def test_dual_coordinate_descent_agrees(data):
    X, rel, groups = data
    f = qpsvm.RankingSVM(X, y=rel, groups=groups, C=0.5, loss="squared_hinge")
    assert "dcd" in f.methods
    a, b = f.solve(method="qp"), f.solve(method="dcd")
    assert b.certificate.passed and b.certificate.rigorous
    assert a.objective == pytest.approx(b.objective, rel=1e-9)
    assert "dcd" not in qpsvm.RankingSVM(X, y=rel, groups=groups, penalty="l1").methods


def test_pair_weights_and_new_items(data):
    """Repeating a pair equals weighting it by 2; scores of new items are ``X w``."""
    X, rel, groups = data
    pairs = qpsvm.formulations.ranking.make_pairs(rel, groups)
    weights = np.ones(len(pairs))
    weights[:5] = 2.0
    repeated = np.vstack([pairs, pairs[:5]])
    a = qpsvm.RankingSVM(X, pairs, pair_weight=weights, loss="squared_hinge", penalty="l1")
    b = qpsvm.RankingSVM(X, repeated, loss="squared_hinge", penalty="l1")
    sa, sb = a.solve(), b.solve()
    assert sa.objective == pytest.approx(sb.objective, rel=1e-8)
    np.testing.assert_allclose(a.decision_function(X[:3], sa), X[:3] @ sa.w)
    np.testing.assert_allclose(a.predict(X[:3], sa.w), X[:3] @ sa.w)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    combination=st.sampled_from(COMBINATIONS),
    C=st.sampled_from([0.01, 1.0, 100.0]),
    scale=st.sampled_from([1e-3, 0.1, 1.0]),
)
@example(seed=0, combination=("hinge", "l1"), C=100.0, scale=1e-3)
def test_certificate_encloses_the_optimum_for_any_candidate(seed, combination, C, scale):
    """For a random candidate and a near-optimal one: the certified interval holds ``P*``
    (it meets the optimum's own interval), the gap is at least the true suboptimality and at
    most twice it (plus the optimum's certified floor), and the candidate is rejected."""
    loss, penalty = combination
    X, rel, groups = ranking_data(seed, n=12, d=3, queries=2)
    f = qpsvm.RankingSVM(X, y=rel, groups=groups, C=C, loss=loss, penalty=penalty)
    best = f.solve()
    rng = np.random.default_rng(seed)
    for w in (rng.normal(size=3), best.w + scale * rng.normal(size=3)):
        cert = f.certify(w=w)
        assert cert.rigorous
        assert cert.primal_objective == pytest.approx(f.objective(w), rel=1e-12)
        assert cert.lower <= best.certificate.upper
        assert best.certificate.lower <= cert.upper
        true = f.objective(w) - best.objective
        floor = 2e-9 * max(1.0, abs(best.objective))
        assert true - floor <= cert.gap <= 2.0 * true + floor
        if true > 1e-6 * max(1.0, abs(best.objective)):
            assert not cert.passed


def test_intercepts_are_refused_with_the_reason(data):
    X, rel, groups = data
    for mode in ("free", "regularized", True):
        with pytest.raises(InvalidInputError, match="cancels in every difference"):
            qpsvm.RankingSVM(X, y=rel, groups=groups, intercept=mode)
        with pytest.raises(InvalidInputError, match="cancels in every difference"):
            qpsvm.RankingSVM(X, y=rel, groups=groups, loss="squared_hinge", intercept=mode)
    with pytest.raises(InvalidInputError, match="intercept"):
        qpsvm.RankingSVM(X, y=rel, groups=groups, intercept="maybe")
    assert type(qpsvm.RankingSVM(X, y=rel, groups=groups, intercept=False)) is qpsvm.RankingSVM


def test_bad_input_gives_typed_errors(data):
    X, rel, groups = data
    with pytest.raises(InvalidInputError, match="loss"):
        qpsvm.RankingSVM(X, y=rel, groups=groups, loss="logistic")
    with pytest.raises(InvalidInputError, match="loss"):
        qpsvm.RankingSVM(X, y=rel, groups=groups, loss="epsilon_insensitive")
    with pytest.raises(InvalidInputError, match="penalty"):
        qpsvm.RankingSVM(X, y=rel, groups=groups, penalty="l3")
    with pytest.raises(InvalidInputError, match="l1_ratio"):
        qpsvm.RankingSVM(X, y=rel, groups=groups, penalty="l1_l2", l1_ratio=0.0)
    with pytest.raises(InvalidInputError, match="pairs"):
        qpsvm.RankingSVM(X, pairs=[[0, 0]], loss="squared_hinge")
    f = qpsvm.RankingSVM(X, y=rel, groups=groups, loss="squared_hinge")
    with pytest.raises(InvalidInputError, match="no intercept"):
        f.certify(w=np.zeros(X.shape[1]), b=1.0)
    with pytest.raises(InvalidInputError, match="w"):
        f.certify(w=np.zeros(X.shape[1] + 1))
    l1 = qpsvm.RankingSVM(X, y=rel, groups=groups, penalty="l1")
    with pytest.raises(InvalidInputError, match="pass w"):
        l1.certify(alpha=np.zeros(l1.n_pairs))


def _slope(t, a, b, r, g, W):
    return a + b * t - 2.0 * np.sum(W * g * np.maximum(0.0, r - t * g))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(1, 30), ties=st.booleans(), free=st.booleans())
@example(seed=0, n=1, ties=True, free=False)
@example(seed=0, n=1, ties=False, free=True)
@example(seed=1, n=8, ties=True, free=True)
def test_newton_line_search_is_the_exact_minimiser(seed, n, ties, free):
    """exact_step's ``t`` minimises the convex piecewise quadratic of its slope on ``t >= 0``:
    the slope changes sign there (or is nonnegative at 0), against the slope evaluated on both
    sides of ``t``, kinks at 0 and ties between kinks included. ``free``: a direction
    along a free intercept alone, no penalty term (``a = b = 0``), one row that never leaves the
    sum (bounded below), pieces of zero slope where no row is in the sum."""
    from qpsvm.solvers.newton import exact_step

    rng = np.random.default_rng(seed)
    r, g = rng.normal(size=n), rng.normal(size=n)
    if ties:  # rows on the margin, equal kinks, rows that do not move
        r[: n // 2] = 0.0
        g[n // 3 : n // 2 + 1] = 0.0
        g[-n // 3 :] = g[-1]
        r[-n // 3 :] = r[-1]
    W = rng.uniform(0.1, 2.0, size=n)
    a, b = rng.normal() * 5.0, rng.uniform(0.1, 3.0)
    if free:
        a, b = 0.0, 0.0
        g[-1] = -abs(g[-1]) - 0.5  # joins the sum (or stays in it) for good
    t = exact_step(a, b, r, g, W)
    assert t >= 0.0
    scale = abs(a) + b * (1.0 + t) + 2.0 * np.sum(W * np.abs(g) * (np.abs(r) + t * np.abs(g)))
    eps = 1e-9 * max(1.0, t)
    assert _slope(t + eps, a, b, r, g, W) >= -1e-12 * scale
    if t > 0.0:
        assert _slope(t - eps, a, b, r, g, W) <= 1e-12 * scale


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    log_C=st.sampled_from([-2.0, 0.0, 2.0]),
    weighted=st.booleans(),
    d=st.integers(1, 5),
)
@example(seed=0, log_C=2.0, weighted=True, d=1)
def test_newton_is_the_optimum_of_the_squared_hinge(seed, log_C, weighted, d):
    """method="newton" (the default of the squared hinge with the L2 penalty) reaches the
    optimum the full CVXPY problem certifies, for ranking pairs from labels or weighted pairs,
    and for the binary problem without intercept; both certificates pass at 1e-9."""
    X, rel, groups = ranking_data(seed, d=d)
    C = 10.0**log_C
    if weighted:
        pairs = qpsvm.RankingSVM(X, y=rel, groups=groups).pairs
        weights = np.random.default_rng(seed).uniform(0.5, 2.0, size=len(pairs))
        f = qpsvm.RankingSVM(X, pairs, C=C, pair_weight=weights, loss="squared_hinge")
    else:
        f = qpsvm.RankingSVM(X, y=rel, groups=groups, C=C, loss="squared_hinge")
    assert f.default_method() == "newton"
    sol = f.solve()
    reference = f.fresh_copy().solve(method="qp")
    assert sol.solver == "newton" and sol.certificate.passed and reference.certificate.passed
    assert sol.objective == pytest.approx(reference.objective, rel=2e-9)
    assert sol.certificate.lower <= reference.certificate.upper
    assert reference.certificate.lower <= sol.certificate.upper
    y = np.where(rel >= 1, 1, -1)
    if len(np.unique(y)) == 2:
        g = qpsvm.SoftMarginPrimal(X, y, C=C, loss="squared_hinge", intercept="none")
        ours = g.solve(method="newton")
        theirs = g.fresh_copy().solve(method="qp")
        assert ours.certificate.passed
        assert ours.objective == pytest.approx(theirs.objective, rel=2e-9)


def test_newton_is_refused_where_it_does_not_apply(data):
    X, rel, groups = data
    for loss, penalty in [("hinge", "l1"), ("squared_hinge", "l1")]:
        f = qpsvm.RankingSVM(X, y=rel, groups=groups, loss=loss, penalty=penalty)
        with pytest.raises(InvalidInputError, match="Newton's method serves"):
            f.solve(method="newton")
    f = qpsvm.RankingSVM(X, y=rel, groups=groups, loss="squared_hinge")
    with pytest.raises(InvalidInputError, match="uses no CVXPY solver"):
        f.solve(method="newton", solver="CLARABEL")
    wide = qpsvm.SoftMarginPrimal(
        np.eye(6, 5001), [1, -1] * 3, loss="squared_hinge", intercept="none"
    )
    with pytest.raises(InvalidInputError, match="method='dcd'"):
        wide.solve(method="newton")
