"""A kernel composed KKT point aimed inside its kinks by its scores' error bound: the free
samples' losses (hinge on its margin, tube on its edge) are proven zero, so a large ``C`` with
free multipliers far below it (where the exact point on its kinks pays about ``W_i e_i`` per
free sample in the certified primal) is certified at 1e-9; its certificate still encloses its
exact objectives (fractions for poly, 40 digits for rbf)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.svm import SVR

import qpsvm
from qpsvm._numerics import fsum, fsum_dot
from qpsvm.solution import Candidate
from qpsvm.solvers.kernel_start import AIM, aimed_point, kernel_smo_start
from qpsvm.verify.fenchel import composed_kernel_scores
from tests.conftest import random_problem
from tests.test_kernel_composed_rigorous import assert_rigorous_enclosure


def regression(n: int, C: float, intercept: str) -> qpsvm.SupportVectorRegression:
    """The composed benchmark's regression data (``x_0 + sin(x_1)`` plus noise, d = 10), rbf."""
    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, 10))
    rng.standard_normal(n)  # the benchmark's labels' noise
    t = X[:, 0] + np.sin(X[:, 1]) + 0.3 * rng.standard_normal(n)
    return qpsvm.SupportVectorRegression(X, t, C, 0.1, intercept=intercept, kernel="rbf")


def classification(intercept: str) -> qpsvm.ComposedClassifier:
    """13 free support vectors of a cubic poly kernel far below ``C = 1e8`` (none at it: the
    optimum of every ``C`` from ``1e5``). The poly scores' error bounds are Dot2's ``u |g_i|``
    (~5e-16), so the exact start's rounding floor exceeds ``1e-9`` of ``P`` only from
    ``C ~ 1e8``; its free margins' residuals from the KKT solve (~2e-13) are 400 times the
    bounds, and the aim must clear them too."""
    X, y = random_problem(1, n=40, d=3)
    kernel = {"kernel": "poly", "degree": 3, "gamma": 0.5, "coef0": 1.0}
    return qpsvm.ComposedClassifier(X, y, 1e8, loss="hinge", intercept=intercept, **kernel)


PROBLEMS = {
    "svr-free": lambda: regression(60, 1e5, "free"),
    "svr-none": lambda: regression(60, 1e5, "none"),
    "svr-regularized": lambda: regression(60, 1e5, "regularized"),
    "hinge-free": lambda: classification("free"),
    "hinge-regularized": lambda: classification("regularized"),
}


def distance_inside(f, alpha: np.ndarray, b: float) -> np.ndarray:
    """How far inside its kink each sample's exact score is proven: the computed margin or
    distance to the tube's edge less the score's error bound (positive: the loss is zero)."""
    g, e = composed_kernel_scores(f, alpha)
    z = f.sigma * (g + b)
    inside = f.epsilon - np.abs(z - f.target) if f.loss.regression else z - f.target
    return inside - e


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_aimed_point_is_certified_where_the_exact_start_is_not(name):
    f = PROBLEMS[name]()
    start = kernel_smo_start(f).candidate
    before = f.certify(start)
    # the exact point on its kinks fails by its rounding floor alone
    assert before.relative_floor > 1e-9 and not before.passed
    aimed = aimed_point(f, start)
    assert aimed is not None
    u, W = start.alpha, f.loss_weights()
    free = (u != 0) & (np.abs(u) < W)
    assert np.array_equal(free, (aimed.alpha != 0) & (np.abs(aimed.alpha) < W))
    # the samples aimed (free, multipliers below W / (AIM + 1)) have their losses proven zero
    chosen = free & ((AIM + 1) * np.abs(u) < W)
    assert np.count_nonzero(chosen) >= np.count_nonzero(free) // 2
    assert np.all(distance_inside(f, aimed.alpha, aimed.b)[chosen] > 0)
    cert = f.certify(aimed)
    assert cert.rigorous and cert.passed
    assert cert.relative_floor < before.relative_floor / 100
    # both bounds hold in exact arithmetic, and the two enclosures of P* overlap
    assert_rigorous_enclosure(f, aimed.alpha, aimed.b)
    assert max(cert.lower, before.lower) <= min(cert.upper, before.upper)


def test_solve_takes_the_aimed_start_without_restricted_problems():
    f = regression(60, 1e5, "free")
    sol = f.solve()
    assert sol.certificate.passed and sol.certificate.rigorous
    assert sol.certificate.tol == 1e-9
    assert sol.info["rounds"] == 0  # the start, aimed, is the answer: no restricted QP
    free = (sol.alpha != 0) & (np.abs(sol.alpha) < f.loss_weights())
    assert np.any(distance_inside(f, sol.alpha, sol.b)[free] > 0)


def test_solve_aims_where_the_solves_residual_fails_the_start():
    # poly at C = 1e7: the exact start's gap (5.5e-8) is its KKT solve's residual at the free
    # margins, not its rounding floor (5e-10); the aimed start is tried all the same and passes
    X, y = random_problem(1, n=40, d=3)
    kernel = {"kernel": "poly", "degree": 3, "gamma": 0.5, "coef0": 1.0}
    f = qpsvm.ComposedClassifier(X, y, 1e7, loss="hinge", intercept="free", **kernel)
    sol = f.solve()
    assert sol.certificate.passed and sol.certificate.rigorous
    assert sol.info["rounds"] == 0


def test_squared_losses_and_linear_kernels_are_not_aimed():
    # the squared losses are smooth at their free samples; the linear kernel's scores have no
    # evaluation error of this size
    rng = np.random.default_rng(0)
    X, t = rng.standard_normal((30, 3)), rng.standard_normal(30)
    for f in (
        qpsvm.SupportVectorRegression(X, t, 10.0, 0.1, loss="squared_epsilon_insensitive"),
        qpsvm.SupportVectorRegression(
            X, t, 10.0, 0.1, loss="squared_epsilon_insensitive", kernel="rbf"
        ),
    ):
        u = f.solve().alpha
        assert aimed_point(f, Candidate(alpha=u, b=0.0)) is None


@pytest.mark.slow
def test_svr_rbf_at_large_C_is_certified_at_the_default_tolerance():
    # the composed benchmark's SVR at n = 2000, C = 100 (1633 free samples, median |u| / W of
    # 0.08, scores' error bounds ~4e-11): the exact start's floor is 1.7e-9 of P, the aimed
    # start's gap 6.7e-10. libsvm's answer is a reference on both sides: its dual value is a
    # lower bound on P* and its primal value an upper one (measured at its tol 1e-5: 3e-9 and
    # 1.6e-4 of P from the certified ends)
    f = regression(2000, 100.0, "free")
    sol = f.solve()
    cert = sol.certificate
    assert cert.passed and cert.rigorous and cert.tol == 1e-9
    assert sol.info["rounds"] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        svr = SVR(C=100.0, epsilon=0.1, gamma=f.kernel.gamma).fit(f.X, f.target)
    u = np.zeros(f.n_samples)
    u[svr.support_] = svr.dual_coef_.ravel()
    dual = fsum(f.target * u) - f.epsilon * fsum(np.abs(u)) - fsum_dot(u, f.kernel_product(u)) / 2
    assert dual <= cert.upper
    assert f.objective_alpha(u, float(svr.intercept_[0])) >= cert.lower
