"""``f.compare``: the Comparison of a candidate with the exact optimum, field by field."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier
from sklearn.svm import SVC, LinearSVC

import qpsvm
from qpsvm.conventions import C_from_pegasos
from qpsvm.formulations.multiclass import MulticlassSVM
from tests.conftest import random_problem


@pytest.fixture(scope="module")
def problem():
    X, y = random_problem(21, n=60, d=4)
    f = qpsvm.SoftMarginPrimal(X, y, C=0.5, fit_intercept=False)
    return f, f.solve()


def test_fields_equal_their_definitions(problem):
    f, exact = problem
    sol = f.solve(method="subgradient", epochs=5, random_state=0)
    cmp = f.compare(sol, exact)
    P, P_star = f.objective(sol.w, sol.b), exact.objective
    assert cmp.suboptimality == pytest.approx(P - P_star, rel=1e-12)
    assert cmp.relative_suboptimality == pytest.approx((P - P_star) / max(1.0, abs(P_star)))
    assert cmp.distance == pytest.approx(np.linalg.norm(sol.w - exact.w), rel=1e-12)
    assert cmp.intercept_distance == abs(sol.b - exact.b) == 0.0
    cert = f.certify(sol)
    assert cmp.certified_gap == cert.gap
    assert cmp.distance_bound == pytest.approx(math.sqrt(2 * cert.gap))
    assert cmp.reference_gap == f.certify(exact).gap
    assert cmp.theory_bound == sol.info["theory_bound"]


def test_bounds_hold(problem):
    # the certified gap bounds the suboptimality (P - P* <= P - D), sqrt(2 gap) bounds the
    # distance (1-strong convexity), and Pegasos' theory bounds the suboptimality
    f, exact = problem
    for epochs in (1, 10, 50):
        cmp = f.compare(f.solve(method="subgradient", epochs=epochs, random_state=1), exact)
        assert 0 <= cmp.suboptimality <= cmp.certified_gap + cmp.reference_gap
        assert cmp.consistent  # the distance's lower bound within the two distance bounds
        assert cmp.suboptimality <= cmp.theory_bound


def test_reference_defaults_to_the_exact_solve(problem):
    f, exact = problem
    sol = f.solve(method="subgradient", epochs=2, random_state=0)
    a, b = f.compare(sol), f.compare(sol, exact)
    # both references are certified optima, equal to round-off
    assert a.suboptimality == pytest.approx(b.suboptimality, abs=1e-9)
    assert a.reference_gap <= 1e-9 * max(1.0, exact.objective)


def test_intercept_distance_uses_the_best_intercept_when_b_is_missing():
    # a bare w is certified with the b minimising P(w, .); its intercept distance uses that b
    X, y = random_problem(2, n=50, d=3)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    exact = f.solve()
    w = exact.w * 1.1
    cmp = f.compare(w, exact)
    b = f.optimal_intercept(f.scores(w=w))
    assert cmp.intercept_distance == pytest.approx(abs(b - exact.b))
    assert cmp.suboptimality == pytest.approx(f.objective(w, b) - exact.objective)


def test_scikit_learn_estimators_are_compared(problem):
    X, y = random_problem(8, n=80, d=4)
    n = len(y)
    lam = 1e-2
    # SGDClassifier's alpha is lambda: C = 1 / (alpha n)
    f = qpsvm.SoftMarginPrimal(X, y, C=C_from_pegasos(lam, n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sgd = SGDClassifier(loss="hinge", alpha=lam, max_iter=20, tol=None, random_state=0)
        sgd.fit(X, y)
    cmp = f.compare(sgd)
    assert cmp.theory_bound is None
    assert cmp.suboptimality == pytest.approx(
        f.objective(sgd.coef_, sgd.intercept_) - f.solve().objective
    )
    assert cmp.intercept_distance == pytest.approx(abs(sgd.intercept_[0] - f.solve().b))
    assert cmp.distance <= cmp.distance_bound
    # liblinear is close to exact: small relative suboptimality
    svc = LinearSVC(C=f.C, loss="hinge", tol=1e-8, max_iter=100_000).fit(X, y)
    assert 0 <= f.compare(svc).relative_suboptimality < 1e-3


def test_kernel_candidates_use_the_rkhs_distance():
    # for a kernel, ||w - w*||^2 = d^T K d with d = (alpha - alpha*) y
    X, y = random_problem(9, n=70, d=3)
    f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf", gamma=0.3)
    exact = f.solve()
    svc = SVC(C=1.0, gamma=0.3, tol=1e-2).fit(X, y)
    smo = f.solve(method="smo", tol=1e-2)
    alpha_svc = np.zeros(f.n_samples)
    alpha_svc[svc.support_] = np.abs(svc.dual_coef_.ravel())  # dual_coef_ = alpha_i y_i
    for cand, alpha, b in [(svc, alpha_svc, svc.intercept_[0]), (smo, smo.alpha, smo.b)]:
        cmp = f.compare(cand, exact)
        d = (alpha - exact.alpha) * f.y
        assert cmp.distance == pytest.approx(math.sqrt(d @ f.gram() @ d), rel=1e-9)
        assert cmp.intercept_distance == pytest.approx(abs(b - exact.b))
        assert cmp.distance <= cmp.distance_bound
        assert cmp.theory_bound is None


def test_multiclass_comparison_uses_the_frobenius_distance():
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(60, 3)), rng.integers(0, 3, 60)
    f = MulticlassSVM(X, y, C=0.2)
    exact = f.solve()
    sol = f.solve(method="subgradient", epochs=20, random_state=0)
    cmp = f.compare(sol, exact)
    assert cmp.distance == pytest.approx(np.linalg.norm(sol.w - exact.w))
    assert cmp.intercept_distance == 0.0
    assert 0 <= cmp.suboptimality <= cmp.certified_gap + cmp.reference_gap
    assert cmp.suboptimality <= cmp.theory_bound
