"""Binary formulations: exact optima checked against known optima, identities and libsvm."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import random_problem
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.svm import SVC

import qpsvm

EXACT = 1e-9


def test_known_optimum_1d():
    # points 0, 1 (negative) and 3, 4 (positive): the margin is the gap [1, 3], so w = 1, b = -2
    # and 1/2 ||w||^2 = 1/2; the support vectors 1 and 3 carry alpha = 1/2 each (w = sum a y x).
    X, y = [[0.0], [1.0], [3.0], [4.0]], [0, 0, 1, 1]
    for f in (
        qpsvm.HardMargin(X, y),
        qpsvm.SoftMarginPrimal(X, y, C=10.0),
        qpsvm.SoftMarginDual(X, y, C=10.0),
    ):
        sol = f.solve()
        np.testing.assert_allclose(sol.w, [1.0], atol=1e-10)
        assert sol.b == pytest.approx(-2.0, abs=1e-10)
        assert sol.objective == pytest.approx(0.5, abs=1e-12)
        np.testing.assert_allclose(sol.alpha, [0.0, 0.5, 0.5, 0.0], atol=1e-10)
        assert sol.certificate.passed and sol.status == "optimal"


def test_solution_fields(cancer):
    X, y = cancer
    sol = qpsvm.SoftMarginPrimal(X, y, C=1.0).solve()
    assert sol.w.shape == (30,) and sol.xi.shape == (569,) and sol.alpha.shape == (569,)
    # dense, unit margins, equal weights: the box QPs' search on the free intercept
    assert sol.solver == "box_dual" and sol.n_iter > 0 and sol.solve_time > 0
    # slacks are the exact hinge values and the objective is recomputed from them
    margins = np.where(y == 1, 1, -1) * (X @ sol.w + sol.b)
    np.testing.assert_allclose(sol.xi, np.maximum(0, 1 - margins), atol=1e-12)
    assert sol.objective == pytest.approx(0.5 * sol.w @ sol.w + sol.xi.sum(), rel=1e-13)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_primal_equals_dual(cancer, fit_intercept):
    # strong duality: the primal and dual optima coincide, and so do w = sum a_i y_i x_i and b
    X, y = cancer
    p = qpsvm.SoftMarginPrimal(X, y, C=0.5, fit_intercept=fit_intercept).solve()
    d = qpsvm.SoftMarginDual(X, y, C=0.5, fit_intercept=fit_intercept).solve()
    assert p.certificate.relative_gap <= EXACT and d.certificate.relative_gap <= EXACT
    assert p.objective == pytest.approx(d.objective, rel=2 * EXACT)
    np.testing.assert_allclose(p.w, d.w, atol=1e-6)
    assert p.b == pytest.approx(d.b, abs=1e-6)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), C=st.floats(0.01, 100.0), intercept=st.booleans())
def test_primal_equals_dual_random(seed, C, intercept):
    X, y = random_problem(seed)
    p = qpsvm.SoftMarginPrimal(X, y, C=C, fit_intercept=intercept).solve()
    d = qpsvm.SoftMarginDual(X, y, C=C, fit_intercept=intercept).solve()
    assert p.certificate.passed and d.certificate.passed
    assert p.objective == pytest.approx(d.objective, rel=2 * EXACT, abs=1e-12)


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
def test_agrees_with_libsvm(cancer, kernel):
    # libsvm solves the same dual; it keeps its kernel cache in float32, so at tol=1e-10 its
    # objective agrees to ~1e-6 relative, not to our 1e-9: the certificate quantifies the rest.
    X, y = cancer
    f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel=kernel, gamma=0.05, degree=2)
    sol = f.solve()
    est = SVC(kernel=kernel, C=1.0, gamma=0.05, degree=2, coef0=1.0, tol=1e-10).fit(X, y)
    cert = f.certify(est)
    assert cert.primal_objective == pytest.approx(sol.objective, rel=1e-5)
    assert cert.primal_objective >= sol.certificate.dual_objective  # weak duality
    np.testing.assert_array_equal(f.predict(X, sol), est.predict(X))


def test_replication_equals_weight():
    # the lectures' weighted data points: a point repeated k times is a point with s_i = k
    X, y = random_problem(3, n=30)
    k = np.arange(30) % 3 + 1
    rep = qpsvm.SoftMarginPrimal(np.repeat(X, k, axis=0), np.repeat(y, k), C=0.7).solve()
    wtd = qpsvm.SoftMarginPrimal(X, y, C=0.7, sample_weight=k).solve()
    assert rep.objective == pytest.approx(wtd.objective, rel=2 * EXACT)
    np.testing.assert_allclose(rep.w, wtd.w, atol=1e-7)
    assert rep.b == pytest.approx(wtd.b, abs=1e-7)
    dual = qpsvm.SoftMarginDual(X, y, C=0.7, sample_weight=k).solve()
    assert dual.objective == pytest.approx(wtd.objective, rel=2 * EXACT)


def test_margin_scaling_identity():
    # with margins c*m and penalty C the optimum is c times the optimum with margins m and
    # penalty C/c (substitute w = c v), and the objective scales by c^2
    X, y = random_problem(5, n=40)
    m = np.linspace(0.5, 1.5, 40)
    c = 3.0
    big = qpsvm.SoftMarginPrimal(X, y, C=2.0, margin=c * m).solve()
    small = qpsvm.SoftMarginPrimal(X, y, C=2.0 / c, margin=m).solve()
    np.testing.assert_allclose(big.w, c * small.w, atol=1e-7)
    assert big.objective == pytest.approx(c**2 * small.objective, rel=1e-9)


def test_large_C_equals_hard_margin(blobs):
    # on separable data every slack is 0 once C exceeds the largest optimal alpha
    X, y = blobs
    hard = qpsvm.HardMargin(X, y).solve()
    soft = qpsvm.SoftMarginPrimal(X, y, C=1e4).solve()
    assert np.max(hard.alpha) < 1e4
    assert soft.objective == pytest.approx(hard.objective, rel=EXACT)
    np.testing.assert_allclose(soft.w, hard.w, atol=1e-8)
    assert np.all(soft.xi <= 1e-12)


def test_labels_any_two_values(blobs):
    # classes_[1] ('b', the larger) is +1: the decision function is positive on the 'b' blob
    X, y = blobs
    f = qpsvm.SoftMarginPrimal(X, y)
    sol = f.solve()
    assert list(f.classes_) == ["a", "b"]
    assert np.all(f.decision_function(X[y == "b"], sol) > 0)
    np.testing.assert_array_equal(f.predict(X, sol), y)


def test_sparse_equals_dense(cancer):
    X, y = cancer
    Xs = sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0))
    dense = qpsvm.SoftMarginPrimal(Xs.toarray(), y).solve()
    sparse = qpsvm.SoftMarginPrimal(Xs, y).solve()
    dual = qpsvm.SoftMarginDual(Xs, y).solve()
    assert sparse.objective == pytest.approx(dense.objective, rel=2 * EXACT)
    assert dual.objective == pytest.approx(dense.objective, rel=2 * EXACT)
    np.testing.assert_allclose(sparse.w, dense.w, atol=1e-7)


def test_precomputed_and_callable_equal_rbf(cancer):
    X, y = cancer[0][:150], cancer[1][:150]
    rbf = qpsvm.SoftMarginDual(X, y, kernel="rbf", gamma=0.1)
    K = rbf.kernel(X, X)
    pre = qpsvm.SoftMarginDual(K, y, kernel="precomputed")
    call = qpsvm.SoftMarginDual(X, y, kernel=lambda A, B: rbf.kernel(A, B))
    objs = [g.solve().objective for g in (rbf, pre, call)]
    assert objs[1] == pytest.approx(objs[0], rel=2 * EXACT)
    assert objs[2] == pytest.approx(objs[0], rel=2 * EXACT)
    sol = pre.solve()
    np.testing.assert_allclose(
        pre.decision_function(K[:10], sol), rbf.decision_function(X[:10], rbf.solve()), atol=1e-6
    )


def test_linear_dual_never_forms_gram(cancer):
    X, y = cancer
    f = qpsvm.SoftMarginDual(X, y)
    f.solve()
    assert f._gram is None
    with pytest.raises(qpsvm.InvalidInputError, match="never forms"):
        f.gram()


def test_osqp_is_first_class(cancer):
    # OSQP at tight tolerances with polishing, then refinement: certified like the default
    X, y = cancer
    sol = qpsvm.SoftMarginPrimal(X, y, C=1.0).solve(solver="OSQP")
    assert sol.solver == "OSQP" and sol.certificate.passed


def test_inaccurate_backend_raises(cancer):
    # an iteration limit leaves a point far from the optimum: never returned as if optimal
    X, y = cancer
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    with pytest.raises(qpsvm.SolverError):
        f.solve(solver="OSQP", max_iter=5, polishing=False, refine=False)


def test_uninstalled_solver_says_what_to_install(cancer):
    X, y = cancer
    with pytest.raises(qpsvm.SolverNotInstalledError, match="pip install"):
        qpsvm.SoftMarginPrimal(X, y).solve(solver="MOSEK")


def test_hard_margin_not_separable():
    # XOR: no line separates (0,0),(1,1) from (0,1),(1,0)
    X, y = [[0, 0], [1, 1], [0, 1], [1, 0]], [1, 1, -1, -1]
    with pytest.raises(qpsvm.NotSeparableError, match="SoftMarginPrimal"):
        qpsvm.HardMargin(X, y).solve()


def test_inputs_not_modified(cancer):
    X, y = cancer
    X0, y0 = X.copy(), y.copy()
    w = np.ones(30)
    f = qpsvm.SoftMarginPrimal(X, y, sample_weight=np.ones(569))
    f.certify(f.solve())
    f.certify(w=w, b=0.0)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(w, np.ones(30))


def test_problem_is_declarative(cancer):
    X, y = cancer
    f = qpsvm.SoftMarginPrimal(X, y)
    assert set(f.variables) == {"w", "b", "xi"}
    assert set(f.constraints) == {"margin", "slack"}
    assert f.problem.is_dqcp() and f.problem.is_dpp()
    d = qpsvm.SoftMarginDual(X, y)
    assert set(d.constraints) == {"lower", "upper", "balance"}
