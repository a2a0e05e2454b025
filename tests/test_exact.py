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
from qpsvm.solvers.exact import binary_qp, multiclass_qp
from tests.conftest import exact_poly, random_problem, ranking_problem


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


def exact_kernel_duality(f, opt) -> None:
    """Poly kernel: ``alpha*`` exactly dual feasible and ``P(alpha*, b*) = D(alpha*)`` with
    the Gram matrix computed here in fractions (no ``w*``: it lives in the feature space)."""
    kernel = f.kernel
    K = exact_poly(f.X, kernel.gamma, kernel.coef0, kernel.degree)
    n = f.n_samples
    y = [Fraction(int(v)) for v in f.y]
    m = [Fraction(float(v)) for v in f.margin]
    caps = [Fraction(f.C) * Fraction(float(s)) for s in f.sample_weight]
    a = opt.alpha
    assert opt.w is None
    assert all(0 <= a[i] <= caps[i] for i in range(n))
    if f.fit_intercept:
        assert sum(a[i] * y[i] for i in range(n)) == 0
    v = [a[i] * y[i] for i in range(n)]
    g = [sum((K[i][j] * v[j] for j in range(n)), Fraction(0)) for i in range(n)]
    quad = sum((v[i] * g[i] for i in range(n)), Fraction(0))
    slack = [max(Fraction(0), m[i] - y[i] * (g[i] + opt.b)) for i in range(n)]
    primal = quad / 2 + sum((c * s for c, s in zip(caps, slack, strict=True)), Fraction(0))
    assert primal == sum((m[i] * a[i] for i in range(n)), Fraction(0)) - quad / 2
    assert primal == opt.objective


def opposite_duplicates(X, y):
    """The problem with its first three points repeated under the opposite label."""
    return np.vstack([X, X[:3]]), np.concatenate([y, -y[:3]])


@pytest.mark.parametrize(
    ("seed", "shift", "scale", "degree", "coef0", "C", "intercept", "duplicates"),
    [
        (0, 0.0, 1.0, 3, 1.0, 1.0, True, False),
        (1, 0.0, 1.0, 2, 0.0, 10.0, False, False),
        (2, 1e3, 1.0, 2, 1.0, 1e3, True, False),  # shifted: huge, uncancelled values
        (3, 0.0, 1e-4, 3, 0.5, 1e4, True, False),  # scaled down: the constant dominates
        (4, 0.0, 1e2, 4, 1.0, 0.01, True, False),  # scaled up: every alpha at its cap
        (5, 0.0, 1.0, 3, 1.0, 1e5, True, True),  # duplicates with opposite labels
        (6, 0.0, 1.0, 1, 0.25, 1.0, True, True),
    ],
)
def test_poly_exact_optimum(seed, shift, scale, degree, coef0, C, intercept, duplicates):
    X, y = random_problem(seed, n=14, d=3)
    if duplicates:
        X, y = opposite_duplicates(X, y)
    rng = np.random.default_rng(seed)
    f = qpsvm.SoftMarginDual(
        X * scale + shift,
        y,
        C=C,
        kernel="poly",
        gamma=0.3,
        degree=degree,
        coef0=coef0,
        fit_intercept=intercept,
        sample_weight=rng.uniform(0.2, 2.0, y.size),
    )
    sol = f.solve(method="exact")
    exact_kernel_duality(f, sol.info["exact"])
    assert sol.w is None and sol.objective == float(sol.info["exact"].objective)


def test_poly_with_negative_coef0_where_the_gram_matrix_is_semidefinite():
    # 8 points in 10 dimensions: x.x' positive definite, and so its Hadamard powers minus a
    # small constant; proven by the shifted Cholesky factor. Duplicated, the Gram matrix is
    # singular: undecided in floating point, decided by exact elimination
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 10))
    y = np.array([1, -1] * 4)
    for data, labels in ((X, y), (np.vstack([X, X[:2]]), np.concatenate([y, y[:2]]))):
        f = qpsvm.SoftMarginDual(
            data, labels, C=1.0, kernel="poly", gamma=0.1, degree=2, coef0=-0.01
        )
        exact_kernel_duality(f, f.solve(method="exact").info["exact"])


def test_poly_with_an_indefinite_gram_matrix_is_nonconvex():
    # (0.2 x.x' - 1)^3 on 12 points in 3 dimensions is indefinite on these data
    X, y = random_problem(0, n=12, d=3)
    f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="poly", gamma=0.2, degree=3, coef0=-1.0)
    with pytest.raises(qpsvm.NonConvexProblemError, match="not positive semidefinite"):
        f.solve(method="exact")


def test_gram_rows_equal_the_poly_kernel():
    # the integer Gram matrix and its products against the fractions of the kernel's definition
    X, y = random_problem(2, n=9, d=3)
    X = X * 10.0 ** np.random.default_rng(2).uniform(-3, 3, size=(9, 1))
    f = qpsvm.SoftMarginDual(X, y, kernel="poly", gamma=0.3, degree=3, coef0=0.7)
    rows = binary_qp(f).rows
    K = exact_poly(f.X, 0.3, 0.7, 3)
    Q = np.array([[K[i][j] * int(y[i] * y[j]) for j in range(9)] for i in range(9)], dtype=object)
    v = to_rational(np.random.default_rng(3).normal(size=9))
    some = np.array([0, 4, 7])
    assert (rows.gram(np.arange(9)) == Q).all()
    assert all(rows.apply(v) == Q.dot(v))
    assert all(rows.apply(v, some) == Q[some].dot(v))
    assert rows.norm2(v) == v.dot(Q.dot(v))
    coef = rows.combine(some, v[some])
    assert all(coef[some] == v[some]) and sum(coef != 0) <= 3


@pytest.mark.parametrize(
    ("kernel", "message"), [("rbf", "irrational"), ("precomputed", "floating point")]
)
def test_kernels_without_rational_values_are_refused(kernel, message):
    X, y = random_problem(0, n=10, d=2)
    data = X @ X.T if kernel == "precomputed" else X
    with pytest.raises(qpsvm.exceptions.InvalidInputError, match=message):
        qpsvm.SoftMarginDual(data, y, kernel=kernel).solve(method="exact")


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
