"""SMO for the soft-margin dual: agreement with the exact optimum and with libsvm."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.svm import SVC

import qpsvm
from qpsvm.solvers.smo import smo_intercept
from tests.conftest import random_problem

TOL = 1e-3


def gap_bound(f, tol=TOL):
    """When every KKT condition is violated by at most ``tol`` (SMO's stopping rule, with ``b``
    between the extremes), each term of ``P - D = sum_i (C s_i xi_i + alpha_i r_i)`` is at most
    ``2 tol C s_i``: the duality gap is at most ``2 tol C sum_i s_i``."""
    return 2 * tol * float(np.sum(f.upper))


def check_within_tolerance(f, sol):
    """SMO's point against the exact optimum, with the reasons of :func:`gap_bound`."""
    exact = f.solve()
    assert sol.status == "tolerance" and sol.info["violation"] < TOL
    bound = gap_bound(f)
    # the certificate's gap bounds the suboptimality, and the tolerance bounds the gap
    assert 0 <= sol.objective - exact.objective <= sol.certificate.gap + 1e-9
    assert sol.certificate.gap <= bound
    # the dual point itself is feasible and within the same distance of the optimum
    assert f.dual_infeasibility(sol.alpha) <= 1e-12
    assert 0 <= exact.objective - f.dual_objective(sol.alpha) <= bound
    return exact


@pytest.fixture(scope="module")
def cancer_dual(cancer):
    X, y = cancer
    return X[:200], y[:200]


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
@pytest.mark.parametrize("selection", ["second_order", "max_violating"])
def test_smo_matches_the_exact_optimum_within_its_tolerance(cancer_dual, kernel, selection):
    X, y = cancer_dual
    f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel=kernel, gamma=0.05, degree=2)
    sol = f.solve(method="smo", tol=TOL, selection=selection)
    exact = check_within_tolerance(f, sol)
    if kernel == "linear":
        np.testing.assert_allclose(sol.w, f.expansion(sol.alpha))
        # strong convexity: ||w - w*|| <= sqrt(2 gap)
        assert np.linalg.norm(sol.w - exact.w) <= sol.certificate.distance_bound


def test_smo_without_intercept_moves_one_coordinate(cancer_dual):
    # no balance constraint: single-coordinate steps until every projected gradient < tol
    X, y = cancer_dual
    for kernel in ("linear", "rbf"):
        f = qpsvm.SoftMarginDual(X, y, C=0.5, kernel=kernel, fit_intercept=False)
        for selection in ("second_order", "max_violating"):
            sol = f.solve(method="smo", selection=selection)
            assert sol.b == 0.0
            check_within_tolerance(f, sol)


def test_smo_with_weights_and_margins():
    # the box is [0, C s_i] and the linear term m: G starts at -m
    X, y = random_problem(4, n=80, d=4)
    rng = np.random.default_rng(4)
    s, m = rng.uniform(0, 3, 80), rng.uniform(0.2, 2, 80)
    s[:5] = 0.0  # zero weights: alpha_i is pinned at 0
    for fit_intercept in (True, False):
        f = qpsvm.SoftMarginDual(
            X, y, C=2.0, kernel="rbf", sample_weight=s, margin=m, fit_intercept=fit_intercept
        )
        sol = f.solve(method="smo")
        check_within_tolerance(f, sol)
        assert np.all(sol.alpha[:5] == 0)
        assert np.all((sol.alpha >= 0) & (sol.alpha <= f.upper))


def test_smo_on_the_primal_formulation_and_sparse_data(cancer_dual):
    # SoftMarginPrimal has the same dual (linear kernel); CSR rows give the same kernel values
    # up to round-off (summation order), which may change the path: both stop within tolerance
    X, y = cancer_dual
    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.7, X, 0.0))
    dense = qpsvm.SoftMarginPrimal(Xs.toarray(), y, C=0.3).solve(method="smo")
    f = qpsvm.SoftMarginPrimal(Xs, y, C=0.3)
    sparse = f.solve(method="smo")
    check_within_tolerance(f, sparse)
    assert abs(sparse.objective - dense.objective) <= gap_bound(f)


def test_precomputed_and_callable_kernels(cancer_dual):
    # the same Gram matrix, precomputed or from a callable, gives the same SMO run; the built-in
    # rbf computes it with another formula (round-off apart) and stops within tolerance too
    X, y = cancer_dual
    X = X[:, :5]
    K = np.exp(-0.1 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    runs = [
        qpsvm.SoftMarginDual(K, y, kernel="precomputed"),
        qpsvm.SoftMarginDual(
            X, y, kernel=lambda A, B: np.exp(-0.1 * ((A[:, None] - B[None]) ** 2).sum(-1))
        ),
        qpsvm.SoftMarginDual(X, y, kernel="rbf", gamma=0.1),
    ]
    sols = [f.solve(method="smo") for f in runs]
    check_within_tolerance(runs[0], sols[0])
    np.testing.assert_array_equal(sols[1].alpha, sols[0].alpha)
    check_within_tolerance(runs[2], sols[2])


def test_row_cache_changes_where_rows_come_from_not_the_run(cancer_dual):
    X, y = cancer_dual
    # linear kernel: rows are always computed by the same kernel, cached or not: identical runs
    f = qpsvm.SoftMarginDual(X, y, C=1.0)
    big, tiny = f.solve(method="smo"), f.solve(method="smo", cache_size=1e-6)
    np.testing.assert_array_equal(big.alpha, tiny.alpha)
    assert tiny.info["misses"] > big.info["misses"]
    assert big.info["hits"] + big.info["misses"] >= big.n_iter
    # rbf: the full Gram matrix (fits in 200 MB) or LRU rows from the numba kernel: the values
    # differ by round-off only, so both runs stop within tolerance
    g = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf")
    full, rows = g.solve(method="smo"), g.solve(method="smo", cache_size=0.05)
    assert full.info["misses"] == 0 and rows.info["misses"] > 0
    check_within_tolerance(g, rows)
    assert abs(full.objective - rows.objective) <= gap_bound(g)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_smo_agrees_with_scikit_learn_svc(cancer_dual, kernel):
    # libsvm runs the same algorithm (second-order WSS, eps = tol): both points are within the
    # tolerance's gap bound of the optimum, so within twice of each other
    X, y = cancer_dual
    f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel=kernel, gamma=0.05)
    svc = SVC(C=1.0, kernel=kernel, gamma=0.05, tol=TOL).fit(X, y)
    sol = f.solve(method="smo", tol=TOL)
    assert abs(f.certify(svc).primal_objective - sol.objective) <= 2 * gap_bound(f)
    assert abs(f.dual_objective(sol.alpha) - f.certify(svc).dual_objective) <= 2 * gap_bound(f)
    # and they classify the training points the same way almost everywhere
    agree = np.mean(np.sign(f.decision_function(X, sol)) == np.sign(svc.decision_function(X)))
    assert agree >= 0.99


def test_intercept_is_libsvm_rho():
    # free variables: b = -mean(y_t G_t) over them; without any: the midpoint of the
    # interval the bounded ones allow
    y = np.array([1.0, -1.0, 1.0, -1.0])
    upper = np.ones(4)
    G = np.array([-0.2, 0.4, 0.1, -0.3])
    assert smo_intercept(y, G, np.array([0.5, 0.5, 0.0, 1.0]), upper) == pytest.approx(
        -np.mean([-0.2, -0.4])
    )
    # alpha = [0, 0, 1, 1]: t=0,1 at the lower bound, t=2,3 at the upper one;
    # ub = min{y G: y=+1 lower, y=-1 upper} = min(-0.2, 0.3), lb = max{-0.4, 0.1}
    assert smo_intercept(y, G, np.array([0.0, 0.0, 1.0, 1.0]), upper) == pytest.approx(
        -0.5 * (-0.2 + 0.1)
    )


def test_max_iter_is_reported_not_swallowed(cancer_dual, caplog):
    X, y = cancer_dual
    f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf")
    with caplog.at_level(logging.WARNING, logger="qpsvm"):
        sol = f.solve(method="smo", max_iter=5)
    assert sol.status == "max_iter" and sol.n_iter == 5
    assert "max_iter" in caplog.text
    # the certificate says how far it is, honestly
    assert not sol.certificate.passed and sol.certificate.gap > gap_bound(f)


def test_certificate_can_be_skipped_for_warm_starts(cancer_dual):
    # certify=False returns the same SMO point without the (costly) certificate
    X, y = cancer_dual
    f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf")
    a, b = f.solve(method="smo"), f.solve(method="smo", certify=False)
    assert b.certificate is None and a.certificate is not None
    np.testing.assert_array_equal(a.alpha, b.alpha)
    assert a.b == b.b


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"solver": "OSQP"}, ValueError, "uses no CVXPY solver"),
        ({"tol": 0.0}, ValueError, "tol must be"),
        ({"cache_size": -1}, ValueError, "cache_size must be"),
        ({"max_iter": 0}, ValueError, "max_iter must be"),
        ({"selection": "random"}, ValueError, "unknown selection"),
    ],
)
def test_bad_arguments_raise_clear_errors(options, error, message):
    X, y = random_problem(0)
    with pytest.raises(error, match=message):
        qpsvm.SoftMarginDual(X, y).solve(method="smo", **options)


def test_hard_margin_has_no_box():
    X, y = random_problem(0)
    with pytest.raises(qpsvm.InvalidInputError, match="finite box"):
        qpsvm.HardMargin(X, y).solve(method="smo")
