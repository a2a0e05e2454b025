"""Dual coordinate descent (method="dcd"): certified optima of the linear hinge and squared
hinge SVMs, on sparse and dense data, equal to the full QP's and the rational oracle's."""

from __future__ import annotations

import itertools
import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
from conftest import random_problem
from hypothesis import example, given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm._rows import canonical_csr, ranked_indices, row_products, used_columns
from qpsvm.solvers import coordinate
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


@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    C=st.sampled_from([0.1, 1.0, 10.0]),
    intercept=st.sampled_from(["none", "regularized", "free"]),
    scaling=st.sampled_from([0.5, 1.0, 3.0]),
    weighted=st.booleans(),
)
@example(seed=0, C=10.0, intercept="regularized", scaling=3.0, weighted=True)
@example(seed=0, C=10.0, intercept="free", scaling=1.0, weighted=True)
@example(seed=3, C=0.1, intercept="free", scaling=1.0, weighted=False)
def test_sparse_squared_hinge_with_few_features_is_newton_and_the_qp_optimum(
    seed, C, intercept, scaling, weighted
):
    """Many more nonzeros than features (d^3 <= 1000 nnz): the default is the finite Newton
    method, with the regularised intercept as a coordinate on the constant feature B and the
    free one as an unpenalised coordinate on the constant feature 1; its certified optimum is
    the full QP's (unique: P is strongly convex in (w, b / B), and in w with a free b, which
    the rows short of their margin then fix), and dense rows give the same point."""
    X, y = sparse_problem(seed, n=300, d=12, k=3)
    if len(np.unique(y)) < 2:
        return
    weights = np.random.default_rng(seed).uniform(0.5, 2.0, X.shape[0]) if weighted else None
    kwargs = dict(C=C, loss="squared_hinge", intercept=intercept, sample_weight=weights)
    if intercept == "regularized":
        kwargs["intercept_scaling"] = scaling
    f = qpsvm.SoftMarginPrimal(X, y, **kwargs)
    assert f.default_method() == "newton"
    sol = f.solve()
    assert sol.solver == "newton" and sol.certificate.passed
    reference = f.fresh_copy().solve(method="qp")
    assert reference.certificate.passed
    assert sol.objective == pytest.approx(reference.objective, rel=2e-9)
    assert sol.certificate.lower <= reference.certificate.upper
    assert reference.certificate.lower <= sol.certificate.upper
    dense = qpsvm.SoftMarginPrimal(X.toarray(), y, **kwargs).solve(method="newton")
    np.testing.assert_allclose(dense.w, sol.w, rtol=1e-9, atol=1e-12)
    assert dense.b == pytest.approx(sol.b, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_newton_system_stays_definite_when_the_rows_in_it_weigh_nothing(sparse):
    """A free intercept's coordinate is unpenalised: with only rows of weight 0 short of
    their margin it has no curvature, and the system takes 1 on its diagonal (not a singular
    matrix); every other entry is the penalty's and the rows' (here the identity's)."""
    from qpsvm.solvers.newton import _design, _penalised, _system

    X, y = sparse_problem(1, n=40, d=5, k=2)
    weights = np.where(np.arange(40) < 10, 0.0, 1.0)
    f = qpsvm.SoftMarginPrimal(
        X if sparse else X.toarray(),
        y,
        loss="squared_hinge",
        intercept="free",
        sample_weight=weights,
    )
    design = _design(f)
    W, m = f.loss_weights(), f.target
    H, rhs = _system(f, design, np.arange(10), W, m, _penalised(f, design.shape[1]))
    np.testing.assert_array_equal(H, np.eye(design.shape[1]))
    np.testing.assert_array_equal(rhs, np.zeros(design.shape[1]))


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
    X, y = sparse_problem(6, n=2100, d=20, k=3)
    # hinge with many more samples than features: the working set (most multipliers at a
    # bound), up to 100 samples per feature dcd and its finish, with or without an intercept
    assert qpsvm.SoftMarginPrimal(X, y).default_method() == "working_set"
    assert qpsvm.SoftMarginPrimal(X, y, fit_intercept=False).default_method() == "working_set"
    assert qpsvm.SoftMarginPrimal(X[:2000], y[:2000], fit_intercept=False).default_method() == "dcd"
    assert qpsvm.SoftMarginPrimal(X[:2000], y[:2000]).default_method() == "dcd"
    # the squared hinge's dual is strongly concave: coordinate descent at every shape, but
    # where d^3 is at most 1000 nnz the finite Newton method, with any intercept
    for intercept in ("none", "regularized", "free"):
        g = qpsvm.SoftMarginPrimal(X, y, loss="squared_hinge", intercept=intercept)
        assert g.default_method() == "newton"
        wide = sparse_problem(6, n=300, d=200, k=5)
        g = qpsvm.SoftMarginPrimal(*wide, loss="squared_hinge", intercept=intercept)
        assert g.default_method() == "dcd"
    # dense data keep the working set and the full QP
    assert qpsvm.SoftMarginPrimal(X.toarray()[:50], y[:50]).default_method() == "qp"


def _spy_free_set(monkeypatch) -> list:
    """Record the calls of the ascent's free-set finish: ``(coupled, result)``."""
    calls: list = []
    original = ascent.free_set_step

    def spy(*args, **kwargs):
        out = original(*args, **kwargs)
        calls.append((kwargs.get("coupled", False), out))
        return out

    monkeypatch.setattr(ascent, "free_set_step", spy)
    return calls


def _exact_optimum(X, y, **kwargs) -> Fraction:
    """``P*`` of the hinge SVM by the rational oracle (dense data)."""
    exact = qpsvm.SoftMarginPrimal(X.toarray(), y, C=1.0, **kwargs).solve(method="exact")
    return exact.info["exact"].objective


@pytest.mark.parametrize("seed", [7, 8])
def test_free_set_finish_of_a_slow_ascent_equals_the_rational_oracle(seed, monkeypatch):
    # n > d with the hinge: coordinate descent is slow (most multipliers at a bound), the
    # active-set finish on the free set ends it
    X, y = sparse_problem(seed, n=150, d=25, k=4)
    calls = _spy_free_set(monkeypatch)
    sol = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False).solve(method="dcd")
    assert any(out is not None for _, out in calls)
    assert sol.certificate.passed
    optimum = _exact_optimum(X, y, fit_intercept=False)
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)


def _with_duplicates(X, y, seed: int):
    """``X, y`` with a quarter of the rows repeated (a singular Hessian on the free set) and
    sample weights in ``[0.5, 2]``."""
    rng = np.random.default_rng(seed)
    repeat = rng.choice(X.shape[0], X.shape[0] // 4, replace=False)
    X = sp.vstack([X, X[repeat]]).tocsr()
    y = np.concatenate([y, y[repeat]])
    return X, y, rng.uniform(0.5, 2.0, X.shape[0])


@pytest.mark.parametrize("duplicates", [False, True])
@pytest.mark.parametrize("seed", [7, 8, 10])
def test_free_set_finish_with_a_free_intercept_and_weights_is_exact(seed, duplicates, monkeypatch):
    # the coupled finish (the intercept the multiplier of sum_i y_i alpha_i = 0) ends the
    # outer search on b; duplicated rows make the free set's Hessian singular
    X, y = sparse_problem(seed, n=150, d=25, k=4)
    s = np.random.default_rng(seed).uniform(0.5, 2.0, X.shape[0])
    if duplicates:
        X, y, s = _with_duplicates(X, y, seed)
    calls = _spy_free_set(monkeypatch)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, sample_weight=s)
    sol = f.solve(method="dcd")
    assert any(coupled and out is not None for coupled, out in calls)
    assert sol.method == "dcd" and sol.certificate.passed
    optimum = _exact_optimum(X, y, sample_weight=s)
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)


@pytest.mark.parametrize("seed", [7, 8, 10])
def test_regularised_start_is_a_proximal_step_towards_the_optimal_intercept(seed):
    # the problem with the intercept a regularised feature of value B is the free one plus
    # b^2 / (2 B^2): its b is a proximal step on the convex V(b) from 0, so it lies between 0
    # and the rational oracle's b*, and its multipliers solve the problem with b fixed there
    X, y = sparse_problem(seed, n=150, d=25, k=4)
    n = X.shape[0]
    data = CoordinateData(X, y.astype(float), np.ones(n), np.zeros(n), np.ones(n))
    u, b, _ = ascent._regularised_start(data, 1e-13, 100_000, 0, ascent.UNSHRINK_EVERY)
    exact = qpsvm.SoftMarginPrimal(X.toarray(), y, C=1.0).solve(method="exact").info["exact"]
    optimum = Fraction(exact.b)
    assert optimum != 0
    assert min(Fraction(0), optimum) <= Fraction(b) <= max(Fraction(0), optimum)
    # the proximal map moves unless 0 is optimal
    assert b != 0.0
    v = data.expansion(u)
    primal, dual = data.primal(v, b), data.dual(u, v, b)
    assert primal - dual <= 1e-12 * primal
    # the regularised optimum's stationarity in b: the multipliers' imbalance is b / B^2
    assert float(y @ u) == pytest.approx(b / np.mean(data.qd), rel=1e-9)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), C=st.sampled_from([0.3, 1.0, 3.0]))
def test_free_intercept_with_more_samples_than_features_equals_the_rational_oracle(seed, C):
    # n > d, the hinge: the search on b starts from the regularised intercept, keeps the inner
    # tolerance the free-set finish needs, and ends by that finish (or the fallback); the
    # certified enclosure holds the rational oracle's P*
    X, y = sparse_problem(seed, n=90, d=9, k=3)
    if len(np.unique(y)) < 2:
        return
    sol = qpsvm.SoftMarginPrimal(X, y, C=C).solve(method="dcd")
    assert sol.certificate.passed
    exact = qpsvm.SoftMarginPrimal(X.toarray(), y, C=C).solve(method="exact")
    optimum = exact.info["exact"].objective
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)


def _near_optimum(X, y, upper):
    """The ascent's multipliers at the projected-gradient tolerance 1e-4 (no intercept), and its
    data."""
    n = X.shape[0]
    data = CoordinateData(X, y.astype(float), np.ones(n), np.zeros(n), upper)
    u = np.zeros(n)
    v = np.zeros(X.shape[1] + 1)
    ascent.coordinate_epochs(
        data.rows, data.sigma, data.p, data.d, data.hi, 0.0, data.qd, u, v, 10_000, 1e-4, 0, 10
    )
    return data, u


def _spy_systems(monkeypatch, iterative: bool) -> list:
    """Force the finish's iterative (conjugate gradients) or dense system wherever the rows allow
    it, and record the kinds built."""
    monkeypatch.setattr(ascent, "ITERATIVE_FROM", 0.0 if iterative else np.inf)
    if iterative:
        monkeypatch.setattr(ascent, "DENSE_FREE_MAX", 0)  # with a free intercept too
    return _record_systems(monkeypatch)


def _record_systems(monkeypatch) -> list:
    """Record the kinds of the finish's systems built."""
    built: list = []
    original = ascent._free_system

    def spy(*args, **kwargs):
        system = original(*args, **kwargs)
        built.append(type(system).__name__)
        return system

    monkeypatch.setattr(ascent, "_free_system", spy)
    return built


@pytest.mark.parametrize(
    ("seed", "d", "iterative"),
    [(9, 25, None), (12, 400, False), (12, 400, True)],
    ids=["default", "dense-n<d", "iterative-n<d"],
)
@pytest.mark.parametrize("duplicates", [False, True])
def test_free_set_step_solves_the_kkt_equations_of_the_optimal_sets(
    duplicates, seed, d, iterative, monkeypatch
):
    # started near the optimum, the active-set finish lands on it: G_i = 0 on the free set
    # (the margin met), in the box, and the certificate proves it; with duplicated rows and
    # weights the free set's Hessian is singular; with n < d the free rows touch more columns
    # than there are of them, where conjugate gradients may solve the free set's equations:
    # both systems, forced, land on the optimum
    X, y = sparse_problem(seed, n=150, d=d, k=4)
    s = np.ones(X.shape[0])
    if duplicates:
        X, y, s = _with_duplicates(X, y, seed)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False, sample_weight=s)
    data, u = _near_optimum(X, y, s)
    built = None if iterative is None else _spy_systems(monkeypatch, iterative)
    step, b = ascent.free_set_step(data, u)
    if built is not None:
        assert built and set(built) == {"_IterativeSystem" if iterative else "_FreeSystem"}
    assert b == 0.0
    assert np.all(step >= 0) and np.all(step <= s)
    free = (step > 0) & (step < s)
    gradient = y * (X @ (X.T @ (step * y))) - 1.0
    assert np.max(np.abs(gradient[free])) <= 1e-10
    cert = f.certify(alpha=step)
    assert cert.passed and cert.relative_gap <= 1e-12


@pytest.mark.parametrize(
    ("seed", "d", "iterative"),
    [(11, 25, None), (13, 400, False), (13, 400, True)],
    ids=["default", "dense-n<d", "iterative-n<d"],
)
def test_coupled_free_set_step_finds_the_intercept(seed, d, iterative, monkeypatch):
    # from the interior-point optimum perturbed on its free set (unbalanced by it): the step
    # balances the multipliers, meets the free set's margins with the intercept it returns,
    # and the certificate proves the pair; with n < d also by projected conjugate gradients
    # (the balance kept by every direction) or the bordered dense factor, forced
    X, y = sparse_problem(seed, n=150, d=d, k=4)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    start = f.solve(method="qp")
    n = X.shape[0]
    data = CoordinateData(X, y.astype(float), np.ones(n), np.zeros(n), np.ones(n))
    free = (start.alpha > 1e-6) & (start.alpha < 1 - 1e-6)
    noise = 1e-4 * np.random.default_rng(0).standard_normal(n)
    u = np.clip(np.where(free, start.alpha + noise, np.round(start.alpha)), 0.0, 1.0)
    built = None if iterative is None else _spy_systems(monkeypatch, iterative)
    step, b = ascent.free_set_step(data, u, coupled=True)
    if built is not None:
        assert built and set(built) == {"_IterativeSystem" if iterative else "_FreeSystem"}
    assert abs(float(y @ step)) <= 1e-10
    on = (step > 0) & (step < 1)
    assert on.any()
    margins = y * (X @ (X.T @ (step * y)) + b)
    assert np.max(np.abs(margins[on] - 1.0)) <= 1e-10
    cert = f.certify(alpha=step, b=b)
    assert cert.passed and cert.relative_gap <= 1e-12
    assert b == pytest.approx(start.b, abs=1e-6)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    dropped=st.floats(0.0, 0.5),
    e=st.floats(-1.0, 1.0),
    bias=st.sampled_from([0.0, 1.0]),
)
def test_projected_conjugate_gradients_solve_the_bordered_equations(seed, dropped, e, bias):
    # H_KK x_K + beta sigma_K = g_K, sigma_K . x_K = e, x zero off K: the projected conjugate
    # gradients and the dense factor's bordered solve are two solutions of the same equations
    # (unique: H_KK is positive definite with its proximal shift), and x meets the balance
    X, y = sparse_problem(seed, n=40, d=300, k=4)
    n = X.shape[0]
    data = CoordinateData(X, y.astype(float), np.ones(n), np.zeros(n), np.ones(n), bias)
    F = np.arange(n)
    rng = np.random.default_rng(seed)
    keep = rng.random(n) >= dropped
    g = rng.standard_normal(n)
    dense = ascent._FreeSystem.factored(data, F, coupled=True)
    iterative = ascent._IterativeSystem(data, F, X, coupled=True, floor=0.0)
    x_dense, beta_dense = dense.solve(g, keep, e)
    x, beta = iterative.solve(g, keep, e)
    assert np.all(x[~keep] == 0.0)
    if not keep.any():
        return
    assert float(y[keep] @ x[keep]) == pytest.approx(e, abs=1e-12)
    scale = max(1.0, float(np.max(np.abs(x_dense))))
    assert np.max(np.abs(x - x_dense)) <= 1e-8 * scale
    assert beta == pytest.approx(beta_dense, abs=1e-8 * max(1.0, abs(beta_dense)))
    # from any start the same solution; a loose solve from it is below the cold start's
    # value of 1/2 x.Hx - g.x on the balance (so a step along it raises the dual)
    start = rng.standard_normal(n)
    x_warm, beta_warm = iterative.solve(g, keep, e, start)
    assert np.max(np.abs(x_warm - x_dense)) <= 1e-8 * scale
    assert beta_warm == pytest.approx(beta_dense, abs=1e-8 * max(1.0, abs(beta_dense)))
    H = dense.H[np.ix_(keep, keep)]

    def value(z):
        return 0.5 * z[keep] @ H @ z[keep] - g[keep] @ z[keep]

    cold = np.where(keep, e * y / np.sum(keep), 0.0)
    x_loose, _ = iterative.solve(g, keep, e, start, rtol=ascent.CG_STEP_RTOL)
    assert float(y[keep] @ x_loose[keep]) == pytest.approx(e, abs=1e-12)
    assert value(x_loose) <= value(cold) + 1e-12 * max(1.0, abs(value(cold)))


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_iterative_finish_equals_the_rational_oracle(fit_intercept, monkeypatch):
    # the finish forced after every tolerance of the ascent, its equations solved by conjugate
    # gradients: the certified optimum encloses the rational oracle's
    X, y = sparse_problem(14, n=120, d=300, k=4)
    monkeypatch.setattr(ascent, "FINISH_EPOCHS", 0)
    monkeypatch.setattr(ascent, "FINISH_GAP", 1.0)
    built = _spy_systems(monkeypatch, iterative=True)
    sol = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=fit_intercept).solve(method="dcd")
    assert "_IterativeSystem" in built
    assert sol.method == "dcd" and sol.certificate.passed
    optimum = _exact_optimum(X, y, fit_intercept=fit_intercept)
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_free_set_step_from_a_loose_point_reaches_the_optimum(seed):
    # 300 x 40 (n > d, the hinge), from three epochs at the tolerance 0.1: bound coordinates
    # join the free set over more than four rounds (with four the gap stayed at 4e-4 to 2e-3),
    # and the finish lands on the optimum, which the certificate proves
    X, y = sparse_problem(seed, n=300, d=40, k=4)
    n = X.shape[0]
    data = CoordinateData(X, y.astype(float), np.ones(n), np.zeros(n), np.ones(n))
    u, v = np.zeros(n), np.zeros(X.shape[1] + 1)
    ascent.coordinate_epochs(
        data.rows, data.sigma, data.p, data.d, data.hi, 0.0, data.qd, u, v, 3, 1e-1, 0, 10
    )
    assert np.count_nonzero((u > 0) & (u < 1)) > ascent.FINISH_FREE
    step, _ = ascent.free_set_step(data, u)
    cert = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False).certify(alpha=step)
    assert cert.passed and cert.relative_gap <= 1e-12


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    shape=st.sampled_from([(300, 40), (80, 300), (150, 150)]),
    squared=st.booleans(),
    bias=st.sampled_from([0.0, 1.0]),
)
@example(seed=0, shape=(300, 40), squared=False, bias=0.0)
def test_numpy_sweep_of_the_shrunk_coordinates_equals_the_compiled_one(seed, shape, squared, bias):
    # on CSR rows the sweep of the shrunk coordinates before it is compiled runs in numpy
    # (scipy's CSR product adds each row's terms in the compiled dot's order): the ascent
    # through it ends at the same floats, epochs and spread as through the compiled sweep
    n, d = shape
    X, y = sparse_problem(seed, n=n, d=d, k=4)
    reg = np.full(n, 0.5) if squared else np.zeros(n)
    data = CoordinateData(X, y.astype(float), np.ones(n), reg, np.ones(n), bias)
    swept: list[int] = []
    numpy_sweep = ascent._sweep_shrunk_numpy

    def spy(*args):
        swept.append(1)
        return numpy_sweep(*args)

    runs = []
    for cold in (True, False):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(ascent, "uncompiled", lambda kernel, rows, budget, cold=cold: cold)
            patch.setattr(ascent, "_sweep_shrunk_numpy", spy)
            u, v = np.zeros(n), np.zeros(d + 1)
            epochs, spread = ascent.coordinate_epochs(
                data.rows, data.sigma, data.p, data.d, data.hi, bias, data.qd, u, v, 300, 1e-6,
                seed, 10,
            )  # fmt: skip
        runs.append((epochs, spread, u, v))
    assert swept  # the numpy sweep ran (in the first ascent only)
    (e0, s0, u0, v0), (e1, s1, u1, v1) = runs
    assert e0 == e1 and s0 == s1
    np.testing.assert_array_equal(u0, u1)
    np.testing.assert_array_equal(v0, v1)


def test_conjugate_gradient_products_predicted_from_the_rows_per_column():
    # sqrt(kappa) ln(2 / CG_STEP_RTOL) with sqrt(kappa) = (1 + sqrt(r)) / (1 - sqrt(r)), r the
    # free rows per column they touch: 3 ln(2e4) at r = 1/4, none finite at r >= 1
    X = sp.csr_matrix(np.kron(np.eye(2), np.ones((1, 4))))  # 2 rows over 8 columns
    expected = 3.0 * math.log(2.0 / ascent.CG_STEP_RTOL)
    assert ascent._cg_products(X) == pytest.approx(expected, rel=1e-15)
    assert ascent._cg_products(sp.csr_matrix(np.eye(3))) == math.inf


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_rows_nearly_as_many_as_their_columns_are_factored_at_once(fit_intercept, monkeypatch):
    # the free rows nearly as many as the columns they touch (494 over 499 at 50000 x 500 of
    # benchmarks/regimes/sparse.py, where the first solve ran its 1000 products and gave way):
    # the finish factors them without a conjugate-gradient solve, though the dense factor
    # costs more than ITERATIVE_FROM products; the certified optimum encloses the oracle's
    X, y = sparse_problem(15, n=400, d=40, k=4)
    monkeypatch.setattr(ascent, "ITERATIVE_FROM", 0.0)
    built = _record_systems(monkeypatch)
    sol = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=fit_intercept).solve(method="dcd")
    assert built and set(built) == {"_FreeSystem"}
    assert sol.method == "dcd" and sol.certificate.passed
    optimum = _exact_optimum(X, y, fit_intercept=fit_intercept)
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_slow_conjugate_gradients_give_way_to_the_dense_factor(fit_intercept, monkeypatch):
    # conjugate gradients whose products cost more than the dense factor (as where the free
    # rows are about as many as the columns they touch: 493 free over 499 columns at 50000 x
    # 500, each solve 1000 products short of 1e-4; here the factor priced at a product's
    # cost): the dense factor of the same free set takes over for the rest of the round, and
    # since the round's first solve alone cost more, the later rounds are factored from the
    # start; the certified optimum encloses the rational oracle's
    X, y = sparse_problem(15, n=120, d=300, k=4)
    monkeypatch.setattr(ascent, "FINISH_EPOCHS", 0)
    monkeypatch.setattr(ascent, "FINISH_GAP", 1.0)
    monkeypatch.setattr(ascent, "ITERATIVE_FROM", 0.0)
    monkeypatch.setattr(ascent, "FACTOR_PRODUCTS", 1e12)
    # the prediction of the solves' products wrong (predicted none): the safeguard serves
    monkeypatch.setattr(ascent, "_cg_products", lambda Z, used=None: 0.0)
    built = _record_systems(monkeypatch)
    monkeypatch.setattr(ascent, "EXTEND_MAX", 0.0)  # every round's system built anew
    if not fit_intercept:
        n = X.shape[0]
        data = CoordinateData(X, y.astype(float), np.ones(n), np.zeros(n), np.ones(n))
        u, v = np.zeros(n), np.zeros(X.shape[1] + 1)
        ascent.coordinate_epochs(
            data.rows, data.sigma, data.p, data.d, data.hi, 0.0, data.qd, u, v, 3, 1e-1, 0, 10
        )
        step, _ = ascent.free_set_step(data, u)
        # one finish of several rounds from a loose point: the first round's system
        # iterative, giving way after its first solve, every later round's the factor
        assert len(built) > 2
        assert built[0] == "_IterativeSystem" and set(built[1:]) == {"_FreeSystem"}
        cert = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False).certify(alpha=step)
        assert cert.passed and cert.relative_gap <= 1e-12
        built.clear()
    sol = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=fit_intercept).solve(method="dcd")
    assert built[0] == "_IterativeSystem" and "_FreeSystem" in built
    assert sol.method == "dcd" and sol.certificate.passed
    optimum = _exact_optimum(X, y, fit_intercept=fit_intercept)
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), C=st.sampled_from([0.3, 1.0, 3.0]))
@example(seed=7, C=1.0)
def test_hinge_with_more_rows_than_features_starts_at_the_finish_tolerance(seed, C):
    # the hinge's ascent at n > d starts at the tolerance the free-set finish takes over from
    # (no looser tolerance before it), the squared hinge's and the n < d hinge's at the first
    # one; the certified optimum encloses the rational oracle's
    X, y = sparse_problem(seed, n=150, d=25, k=4)
    data = ascent.CoordinateData(X, y.astype(float), np.ones(150), np.zeros(150), np.ones(150))
    assert ascent.first_tolerance(data) == ascent.FINISH_FROM < ascent.TOLERANCES[0]
    squared = ascent.CoordinateData(X, data.sigma, data.p, np.full(150, 0.5), data.hi)
    assert ascent.first_tolerance(squared) == ascent.TOLERANCES[0]
    wide = ascent.CoordinateData(
        X.T.tocsr()[:20], data.sigma[:20], data.p[:20], data.d[:20], data.hi[:20]
    )
    assert ascent.first_tolerance(wide) == ascent.TOLERANCES[0]
    tolerances: list[float] = []
    original = ascent.coordinate_epochs

    def spy(*args):
        tolerances.append(args[10])
        return original(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ascent, "coordinate_epochs", spy)
        sol = qpsvm.SoftMarginPrimal(X, y, C=C, fit_intercept=False).solve(method="dcd")
    assert tolerances[0] == ascent.FINISH_FROM
    assert sol.method == "dcd" and sol.certificate.passed
    exact = qpsvm.SoftMarginPrimal(X.toarray(), y, C=C, fit_intercept=False).solve(method="exact")
    optimum = exact.info["exact"].objective
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)


def _spy_iterative_solves(monkeypatch) -> list:
    """Record the finish's conjugate-gradient solves: ``(warm started, rtol)``."""
    calls: list = []
    original = ascent._IterativeSystem.solve

    def spy(self, g, keep, e, start=None, rtol=ascent.CG_RTOL):
        calls.append((start is not None, rtol))
        return original(self, g, keep, e, start, rtol)

    monkeypatch.setattr(ascent._IterativeSystem, "solve", spy)
    return calls


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), fit_intercept=st.booleans())
@example(seed=0, fit_intercept=True)
@example(seed=3, fit_intercept=True)
def test_loose_warm_started_finish_steps_keep_the_rational_optimum(seed, fit_intercept):
    # n > d, the finish forced after every tolerance by conjugate gradients: the steps that may
    # end at a bound are solved loosely (from the last step's (1 - t) x after one did), the
    # steps without a bound tightly; the certified optimum encloses the rational oracle's
    X, y = sparse_problem(seed, n=150, d=60, k=4)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ascent, "FINISH_EPOCHS", 0)
        patch.setattr(ascent, "FINISH_GAP", 1.0)
        built = _spy_systems(patch, iterative=True)
        calls = _spy_iterative_solves(patch)
        sol = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=fit_intercept).solve(method="dcd")
    assert "_IterativeSystem" in built
    assert any(rtol == ascent.CG_STEP_RTOL for _, rtol in calls)
    assert all(rtol == ascent.CG_STEP_RTOL for warm, rtol in calls if warm)
    assert sol.method == "dcd" and sol.certificate.passed
    optimum = _exact_optimum(X, y, fit_intercept=fit_intercept)
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)


@pytest.mark.parametrize("seed", [0, 3])
def test_finish_steps_after_a_bound_start_from_the_last_direction(seed, monkeypatch):
    # a free intercept, 150 x 60: steps of the finish end at a bound and the next solve starts
    # from (1 - t) x
    X, y = sparse_problem(seed, n=150, d=60, k=4)
    monkeypatch.setattr(ascent, "FINISH_EPOCHS", 0)
    monkeypatch.setattr(ascent, "FINISH_GAP", 1.0)
    _spy_systems(monkeypatch, iterative=True)
    calls = _spy_iterative_solves(monkeypatch)
    sol = qpsvm.SoftMarginPrimal(X, y, C=1.0).solve(method="dcd")
    assert any(warm for warm, _ in calls)
    assert sol.certificate.passed


def _numpy_objectives(data: CoordinateData, u, v, shift):
    """The ascent's floating-point ``P(v)`` and ``D(u)`` written out in numpy, each sum by
    Sum2 (``fsum``): the definitions the compiled pass evaluates."""
    from qpsvm._numerics import fsum, fsum_dot

    z = data.sigma * (np.asarray(data.X @ v[:-1]).ravel() + (shift + data.bias * v[-1]))
    r = np.maximum(0.0, data.p - z)
    squared = data.d > 0
    loss = np.where(squared, r * r / (2.0 * np.where(squared, data.d, 1.0)), 0.0)
    loss = np.where(squared, loss, np.where(r > 0.0, data.hi, 0.0) * r)
    primal = 0.5 * fsum_dot(v, v) + fsum(loss)
    dual = fsum((data.p - data.sigma * shift) * u - 0.5 * data.d * u * u) - 0.5 * fsum_dot(v, v)
    return primal, dual


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    squared=st.booleans(),
    bias=st.sampled_from([0.0, 1.0, 3.0]),
    shift=st.sampled_from([0.0, 0.4, -1.7]),
    sparse=st.booleans(),
)
def test_compiled_objectives_and_expansion_equal_their_numpy_definitions(
    seed, squared, bias, shift, sparse
):
    # the estimates that steer the ascent, in one compiled pass: on CSR rows the same
    # operations in the same order as the numpy definitions (the rows' products summed in
    # their stored order, every sum by Sum2), so the same floats; dense rows' products are
    # BLAS's there, in another order
    rng = np.random.default_rng(seed)
    X, y = sparse_problem(seed, n=40, d=60, k=4)
    X = X.multiply(rng.standard_normal(X.shape) * 10.0 ** rng.integers(-3, 4)).tocsr()
    n = X.shape[0]
    C = float(10.0 ** rng.integers(-2, 3))
    d = np.full(n, 1.0 / (2.0 * C)) if squared else np.zeros(n)
    hi = np.full(n, np.inf) if squared else np.full(n, C)
    data = CoordinateData(X if sparse else X.toarray(), y.astype(float), np.ones(n), d, hi, bias)
    u = np.where(rng.random(n) < 0.3, 0.0, rng.random(n) * min(C, 10.0))
    v = data.expansion(u, exact=False)
    plain = np.append(X.T @ (u * data.sigma), bias * np.sum(u * data.sigma))
    if sparse:
        assert np.array_equal(v[:-1], plain[:-1])
    np.testing.assert_allclose(v, plain, rtol=1e-13, atol=1e-13 * np.max(np.abs(plain)))
    primal, dual = data.objectives(u, v, shift)
    reference = _numpy_objectives(data, u, v, shift)
    if sparse:
        assert (primal, dual) == reference
    np.testing.assert_allclose((primal, dual), reference, rtol=1e-12)
    assert data.primal(v, shift) == primal and data.dual(u, v, shift) == dual
    if sparse:
        # before the passes are compiled (a cold first call) their numpy equivalents run,
        # the same operations in the same order: the same floats, zeros' signs included
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(ascent, "uncompiled", lambda kernel, rows, budget: True)
            cold = data.expansion(u, exact=False)
            assert np.array_equal(cold, v) and np.array_equal(np.signbit(cold), np.signbit(v))
            assert data.objectives(u, v, shift) == (primal, dual)
            assert data.dual(u, v, shift) == dual
            assert data.objectives(np.zeros(0), v, shift)[1] == data.dual(np.zeros(0), v, shift)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    dropped=st.floats(0.0, 0.7),
    coupled=st.booleans(),
    bias2=st.sampled_from([0.0, 1.0]),
    warm=st.booleans(),
    rtol=st.sampled_from([ascent.CG_RTOL, ascent.CG_STEP_RTOL]),
    max_iter=st.sampled_from([3, ascent.CG_ITERATIONS]),
)
def test_numpy_conjugate_gradients_equal_the_compiled_ones_to_the_bit(
    seed, dropped, coupled, bias2, warm, rtol, max_iter
):
    # the finish's conjugate gradients before they are compiled (a cold first call): the
    # same products and sums in the same order, so the same iterates, x and beta to the bit
    rng = np.random.default_rng(seed)
    X, y = sparse_problem(seed, n=60, d=200, k=4)
    Z = X.multiply(rng.standard_normal(X.shape) * 10.0 ** rng.integers(-2, 3)).tocsr()
    sigma = y.astype(float)
    columns, indices = np.unique(Z.indices, return_inverse=True)
    data = Z.data * np.repeat(sigma, np.diff(Z.indptr))
    keep = rng.random(sigma.size) >= dropped
    start = rng.standard_normal(sigma.size) if warm else np.zeros(sigma.size)
    diag = rng.random(sigma.size) * 1e-3
    args = (
        data, indices, Z.indptr, sigma, bias2, diag, keep, rng.standard_normal(sigma.size),
        coupled, float(rng.normal()), start, columns.size, max_iter, rtol, 1e-15,
    )  # fmt: skip
    x, beta, products = ascent._free_cg(*args)
    x_numpy, beta_numpy, products_numpy = ascent._free_cg_numpy(*args)
    assert np.array_equal(x_numpy, x) and np.array_equal(np.signbit(x_numpy), np.signbit(x))
    assert beta_numpy == beta and products_numpy == products <= max_iter + 3  # starts, beta


def test_ascent_steers_by_the_compiled_objectives(monkeypatch):
    # every gap estimate of the solver's ascent is the compiled pass's
    calls = []
    original = ascent.coordinate_objectives

    def spy(*args):
        calls.append(args[-1])
        return original(*args)

    monkeypatch.setattr(ascent, "coordinate_objectives", spy)
    X, y = sparse_problem(5, n=60, d=300)
    sol = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False).solve(method="dcd")
    assert sol.certificate.passed and len(calls) >= 2 and all(calls)


@settings(max_examples=8, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    C=st.sampled_from([0.3, 1.0, 10.0]),
    fit_intercept=st.booleans(),
)
def test_dcd_with_fewer_samples_than_features_equals_the_rational_oracle(seed, C, fit_intercept):
    # text-like n < d, the regime whose gap estimates and steering expansions are the
    # compiled passes: the certified enclosure holds the rational oracle's P* (the squared
    # hinge at n < d: test_dcd_is_certified_on_random_sparse_problems)
    X, y = sparse_problem(seed, n=30, d=90, k=4)
    if len(np.unique(y)) < 2:
        return
    sol = qpsvm.SoftMarginPrimal(X, y, C=C, fit_intercept=fit_intercept).solve(method="dcd")
    assert sol.certificate.passed
    dense = qpsvm.SoftMarginPrimal(X.toarray(), y, C=C, fit_intercept=fit_intercept)
    optimum = dense.solve(method="exact").info["exact"].objective
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), density=st.sampled_from([0.005, 0.05, 0.4]))
def test_row_norms_of_canonical_csr_equal_the_sparse_products(seed, density):
    # the squares reduced along the rows as the sparse product's row sums reduce them (empty
    # rows included): the same floats; explicit zeros or duplicates take the product itself
    from qpsvm._rows import row_sq_norms

    rng = np.random.default_rng(seed)
    X = sp.random(60, 90, density, format="csr", random_state=seed)
    X.data *= rng.standard_normal(X.nnz) ** 5 * 10.0 ** rng.integers(-5, 6)
    reference = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    assert np.array_equal(row_sq_norms(X), reference)
    if X.nnz:
        X.data[0] = 0.0  # an explicit zero
        assert X.has_canonical_format
        assert np.array_equal(row_sq_norms(X), np.asarray(X.multiply(X).sum(axis=1)).ravel())


def test_free_intercept_certificate_sums_row_norms_without_the_sparse_product(monkeypatch):
    # the bound on |b*| takes max ||x_i|| from the squares reduced along the canonical CSR rows
    # (row_sq_norms, the same floats as X.multiply(X)'s row sums), never forming X * X; the
    # enclosure still holds the rational oracle's P*
    from qpsvm.verify.rigorous import row_norms_upper

    X, y = sparse_problem(7, n=30, d=90, k=4)
    X.sum_duplicates()  # canonical, as check_data's copy is
    reference = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    bound = row_norms_upper(X)
    assert np.all(bound * bound >= reference)

    def refuse(self, other):
        raise AssertionError("X * X formed")

    monkeypatch.setattr(sp.csr_matrix, "multiply", refuse)
    assert np.array_equal(row_norms_upper(X), bound)
    sol = qpsvm.SoftMarginPrimal(X, y, C=1.0, intercept="free").solve(method="dcd")
    assert sol.certificate.passed
    monkeypatch.undo()
    dense = qpsvm.SoftMarginPrimal(X.toarray(), y, C=1.0, intercept="free")
    optimum = dense.solve(method="exact").info["exact"].objective
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), fit_intercept=st.booleans())
def test_certificate_scores_of_sparse_rows_are_the_enclosures_high_parts(seed, fit_intercept):
    # the primal side's scores on CSR rows are the high parts of the rigorous bound's Dot2
    # enclosure (one pass over the rows, not a product and the enclosure): the same floats
    # as scipy's X @ w, so the same certified answer; the enclosure holds the oracle's P*
    from qpsvm.formulations.binary import BinaryFormulation
    from qpsvm.verify.rigorous import binary_margins

    X, y = sparse_problem(seed, n=30, d=90, k=4)
    if len(np.unique(y)) < 2:
        return
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=fit_intercept)
    w = np.random.default_rng(seed).standard_normal(90) * 10.0 ** np.arange(-3, 6).repeat(10)
    assert np.array_equal(binary_margins(f, w)[0], f.X @ w)
    calls = []
    scores = BinaryFormulation.scores

    def counted(self, w=None, alpha=None):
        calls.append(w is not None)
        return scores(self, w=w, alpha=alpha)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(BinaryFormulation, "scores", counted)
        sol = f.solve(method="dcd")
    assert sol.certificate.passed and not any(calls)
    dense = qpsvm.SoftMarginPrimal(X.toarray(), y, C=1.0, fit_intercept=fit_intercept)
    optimum = dense.solve(method="exact").info["exact"].objective
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)


def test_certificate_of_the_solvers_point_expands_it_once(monkeypatch):
    # the stationarity residual reuses the expansion the dual value computed at the same
    # multipliers (the bounds' exactly feasible copy of them), one Dot2 pass fewer; on sparse
    # rows that is the enclosure the rigorous bound reuses too, and the formulation's own
    # expansion is never called
    X, y = sparse_problem(6, n=60, d=300)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False)
    sol = f.solve(method="dcd")
    calls = []
    original = type(f).expansion

    def spy(self, alpha):
        calls.append(alpha)
        return original(self, alpha)

    monkeypatch.setattr(type(f), "expansion", spy)
    cert = f.certify(sol)
    assert cert.passed and not calls
    w = original(f, cert.alpha)
    assert cert.stationarity == pytest.approx(float(np.linalg.norm(sol.w - w)), abs=1e-15)


def _dense_classification(seed: int, n: int, d: int, standardise: bool = False):
    """scikit-learn's two-class problem (labels -1, 1): two informative features, two
    redundant ones (linear combinations of them: the rows have rank ``d - 2``), the rest
    noise; standardised columns with ``standardise``."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n, d, random_state=seed)
    if standardise:
        X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, 2 * y - 1


@pytest.mark.parametrize("standardise", [False, True])
def test_dcd_on_dense_data_at_large_C_is_certified_and_holds_the_oracle(standardise):
    # the hinge at C = 100 without an intercept, n > d: the first tolerance of the ascent
    # takes some 15000 epochs and the next ran out of epochs at a gap of 5e-5, the free-set
    # finish never tried (its gate was the gap alone); a free set of a few dozen coordinates
    # is finished from any gap
    X, y = _dense_classification(0, 500, 20, standardise)
    f = qpsvm.SoftMarginPrimal(X, y, C=100.0, fit_intercept=False)
    sol = f.solve(method="dcd")
    assert sol.solver == "dcd" and sol.certificate.passed
    optimum = f.solve(method="exact").info["exact"].objective
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)


@pytest.mark.parametrize("rows", [2, 3])
def test_bordered_columns_tell_a_nearly_singular_free_set(rows):
    # H = Z Z^T on rows of R^2: two independent rows are nonsingular (H^{-1} e_r of order 1),
    # a third makes H singular, its columns of order 1 / delta along the null space (the
    # bordered solves lose eps / delta there, and only there the kept set is refactored)
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])[:rows]
    n = X.shape[0]
    data = CoordinateData(X, np.ones(n), np.ones(n), np.zeros(n), np.ones(n))
    system = ascent._FreeSystem.factored(data, np.arange(n), coupled=False)
    keep = np.ones(n, dtype=bool)
    keep[0] = False
    system.solve(np.ones(n), keep, 0.0)
    assert system.nearly_singular(keep) == (rows == 3)
    assert not system.nearly_singular(np.ones(n, dtype=bool))  # nothing dropped


@given(
    seed=st.integers(0, 10_000),
    rows=st.integers(2, 40),
    coupled=st.booleans(),
    bias=st.sampled_from([0.0, 1.0]),
)
@example(seed=0, rows=30, coupled=False, bias=0.0)  # more rows than columns: singular
@example(seed=1, rows=12, coupled=True, bias=1.0)
@settings(max_examples=40, deadline=None)
def test_restricted_factor_is_the_factor_of_the_kept_set(seed, rows, coupled, bias):
    # deleting the dropped coordinates from the factor of F (Givens rotations) gives the
    # Cholesky factor of the kept principal submatrix of the same shifted and augmented
    # Hessian (a triangular factor with positive diagonal is unique), and its bordered solves
    # are those of the kept equations
    rng = np.random.default_rng(seed)
    X = sp.random(rows, 20, density=0.3, random_state=seed, format="csr")
    y = np.where(rng.random(rows) < 0.5, -1.0, 1.0)
    data = CoordinateData(X, y, np.ones(rows), np.zeros(rows), np.ones(rows), bias)
    F = np.arange(rows)
    system = ascent._FreeSystem.factored(data, F, coupled=coupled)
    if system is None:
        return  # a zero Hessian does not factor
    keep = rng.random(rows) < 0.6
    keep[rng.integers(rows)] = True
    kept = system.restricted(keep)
    K = np.flatnonzero(keep)
    # both factors lower triangular with their upper part zero: the deletions read the rows K
    # of the first as A with its zeros (no tril copy), and leave the second so for the next
    assert not np.any(np.triu(system.factor[0], 1))
    L = kept.factor[0]
    assert not np.any(np.triu(L, 1))
    assert np.all(np.diag(L) > 0.0)
    np.testing.assert_allclose(
        L @ L.T, system.H[np.ix_(K, K)], rtol=0, atol=1e-12 * np.max(np.abs(system.H))
    )
    assert kept.delta == system.delta and kept.rho == system.rho
    g = rng.standard_normal(K.size)
    x, beta = kept.solve(g, np.ones(K.size, dtype=bool), 0.25)
    A, rhs = system.H[np.ix_(K, K)], g.copy()
    if coupled:
        sK = data.sigma[K]
        A = np.block([[A, sK[:, None]], [sK[None, :], np.zeros((1, 1))]])
        rhs = np.append(rhs + system.rho * 0.25 * sK, 0.25)
    ref = np.linalg.lstsq(A, rhs, rcond=None)[0] if rows > 20 else np.linalg.solve(A, rhs)
    residual = A @ np.append(x, beta)[: A.shape[0]] - rhs
    assert np.max(np.abs(residual)) <= 1e-8 * max(1.0, np.max(np.abs(ref)))


@given(seed=st.integers(0, 10_000), n=st.integers(1, 30))
@example(seed=0, n=25)
@settings(max_examples=30, deadline=None)
def test_rotations_out_of_a_factor_in_numpy_are_the_compiled_ones(seed, n):
    # the rotations deleting indices from a Cholesky factor, before their kernel is
    # compiled, in numpy: the same operations in the same order, the same factor to the bit
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((n, n + 2))
    L = np.linalg.cholesky(M @ M.T)
    keep = rng.random(n) < 0.5
    rows = np.flatnonzero(keep)
    At = np.ascontiguousarray(L[rows].T)
    compiled, numpy = At.copy(), At.copy()
    ascent._rotate_out(compiled, keep, rows)
    cost = ascent._rotate_out_numpy(numpy, keep, rows)
    np.testing.assert_array_equal(numpy, compiled)
    assert cost >= 0 and (cost > 0) == bool(np.any(numpy[~keep] != At[~keep]))


def test_finish_deletes_the_nearly_singular_dropped_set_from_its_factor(monkeypatch):
    # n > d from a loose point: a round that dropped coordinates from a nearly singular free
    # set goes on with its factor, the dropped coordinates deleted (no Gram, no new factor),
    # and certifies at the rational oracle's optimum as with every round factored anew
    X, y, data, u = _loose_point_n_gt_d()
    monkeypatch.setattr(ascent, "ITERATIVE_FROM", np.inf)  # the dense factor
    restricted = []
    original = ascent._FreeSystem.restricted

    def spy(self, keep):
        restricted.append(int(np.count_nonzero(~keep)))
        return original(self, keep)

    monkeypatch.setattr(ascent._FreeSystem, "restricted", spy)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False)
    certs, counts = [], []
    for fraction in (ascent.EXTEND_MAX, 0.0):
        monkeypatch.setattr(ascent, "EXTEND_MAX", fraction)
        restricted.clear()
        built = _record_systems(monkeypatch)
        step, _ = ascent.free_set_step(data, u)
        counts.append(len(built))
        assert bool(restricted) == (fraction > 0.0) and all(restricted)
        certs.append(f.certify(alpha=step))
        assert certs[-1].passed and certs[-1].relative_gap <= 1e-12
        monkeypatch.undo()
        monkeypatch.setattr(ascent, "ITERATIVE_FROM", np.inf)
        monkeypatch.setattr(ascent._FreeSystem, "restricted", spy)
    assert counts[0] < counts[1]  # fewer systems formed
    optimum = _exact_optimum(X, y, fit_intercept=False)
    for cert in certs:
        assert Fraction(cert.lower) <= optimum <= Fraction(cert.upper)


def _loose_point_n_gt_d() -> tuple:
    """Sparse rows with n > d (300 x 40, 4 nonzeros a row), their hinge's coordinate data
    without intercept, and the multipliers of 3 epochs of the ascent from 0."""
    X, y = sparse_problem(3, n=300, d=40, k=4)
    n = X.shape[0]
    data = CoordinateData(X, y.astype(float), np.ones(n), np.zeros(n), np.ones(n))
    u, v = np.zeros(n), np.zeros(X.shape[1] + 1)
    ascent.coordinate_epochs(
        data.rows, data.sigma, data.p, data.d, data.hi, 0.0, data.qd, u, v, 3, 1e-1, 0, 10
    )
    return X, y, data, u


def test_finish_refactors_no_well_conditioned_kept_set(monkeypatch):
    # n > d: the last round of the finish drops coordinates from a nonsingular free set; its
    # bordered point is the optimum (no refactored round, which cost a factor and a step at
    # 50000 x 500 of benchmarks/regimes/sparse.py), certified to 1e-12
    X, y, data, u = _loose_point_n_gt_d()
    monkeypatch.setattr(ascent, "ITERATIVE_FROM", np.inf)  # the dense factor
    # every round factored anew (an extended factor keeps earlier rounds' dropped coordinates)
    monkeypatch.setattr(ascent, "EXTEND_MAX", 0.0)
    built, checked = _record_systems(monkeypatch), []
    original = ascent._FreeSystem.nearly_singular

    def spy(self, keep):
        checked.append(original(self, keep))
        return checked[-1]

    monkeypatch.setattr(ascent._FreeSystem, "nearly_singular", spy)
    step, _ = ascent.free_set_step(data, u)
    assert checked and not checked[-1]  # the last round dropped, well conditioned
    assert len(built) == len(checked)  # no round after it
    cert = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False).certify(alpha=step)
    assert cert.passed and cert.relative_gap <= 1e-12


def test_coupled_free_set_step_on_rank_deficient_dense_rows_is_exact():
    # 19 free rows of rank 18 with the intercept: the free set's Hessian is singular along a
    # direction the balance does not annihilate; the bordered solves of the proximally shifted
    # factor left residuals of 2e-7 on the free margins (relative gap 1e-9 to 4e-9, the
    # balance off by 5e-8) where the augmented factor meets them to round-off
    X, y = _dense_classification(0, 500, 20)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    start = f.solve(method="qp")
    n = X.shape[0]
    data = CoordinateData(X, y.astype(float), np.ones(n), np.zeros(n), np.ones(n))
    free = (start.alpha > 1e-6) & (start.alpha < 1 - 1e-6)
    noise = 1e-3 * np.random.default_rng(0).standard_normal(n)
    u = np.clip(np.where(free, start.alpha + noise, np.round(start.alpha)), 0.0, 1.0)
    step, b = ascent.free_set_step(data, u, coupled=True)
    assert abs(float(y @ step)) <= 1e-12
    on = (step > 0) & (step < 1)
    assert np.linalg.matrix_rank(X[on]) < on.sum()
    margins = y * (X @ (X.T @ (step * y)) + b)
    assert np.max(np.abs(margins[on] - 1.0)) <= 1e-12
    cert = f.certify(alpha=step, b=b)
    assert cert.passed and cert.relative_gap <= 1e-13


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    log_C=st.floats(-3.0, 3.0),
    shift=st.sampled_from([0.0, 3.0, -20.0]),
    scale=st.sampled_from([1.0, 1e-2, 10.0]),
    fit_intercept=st.booleans(),
)
@example(seed=0, log_C=0.0, shift=0.0, scale=1.0, fit_intercept=True)
@example(seed=0, log_C=2.0, shift=0.0, scale=1.0, fit_intercept=True)
@example(seed=2, log_C=-2.0, shift=0.0, scale=1.0, fit_intercept=True)
@example(seed=0, log_C=-3.0, shift=-20.0, scale=1.0, fit_intercept=True)
@example(seed=4, log_C=0.0, shift=0.0, scale=1e-2, fit_intercept=True)
@example(seed=4, log_C=-3.0, shift=0.0, scale=1e-2, fit_intercept=True)
def test_dcd_on_dense_data_equals_the_rational_oracle(seed, log_C, shift, scale, fit_intercept):
    # dense rows of rank d - 2 (scikit-learn's redundant features), shifted and scaled, C over
    # six decades: dcd certifies its own point (no fallback) with and without a free intercept,
    # and the enclosure holds the rational oracle's P*. (Rows of size 1e3 at C >= 10 are past
    # dcd's floor: w = sum_i alpha_i y_i x_i resolves the margins only to eps |alpha| |x|^2,
    # relative gaps near 3e-8; the free intercept then falls back to the working set.)
    X, y = _dense_classification(seed % 8, 120, 8)
    X = scale * (X + shift)
    C = 10.0**log_C
    f = qpsvm.SoftMarginPrimal(X, y, C=C, fit_intercept=fit_intercept)
    sol = f.solve(method="dcd")
    assert sol.solver == "dcd" and sol.certificate.passed
    optimum = f.solve(method="exact").info["exact"].objective
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)


@pytest.mark.parametrize(
    ("seed", "scale", "shift", "C"),
    [
        (4, 1e-2, 0.0, 1.0),
        (4, 1e-2, 0.0, 1e-3),
        (4, 1e-3, 0.0, 0.1),
        (4, 1e-3, -20.0, 0.1),
        (7, 1e-3, 0.0, 0.1),
        (7, 1e-3, 3.0, 0.1),
        (0, 1e2, 0.0, 1.0),
        (4, 1e2, 3.0, 1.0),
    ],
)
def test_dcd_on_scaled_rows_with_a_free_intercept_equals_the_rational_oracle(seed, scale, shift, C):
    # rows scaled far from 1 (the dual's curvature by scale^2): on small rows w is small, every
    # multiplier but a few sits at a bound and g(b) is flat but for a jump near the root
    # (-2 then 59 at 1e-2, C = 1, b near -0.95); dcd fell back to the working set there
    # (the coupled free-set step off its balance, the search stalled on the plateaus)
    X, y = _dense_classification(seed, 120, 8)
    f = qpsvm.SoftMarginPrimal(scale * (X + shift), y, C=C)
    sol = f.solve(method="dcd")
    assert sol.solver == "dcd" and sol.certificate.passed
    optimum = f.solve(method="exact").info["exact"].objective
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)


def test_coupled_free_set_step_stays_balanced_on_small_scaled_rows(monkeypatch):
    # rows scaled by 1e-2 (seed 4, C = 1): from the regularised start's 61 free multipliers the
    # projected path of the first direction passed 56 breakpoints and left sum_i y_i u_i at
    # 14.5 (b = -189, gap 0.99); the path leaves the plane of the balance, so a coupled step
    # stops at the ratio test's first bound, and each returns a balanced point
    X, y = _dense_classification(4, 120, 8)
    f = qpsvm.SoftMarginPrimal(1e-2 * X, y, C=1.0)
    steps = []
    original = ascent.free_set_step

    def spy(data, u, *args, coupled=False, **kwargs):
        out = original(data, u, *args, coupled=coupled, **kwargs)
        if coupled and out is not None:
            steps.append(out)
        return out

    monkeypatch.setattr(ascent, "free_set_step", spy)
    assert f.solve(method="dcd").solver == "dcd"
    assert steps
    for step, _ in steps:
        assert abs(float(y @ step)) <= 1e-12
    cert = f.certify(alpha=steps[0][0], b=steps[0][1])
    assert cert.passed and cert.relative_gap <= 1e-12


def test_free_intercept_search_alone_crosses_the_plateaus_of_g(monkeypatch):
    # without the free-set finish the search on b alone certifies the small rows (seed 4,
    # rows by 1e-2, C = 1): g = -2 on one side of the root and 59 on the other; regula falsi
    # with the Illinois rule halving the far end once crept towards it by 6% a value of b and
    # stalled at a relative gap of 2e-3, the plateau's ends now bisect the bracket
    monkeypatch.setattr(ascent, "_finish_coupled", lambda *args: None)
    X, y = _dense_classification(4, 120, 8)
    f = qpsvm.SoftMarginPrimal(1e-2 * X, y, C=1.0)
    sol = f.solve(method="dcd")
    assert sol.solver == "dcd" and sol.certificate.passed
    optimum = f.solve(method="exact").info["exact"].objective
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)


def test_bracket_bisects_on_a_plateau_of_g_and_doubles_its_steps_to_find_one():
    # g piecewise constant (every multiplier that moves with b at a bound): its values say
    # nothing of the root's distance, the secant is infinite
    bracket = ascent._Bracket()
    u = np.zeros(1)
    bracket.add(0.0, -2.0, u, 1e-3)
    bracket.add(-0.5, -2.0, u, 1e-3)
    assert bracket.next(0.5) == -1.5  # the last step doubled
    bracket.add(-1.5, 59.0, u, 1e-3)
    assert not bracket.flat and bracket.next(0.5) == pytest.approx(-0.5 - 2.0 / 61.0)
    bracket.add(-0.53, -2.0, u, 1e-3)  # the hi end again at g = -2: the midpoint
    assert bracket.flat and bracket.next(0.5) == pytest.approx(0.5 * (-1.5 - 0.53))
    # g moved: regula falsi, the Illinois rule halving the far end's g once for each time the
    # same side was replaced again (once before: the far end crept in by 6% a step)
    bracket.add(-0.6, -1.0, u, 1e-3)
    t = 59.0 / 2 / (59.0 / 2 + 1.0)
    assert not bracket.flat and bracket.next(0.5) == pytest.approx(-1.5 + t * 0.9)
    bracket.add(-0.63, -0.5, u, 1e-3)
    t = 59.0 / 4 / (59.0 / 4 + 0.5)
    assert not bracket.flat and bracket.next(0.5) == pytest.approx(-1.5 + t * 0.87)


def test_bracket_drops_an_end_whose_sign_a_looser_solve_gave():
    # g(b) nonincreasing; the hi end (g < 0 at b = 0) came from an inner solve at 1e-3 and is
    # wrong, as three tighter solves left of it all find g > 0: after the third, it is dropped
    # and the search solves again at its b
    bracket = ascent._Bracket()
    u = np.zeros(1)
    bracket.add(0.0, -0.03, u, 1e-3)
    for i, b in enumerate((-1e-6, -1e-7, -1e-8)):
        assert bracket.hi is not None  # kept while the streak is short
        bracket.add(b, 0.43, u, 2.5e-7)
        assert bracket.streak == i
    assert bracket.hi is None and bracket.lo[0] == -1e-8
    # its b solved again at the tolerance of the newest end, not a first step away from it
    assert bracket.next(0.5) == 0.0


def test_bracket_keeps_an_end_found_as_tightly_where_g_jumps():
    # a genuine jump of g over 0 (a kink of V, the hinge with n > d): both ends found at the
    # same tolerance, the bracket closes on the jump and its combination ends the search
    bracket = ascent._Bracket()
    u = np.zeros(1)
    bracket.add(0.0, -0.03, u, 1e-7)
    for b in (-1e-6, -1e-7, -1e-8):
        bracket.add(b, 0.43, u, 1e-7)
    assert bracket.hi is not None and bracket.mixed() is not None


def test_free_intercept_search_past_a_loose_solves_wrong_sign_is_certified_by_dcd(caplog):
    # the regime grid's text-like rows (benchmarks/regimes/sparse.py, 10000 x 200, 10 nonzeros
    # a row, the squared hinge): the first inner solve, at 1e-3 from the regularised start,
    # gave g < 0 where g > 0, the bracket closed on it and the search stalled at a gap of
    # 1.8e-8, so dcd fell back to a working set of 48673 rows; now dcd certifies it itself
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from regimes.sparse import text_like

    X, y = text_like(10000, 200, 10, seed=0)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, loss="squared_hinge", intercept="free")
    with caplog.at_level("WARNING", logger="qpsvm"):
        sol = f.solve(method="dcd")
    assert "instead" not in caplog.text
    assert sol.certificate.passed and "start" not in sol.info


@pytest.mark.parametrize("seed", range(6))
def test_touched_columns_are_the_columns_rows_touch_compiled_or_not(seed, monkeypatch):
    # X[:, touched] with the rows' entries in their order; every other column is 0; the
    # compiled kernel and its numpy equivalent give the same integers
    from qpsvm import _rows

    rng = np.random.default_rng(seed)
    X = sp.random(40, 500, 0.004 * (seed + 1), format="csr", random_state=seed)
    X.sum_duplicates()
    X.indices = X.indices.astype(np.int64 if seed % 2 else np.int32)
    X.data *= rng.standard_normal(X.nnz)
    restricted, touched = _rows.touched_columns(X)
    dense = X.toarray()
    assert np.array_equal(touched, np.flatnonzero(np.any(dense != 0.0, axis=0)))
    assert np.array_equal(restricted.toarray(), dense[:, touched])
    assert np.array_equal(restricted.data, X.data)
    # most columns touched: no restriction, and the compiled kernel renumbers nothing
    full = sp.csr_matrix(np.ones((3, 4)))
    assert _rows.touched_columns(full) is None
    renumbered, columns = _rows._touched_columns(X.indices, X.shape[1], touched.size - 1)
    assert renumbered.size == 0 and np.array_equal(columns, touched)
    monkeypatch.setattr(_rows, "uncompiled", lambda kernel, rows, budget: True)
    numpy_restricted, numpy_touched = _rows.touched_columns(X)
    assert np.array_equal(numpy_touched, touched)
    assert np.array_equal(numpy_restricted.indices, restricted.indices)
    assert _rows.touched_columns(full) is None


def test_touched_columns_of_canonical_rows_are_known_canonical(monkeypatch):
    # the ranks increase with the columns, so the restriction of canonical rows is canonical,
    # known without scipy's O(nnz) check; of unsorted rows, not claimed
    import scipy.sparse._compressed as compressed

    from qpsvm import _rows

    X = sp.random(40, 500, 0.02, format="csr", random_state=1)
    X.has_canonical_format = True
    restricted, _ = _rows.touched_columns(X)
    fresh = sp.csr_matrix(
        (restricted.data, restricted.indices, restricted.indptr), restricted.shape
    )
    assert fresh.has_canonical_format

    def no_check(*args):
        raise AssertionError("scipy checked the format again")

    monkeypatch.setattr(compressed, "csr_has_canonical_format", no_check)
    assert restricted.has_canonical_format
    monkeypatch.undo()
    Y = X.copy()
    Y.indices[:2] = Y.indices[1::-1]  # the first row's first two entries swapped
    Y.has_sorted_indices = False
    assert not _rows.touched_columns(Y)[0].has_canonical_format


@pytest.mark.parametrize("seed", range(4))
def test_clustered_columns_are_renumbered_by_first_appearance(seed, monkeypatch):
    # Y[:, k] = X[:, order[k]], each row's entries in their stored order (the same data), and
    # a column's new number is the count of distinct columns before its first appearance
    from qpsvm import _rows

    monkeypatch.setattr(_rows, "CLUSTERED_FROM", 0)
    monkeypatch.setattr(_rows, "uncompiled", lambda kernel, rows, budget: False)
    X = sp.random(30, 300, 0.01 * (seed + 1), format="csr", random_state=seed)
    X.indices = X.indices.astype(np.int64 if seed % 2 else np.int32)
    Y, order = _rows.clustered_columns(X)
    assert np.array_equal(Y.toarray(), X.toarray()[:, order])
    assert np.array_equal(Y.data, X.data) and np.array_equal(Y.indptr, X.indptr)
    assert not Y.has_sorted_indices
    first = [int(j) for k, j in enumerate(X.indices) if j not in X.indices[:k]]
    assert order.tolist() == first
    # past the columns' threshold only, and never before the kernel is compiled
    monkeypatch.setattr(_rows, "CLUSTERED_FROM", X.shape[1])
    assert _rows.clustered_columns(X) is None
    monkeypatch.setattr(_rows, "CLUSTERED_FROM", 0)
    monkeypatch.setattr(_rows, "uncompiled", lambda kernel, rows, budget: True)
    assert _rows.clustered_columns(X) is None


@pytest.mark.parametrize(("loss", "intercept"), PROBLEMS)
def test_dcd_ascends_over_the_clustered_columns_to_the_same_floats(loss, intercept, monkeypatch):
    # each row's products are summed in their stored order whatever the columns' numbers, so
    # the epochs over the columns renumbered by first appearance move the same multipliers:
    # the same weights, intercept and certificate as over the columns in their order, to the
    # bit (the free intercept's balanced ascent keeps the columns' order)
    from qpsvm import _rows

    X, y = sparse_problem(11, n=50, d=600, k=6)
    build = qpsvm.SoftMarginPrimal
    plain = build(X, y, C=1.0, loss=loss, intercept=intercept).solve(method="dcd")
    made = []
    original = _rows.clustered_columns

    def spy(Z):
        made.append(original(Z))
        return made[-1]

    monkeypatch.setattr(_rows, "CLUSTERED_FROM", 0)
    monkeypatch.setattr(_rows, "uncompiled", lambda kernel, rows, budget: False)
    monkeypatch.setattr(ascent, "clustered_columns", spy)
    sol = build(X, y, C=1.0, loss=loss, intercept=intercept).solve(method="dcd")
    assert (len(made) == 1 and made[0] is not None) == (intercept != "free")
    assert sol.certificate.passed
    assert np.array_equal(sol.w, plain.w) and sol.b == plain.b
    assert np.array_equal(sol.alpha, plain.alpha)
    assert sol.certificate.primal_objective == plain.certificate.primal_objective
    assert sol.certificate.dual_objective == plain.certificate.dual_objective


@pytest.mark.parametrize(("loss", "intercept"), PROBLEMS)
def test_dcd_ascends_over_the_touched_columns_to_the_same_floats(loss, intercept, monkeypatch):
    # columns no row touches hold exact zeros in every expansion and add exact zeros to every
    # sum: the ascent over the touched ones alone (its v of their length) returns the same
    # weights, intercept and certificate as over all of them, to the bit
    X, y = sparse_problem(7, n=40, d=400, k=3)
    widths = []
    original = ascent.coordinate_epochs

    def spy(*args):
        widths.append(args[8].size)
        return original(*args)

    monkeypatch.setattr(ascent, "coordinate_epochs", spy)
    sol = qpsvm.SoftMarginPrimal(X, y, C=1.0, loss=loss, intercept=intercept).solve(method="dcd")
    touched = np.unique(X.indices).size
    assert sol.certificate.passed and set(widths) == {touched + 1}
    widths.clear()
    monkeypatch.setattr("qpsvm._rows.TOUCHED_SHARE", 0.0)
    every = qpsvm.SoftMarginPrimal(X, y, C=1.0, loss=loss, intercept=intercept).solve(method="dcd")
    assert set(widths) == {X.shape[1] + 1}
    assert np.array_equal(sol.w, every.w) and sol.b == every.b
    assert np.array_equal(sol.alpha, every.alpha)
    assert sol.certificate.primal_objective == every.certificate.primal_objective
    assert sol.certificate.dual_objective == every.certificate.dual_objective


@pytest.mark.parametrize("intercept", ["none", "free"])
def test_certificate_expands_over_the_formulations_touched_columns(intercept, monkeypatch):
    # the formulation restricts its rows once, for the solver's ascent and the certificate's
    # expansion of its dual points, which spans the touched columns alone: P, D and the
    # stationarity to the bit those of the expansion over every column
    from qpsvm.formulations import kernel_rows
    from qpsvm.verify import rigorous

    X, y = sparse_problem(7, n=40, d=400, k=3)
    restrict, enclose = kernel_rows.touched_columns, rigorous.enclosed_product
    calls, widths = [], []

    def restrict_spy(M):
        calls.append(M.shape)
        return restrict(M)

    def enclose_spy(M, v, *args, **kwargs):
        if sp.issparse(M) and M.shape[0] == X.shape[0]:
            widths.append(M.shape[1])
        return enclose(M, v, *args, **kwargs)

    monkeypatch.setattr(kernel_rows, "touched_columns", restrict_spy)
    monkeypatch.setattr(rigorous, "enclosed_product", enclose_spy)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, intercept=intercept)
    sol = f.solve(method="dcd")
    assert calls == [X.shape] and set(widths) == {np.unique(X.indices).size}
    monkeypatch.setattr(f, "_touched", (None,))  # the expansions over all 400 columns
    widths.clear()
    every = f.certify(sol)
    assert set(widths) == {X.shape[1]}
    cert = sol.certificate
    assert cert.passed and cert.stationarity == every.stationarity == 0.0
    assert cert.primal_objective == every.primal_objective
    assert cert.dual_objective == every.dual_objective


def _dot2_passes(monkeypatch) -> list:
    """The shapes of the rows of every Dot2 expansion with magnitudes (``csr_tdot2_abs``) made
    from now on by the ascent or the certificate."""
    from qpsvm import _numerics
    from qpsvm.verify import ascent as ascent_module

    passes = []
    original = _numerics.csr_tdot2_abs

    def spy(M, v):
        passes.append(M.shape)
        return original(M, v)

    monkeypatch.setattr(ascent_module, "csr_tdot2_abs", spy)
    monkeypatch.setattr("qpsvm.verify.rigorous.csr_tdot2_abs", spy)
    return passes


def _assert_same_certificate(cert, again) -> None:
    """Both passed, with the same ``P``, ``D``, complementarity and stationarity to the bit."""
    assert cert.passed and again.passed
    assert cert.primal_objective == again.primal_objective
    assert cert.dual_objective == again.dual_objective
    assert cert.complementarity == again.complementarity
    assert cert.stationarity == again.stationarity


def test_certificate_reuses_the_solvers_expansion_of_the_same_multipliers(monkeypatch):
    # the solver's returned expansion over the touched columns is made by Dot2 with its
    # magnitudes; the certificate of the same multipliers encloses it without a second pass,
    # and its P, D and stationarity are those of the pass made again; other multipliers (or
    # other rows) get their own pass
    X, y = sparse_problem(7, n=40, d=400, k=3)
    passes = _dot2_passes(monkeypatch)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False)
    sol = f.solve(method="dcd")
    touched = np.unique(X.indices).size
    assert passes == [(X.shape[0], touched)]
    R = f.touched_columns()[0]
    assert f.kept_expansion(R, sol.alpha * y) is not None
    assert f.kept_expansion(R, np.append(sol.alpha[:-1], 0.5) * y) is None
    assert f.kept_expansion(R.copy(), sol.alpha * y) is None
    monkeypatch.setattr(f, "_kept", None)
    again = f.certify(sol)
    assert len(passes) == 2
    cert = sol.certificate
    assert cert.primal_objective == again.primal_objective
    assert cert.dual_objective == again.dual_objective
    assert cert.stationarity == again.stationarity == 0.0


@pytest.mark.parametrize(
    ("loss", "intercept"),
    [("hinge", "none"), ("hinge", "regularized"), ("squared_hinge", "none")],
)
def test_certificate_reuses_the_solvers_expansion_over_every_column(monkeypatch, loss, intercept):
    # most columns touched (no restriction, n > d): the solver's returned expansion over the
    # rows themselves is made by Dot2 with its magnitudes, its floats those of the plain Dot2
    # expansion, and the certificate of the same multipliers encloses it without a second
    # pass; P, D and the stationarity those of the pass made again
    X, y = sparse_problem(3, n=120, d=30, k=6)
    passes = _dot2_passes(monkeypatch)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, loss=loss, intercept=intercept)
    assert f.touched_columns() is None
    sol = f.solve(method="dcd")
    assert passes == [X.shape]
    assert f.kept_expansion(f.X, f._kept[1][0]) is not None
    monkeypatch.setattr(f, "_kept", None)
    again = f.certify(sol)
    assert passes[1:] and set(passes[1:]) == {X.shape}
    _assert_same_certificate(sol.certificate, again)


def test_rows_squared_norms_are_summed_once_for_the_solver_and_the_certificate(monkeypatch):
    # with a free intercept the solver's ascent (its qd) and the certificate's bound on b
    # (max ||x_i||) read the formulation's one sum of the rows' squares: the same floats as
    # each summing them, the same certificate; a formulation's new X is summed anew (dense
    # rows: the certificate bounds the centred rows' norms instead)
    from qpsvm import _rows
    from qpsvm.formulations import kernel_rows
    from qpsvm.verify import rigorous
    from qpsvm.verify.binary import coordinate_data

    X, y = sparse_problem(5, n=150, d=20, k=5)
    sums = []
    original = _rows.row_sq_norms

    def spy(M):
        sums.append(M.shape)
        return original(M)

    for module in (_rows, kernel_rows, rigorous):
        monkeypatch.setattr(module, "row_sq_norms", spy)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, intercept="free")
    sol = f.solve(method="dcd")
    assert sums.count(X.shape) == 1
    norms = f.row_sq_norms()
    assert not norms.flags.writeable
    assert np.array_equal(norms, original(f.X))
    assert np.array_equal(
        coordinate_data(f).qd, CoordinateData(f.X, f.y * 1.0, f.margin, np.zeros(150), f.upper).qd
    )
    kept = f.certify(sol)
    monkeypatch.setattr(f, "row_sq_norms", None)  # no kept sums: each summed as before
    again = f.certify(sol)
    _assert_same_certificate(kept, again)
    assert kept.dual_objective == again.dual_objective
    g = qpsvm.SoftMarginPrimal(X * 2.0, y, C=1.0, intercept="free")
    g.row_sq_norms()
    g.X = g.X * 0.5
    assert np.array_equal(g.row_sq_norms(), original(g.X))


@pytest.mark.parametrize("compiled", [True, False])
def test_solvers_enclosed_expansion_is_the_plain_dot2_expansion(compiled, monkeypatch):
    # the expansion the solver keeps for the certificate (csr_tdot2_abs's hi + lo) is, to the
    # bit, the plain expansion in twice the working precision it returned before (tdot), the
    # compiled passes and their numpy equivalents alike
    from qpsvm import _numerics
    from qpsvm.verify.binary import coordinate_data

    monkeypatch.setattr(_numerics, "compiled", lambda kernel: compiled)

    X, y = sparse_problem(3, n=120, d=30, k=6)
    data = coordinate_data(qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False))
    u = np.random.default_rng(0).random(X.shape[0]) * data.hi
    u[::7] = 0.0
    v, parts = data.enclosed_expansion(u)
    assert parts is not None
    assert np.array_equal(v, data.expansion(u))


@pytest.mark.parametrize(
    ("loss", "intercept"),
    [
        ("squared_hinge", "none"),
        ("squared_hinge", "regularized"),
        ("squared_hinge", "free"),
        ("hinge", "regularized"),
    ],
)
def test_composed_certificate_takes_the_solvers_expansion_over_touched_columns(
    monkeypatch, loss, intercept
):
    # the composed losses' solver keeps its Dot2 expansion over the touched columns, and the
    # certificate's enclosure of the same multipliers takes it, spread over every column: one
    # pass in all, and P, D and the gaps equal to the bit to those of the whole product over
    # every column (an untouched column's hi = lo = 0, err = n TINY either way)
    # (kept restricted: the L2 conjugate's norm never spreads it over every column)
    from qpsvm.verify.rigorous import TouchedEnclosure

    X, y = sparse_problem(7, n=40, d=400, k=3)
    passes = _dot2_passes(monkeypatch)
    spread = []
    original = TouchedEnclosure.whole
    monkeypatch.setattr(TouchedEnclosure, "whole", lambda e: spread.append(e) or original(e))
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, loss=loss, intercept=intercept)
    sol = f.solve(method="dcd")
    touched = np.unique(X.indices).size
    assert passes == [(X.shape[0], touched)]
    assert not spread
    monkeypatch.setattr(f, "_kept", None)
    monkeypatch.setattr(f, "_touched", (None,))
    whole = f.certify(sol)
    assert passes[1:] and set(passes[1:]) == {X.shape}
    _assert_same_certificate(sol.certificate, whole)


@pytest.mark.parametrize("size", [5000, 200])
@pytest.mark.parametrize("finite", [True, False])
def test_conjugate_of_a_touched_enclosure_is_the_whole_enclosures(size, finite):
    # an enclosure kept over the touched columns bounds each penalty's conjugate by the float
    # its spread over every column gives (hi = lo = 0, err = n TINY or inf elsewhere): the
    # L2 norm's untouched squares are exact zeros, which Sum2 adds exactly (the compiled pass
    # from _SUCC_SIZE entries on and numpy's below it); L1 and the elastic net spread it
    from qpsvm.formulations.pieces import make_penalty
    from qpsvm.verify.rigorous import TINY, TouchedEnclosure, conjugate_upper

    rng = np.random.default_rng(3)
    touched = np.sort(rng.choice(size, size // 3, replace=False))
    hi = rng.standard_normal(touched.size) * 0.1
    lo = hi * 2.0**-60
    err = np.abs(hi) * 2.0**-50
    if not finite:
        err[7] = np.inf
    kept = TouchedEnclosure(hi, lo, err, touched, size, 40 * TINY if finite else np.inf)
    whole = kept.whole()
    assert np.array_equal(whole[0][touched], hi) and np.count_nonzero(whole[0]) == hi.size
    for penalty in (make_penalty("l2"), make_penalty("l1"), make_penalty("l1_l2", 0.3)):
        for extra in (0.0, 0.25):
            assert conjugate_upper(penalty, kept, extra) == conjugate_upper(penalty, whole, extra)


def test_solution_takes_the_certificates_scores_of_the_same_w(monkeypatch):
    from qpsvm._numerics import fsum_dot

    # the certificate computed X w and Sum2(w w) for the w it certified; the solution of that
    # w object takes them (no product over the rows), the same floats as computing them again
    X, y = sparse_problem(10, n=60, d=300)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    sol = f.solve(method="dcd")
    cert = sol.certificate
    scores, norm2 = cert.primal_parts(sol.w)
    assert np.array_equal(scores, f.X @ sol.w) and norm2 == fsum_dot(sol.w, sol.w)
    assert cert.primal_parts(sol.w.copy()) is None
    products = []
    monkeypatch.setattr(f, "scores", lambda **kw: products.append(kw) or f.X @ kw["w"])
    cand = qpsvm.solution.Candidate(w=sol.w, b=sol.b, alpha=sol.alpha)
    kept = f.solution_from(cand, cert, status="optimal", solver="dcd")
    assert not products
    again = f.solution_from(cand, None, status="optimal", solver="dcd")
    assert len(products) == 1
    assert kept.objective == again.objective == sol.objective
    assert np.array_equal(kept.xi, again.xi) and kept.b == again.b


def test_solvers_ascent_estimates_the_gap_once_a_run(monkeypatch):
    # from u = 0 no estimate before the first run (nothing is met there), and none at the
    # returned point (the solver certifies it): one pass of the objectives per run (the
    # free-set finish, which estimates its own trial point, left out)
    runs, estimates = [], []
    epochs, objectives = ascent.coordinate_epochs, ascent.coordinate_objectives

    def run_spy(*args):
        runs.append(args[9])
        return epochs(*args)

    def objectives_spy(*args):
        estimates.append(args[-1])
        return objectives(*args)

    monkeypatch.setattr(ascent, "coordinate_epochs", run_spy)
    monkeypatch.setattr(ascent, "coordinate_objectives", objectives_spy)
    monkeypatch.setattr(ascent, "_worth_finishing", lambda *args: False)
    X, y = sparse_problem(8, n=60, d=300)
    sol = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False).solve(method="dcd")
    assert sol.certificate.passed and len(runs) >= 2 and len(estimates) == len(runs)


def test_certificate_sums_the_squares_of_w_once():
    # the rigorous primal bound takes the primal side's Sum2 of w * w: the same floats
    from qpsvm._numerics import fsum_dot
    from qpsvm.verify.rigorous import binary_primal_upper

    X, y = sparse_problem(9, n=60, d=300)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False)
    w = f.solve(method="dcd").w
    given = binary_primal_upper(f, w, 0.0, norm2=fsum_dot(w, w))
    assert given == binary_primal_upper(f, w, 0.0)


def test_stationarity_of_a_solvers_rounded_expansion_is_no_pass_over_the_features(monkeypatch):
    # the solver's w is the rounded Dot2 expansion of its multipliers, the very floats the
    # certificate's expansion rounds to: the residual is 0 without summing d squares; a w
    # off by one ulp is summed
    from qpsvm.verify import binary

    X, y = sparse_problem(10, n=60, d=300)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False)
    sol = f.solve(method="dcd")
    sizes = []
    original = binary.fsum_dot

    def spy(a, b):
        sizes.append(np.size(a))
        return original(a, b)

    monkeypatch.setattr(binary, "fsum_dot", spy)
    cert = f.certify(sol)
    assert cert.passed and cert.stationarity == 0.0 and sizes.count(X.shape[1]) == 1
    w = sol.w.copy()
    j = int(np.flatnonzero(w)[0])
    w[j] = np.nextafter(w[j], np.inf)
    cert = f.certify(w=w, b=sol.b, alpha=sol.alpha)
    assert cert.stationarity == abs(w[j] - sol.w[j])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_first_slope_of_the_search_is_the_free_sets_schur_complement(seed, monkeypatch):
    # with the sets held, u_F(b) solves H_FF u_F = p_F - sigma_F b - (bound terms), so
    # -g'(b) = sigma_F^T H_FF^{-1} sigma_F: the conjugate-gradient value agrees with the dense
    # solve, and with the difference quotient of g between two fixed-b optima of the same sets
    monkeypatch.setattr(ascent, "ITERATIVE_FROM", 0.0)  # conjugate gradients at this size
    X, y = sparse_problem(seed, n=80, d=800, k=5)
    n = X.shape[0]
    data = CoordinateData(X, y.astype(float), np.ones(n), np.zeros(n), np.ones(n))

    def solved(b):
        return ascend(data, np.zeros(n), 1e-15, shift=b, start=ascent.TOLERANCES[-1]).u

    u = solved(0.1)
    F = np.flatnonzero((u > 0.0) & (u < 1.0))
    Z = (X[F].toarray() * y[F, None]).astype(float)
    exact = float(y[F] @ np.linalg.solve(Z @ Z.T, y[F].astype(float)))
    slope, expand = ascent._slope(data, u)
    assert not expand
    assert slope == pytest.approx(exact, rel=1e-3)
    h = 1e-6
    u_h = solved(0.1 + h)
    assert np.array_equal(F, np.flatnonzero((u_h > 0.0) & (u_h < 1.0)))
    assert (y @ u - y @ u_h) / h == pytest.approx(exact, rel=1e-4)
    # without conjugate gradients: each free multiplier moved alone, an overestimate
    monkeypatch.setattr(ascent, "ITERATIVE_FROM", np.inf)
    jacobi, expand = ascent._slope(data, u)
    assert expand and jacobi == pytest.approx(np.sum(1.0 / data.qd[F])) and jacobi >= exact
    # the squared hinge's by conjugate gradients whatever the free rows (D_F = I / 2 keeps
    # H_FF nonsingular), the dense solve's: no estimate (190 times too steep at 20000 x 200)
    squared = CoordinateData(X, y.astype(float), np.ones(n), np.full(n, 0.5), np.full(n, np.inf))
    smooth, expand = ascent._slope(squared, u)
    P = np.flatnonzero(u > 0.0)
    Z = (X[P].toarray() * y[P, None]).astype(float)
    H = Z @ Z.T + 0.5 * np.eye(P.size)
    assert not expand
    assert smooth == pytest.approx(float(y[P] @ np.linalg.solve(H, y[P].astype(float))), rel=1e-3)


def test_used_columns_renumber_the_free_rows_as_unique_does(monkeypatch):
    # the iterative system's columns: the mask's running count is np.unique's inverse
    X, _ = sparse_problem(3, n=50, d=400, k=5)
    Z = X[::2]
    columns, inverse = np.unique(Z.indices, return_inverse=True)
    used = used_columns(Z)
    assert np.array_equal(np.flatnonzero(used), columns)
    assert np.array_equal(ranked_indices(Z, used), inverse)


@given(
    seed=st.integers(0, 10_000),
    rows=st.integers(1, 30),
    border=st.integers(1, 8),
    columns=st.integers(1, 300),
    density=st.sampled_from([0.02, 0.2, 0.6]),
)
@example(seed=0, rows=20, border=3, columns=40, density=0.2)  # the dense transpose
@example(seed=1, rows=2, border=1, columns=300, density=0.02)  # the sparse product
@settings(max_examples=60, deadline=None)
def test_row_products_by_a_dense_transpose_are_the_sparse_products(
    seed, rows, border, columns, density
):
    # A B^T by CSR rows against B^T formed densely adds the products of each entry in the
    # order of A's row, as scipy's sparse product does: the same floats, zeros' signs too
    rng = np.random.default_rng(seed)
    A = sp.random(rows, columns, density, format="csr", random_state=seed)
    A.data *= rng.standard_normal(A.nnz) * 10.0 ** rng.integers(-3, 4, A.nnz)
    B = sp.vstack([A[rng.integers(rows, size=border)], A[::-1][:border]], format="csr")
    B.data = -B.data
    sparse = (A @ B.T).toarray()
    for size in (rows, columns):  # one size takes the dense transpose where columns <= 8 rows
        out = row_products(A, B, size)
        assert np.array_equal(out, sparse)
        assert np.array_equal(np.signbit(out), np.signbit(sparse))
    assert np.array_equal(row_products(A.toarray(), B.toarray(), rows), A.toarray() @ B.toarray().T)


def _search_points(caplog) -> list[tuple[float, float]]:
    """``(b, g)`` of every inner problem the search on ``b`` logged."""
    points = []
    for record in caplog.records:
        message = record.getMessage()
        if message.startswith("dcd: b="):
            b, g = message.split()[1:3]
            points.append((float(b[2:]), float(g[2:])))
    return points


def _grid_point(n, d, k, seed=0):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from regimes.sparse import text_like

    return text_like(n, d, k, seed=seed)


def _logged_solve(caplog, n, d, k):
    """The grid point's hinge with a free intercept by dcd, its debug log in ``caplog``,
    certified."""
    X, y = _grid_point(n, d, k)
    with caplog.at_level("DEBUG", logger="qpsvm"):
        sol = qpsvm.SoftMarginPrimal(X, y, C=1.0).solve(method="dcd")
    assert sol.certificate.passed
    return sol


def test_intercept_moving_inside_the_ascent_needs_no_search_on_b(caplog, monkeypatch):
    # the regime grid's 2000 x 20000 (20 nonzeros a row) with a free intercept: b takes
    # Newton's step on g every BALANCE_SLICE epochs inside the ascent from 0, and the point
    # certifies with no inner problem at a fixed b, in 46 epochs where the search from the
    # regularised start took 53 (the ascent without intercept 40)
    sol = _logged_solve(caplog, 2000, 20000, 20)
    assert not _search_points(caplog)
    assert "dcd: moving b=" in caplog.text
    assert sol.n_iter < 53
    # the same optimum as the search's: both certified at 1e-9
    monkeypatch.setattr(ascent, "moves_intercept", lambda data: False)
    searched = _logged_solve(caplog, 2000, 20000, 20)
    assert searched.n_iter == 49  # 53 before its ascents took LAST_TOLERANCE's last tolerance
    assert sol.objective == pytest.approx(searched.objective, rel=2e-9)


@pytest.mark.parametrize(("n", "d", "k", "epochs"), [(20000, 200, 10, 53), (2000, 20000, 20, 23)])
def test_squared_hinge_moves_its_free_intercept_inside_the_ascent(
    caplog, monkeypatch, n, d, k, epochs
):
    # the regime grid's squared hinge with a free intercept, n > d and n < d: every free
    # multiplier is unbounded above and H_FF = S X_F X_F^T S + D_F is nonsingular, so the
    # slope -g' by conjugate gradients is Newton's and b moves inside the ascent from 0, with
    # no inner problem at a fixed b: 53 and 23 epochs (57 at 20000 x 200 before its
    # tolerances opened on the carried active set) where the search from the regularised
    # start took 71 and 49 (115 and 45 with its first step by the free multipliers' sum of
    # 1 / (||x_i||^2 + d_i), 190 times too steep at 20000 x 200)
    X, y = _grid_point(n, d, k)

    def solve():
        with caplog.at_level("DEBUG", logger="qpsvm"):
            sol = qpsvm.SoftMarginPrimal(X, y, C=1.0, loss="squared_hinge").solve(method="dcd")
        assert sol.certificate.passed
        return sol

    sol = solve()
    assert not _search_points(caplog)
    assert "dcd: moving b=" in caplog.text
    assert sol.n_iter == epochs
    # the same optimum as the search's: both certified at 1e-9
    monkeypatch.setattr(ascent, "moves_intercept", lambda data: False)
    caplog.clear()
    other = solve()
    assert _search_points(caplog)
    assert other.n_iter > epochs
    assert sol.objective == pytest.approx(other.objective, rel=2e-9)


def test_moving_intercept_tightens_its_last_tolerance_to_the_target(caplog):
    # the regime grid's 2000 x 20000 (20 nonzeros a row) with a free intercept: the gap falls
    # about as the tolerance (1.2e-5, 1.1e-7, 1.1e-9 at 1e-3, 1e-5, 1e-7), and after 1e-9 it
    # is 1.1e-11 against the target 5e-12: the last tolerance is 0.3 target / gap times it
    # (1.3e-10, 4 epochs; 2e-10 after a gap of 9.7e-12 before the tolerances opened on the
    # carried active set) rather than two decades down (1e-11). The gaps after 1e-1 to 1e-5,
    # a million times the target or more, are not evaluated (nor logged)
    sol = _logged_solve(caplog, 2000, 20000, 20)
    tolerances = [
        float(record.getMessage().split()[4])
        for record in caplog.records
        if record.getMessage().startswith("dcd: moving b=")
    ]
    assert tolerances[:2] == [1e-7, 1e-9]
    assert tolerances[2] == 1e-10  # 1.31e-10, logged to one digit
    assert len(tolerances) == 3 and sol.n_iter == 45


def test_intercept_without_free_multipliers_is_searched_from_the_regularised_start(caplog):
    # C = 0.01 at the grid's 2000 x 20000 (its data with seed 3): after the first slice no
    # multiplier is free, so there is no slope for b to move by, and g jumps at its root; the
    # search from b = 0 stalled at a gap of 6e-5 (dcd then fell back to the working set),
    # from the regularised start it certifies
    X, y = _grid_point(2000, 20000, 20, seed=3)
    with caplog.at_level("DEBUG", logger="qpsvm"):
        sol = qpsvm.SoftMarginPrimal(X, y, C=0.01).solve(method="dcd")
    assert sol.certificate.passed and sol.solver == "dcd"
    assert "dcd: moving b=" not in caplog.text
    assert "the regularised intercept" in caplog.text


def test_search_on_b_steps_by_newton_and_stays_once_balancing_costs_little(caplog, monkeypatch):
    # the regime grid's 2000 x 20000 (20 nonzeros a row) with a free intercept, the search on
    # b from the regularised start (the path where the intercept does not move inside the
    # ascent): the first step from the regularised start is Newton's on g (its slope by
    # conjugate gradients) and takes |g| down by more than 100 times (the free multipliers'
    # sum of 1 / ||x_i||^2, 5.3 times too steep, by 1.2); once balancing the multipliers
    # costs next to nothing the last inner problem is tightened at the same b (its balance
    # off by 1e-4)
    monkeypatch.setattr(ascent, "moves_intercept", lambda data: False)
    _logged_solve(caplog, 2000, 20000, 20)
    points = _search_points(caplog)
    assert abs(points[1][1]) < 0.01 * abs(points[0][1])
    assert points[-1][0] == points[-2][0]
    assert len({b for b, _ in points}) <= 4


def test_slow_regularised_start_is_finished_at_the_first_value_of_b(caplog):
    # the regime grid's 5000 x 2000 (10 nonzeros a row, the hinge, n > d) with a free
    # intercept: the regularised start ran 144 epochs (slow) to a gap of 4.9e-6, and its point
    # is finished with the intercept at once, before any value of b is searched, where the
    # epochs of the first inner problem alone (one) had the search solve a second one
    # (74 epochs) before the finish
    _logged_solve(caplog, 5000, 2000, 10)
    assert not _search_points(caplog)
    assert "free-set solve with the intercept" in caplog.text


def _path_objective(Z, sigma, bias, diag, a, x, room, keep, t):
    """``phi(t)`` of :func:`ascent._path_step` from its definition: each kept coordinate moves
    by ``min(t, room_j) x_j``, ``phi = a . delta - delta^T H delta / 2``."""
    delta = np.where(keep, np.minimum(t, room) * x, 0.0)
    w = np.asarray(Z.T @ (sigma * delta)).ravel()
    curvature = w @ w + bias**2 * (sigma @ delta) ** 2 + diag @ (delta * delta)
    return a @ delta - 0.5 * curvature


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    dense=st.booleans(),
    bias=st.sampled_from([0.0, 1.0, 3.0]),
    squared=st.booleans(),
)
@example(seed=0, dense=False, bias=0.0, squared=False)
def test_path_step_maximises_the_objective_along_the_projected_path(seed, dense, bias, squared):
    # the walk over the breakpoints (incremental products, O(nnz) a breakpoint) against phi
    # evaluated from its definition on a fine grid and at the breakpoints: the step is at
    # least the ratio test's (the first breakpoint), phi does not decrease from there to the
    # step, and the step is the path's first local maximum (phi falls just after it; the path
    # is piecewise concave, not concave, so a later piece may rise again)
    rng = np.random.default_rng(seed)
    X, y = sparse_problem(seed, n=40, d=30, k=4)
    Z = X.toarray() if dense else X
    sigma = y.astype(float)
    diag = rng.random(40) if squared else np.zeros(40)
    a, x = rng.normal(size=40), rng.normal(size=40)
    room = np.where(rng.random(40) < 0.5, rng.random(40), np.inf)
    room[rng.random(40) < 0.1] = 0.0  # coordinates already at the bound x points past
    keep = rng.random(40) < 0.9
    x[~keep] = 0.0
    t = ascent._path_step(Z, sigma, bias, diag, a, x, room, keep)
    first = min(1.0, float(np.min(room[keep], initial=np.inf)))
    assert first <= t <= 1.0
    # the transposed rows handed over (the finish's CSR copy): the same step to the bit
    ZT = Z.T if dense else Z.T.tocsr()
    assert ascent._path_step(Z, sigma, bias, diag, a, x, room, keep, ZT) == t

    def phi(s):
        return _path_objective(X, sigma, bias, diag, a, x, room, keep, s)

    at = phi(t)
    scale = 1e-9 * max(1.0, abs(at))
    between = np.concatenate(
        [np.linspace(first, t, 501), room[keep & (room >= first) & (room <= t)]]
    )
    values = np.array([phi(s) for s in np.sort(between)])
    assert np.all(np.diff(values) >= -scale)
    if t < 1.0:
        assert all(phi(min(1.0, t + h)) <= at + scale for h in (1e-7, 1e-5, 1e-3))


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    size=st.integers(1, 60),
    width=st.integers(1, 8),
    vector=st.booleans(),
)
@example(seed=0, size=1, width=1, vector=True)
def test_free_system_lapack_calls_are_scipys_to_the_bit(seed, size, width, vector):
    # the finish's solves call LAPACK's dpotrs and dtrtrs on its Fortran-ordered factors
    # directly: the same floats as scipy's cho_solve and solve_triangular, which make the
    # same calls after their checks, for a vector or a block of right sides (C- or F-ordered)
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(size, size + 3))
    L = scipy.linalg.cholesky(M @ M.T + np.eye(size), lower=True)
    L = np.asfortranarray(L)
    rhs = rng.normal(size=size) if vector else rng.normal(size=(size, width))
    if not vector and seed % 2:
        rhs = np.asfortranarray(rhs)
    expected = scipy.linalg.cho_solve((L, True), rhs, check_finite=False)
    assert np.array_equal(ascent._cho_solve(L, rhs), expected)
    for trans, flag in ((0, "N"), (1, "T")):
        expected = scipy.linalg.solve_triangular(L, rhs, lower=True, trans=flag)
        assert np.array_equal(ascent._triangular_solve(L, rhs, trans), expected)
    columns = [rng.normal(size=size) for _ in range(width)]
    stacked = ascent._columns(columns)
    assert stacked.flags.c_contiguous
    assert np.array_equal(stacked, np.column_stack(columns))


@pytest.mark.parametrize("iterative", [False, True])
def test_finish_moves_several_coordinates_to_their_bounds_a_step(iterative, monkeypatch):
    # from a loose point with n > d many free coordinates end at a bound: the ratio test moves
    # one a solve, the projected path as many as it passes while D grows (at 100000 x 2000 of
    # benchmarks/regimes/sparse.py 47 solves to 11); the point is the certified optimum
    X, y, data, u = _loose_point_n_gt_d()
    if iterative:
        monkeypatch.setattr(
            ascent._IterativeSystem, "suits", staticmethod(lambda Z, used=None: True)
        )
        monkeypatch.setattr(ascent, "FACTOR_PRODUCTS", 1e-12)
        monkeypatch.setattr(ascent, "_cg_products", lambda Z, used=None: 0.0)
    solves = []
    for system in (ascent._FreeSystem, ascent._IterativeSystem):
        original = system.solve

        def spy(self, *args, original=original, **kwargs):
            solves.append(type(self).__name__)
            return original(self, *args, **kwargs)

        monkeypatch.setattr(system, "solve", spy)
    free = (u > 0) & (u < 1)
    step, _ = ascent.free_set_step(data, u)
    left = np.count_nonzero(free & ((step <= 0) | (step >= 1)))
    assert left > 10 and len(solves) < left / 2
    assert set(solves) == {"_IterativeSystem" if iterative else "_FreeSystem"}
    cert = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False).certify(alpha=step)
    assert cert.passed and cert.relative_gap <= 1e-12


def _recorded_tolerances(monkeypatch):
    """The tolerances of every :meth:`CoordinateData.run` from here on, in order."""
    tolerances = []
    run = CoordinateData.run

    def recording(self, u, v, tol, *args, **kwargs):
        tolerances.append(tol)
        return run(self, u, v, tol, *args, **kwargs)

    monkeypatch.setattr(CoordinateData, "run", recording)
    return tolerances


def test_ascent_tightens_its_last_tolerance_to_the_target(monkeypatch):
    # the regime grid's 5000 x 20000 (50 nonzeros a row), the hinge without intercept: the gap
    # falls about as the tolerance, 7.1e-10 after 1e-7 against the target 5e-12: the last
    # tolerance is 0.3 target / gap times it (2.1e-10, LAST_REACH) rather than two decades
    # down (1e-9, which left 6.1e-12, then 2.5e-10: a sweep of the shrunk rows and a gap more)
    X, y = _grid_point(5000, 20000, 50)
    tolerances = _recorded_tolerances(monkeypatch)
    sol = qpsvm.SoftMarginPrimal(X, y, C=1.0, intercept="none").solve(method="dcd")
    assert sol.certificate.passed
    assert tolerances[:4] == [1e-1, 1e-3, 1e-5, 1e-7]
    assert tolerances[4] == pytest.approx(2.12e-10, rel=1e-2)
    assert len(tolerances) == 5 and sol.n_iter == 46
    # reached from two decades down only: 1e-9, then 0.3 target / gap times it
    monkeypatch.setattr(ascent, "LAST_REACH", 1.0)
    tolerances.clear()
    near = qpsvm.SoftMarginPrimal(X, y, C=1.0, intercept="none").solve(method="dcd")
    assert tolerances[:5] == [1e-1, 1e-3, 1e-5, 1e-7, 1e-9]
    assert tolerances[5] == pytest.approx(2.47e-10, rel=1e-2)
    assert len(tolerances) == 6 and near.n_iter == 46
    # the ladder alone: the tolerance 1e-11, the same optimum (all certified at 1e-9)
    monkeypatch.setattr(ascent, "LAST_TOLERANCE", 0.0)
    tolerances.clear()
    ladder = qpsvm.SoftMarginPrimal(X, y, C=1.0, intercept="none").solve(method="dcd")
    assert tolerances == [1e-1, 1e-3, 1e-5, 1e-7, 1e-9, 1e-11]
    assert ladder.n_iter == 52
    assert sol.objective == pytest.approx(ladder.objective, rel=2e-9)
    assert near.objective == pytest.approx(ladder.objective, rel=2e-9)


def test_regularised_intercept_moves_inside_the_ascent(caplog, monkeypatch):
    # the regime grid's 2000 x 20000 (20 nonzeros a row), the hinge with a regularised
    # intercept: the constant feature's rank-one coupling B^2 sigma sigma^T slows every
    # coordinate's step (102 epochs, 40 without intercept); the ascent on the problem with b a
    # shift, b moving by Newton's steps on g(b) - b / B^2, takes 49 (each tolerance opening on
    # the last one's active set; 46 opening on every row), to the same optimum (both certified
    # at 1e-9)
    X, y = _grid_point(2000, 20000, 20)

    def solve(loss="hinge"):
        with caplog.at_level("DEBUG", logger="qpsvm"):
            sol = qpsvm.SoftMarginPrimal(X, y, C=1.0, loss=loss, intercept="regularized").solve(
                method="dcd"
            )
        assert sol.certificate.passed
        return sol

    sol = solve()
    assert "dcd: regularised b=" in caplog.text
    assert sol.n_iter == 49
    # not the squared hinge: its 35 epochs cost less than the slope over its free rows
    caplog.clear()
    solve("squared_hinge")
    assert "dcd: regularised b=" not in caplog.text
    monkeypatch.setattr(coordinate, "moves_intercept", lambda data: False)
    other = solve()
    assert "dcd: regularised b=" not in caplog.text
    assert other.n_iter == 102  # 103 before its last tolerance was reached from 1e-7
    assert sol.objective == pytest.approx(other.objective, rel=2e-9)


def test_regularised_ascent_opens_on_its_active_set_and_hands_over_its_estimate(monkeypatch):
    # the regularised intercept moving inside the ascent (text-like rows, n < d, the hinge):
    # each tolerance after the first opens on the active set the last one left, not on every
    # row; its gaps are those of the ascent's own expansion, updated in place, with the
    # feature's coordinate: no expansion of the multipliers but the first (of u = 0), and the
    # ascent after it starts from its last estimate; the same optimum as the ascent on the
    # feature itself (both certified at 1e-9)
    X, y = _grid_point(300, 3000, 10)
    opened, expanded = [], []
    epochs, expansion = ascent.coordinate_epochs, CoordinateData.expansion

    def spy_epochs(M, sigma, p, d, hi, bias, qd, u, v, *args):
        if bias == 0.0:  # the problem with b a shift
            carry = args[-1]
            opened.append(bool(carry) and carry[2] < carry[3])
        return epochs(M, sigma, p, d, hi, bias, qd, u, v, *args)

    def spy_expansion(self, u, exact=True):
        if not exact:
            expanded.append(bool(np.any(u)))
        return expansion(self, u, exact)

    monkeypatch.setattr(ascent, "coordinate_epochs", spy_epochs)
    monkeypatch.setattr(CoordinateData, "expansion", spy_expansion)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, intercept="regularized")
    sol = f.solve(method="dcd")
    assert sol.certificate.passed
    assert len(opened) > 2 and not opened[0] and all(opened[2:])
    assert expanded == [False]
    monkeypatch.undo()
    monkeypatch.setattr(coordinate, "moves_intercept", lambda data: False)
    other = qpsvm.SoftMarginPrimal(X, y, C=1.0, intercept="regularized").solve(method="dcd")
    assert other.certificate.passed
    assert sol.objective == pytest.approx(other.objective, rel=2e-9)


def test_slow_regularised_ascent_hands_its_point_to_the_coupled_ascent(caplog, monkeypatch):
    # a tolerance the moving intercept does not meet within FINISH_SLICE epochs (3 here) ends
    # it; the ascent with the regularised feature goes on from its point to the optimum
    X, y = _grid_point(500, 5000, 20)
    exact = qpsvm.SoftMarginPrimal(X, y, C=1.0, intercept="regularized").solve(method="dcd")
    monkeypatch.setattr(ascent, "FINISH_SLICE", 3)
    tolerances = _recorded_tolerances(monkeypatch)
    with caplog.at_level("DEBUG", logger="qpsvm"):
        sol = qpsvm.SoftMarginPrimal(X, y, C=1.0, intercept="regularized").solve(method="dcd")
    assert sol.certificate.passed
    assert caplog.text.count("dcd: regularised b=") == 1
    assert len(tolerances) > 2  # the slice at b = 0, the slice of 3, the coupled ascent
    assert sol.objective == pytest.approx(exact.objective, rel=2e-9)


def test_rows_taken_canonical_without_changing_the_callers_matrix():
    """A canonical float64 CSR matrix is used as it is (its format checked once, cached on it);
    unsorted rows with a duplicate are sorted and summed on a copy, the caller's arrays left as
    they were, and the squared norms are those of the summed rows."""
    A = sp.random(20, 30, density=0.2, format="csr", random_state=0)
    assert A.has_canonical_format and canonical_csr(A) is A
    indices = np.array([2, 0, 2, 1, 1, 0])
    B = sp.csr_matrix(
        (np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), indices.copy(), np.array([0, 3, 5, 6])),
        shape=(3, 4),
    )
    data = CoordinateData(B, np.ones(3), np.ones(3), np.zeros(3), np.ones(3))
    assert data.X is not B and data.X.has_canonical_format
    assert np.array_equal(B.indices, indices) and B.data.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert np.array_equal(data.X.toarray(), B.toarray())
    assert data.qd.tolist() == [2.0**2 + 4.0**2, 9.0**2, 6.0**2]


def test_ascent_keeps_its_active_set_from_one_tolerance_to_the_next(monkeypatch):
    # the regime grid's 2000 x 20000 (20 nonzeros a row), the hinge without intercept: about
    # 800 of the 2000 multipliers end free, the others shrink (1000 active after the tolerance
    # 0.1); with the active set carried the tighter tolerance opens on the ones the last left
    # active, not on every coordinate, and
    # still ends with every coordinate's projected gradient within it (its sweep)
    X, y = _grid_point(2000, 20000, 20)
    n = X.shape[0]
    data = CoordinateData(X, y.astype(float), np.ones(n), np.zeros(n), np.ones(n))
    opening = []
    epochs = ascent.shrinking_epochs

    def spy(*args):
        counts = args[10]
        if counts[0] == 0:
            opening.append(int(counts[1]))
        return epochs(*args)

    monkeypatch.setattr(ascent, "shrinking_epochs", spy)
    u, v = np.zeros(n), np.zeros(X.shape[1] + 1)
    carry = []
    for tol in (1e-1, 1e-3):
        data.run(u, v, tol, 1000, 0.0, 0, 1000, carry=carry)
    assert opening[0] == n and opening[1] < 0.6 * n
    # every coordinate's projected gradient spans at most the tolerance at the end
    G = y * (X @ (X.T @ (u * y))) - 1.0
    pg = np.where(u <= 0.0, np.minimum(G, 0.0), np.where(u >= 1.0, np.maximum(G, 0.0), G))
    assert pg.max() - pg.min() <= 1e-3 * (1 + 1e-9)


def test_finish_stops_once_the_target_gap_is_met(monkeypatch):
    # the regime grid's 2000 x 20000 (20 nonzeros a row), the hinge without intercept, from the
    # ascent's point at the tolerance 1e-3 (its free set the optimum's): the first solve
    # (loose, CG_STEP_RTOL) leaves a gap above the target 5e-12, the refinement to GAP_RTOL
    # sqrt(target / gap) meets it and the finish ends there, in fewer conjugate-gradient
    # products than the refinement to CG_RTOL; both points certified
    X, y = _grid_point(2000, 20000, 20)
    n = X.shape[0]
    data = CoordinateData(X, y.astype(float), np.ones(n), np.zeros(n), np.ones(n))
    u, v = np.zeros(n), np.zeros(X.shape[1] + 1)
    for tol in (1e-1, 1e-3):
        data.run(u, v, tol, 1000, 0.0, 0, 1000)
    products = []
    solve = ascent._IterativeSystem.solve

    def spy(self, *args, **kwargs):
        before = self.products
        out = solve(self, *args, **kwargs)
        products.append(self.products - before)
        return out

    monkeypatch.setattr(ascent._IterativeSystem, "solve", spy)

    def gap(point):
        P, D = data.objectives(point, data.expansion(point))
        return (P - D) / abs(P)

    start, target = gap(u), 5e-12
    assert start > 1e-8
    targeted, _ = ascent.free_set_step(data, u, target=target, gap=start)
    with_target = sum(products)
    products.clear()
    full, _ = ascent.free_set_step(data, u)
    assert gap(targeted) <= target < gap(u)
    assert len(products) >= 2 and with_target < sum(products)
    for point in (targeted, full):
        cert = qpsvm.SoftMarginPrimal(X, y, C=1.0, intercept="none").certify(alpha=point)
        assert cert.passed


def _hand_over_point():
    """The regime grid's 20000 x 200 (10 nonzeros a row), the hinge without intercept: its
    rows, labels, ascent data and the ascent's point at the tolerance 1e-3 (the solver's
    hand-over to the finish)."""
    X, y = _grid_point(20000, 200, 10)
    n = X.shape[0]
    data = CoordinateData(X, y.astype(float), np.ones(n), np.zeros(n), np.ones(n))
    u, v = np.zeros(n), np.zeros(X.shape[1] + 1)
    data.run(u, v, 1e-3, 1000, 0.0, 0, 1000)
    return X, y, data, u


def test_finish_checks_no_gap_after_a_floor_refinement_of_a_checked_step(monkeypatch):
    # the regime grid's 20000 x 200 (10 nonzeros a row), the hinge without intercept, from the
    # ascent's point at the tolerance 1e-3 (the solver's hand-over): two rounds end in a step
    # without a bound whose gap misses the target (coordinates still to join) and a refinement
    # within STEP_FLOOR; that refinement's gap is not evaluated (the round's end decides), so
    # the finish takes three passes of the objectives, not five, to the same certified point
    X, y, data, u = _hand_over_point()
    P, D = data.objectives(u, data.expansion(u))
    start, target = (P - D) / abs(P), 5e-12
    passes = []
    objectives = CoordinateData.objectives

    def spy(self, *args, **kwargs):
        passes.append(1)
        return objectives(self, *args, **kwargs)

    monkeypatch.setattr(CoordinateData, "objectives", spy)
    point, _ = ascent.free_set_step(data, u, target=target, gap=start)
    assert len(passes) == 3
    P, D = objectives(data, point, data.expansion(point))
    assert (P - D) / abs(P) <= target
    cert = qpsvm.SoftMarginPrimal(X, y, C=1.0, intercept="none").certify(alpha=point)
    assert cert.passed


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize(
    ("coupled", "bias"), [(False, 0.0), (False, 1.0), (True, 0.0), (True, 1.0)]
)
def test_extended_factor_is_the_factor_of_the_extended_set(coupled, bias, dense):
    # appending J to the factor of F is the last columns of a Cholesky factorization of the
    # Hessian of [F, J] (the same shift and coupling weight), and the kept columns H^{-1} e_r
    # and H^{-1} sigma follow through the Schur complement: the bordered solves of the
    # extended system are those of the system factored on [F, J] at once, to rounding
    X, y = sparse_problem(4, n=60, d=300, k=4)
    X = X.toarray() if dense else X
    n = X.shape[0]
    data = CoordinateData(X, y.astype(float), np.ones(n), np.zeros(n), np.ones(n), bias)
    F, J = np.arange(0, 60, 2), np.array([1, 7, 31, 59])
    system = ascent._FreeSystem.factored(data, F, coupled=coupled)
    rng = np.random.default_rng(0)
    keep = np.ones(F.size, dtype=bool)
    keep[[3, 11]] = False  # dropped before the extension: their columns cached
    system.solve(rng.standard_normal(F.size), keep, 0.5)
    assert system.extend(data, X[F], F, J)
    whole = ascent._FreeSystem.factored(data, np.concatenate([F, J]), coupled=coupled)
    # the same shift and coupling weight: the extended matrix's own would be its largest entry
    whole_H = whole.H - (whole.delta - system.delta) * np.eye(whole.H.shape[0])
    if coupled:
        s = data.sigma[np.concatenate([F, J])]
        whole_H += (system.rho - whole.rho) * np.outer(s, s)
    L = system.factor[0]
    # its upper part zero, which the deletions of a restricted system read as A's zeros
    assert not np.any(np.triu(L, 1))
    np.testing.assert_allclose(L @ L.T, whole_H, rtol=0, atol=1e-12)
    keep = np.concatenate([keep, [True, False, True, True]])
    g = rng.standard_normal(keep.size)
    x, beta = system.solve(g, keep, 0.5)
    # the reference: the bordered equations solved directly on the kept block
    K = np.flatnonzero(keep)
    A = whole_H[np.ix_(K, K)]
    rhs = g[K].copy()
    if coupled:
        sK = data.sigma[np.concatenate([F, J])][K]
        A = np.block([[A, sK[:, None]], [sK[None, :], np.zeros((1, 1))]])
        rhs = np.append(rhs + system.rho * 0.5 * sK, 0.5)
    ref = np.linalg.solve(A, rhs)
    assert np.all(x[~keep] == 0.0)
    np.testing.assert_allclose(x[K], ref[: K.size], rtol=0, atol=1e-8 * np.max(np.abs(ref)))
    if coupled:
        assert beta == pytest.approx(ref[-1], abs=1e-8 * np.max(np.abs(ref)))


def test_finish_extends_its_factor_to_the_same_certified_optimum(monkeypatch):
    # n > d from a loose point: the later rounds of the finish append the joining coordinates
    # to the last round's factor instead of factoring the new free set; the point certifies
    # at the same optimum, to 1e-12, as with every round factored anew (EXTEND_MAX = 0)
    X, y, data, u = _loose_point_n_gt_d()
    monkeypatch.setattr(ascent, "ITERATIVE_FROM", np.inf)  # the dense factor
    extended = []
    original = ascent._FreeSystem.extend

    def spy(self, *args):
        extended.append(original(self, *args))
        return extended[-1]

    monkeypatch.setattr(ascent._FreeSystem, "extend", spy)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False)
    certs = []
    for fraction in (ascent.EXTEND_MAX, 0.0):
        monkeypatch.setattr(ascent, "EXTEND_MAX", fraction)
        extended.clear()
        step, _ = ascent.free_set_step(data, u)
        assert bool(extended) == (fraction > 0.0) and all(extended)
        certs.append(f.certify(alpha=step))
        assert certs[-1].passed and certs[-1].relative_gap <= 1e-12
    optimum = _exact_optimum(X, y, fit_intercept=False)
    for cert in certs:
        assert Fraction(cert.lower) <= optimum <= Fraction(cert.upper)


@pytest.mark.parametrize("zero_row", [False, True])
def test_ascents_at_b_fixed_open_on_the_regularised_start_active_set(zero_row, monkeypatch):
    # n > d, the hinge with a free intercept: the ascents with b fixed open on the active set
    # the regularised start left (its closing sweep still checks every shrunk coordinate),
    # not on every row; not where a row is 0 (live with the regularised bias only); the
    # certified optimum encloses the rational oracle's
    X, y = sparse_problem(6, n=1500, d=40, k=4)  # an ascent at b fixed before the finish
    if zero_row:
        X = sp.csr_matrix(X.multiply(np.arange(X.shape[0])[:, None] != 5))
    opened = []
    original = ascent.coordinate_epochs

    def spy(M, sigma, p, d, hi, bias, qd, u, v, *args):
        carry = args[-1] if len(args) == 8 else None
        if bias == 0.0:
            opened.append(bool(carry) and carry[2] < carry[3])
        return original(M, sigma, p, d, hi, bias, qd, u, v, *args)

    monkeypatch.setattr(ascent, "coordinate_epochs", spy)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=True)
    sol = f.solve(method="dcd")
    assert opened and opened[0] == (not zero_row)
    assert sol.method == "dcd" and sol.certificate.passed
    optimum = _exact_optimum(X, y, fit_intercept=True)
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)


@pytest.mark.parametrize("intercept", ["none", "free", "regularized"])
def test_loose_tolerances_run_on_without_their_gap_to_the_same_point(intercept, monkeypatch):
    # a tolerance a million times the target leaves a gap far above it (text-like rows, n < d:
    # 1e-3 to 1e-7 after 0.1 to 1e-5), so the ascent goes on without evaluating it; the gaps it
    # skips decided nothing, so every multiplier and the certified objective are the same floats
    X, y = _grid_point(600, 6000, 20)
    calls = []

    def spy(name):
        original = getattr(ascent, name)

        def counted(*args):
            calls.append(name)
            return original(*args)

        monkeypatch.setattr(ascent, name, counted)

    spy("coordinate_objectives")  # without a free intercept, P and D in one pass
    spy("_gap")  # with a free intercept, D at the balanced point (and P apart)

    def solve():
        calls.clear()
        f = qpsvm.SoftMarginPrimal(X, y, C=1.0, intercept=intercept)
        return f.solve(method="dcd"), len(calls)

    skipped, fewer = solve()
    monkeypatch.setattr(ascent, "UNEVALUATED_FROM", (math.inf, math.inf))
    evaluated, every = solve()
    assert skipped.certificate.passed and evaluated.certificate.passed
    assert skipped.objective == evaluated.objective
    np.testing.assert_array_equal(skipped.alpha, evaluated.alpha)
    np.testing.assert_array_equal(skipped.w, evaluated.w)
    # the regularised intercept's start evaluates its first tolerance (at most FINISH_FREE
    # multipliers free there, the hinge's finish gate) and skips the next
    assert fewer <= every - (1 if intercept == "regularized" else 3)


def test_slices_of_a_tolerance_open_on_every_coordinate(monkeypatch):
    # the hinge's slow ascent (dense rows, C = 100) runs a tolerance in slices of FINISH_SLICE
    # epochs (5 here): each slice after one that ran out opens on every coordinate, as the
    # tolerance's first did, not on the set the unconverged slice left shrunk (carried, it
    # steered the poly feature map's ascent, 8000 x 1771, from 17062 to 49736 epochs); the
    # next tolerance still opens on the set its converged predecessor left
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 8))
    y = np.where(X @ rng.normal(size=8) + 0.5 * rng.normal(size=300) > 0, 1.0, -1.0)
    n = X.shape[0]
    data = CoordinateData(X, y, np.ones(n), np.zeros(n), np.full(n, 100.0))
    monkeypatch.setattr(ascent, "FINISH_SLICE", 5)
    calls = []
    original = ascent.coordinate_epochs

    def spy(M, sigma, p, d, hi, bias, qd, u, v, max_epochs, tol, *args):
        opened = bool(args[-1]) and args[-1][2] < args[-1][3]
        ran, violation = original(M, sigma, p, d, hi, bias, qd, u, v, max_epochs, tol, *args)
        calls.append((tol, opened, ran >= max_epochs))
        return ran, violation

    monkeypatch.setattr(ascent, "coordinate_epochs", spy)
    ascend(data, np.zeros(n), 1e-9, max_epochs=20000)
    after_slice = [opened for (_, _, out), (_, opened, _) in itertools.pairwise(calls) if out]
    assert after_slice and not any(after_slice)


def test_newton_ascent_opens_on_its_active_set(monkeypatch, caplog):
    # the free intercept moving inside the ascent (text-like rows, n < d, the hinge): each
    # tolerance after the first opens on the active set the last one left, not on every row;
    # the same optimum as the exact working-set method (both certified at 1e-9)
    X, y = _grid_point(300, 3000, 10)
    opened = []
    epochs = ascent.coordinate_epochs

    def spy_epochs(M, sigma, p, d, hi, bias, qd, u, v, *args):
        carry = args[-1]
        opened.append(bool(carry) and carry[2] < carry[3])
        return epochs(M, sigma, p, d, hi, bias, qd, u, v, *args)

    monkeypatch.setattr(ascent, "coordinate_epochs", spy_epochs)
    with caplog.at_level("DEBUG", logger="qpsvm"):
        sol = qpsvm.SoftMarginPrimal(X, y, C=1.0).solve(method="dcd")
    assert "dcd: moving b=" in caplog.text
    assert sol.certificate.passed
    assert len(opened) > 2 and not opened[0] and all(opened[2:])
    monkeypatch.undo()
    other = qpsvm.SoftMarginPrimal(X, y, C=1.0).solve(method="working_set")
    assert other.certificate.passed
    assert sol.objective == pytest.approx(other.objective, rel=2e-9)


def test_finish_at_the_target_hands_over_its_own_estimates(monkeypatch):
    # the regime grid's 20000 x 200 (10 nonzeros a row), the hinge without intercept, from the
    # ascent's point at the tolerance 1e-3: the finish stops at the target and hands its
    # expansion and objectives to _finish_free_set, which then evaluates nothing more; the
    # point is the one the finish returns without ``met`` (bit for bit), the handed ``v`` the
    # plain expansion of it up to the steps' rounding and ``P, D`` the objectives at that ``v``
    X, y, data, u = _hand_over_point()
    v = data.expansion(u, exact=False)
    P, D = data.objectives(u, v)
    start, target = (P - D) / abs(P), 5e-12
    plain, _ = ascent.free_set_step(data, u, target=target, gap=start)
    met: list = []
    point, _ = ascent.free_set_step(data, u, target=target, gap=start, met=met)
    assert np.array_equal(point, plain)
    v_met, P_met, D_met = met
    assert (P_met, D_met) == data.objectives(point, v_met)
    assert (P_met - D_met) / abs(P_met) <= target
    np.testing.assert_allclose(v_met, data.expansion(point), rtol=0, atol=1e-12)
    passes = []
    objectives, expansion = CoordinateData.objectives, CoordinateData.expansion

    def count(f):
        def spy(self, *args, **kwargs):
            passes.append(f.__name__)
            return f(self, *args, **kwargs)

        return spy

    monkeypatch.setattr(CoordinateData, "objectives", count(objectives))
    monkeypatch.setattr(CoordinateData, "expansion", count(expansion))
    out = ascent._finish_free_set(data, u, v, P, D, 0.0, set(), target)
    assert np.array_equal(out[0], plain)
    assert out[2:] == (P_met, D_met)
    finish = len(passes)
    passes.clear()
    ascent.free_set_step(data, u, target=target, gap=start)
    # the finish's own passes only: no expansion nor objectives after its return
    assert finish == len(passes) > 0
    cert = qpsvm.SoftMarginPrimal(X, y, C=1.0, intercept="none").certify(alpha=point)
    assert cert.passed


@given(st.integers(0, 40), st.integers(0, 2**32 - 1))
def test_coordinate_records_hold_the_five_arrays_on_aligned_lines(n, seed):
    # each coordinate's record is its five numbers bit for bit (the epochs' floats are the
    # arrays'), and the records start on a 64-byte boundary: one cache line a record
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(n) for _ in range(5)]
    K = ascent.coordinate_records(*arrays)
    assert K.shape == (n, ascent.RECORD)
    for j, a in enumerate(arrays):
        assert np.array_equal(K[:, j], a)
    assert K.ctypes.data % 64 == 0 or n == 0
