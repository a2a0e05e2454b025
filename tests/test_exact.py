"""The exact rational oracle, ``f.solve(method="exact")``, checked by exact duality.

Each optimum is verified here independently of the oracle's own checks: the dual point is
exactly feasible and the primal objective of ``w*`` (recomputed from the data as rationals)
equals the dual objective of ``alpha*``, which proves optimality by weak duality.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import qpsvm
from qpsvm.exact.rational import to_rational
from qpsvm.solvers.exact import multiclass_qp
from tests.conftest import random_problem, ranking_problem


def exact_binary_duality(f, opt) -> None:
    """``alpha*`` exactly dual feasible and ``P(w*, b*) = D(alpha*)`` in rationals."""
    if isinstance(f, qpsvm.RankingSVM):
        # the exact differences x_i - x_j (their float64 values are rounded)
        items = to_rational(f.items)
        Z = items[f.pairs[:, 0]] - items[f.pairs[:, 1]]
    else:
        Z = to_rational(f.X)
    y = to_rational(f.y)
    m = to_rational(f.margin)
    a = opt.alpha
    assert all(v >= 0 for v in a)
    if np.isfinite(f.C):
        caps = [Fraction(f.C) * Fraction(float(s)) for s in f.sample_weight]
        assert all(v <= c for v, c in zip(a, caps, strict=True))
    if f.fit_intercept:
        assert sum(a * y) == 0
    assert all(opt.w == Z.T.dot(a * y))
    margins = y * (Z.dot(opt.w) + opt.b)
    norm2 = opt.w.dot(opt.w)
    if np.isfinite(f.C):
        slack = [max(Fraction(0), mi - g) for mi, g in zip(m, margins, strict=True)]
        primal = norm2 / 2 + sum(c * s for c, s in zip(caps, slack, strict=True))
    else:
        assert all(margins >= m)
        primal = norm2 / 2
    assert primal == m.dot(a) - norm2 / 2 == opt.objective


def test_known_optimum():
    # the lecture's 1-D example: w* = 1, b* = -2, P* = 1/2
    f = qpsvm.SoftMarginPrimal([[0.0], [1.0], [3.0], [4.0]], [0, 0, 1, 1], C=10.0)
    opt = f.solve(method="exact").info["exact"]
    assert list(opt.w) == [1] and opt.b == -2 and opt.objective == Fraction(1, 2)
    exact_binary_duality(f, opt)


@pytest.mark.parametrize(
    "make",
    [
        lambda X, y: qpsvm.SoftMarginPrimal(X, y, C=0.7),
        lambda X, y: qpsvm.SoftMarginPrimal(X, y, C=3.0, fit_intercept=False),
        lambda X, y: qpsvm.SoftMarginPrimal(
            X,
            y,
            C=2.0,
            sample_weight=np.linspace(0.0, 2.0, len(y)),
            margin=np.r_[0.5, 1, 1.5].repeat(len(y))[: len(y)],
        ),
        lambda X, y: qpsvm.SoftMarginDual(X, y, C=1.3),
        lambda X, y: qpsvm.HardMargin(X + 4.0 * np.where(y > 0, 1, -1)[:, None], y),
        lambda X, y: qpsvm.SoftMarginPrimal(X + 1e3, y, C=1e3),
    ],
    ids=["intercept", "no intercept", "weights and margins", "dual", "hard", "shifted"],
)
def test_binary_exact_optimum(make):
    X, y = random_problem(3, n=40, d=4)
    f = make(X, y)
    sol = f.solve(method="exact")
    exact_binary_duality(f, sol.info["exact"])
    assert sol.solver == "exact" and sol.status == "optimal"
    # the float views certify, and agree with the certified float solve
    assert f.certify(sol).passed


def test_zero_weight_on_margin():
    # a weight-0 point on the margin (issue 15's crash): its multiplier is 0, its slack free
    f = qpsvm.SoftMarginPrimal(
        [[0.0], [1.0], [3.0], [4.0], [3.0]], [0, 0, 1, 1, 1], C=10.0, sample_weight=[1, 1, 1, 1, 0]
    )
    opt = f.solve(method="exact").info["exact"]
    assert opt.objective == Fraction(1, 2) and opt.alpha[4] == 0
    exact_binary_duality(f, opt)


def test_ranking_exact_optimum():
    X, y, groups = ranking_problem(2)
    f = qpsvm.RankingSVM(X, y=y, groups=groups, C=0.5)
    exact_binary_duality(f, f.solve(method="exact").info["exact"])


@pytest.mark.parametrize("variant", ["crammer_singer", "weston_watkins"])
def test_multiclass_exact_optimum(variant):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 3))
    y = rng.integers(0, 3, 30)
    f = qpsvm.MulticlassSVM(X, y, C=0.8, variant=variant, sample_weight=rng.uniform(0, 2, 30))
    sol = f.solve(method="exact")
    opt = sol.info["exact"]
    # D(alpha) of the multiclass dual (formulations/multiclass.py) in rationals
    Xr = to_rational(f.X)
    k = f.n_classes
    alpha = np.array([[Fraction(0)] * k for _ in range(f.n_samples)], dtype=object)
    alpha[f.rows, f.cols] = opt.alpha
    caps = [Fraction(f.C) * Fraction(float(s)) for s in f.sample_weight]
    totals = alpha.sum(axis=1)
    assert all(v >= 0 for v in opt.alpha)
    limits = totals if f.crammer_singer else alpha.max(axis=1)
    assert all(t <= c for t, c in zip(limits, caps, strict=True))
    A = -alpha
    A[np.arange(f.n_samples), f.y] = totals
    W = A.T.dot(Xr)
    assert all(W.ravel() == opt.w)
    S = Xr.dot(W.T)
    margins = S[np.arange(f.n_samples), f.y][:, None] - S
    hinge = np.where(f.mask, np.maximum(Fraction(0), 1 - margins), Fraction(0))
    slack = hinge.max(axis=1) if f.crammer_singer else hinge.sum(axis=1)
    norm2 = (W * W).sum()
    primal = norm2 / 2 + sum(c * s for c, s in zip(caps, slack, strict=True))
    assert primal == alpha.sum() - norm2 / 2 == opt.objective
    assert f.certify(sol).passed


def test_class_rows_equal_the_dense_rows():
    """The multiclass rows kept by their structure give the products of the dense rows
    ``a_ic = (e_{y_i} - e_c) (x) x_i`` exactly (every entry a fraction)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 3)) * 10.0 ** rng.uniform(-3, 3, size=(12, 1))
    f = qpsvm.MulticlassSVM(X, rng.integers(0, 4, 12), C=1.0)
    rows = multiclass_qp(f).rows
    k, d = f.n_classes, f.n_features
    Xr = to_rational(f.X)
    dense = np.array([[Fraction(0)] * (k * d) for _ in range(f.rows.size)], dtype=object)
    for r, (i, c) in enumerate(zip(f.rows, f.cols, strict=True)):
        dense[r, f.y[i] * d : (f.y[i] + 1) * d] = Xr[i]
        dense[r, c * d : (c + 1) * d] = -Xr[i]
    w = to_rational(rng.normal(size=k * d))
    coef = to_rational(rng.uniform(0, 2, f.rows.size))
    some = np.array([0, 3, 5, 8, 17])
    assert all(rows.apply(w) == dense.dot(w))
    assert all(rows.apply(w, some) == dense[some].dot(w))
    assert all(rows.combine(some, coef[some]) == dense[some].T.dot(coef[some]))
    assert (rows.gram(some) == dense[some].dot(dense[some].T)).all()
    assert rows.shape == dense.shape


def test_nonlinear_kernel_is_refused():
    X, y = random_problem(0, n=10, d=2)
    with pytest.raises(qpsvm.exceptions.InvalidInputError, match="linear kernel"):
        qpsvm.SoftMarginDual(X, y, kernel="rbf").solve(method="exact")


@pytest.mark.slow
def test_medium_binary_in_seconds():
    # the size: n = 2000, d = 20 (about 2 s on the reference machine)
    X, y = random_problem(11, n=2000, d=20, shift=0.3)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    exact_binary_duality(f, f.solve(method="exact").info["exact"])


@pytest.mark.parametrize("guess", ["none", "all"])
def test_optimum_does_not_depend_on_the_guess(guess):
    # duplicated points with opposite labels and a collinear feature: degenerate on the margin.
    # From no float guess the exact solve frees rows round by round; from every row free it
    # solves one complementarity problem; both must reach the same w* and P* exactly.
    from qpsvm.exact.kkt import solve_grouped
    from qpsvm.solvers.exact import binary_qp

    X, y = random_problem(4, n=24, d=2)
    X = np.c_[X, 2.0 * X[:, 0]]
    X[1], y[1] = X[0], -y[0]
    f = qpsvm.SoftMarginPrimal(X, y, C=10.0)
    reference = f.solve(method="exact").info["exact"]
    qp = binary_qp(f)
    active = np.full(qp.n_rows, guess == "all")
    opt = solve_grouped(qp, active, np.zeros(qp.n_groups, dtype=bool))
    assert all(opt.w == reference.w) and opt.objective == reference.objective
    exact_binary_duality(f, opt)


def test_no_float_guess_for_an_inseparable_hard_margin():
    # without a float solve to read sets from, infeasibility is found by Lemke's secondary ray
    from qpsvm.exact.kkt import solve_grouped
    from qpsvm.solvers.exact import binary_qp

    qp = binary_qp(qpsvm.HardMargin([[0.0], [1.0], [2.0]], [1, -1, 1]))
    with pytest.raises(qpsvm.exceptions.InfeasibleProblemError):
        solve_grouped(qp, np.ones(3, dtype=bool), np.zeros(3, dtype=bool))
