"""The poly kernel's explicit feature map (:mod:`qpsvm.solvers.feature_map`): its inner products
are the kernel (the multinomial theorem), and the kernel dual solved on it as a linear SVM is the
kernel dual's certified optimum (the exact rational oracle's, and the SMO start's)."""

import math

import numpy as np
import pytest

import qpsvm
from qpsvm.solvers import feature_map
from qpsvm.solvers.feature_map import feature_dimension, feature_map_pays, poly_features


@pytest.mark.parametrize(
    ("d", "p", "gamma", "coef0"),
    [(3, 1, 0.7, 2.0), (4, 2, 0.5, 1.0), (5, 3, 0.05, 1.0), (3, 4, 1.3, 0.0)],
)
def test_map_inner_products_are_the_kernel(d, p, gamma, coef0):
    # (gamma x.x' + coef0)^p = Phi(x).Phi(x') by the multinomial theorem
    rng = np.random.default_rng(d * 10 + p)
    A, B = rng.normal(size=(7, d)), rng.normal(size=(5, d))
    K = (gamma * A @ B.T + coef0) ** p
    PA, PB = poly_features(A, gamma, coef0, p), poly_features(B, gamma, coef0, p)
    assert PA.shape == (7, math.comb(d + p, p)) == (7, feature_dimension(d, p))
    np.testing.assert_allclose(PA @ PB.T, K, rtol=1e-12, atol=1e-12 * np.abs(K).max())


def _problem(n, C=1.0):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1, -1)
    return qpsvm.SoftMarginDual(X, y, C=C, kernel="poly", gamma=0.5, degree=3, coef0=1.0)


def test_feature_map_start_is_the_exact_optimum():
    # d = 2, p = 3: D = 10, so n = 45 samples take the map; its multipliers certify on the
    # kernel problem and give the rational oracle's objective
    f = _problem(45)
    assert feature_map_pays(f)
    sol = f.solve(method="working_set")
    assert sol.solver == "feature_map" and sol.certificate.passed
    exact = _problem(45).solve(method="exact")
    assert sol.objective == pytest.approx(exact.objective, rel=1e-9)


def test_feature_map_matches_smo(monkeypatch):
    # the map's answer equals the SMO start's on the same problem (n = 100, C = 10)
    sol = _problem(100, C=10.0).solve(method="working_set")
    assert sol.solver == "feature_map" and sol.certificate.passed
    monkeypatch.setattr(feature_map, "MIN_ASPECT", math.inf)
    ref = _problem(100, C=10.0).solve(method="working_set")
    assert ref.solver != "feature_map" and ref.certificate.passed
    assert sol.objective == pytest.approx(ref.objective, rel=1e-9)
    np.testing.assert_allclose(sol.alpha, ref.alpha, atol=1e-6 * 10.0)


def _never(*args, **kwargs):
    raise AssertionError("the linear problem's certificate ran")


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_feature_map_point_is_certified_by_the_kernel_alone(monkeypatch, fit_intercept):
    # the map's multipliers are certified once, by the kernel problem's certificate on
    # rigorous kernel values: the linear problem's own finish (its certificate on the rounded
    # map) never runs, and the answer is still the rational oracle's (with the free intercept
    # the balanced ascent's point, b the best for w; without it the plain ascent's)
    monkeypatch.setattr("qpsvm.solvers.coordinate.finish", _never)
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 2))
    y = np.where(X[:, 0] ** 2 - X[:, 1] + 0.3 * rng.normal(size=60) > 0, 1, -1)
    kw = dict(C=2.0, kernel="poly", gamma=0.5, degree=3, coef0=1.0, fit_intercept=fit_intercept)
    f = qpsvm.SoftMarginDual(X, y, **kw)
    assert feature_map_pays(f)
    sol = f.solve(method="working_set")
    assert sol.solver == "feature_map" and sol.certificate.passed
    exact = qpsvm.SoftMarginDual(X, y, **kw).solve(method="exact")
    assert sol.objective == pytest.approx(exact.objective, rel=1e-9)
    np.testing.assert_allclose(sol.alpha, exact.alpha, atol=1e-7 * 2.0)


def test_balanced_ascent_finishes_from_the_regularised_start():
    # the hinge on the map (n = 200 > D = 10) is the slow case: the finish with the free
    # intercept from the regularised problem's free set already reaches the target, so no
    # ascent with b fixed runs after it (its epochs are the regularised start's) and the point
    # is the rational oracle's
    from qpsvm.solvers.coordinate import binary_problem
    from qpsvm.verify import ascent

    f = _problem(200)
    linear = qpsvm.SoftMarginDual(poly_features(f.X, 0.5, 1.0, 3), f.y, C=1.0)
    problem = binary_problem(linear)
    _, _, regularised = ascent._regularised_start(
        problem.data, 1e-3, 100_000, 0, ascent.SOLVER_UNSHRINK_EVERY
    )
    u, _, b, epochs = ascent.balanced_ascent(
        problem.data, problem.balance, 1e-12, unshrink_every=ascent.SOLVER_UNSHRINK_EVERY
    )
    assert epochs == regularised
    exact = _problem(200).solve(method="exact")
    np.testing.assert_allclose(u, exact.alpha, atol=1e-9)
    assert b == pytest.approx(exact.b, abs=1e-9)


def test_map_point_free_multipliers_from_the_kernel_equations():
    # n = 200, C = 1e6: the ascent's multipliers on the rounded map fail the kernel's
    # certificate (relative gap 2.7e-3); on the map's sets, the kernel's KKT equations give
    # the free multipliers and certify (2.3e-10)
    from qpsvm.contract import load

    f = _problem(200, C=1e6)
    assert feature_map_pays(f)
    cert = load(f.certifier)(f, feature_map.feature_map_point(f), tol=1e-9)
    assert cert.passed
