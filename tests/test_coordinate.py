"""Dual coordinate descent (method="dcd"): certified optima of the linear hinge and squared
hinge SVMs, on sparse and dense data, equal to the full QP's and the rational oracle's."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import random_problem
from hypothesis import given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm.verify import ascent
from qpsvm.verify.ascent import CoordinateData, ascend

PROBLEMS = [
    ("hinge", "none"),
    ("hinge", "free"),
    ("hinge", "regularized"),
    ("squared_hinge", "none"),
    ("squared_hinge", "free"),
    ("squared_hinge", "regularized"),
]


def sparse_problem(seed: int, n: int = 60, d: int = 200, k: int = 5):
    """Rows of ``k`` nonzeros over ``d`` features (n < d, text-like), labels from a hidden
    linear score with 10% flipped."""
    rng = np.random.default_rng(seed)
    cols = np.concatenate([rng.choice(d, k, replace=False) for _ in range(n)])
    X = sp.csr_matrix((rng.random(n * k) + 0.1, cols, np.arange(n + 1) * k), shape=(n, d))
    y = np.where(X @ rng.normal(size=d) > 0, 1, -1)
    y[rng.random(n) < 0.1] *= -1
    return X, y


@pytest.mark.parametrize(("loss", "intercept"), PROBLEMS)
def test_sparse_default_is_dcd_and_equals_the_full_qp(loss, intercept):
    X, y = sparse_problem(0)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, loss=loss, intercept=intercept)
    assert f.default_method() == "dcd"
    sol = f.solve()
    assert sol.method == "dcd" and sol.status == "optimal"
    assert sol.certificate.passed and sol.certificate.tol == 1e-9
    # the optimum is unique: the interior-point solve of the same problem agrees
    reference = f.solve(method="qp")
    assert sol.objective == pytest.approx(reference.objective, rel=1e-8)
    np.testing.assert_allclose(sol.w, reference.w, atol=2e-4)


@pytest.mark.parametrize(("loss", "intercept"), PROBLEMS)
def test_sparse_and_dense_input_give_the_same_certified_optimum(loss, intercept):
    X, y = sparse_problem(1, n=80, d=40)
    dense = qpsvm.SoftMarginPrimal(X.toarray(), y, C=2.0, loss=loss, intercept=intercept)
    sparse = qpsvm.SoftMarginPrimal(X, y, C=2.0, loss=loss, intercept=intercept)
    a, b = dense.solve(method="dcd"), sparse.solve(method="dcd")
    assert a.certificate.passed and b.certificate.passed
    assert a.objective == pytest.approx(b.objective, rel=1e-9)


def test_dcd_equals_the_rational_oracle():
    X, y = sparse_problem(2, n=40, d=30)
    f = qpsvm.SoftMarginPrimal(X.toarray(), y, C=1.0, fit_intercept=False)
    exact = f.solve(method="exact")
    sol = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False).solve(method="dcd")
    # the oracle's P* is exact: the enclosure holds it, so the gap bounds the suboptimality
    optimum = exact.info["exact"].objective
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)


def test_dcd_with_a_free_intercept_where_g_jumps_falls_back_certified():
    # n >> d, hinge: most multipliers at a bound, the balance g(b) jumps over 0
    X, y = random_problem(3, n=30, d=3)
    f = qpsvm.SoftMarginDual(X, y, C=2.0)
    sol = f.solve(method="dcd")
    assert sol.certificate.passed
    assert sol.objective == pytest.approx(f.solve(method="qp").objective, rel=1e-8)


def test_ascent_reaches_the_gap_it_is_asked_for():
    X, y = sparse_problem(4)
    n = X.shape[0]
    data = CoordinateData(X, y.astype(float), np.ones(n), np.zeros(n), np.full(n, 1.0))
    step = ascend(data, np.zeros(n), 1e-12)
    assert step.primal - step.dual <= 1e-12 * max(1.0, step.primal)
    assert np.all(step.u >= 0) and np.all(step.u <= 1.0)
    # the returned expansion is the multipliers' own, in twice the working precision
    np.testing.assert_allclose(step.v[:-1], X.T @ (step.u * y), atol=1e-12)


def test_dcd_refuses_a_nonlinear_kernel_and_the_hard_margin():
    X, y = random_problem(0, n=20, d=2)
    with pytest.raises(qpsvm.InvalidInputError, match="kernel"):
        qpsvm.SoftMarginDual(X, y, kernel="rbf").solve(method="dcd")
    with pytest.raises(qpsvm.InvalidInputError, match="finite box"):
        qpsvm.HardMargin(X + 5 * y[:, None], y).solve(method="dcd")


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    C=st.sampled_from([0.1, 1.0, 10.0]),
    problem=st.sampled_from(PROBLEMS),
)
def test_dcd_is_certified_on_random_sparse_problems(seed, C, problem):
    loss, intercept = problem
    X, y = sparse_problem(seed, n=50, d=80, k=4)
    if len(np.unique(y)) < 2:
        return
    f = qpsvm.SoftMarginPrimal(X, y, C=C, loss=loss, intercept=intercept)
    sol = f.solve()
    assert sol.certificate.passed
    # weak duality around the unique optimum: the QP's certified answer lies in the enclosure
    other = f.solve(method="qp")
    assert sol.certificate.lower <= other.certificate.upper
    assert other.certificate.lower <= sol.certificate.upper


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_certificate_of_a_bare_sparse_w_is_tight_without_dense_algebra(fit_intercept):
    # a liblinear answer at its loose default tolerance: the certificate finds its dual point
    # by the sparse ascent, and the gap is the true suboptimality up to the ascent's accuracy
    from sklearn.svm import LinearSVC

    X, y = sparse_problem(5, n=300, d=1000, k=8)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=fit_intercept)
    exact = f.solve()
    est = LinearSVC(loss="hinge", fit_intercept=False, tol=1e-1, max_iter=5).fit(X, y)
    cert = f.certify(w=est.coef_.ravel(), b=0.0)
    suboptimality = cert.upper - exact.objective
    assert suboptimality > 0
    assert cert.lower <= exact.certificate.upper
    assert cert.gap <= 1.01 * suboptimality + 1e-9 * exact.objective


def test_default_method_follows_the_measured_crossovers():
    X, y = sparse_problem(6, n=2000, d=20, k=3)
    # hinge with many more samples than features: the working set (most multipliers at a bound)
    assert qpsvm.SoftMarginPrimal(X, y).default_method() == "working_set"
    # the squared hinge's dual is strongly concave: coordinate descent at every shape
    assert qpsvm.SoftMarginPrimal(X, y, loss="squared_hinge").default_method() == "dcd"
    # dense data keep the working set and the full QP
    assert qpsvm.SoftMarginPrimal(X.toarray()[:50], y[:50]).default_method() == "qp"


def _spy_free_set(monkeypatch) -> list:
    """Record the calls of the ascent's free-set solve."""
    calls: list = []
    original = ascent.free_set_step

    def spy(*args, **kwargs):
        out = original(*args, **kwargs)
        calls.append(out)
        return out

    monkeypatch.setattr(ascent, "free_set_step", spy)
    return calls


@pytest.mark.parametrize("seed", [7, 8])
def test_free_set_finish_of_a_slow_ascent_equals_the_rational_oracle(seed, monkeypatch):
    # n > d with the hinge: coordinate descent is slow (most multipliers at a bound), the
    # conjugate-gradient solve on the free set ends it
    X, y = sparse_problem(seed, n=150, d=25, k=4)
    calls = _spy_free_set(monkeypatch)
    sol = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False).solve(method="dcd")
    assert calls and any(c is not None for c in calls)
    assert sol.certificate.passed
    exact = qpsvm.SoftMarginPrimal(X.toarray(), y, C=1.0, fit_intercept=False).solve(method="exact")
    optimum = exact.info["exact"].objective
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)


def test_free_set_step_solves_the_kkt_equations_of_the_optimal_sets():
    # started from a point whose free set is the optimum's, one step lands on the optimum:
    # G_i = 0 on the free set (the margin met), in the box, and the certificate proves it
    X, y = sparse_problem(9, n=150, d=25, k=4)
    n = X.shape[0]
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False)
    data = CoordinateData(X, y.astype(float), np.ones(n), np.zeros(n), np.full(n, 1.0))
    u = np.zeros(n)
    v = np.zeros(X.shape[1] + 1)
    ascent.coordinate_epochs(
        data.rows, data.sigma, data.p, data.d, data.hi, 0.0, data.qd, u, v, 10_000, 1e-4, 0, 10
    )
    step = ascent.free_set_step(data, u, data.expansion(u))
    assert np.all(step >= 0) and np.all(step <= 1.0)
    free = (step > 0) & (step < 1.0)
    gradient = y * (X @ (X.T @ (step * y))) - 1.0
    assert np.max(np.abs(gradient[free])) <= 1e-10
    cert = f.certify(alpha=step)
    assert cert.passed and cert.relative_gap <= 1e-12
