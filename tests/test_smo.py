"""SMO for the soft-margin dual: agreement with the exact optimum and with libsvm."""

from __future__ import annotations

import dataclasses
import logging
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_classification
from sklearn.svm import SVC

import qpsvm
from qpsvm import support_sets
from qpsvm.solution import Candidate
from qpsvm.solvers import smo
from qpsvm.solvers.smo import (
    FAR_SHRINK,
    MIN_SHRINK,
    NEVER,
    NEXT,
    NEXT_SHRINK,
    NOW,
    PEEKS,
    SMOUnits,
    _kernel_rows,
    _polish,
    _polish_plan,
    _restart_tol,
    _sets_firm,
    _SMOState,
    gap_resolution,
    gradient_gap,
    smo_intercept,
)
from qpsvm.solvers.warm_start import Start
from tests.conftest import random_problem

TOL = 1e-3


def gap_bound(f, tol=TOL):
    """When every KKT condition is violated by at most ``tol`` (SMO's stopping rule, with ``b``
    between the extremes), each term of ``P - D = sum_i (C s_i xi_i + alpha_i r_i)`` is at most
    ``2 tol C s_i``: the duality gap is at most ``2 tol C sum_i s_i``."""
    return 2 * tol * float(np.sum(f.upper))


def recorded_solve(monkeypatch, f):
    """``f`` solved by SMO to the gap ``1e-11``, with the SMO runs and polishes it took, in
    order (``"run"``, ``"polish"``)."""
    events = []
    run, polish = _SMOState.run, smo._polish
    monkeypatch.setattr(_SMOState, "run", lambda *a, **k: events.append("run") or run(*a, **k))
    monkeypatch.setattr(smo, "_polish", lambda *a: events.append("polish") or polish(*a))
    solution = f.solve(method="smo", gap=1e-11)
    monkeypatch.setattr(_SMOState, "run", run)
    monkeypatch.setattr(smo, "_polish", polish)
    return solution, events


def assert_same_optimum(a, b):
    """Two certified answers of one problem: their objectives within the sum of their gaps
    (each gap bounds its answer's distance to the optimum)."""
    assert a.certificate.passed and b.certificate.passed
    assert abs(a.objective - b.objective) <= a.certificate.gap + b.certificate.gap


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
    # every row is computed by the same compiled kernel, cached or not: identical runs
    f = qpsvm.SoftMarginDual(X, y, C=1.0)
    big, tiny = f.solve(method="smo"), f.solve(method="smo", cache_size=1e-6)
    np.testing.assert_array_equal(big.alpha, tiny.alpha)
    assert tiny.info["misses"] > big.info["misses"]
    assert big.info["hits"] + big.info["misses"] >= big.n_iter
    # rbf: by default SMO fills the formulation's own cache, which a second run finds full
    g = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf")
    shared, private = g.solve(method="smo"), g.solve(method="smo", cache_size=0.05)
    again = g.solve(method="smo")
    assert shared.info["misses"] > 0 and again.info["misses"] == 0
    assert g.kernel_cache().filled >= shared.info["misses"]
    for sol in (private, again):
        np.testing.assert_array_equal(sol.alpha, shared.alpha)
    # a formed Gram matrix (numpy's arithmetic: round-off apart) is used as it is; both runs
    # stop within tolerance
    g.gram()
    full = g.solve(method="smo")
    assert full.info["misses"] == 0
    check_within_tolerance(g, full)
    assert abs(full.objective - shared.objective) <= gap_bound(g)


def test_shrinking_changes_the_work_not_the_stopping_rule(cancer_dual):
    # shrunk variables are checked again (their gradient rebuilt) before SMO stops, so with or
    # without shrinking every KKT condition holds within tol on all the data
    X, y = cancer_dual
    for kernel, fit_intercept in (("rbf", True), ("linear", True), ("rbf", False)):
        f = qpsvm.SoftMarginDual(X, y, C=10.0, kernel=kernel, fit_intercept=fit_intercept)
        on = f.solve(method="smo", tol=1e-4)
        off = f.solve(method="smo", tol=1e-4, shrinking=False)
        for sol in (on, off):
            assert sol.status == "tolerance"
            check_kkt(f, sol.alpha, 1e-4)
        assert abs(on.objective - off.objective) <= gap_bound(f, 1e-4)


def check_kkt(f, alpha, tol):
    """SMO's stopping rule recomputed from the data: with ``G = Q alpha - m``, the largest
    ``-y G`` over ``I_up`` exceeds the smallest over ``I_low`` by less than ``tol`` (without an
    intercept: every projected gradient is below ``tol``)."""
    G = f.y * f.scores(alpha=alpha) - f.margin
    up, low = alpha < f.upper, alpha > 0
    if f.fit_intercept:
        yG = -f.y * G
        i_up = np.where(f.y > 0, up, low)
        i_low = np.where(f.y > 0, low, up)
        assert np.max(yG[i_up]) - np.min(yG[i_low]) < tol
    else:
        assert np.max(np.where(up, -G, 0.0)) < tol and np.max(np.where(low, G, 0.0)) < tol


def test_compiled_exponential_is_within_one_ulp():
    # the rbf rows use a vectorised exp: compared with math.exp (correctly rounded in practice)
    # over the whole range of exp(-gamma d^2), subnormal results and underflow included
    import math

    from qpsvm.kernels import exp_nonpositive

    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            -rng.uniform(0, 1, 20000),
            -rng.uniform(0, 50, 20000),
            -rng.uniform(700, 750, 5000),
            -np.logspace(-300, 3, 5000),
            [0.0, -0.0, -5e-324, -708.4, -709.0, -745.1, -745.2, -1e300, -np.inf],
        ]
    )
    out = x.copy()
    bits = np.empty(x.size, dtype=np.int64)
    exp_nonpositive(out, bits, bits.view(np.float64))
    ref = np.array([math.exp(v) for v in x])
    ulps = np.abs(out - ref) / np.spacing(np.maximum(ref, 5e-324))
    assert np.max(ulps) <= 1.0
    assert out[-1] == 0.0 and out[-9] == 1.0


def test_kernel_cache_rows_match_the_kernel(cancer_dual):
    # rows and products from the cache equal the kernel's numpy matrix up to round-off,
    # with a cache so small that rows are evicted while a product runs (capacity 2 rows)
    from qpsvm.kernels import KernelCache

    X, y = cancer_dual
    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.7, X, 0.0))
    rng = np.random.default_rng(1)
    v = np.where(rng.random(200) < 0.3, rng.normal(size=200), 0.0)
    idx = np.array([5, 3, 5, 199, 0])
    for data in (X, Xs):
        for name in ("rbf", "poly", "linear"):
            f = qpsvm.SoftMarginDual(data, y, kernel=name, gamma=0.05, degree=2)
            K = f.kernel(data, data)
            for size in (200.0, 1e-6):
                cache = KernelCache(f.kernel, data, size)
                np.testing.assert_allclose(cache.take(idx), K[idx], rtol=1e-13, atol=1e-13)
                # a block is the same entries as the rows it is cut from, to the last bit
                cols = np.array([7, 5, 199, 5])
                np.testing.assert_array_equal(cache.block(idx, cols), cache.take(idx)[:, cols])
                scale = np.abs(K).max() * np.abs(v).sum()
                np.testing.assert_allclose(cache.matvec(v), K @ v, rtol=0, atol=1e-13 * scale)
            assert cache.capacity == 2 and cache.stats[1] > 5
            # the formulation's block: from the cache, from X (linear), or from a formed Gram
            np.testing.assert_allclose(
                f.gram_block(idx), K[np.ix_(idx, idx)], rtol=1e-13, atol=1e-13
            )
            if name != "linear":
                f.gram()
                np.testing.assert_array_equal(f.gram_block(idx, cols), f.gram()[np.ix_(idx, cols)])


def test_cached_row_keeps_rows_through_a_sweep_larger_than_the_cache():
    # SMO's tail over a free set larger than the cache uses its rows nearly cyclically: least
    # recently used eviction then drops each row just before its next use (no hit at all after
    # the first pass); rows entering at the least recent end leave the cache's rows in place,
    # and a pair's first row survives the miss on its second
    import numba

    from qpsvm.kernels import PROMOTE, Kernel, KernelCache, cached_row

    @numba.njit
    def sweep(cache, order, first):
        for k in range(0, order.shape[0], 2):
            Ri = cached_row(order[k], cache)
            cached_row(order[k + 1], cache)
            first[k // 2] = Ri[0]

    X = np.random.default_rng(0).normal(size=(40, 3))
    kernel = Kernel("rbf", gamma=0.3)
    cache = KernelCache(kernel, X, 10 * 40 * 8 / 2**20)
    assert cache.capacity == 10
    passes = 8
    order = np.tile(np.arange(40), passes)
    first = np.empty(order.size // 2)
    K = kernel(X, X)
    # least recently used (the default): each row is gone before its next use
    sweep(cache.arrays, order, first)
    np.testing.assert_allclose(first, K[order[::2], 0], rtol=1e-14)
    assert cache.stats[0] == 0 and cache.stats[1] == order.size
    # the SMO loop's sweep flag: capacity - 2 rows a pass hit after the first pass, less one
    # a pass for each promoted row
    cache.stats[4] = 1
    sweep(cache.arrays, order, first)
    # every pair's first row, as read after the second row was fetched, is its own row (not
    # the second one written over it)
    np.testing.assert_allclose(first, K[order[::2], 0], rtol=1e-14)
    hits = cache.stats[0]
    assert hits >= (passes - 1) * (cache.capacity - 2 - 40 // PROMOTE - 1) > 0


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
        ({"shrinking": "yes"}, TypeError, "shrinking must be"),
    ],
)
def test_bad_arguments_raise_clear_errors(options, error, message):
    X, y = random_problem(0)
    with pytest.raises(error, match=message):
        qpsvm.SoftMarginDual(X, y).solve(method="smo", **options)


def test_hard_margin_has_no_box():
    X, y = random_problem(0)
    with pytest.raises(qpsvm.InvalidInputError, match=r"HardMargin \(SMO needs the finite box"):
        qpsvm.HardMargin(X, y).solve(method="smo")


def test_working_set_never_forms_the_gram_matrix():
    # SMO's rows (the formulation's cache) serve the restricted QP and the certificate: the
    # n x n matrix is never formed, and the answer is the full QP's optimum (certified)
    X, y = random_problem(3, n=400, d=5)
    f = qpsvm.SoftMarginDual(X, y, C=2.0, kernel="rbf", gamma=0.5)
    sol = f.solve(method="working_set")
    assert f._gram is None and sol.certificate.passed
    assert f.kernel_cache().filled >= np.count_nonzero(sol.alpha)
    exact = qpsvm.SoftMarginDual(X, y, C=2.0, kernel="rbf", gamma=0.5).solve(method="qp")
    assert abs(sol.objective - exact.objective) <= 1e-9 * max(1.0, abs(exact.objective))
    # the cache remembers recent products, and hands out copies
    v = sol.alpha * f.y
    first = f.kernel_cache().matvec(v)
    first[:] = 0.0
    np.testing.assert_array_equal(f.kernel_cache().matvec(v), f.scores(alpha=sol.alpha))
    assert np.any(f.kernel_cache().matvec(v) != 0.0)


# ------------------------------------------------------------------ run to a duality gap
@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    kernel=st.sampled_from(["rbf", "poly", "linear"]),
    C=st.sampled_from([0.1, 1.0, 30.0]),
    intercept=st.booleans(),
)
def test_gradient_gap_is_the_duality_gap(seed, kernel, C, intercept):
    # identity of the math: with G = Q alpha - m, P(alpha, b*) - D(alpha) = alpha.G + C s.xi,
    # at any dual-feasible alpha (read off the gradient, no kernel row)
    X, y = random_problem(seed, n=30, d=3)
    f = qpsvm.SoftMarginDual(X, y, C=C, kernel=kernel, gamma=0.3, fit_intercept=intercept)
    rng = np.random.default_rng(seed)
    alpha = f.project_dual(rng.uniform(-0.5 * C, 1.5 * C, f.n_samples))
    K = X @ X.T if kernel == "linear" else f.gram()
    G = f.y * (K @ (alpha * f.y)) - f.margin
    primal, gap = gradient_gap(f, alpha, G)
    scale = max(1.0, abs(primal))
    assert abs(primal - f.objective_alpha(alpha)) <= 1e-11 * scale
    assert abs(gap - (f.objective_alpha(alpha) - f.dual_objective(alpha))) <= 1e-11 * scale


@pytest.mark.parametrize("kernel", ["rbf", "poly", "linear"])
@pytest.mark.parametrize("shrinking", [True, False])
@pytest.mark.parametrize("intercept", [True, False])
def test_smo_run_to_a_gap_is_certified_exact(cancer_dual, kernel, shrinking, intercept):
    # warm restarts continue from SMO's own state (the gradient and its part from the bounded
    # multipliers, which shrinking rebuilds from): the gap is reached and certified at 1e-9,
    # and the objective is the full QP's optimum within both certified gaps
    X, y = cancer_dual
    f = qpsvm.SoftMarginDual(
        X, y, C=0.5, kernel=kernel, gamma=0.05, degree=2, fit_intercept=intercept
    )
    sol = f.solve(method="smo", gap=1e-12, shrinking=shrinking)
    assert sol.status == "gap" and sol.certificate.passed
    exact = f.solve(method="qp")
    assert abs(sol.objective - exact.objective) <= sol.certificate.gap + exact.certificate.gap


def test_kernel_working_set_returns_the_certified_smo_start(cancer):
    # above 200 samples a kernel dual is solved by SMO run to a gap far below the tolerance:
    # its point is certified as it is, no restricted QP is solved
    X, y = cancer
    f = qpsvm.SoftMarginDual(X, y, C=2.0, kernel="rbf", gamma=0.1)
    sol = f.solve()
    assert sol.method == "working_set" and sol.solver == "smo" and sol.info["rounds"] == 0
    assert sol.certificate.passed and sol.certificate.rigorous
    exact = f.solve(method="qp")
    assert abs(sol.objective - exact.objective) <= sol.certificate.gap + exact.certificate.gap


def test_a_start_that_fails_its_certificate_falls_back_to_the_restricted_qp(cancer_dual):
    # a start claimed exact but only at SMO's 1e-2: the certificate refuses it and the
    # declarative restricted QP (the fallback) finds the certified optimum
    X, y = cancer_dual
    f = qpsvm.SoftMarginDual(X, y, C=2.0, kernel="rbf", gamma=0.1)
    rough = f.solve(method="smo", tol=1e-2, certify=False)
    start = Start(Candidate(w=None, b=rough.b, alpha=rough.alpha), 1e-2, "smo", 0, exact=True)
    sol = f.solve(method="working_set", start=start)
    assert sol.info["rounds"] >= 1 and sol.certificate.passed
    exact = f.solve(method="qp")
    assert abs(sol.objective - exact.objective) <= sol.certificate.gap + exact.certificate.gap


def test_kkt_polish_on_the_free_set_gives_the_optimum(cancer_dual):
    # the poly kernel converges slowly; the KKT equations on SMO's free set (sets identified
    # at 1e-4) give a point whose gap, from a gradient computed from the data, is round-off
    X, y = cancer_dual
    f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="poly", gamma=0.1, degree=3)
    sol = f.solve(method="smo", tol=1e-5, certify=False)
    alpha = sol.alpha.copy()
    G = f.y * f.scores(alpha=alpha) - f.margin
    primal, before = gradient_gap(f, alpha, G)
    assert before > 1e-9 * primal
    assert _polish(f, alpha, G, 1e-12, f.gram().diagonal().copy())
    cert = f.certify(alpha=alpha)
    assert cert.passed and cert.relative_gap <= 1e-11
    # the gradient it returns is the data's
    np.testing.assert_allclose(G, f.y * f.scores(alpha=alpha) - f.margin, atol=1e-12)


@pytest.mark.parametrize(
    ("seed", "gamma", "C", "tol"), [(6, 0.01, 100.0, 1e-2), (2, 0.05, 10.0, 0.1)]
)
def test_kkt_polish_moves_wrongly_bound_multipliers_into_the_free_set(
    monkeypatch, seed, gamma, C, tol
):
    # SMO stopped early has a few multipliers at a bound that belong to the free set: the KKT
    # equations on its sets alone leave a gap, their residuals' signs show which indices to
    # free, and one more solve on the grown set gives the optimum
    X, y = make_classification(
        n_samples=200, n_features=5, n_informative=3, flip_y=0.1, random_state=seed
    )
    f = qpsvm.SoftMarginDual(X, y, kernel="rbf", gamma=gamma, C=C)
    alpha = f.solve(method="smo", tol=tol, certify=False).alpha
    G = f.y * f.scores(alpha=alpha) - f.margin
    diag = np.ones(f.n_samples)
    assert not _polish(f, alpha.copy(), G.copy(), 1e-10, diag, rounds=1)
    assert _polish(f, alpha, G, 1e-10, diag)
    cert = f.certify(alpha=alpha)
    assert cert.passed and cert.relative_gap <= 1e-10


def test_gap_resolution_weighs_the_free_scores_rounding(cancer_dual):
    # its definition: eps sum_{0 < alpha_i < C s_i} C s_i (K alpha)_i from the Gram matrix (rbf:
    # nonnegative values); the Cauchy-Schwarz shortcut, taken when it is below the estimate the
    # caller compares with, is above the product (|K_ij| <= sqrt(K_ii K_jj))
    X, y = cancer_dual
    f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf", gamma=0.1)
    alpha = f.solve(method="smo", certify=False).alpha
    K = f.gram()
    free = (alpha > 0) & (alpha < f.upper)
    assert 0 < np.count_nonzero(free) < np.count_nonzero(alpha)
    expected = np.finfo(float).eps * float(f.upper[free] @ (K @ alpha)[free])
    diag = K.diagonal().copy()
    assert gap_resolution(f, alpha, diag) == pytest.approx(expected, rel=1e-12)
    shortcut = gap_resolution(f, alpha, diag, estimate=1.0)
    assert expected < shortcut <= 1.0
    assert gap_resolution(f, np.zeros(f.n_samples), diag) == 0.0


def test_smo_stops_at_the_rounding_of_its_gap_estimate():
    # a large C with most support vectors free: the rounding of the free scores, weighted by C,
    # is above the gap asked for, so SMO stops there (the KKT equations on its free set) rather
    # than running its tail to the gradient's round-off; the point is the full QP's optimum
    # within both certified gaps
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=300, n_features=20, n_informative=10, flip_y=0.1, random_state=0
    )
    f = qpsvm.SoftMarginDual(X, y, C=300.0, kernel="poly", gamma=0.05, degree=3, coef0=1.0)
    target = 5e-12
    sol = f.solve(method="smo", gap=target)
    assert sol.status == "gap" and sol.certificate.passed
    G = f.y * f.scores(alpha=sol.alpha) - f.margin
    primal, estimate = gradient_gap(f, sol.alpha, G)
    diag = f.gram().diagonal().copy()
    assert target * primal < estimate <= gap_resolution(f, sol.alpha, diag)
    exact = f.solve(method="qp")
    assert abs(sol.objective - exact.objective) <= sol.certificate.gap + exact.certificate.gap


def test_kkt_polish_plan_weighs_the_equations_against_the_tail(monkeypatch):
    # 50 of 100 free, the equations' cost made 5000 step-units per free multiplier (2.5e5 in
    # all) against 50 * per_decade for a decade of SMO's steps: one solve within a decade
    # from 5000 steps per decade on (2.5e5 = 50 * 5000)
    monkeypatch.setattr(smo, "POLISH_FLOP", 0.0)
    monkeypatch.setattr(smo, "POLISH_FIXED", 0.0)
    monkeypatch.setattr(smo, "POLISH_ENTRY", 100.0)
    monkeypatch.setattr(smo, "STEP_FIXED", 0.0)
    upper = np.ones(100)
    alpha = np.where(np.arange(100) < 50, 0.5, 0.0)
    assert _polish_plan(alpha, upper, 5000.0, 8.0) == NOW
    assert _polish_plan(alpha, upper, 4999.0, 8.0) == NEXT
    # one solve and a decade of 1000 steps (2.5e5 + 5e4) against the decades left (5e4 each):
    # the tail pays from 6 decades on
    assert _polish_plan(alpha, upper, 1000.0, 6.0) == NEXT
    assert _polish_plan(alpha, upper, 1000.0, 5.9) == NEVER
    # no free multiplier: nothing to solve
    assert _polish_plan(np.zeros(100), upper, 1e9, 20.0) == NEVER


def test_kkt_polish_plan_as_measured():
    # SMO's first stage (rbf, gamma = 0.05), the equations priced for their single-precision
    # factor: n = 2000, 3749 steps at C = 100 with 1495 free and the gap 9.6 decades above
    # its target, and 2599 steps at C = 1 with 1150 free and 7.6 decades: a decade and one
    # solve (C = 1: 19 ms) cost less than the tail (C = 1: 6298 steps, 42 ms); n = 8000,
    # C = 1, 8419 steps with 3259 free and 7.6 decades: the solve (about 0.6 s) and a decade
    # cost more than the tail (21906 steps, 0.67 s); poly, 45220 steps with about 600 free,
    # and rbf gamma = 0.005, C = 10, 5996 steps with 221 free and the gap 6.9 decades above
    # its target: one solve costs less than a decade; rbf n = 500, 710 steps with 345 free
    # and 7.6 decades: a decade and one solve (measured 3.0 ms) cost less than the tail
    # (1555 steps, 4.1 ms), which pricing a step at its free multipliers alone (345 units,
    # 450 measured) put below them; n = 200 (gamma 0.1, d = 10), 220 steps with 55 free and
    # 7.3 decades: the tail (471 steps, 0.45 ms) costs less than one solve (0.39 ms) and a
    # decade; n = 500, gamma = 0.5, 693 steps with 252 free and 6.05 decades: a decade and one
    # solve (0.6 ms and 1.4 ms as priced) cost less than the tail (1258 steps as priced), where
    # the solve priced at 2e5 units beyond its block (1.2 ms, measured 0.35) did not
    decade = 1.0 / np.log10(2 / 1e-3)
    free = np.full(4000, 0.5)
    plan = [
        _polish_plan(free[:n_free], np.ones(n_free), steps * decade, decades)
        for n_free, steps, decades in (
            (1495, 3749, 9.6),
            (1150, 2599, 7.6),
            (3259, 8419, 7.6),
            (600, 45220, 8.0),
            (221, 5996, 6.9),
            (345, 710, 7.6),
            (55, 220, 7.3),
            (252, 693, 6.05),
        )
    ]
    assert plan == [NEXT, NEXT, NEVER, NOW, NOW, NEXT, NEVER, NEXT]


def test_restart_steps_follow_the_polish_plan():
    # a gap 1e6 times its target asks for 0.3 / 1e6 of the violation: two decades at most
    # where the equations are cheap, one where they are tried after a decade, the proportional
    # tolerance where they are not tried, never below FAR_SHRINK of it
    assert _restart_tol(NOW, 2.0, 1e6, 1.0) == 2.0 * MIN_SHRINK
    assert _restart_tol(NEXT, 2.0, 1e6, 1.0) == 2.0 * NEXT_SHRINK
    assert _restart_tol(NEVER, 2.0, 1e6, 1.0) == 2.0 * (0.3 / 1e6)
    assert _restart_tol(NEVER, 2.0, 1e20, 1.0) == 2.0 * FAR_SHRINK
    # a gap near its target: the proportional tolerance, half a decade to spare, but one
    # decade before equations tried after it
    for plan in (NOW, NEVER):
        assert _restart_tol(plan, 2.0, 10.0, 1.0) == 2.0 * (0.3 / 10.0)
    assert _restart_tol(NEXT, 2.0, 10.0, 1.0) == 2.0 * NEXT_SHRINK


@pytest.mark.parametrize("side", [1.0, -1.0])
def test_sets_are_firm_beyond_the_violation(side):
    # two free multipliers with y G = -1 and +1 give b = 0, so r = G; the third, at 0 (side 1)
    # or at C (side -1), needs r >= 0 or r <= 0 at the optimum: within the violation 1e-3 of
    # the wrong sign it may still move, beyond it it will not
    y, upper = np.array([1.0, -1.0, 1.0]), np.ones(3)
    alpha = np.array([0.5, 0.5, 0.0 if side > 0 else 1.0])
    f = SimpleNamespace(y=y, upper=upper)
    for r3, firm in ((5e-4, False), (2e-3, True), (-1.0, False)):
        state = SimpleNamespace(alpha=alpha, G=np.array([-1.0, -1.0, side * r3]))
        assert _sets_firm(f, state, 1e-3) == firm


def test_kkt_equations_at_once_where_the_sets_are_firm(monkeypatch):
    # rbf n = 500, gamma 0.05, C = 1: SMO's sets at its first stage have no multiplier at a
    # bound within the violation of moving, and the equations, priced for one solve and a
    # decade below the tail, are solved there at once (one solve certifies), without the
    # decade of steps; the same optimum as SMO's steps alone, within the gaps
    X, y = make_classification(
        n_samples=500, n_features=20, n_informative=10, flip_y=0.1, random_state=0
    )
    f = qpsvm.SoftMarginDual(X, y, kernel="rbf", gamma=0.05, C=1.0)
    polished, events = recorded_solve(monkeypatch, f)
    # the first stage paused at each of PEEKS, where one solve was priced above a decade of
    # steps, and resumed
    assert events == ["run"] * (len(PEEKS) + 1) + ["polish"]
    monkeypatch.setattr(smo, "_polish_plan", lambda *args: NEVER)
    tail = f.solve(method="smo", gap=1e-11)
    assert polished.status == tail.status == "gap"
    assert_same_optimum(polished, tail)


def test_kkt_equations_after_one_more_decade_give_the_gap(monkeypatch):
    # where the equations pay against SMO's tail but not at once, SMO runs one decade below
    # its first stage and solves them on that free set (one polish): the answer is certified,
    # with the steps of that decade only (the same problem to the gap by SMO's steps alone
    # takes more than twice as many)
    X, y = make_classification(
        n_samples=400, n_features=20, n_informative=10, flip_y=0.1, random_state=0
    )
    f = qpsvm.SoftMarginDual(X, y, kernel="rbf", gamma=0.05, C=100.0)
    calls = []

    def plan(*args):
        calls.append(_polish_plan(*args))
        return NEXT

    monkeypatch.setattr(smo, "_polish_plan", plan)
    polished = f.solve(method="smo", gap=5e-12)
    monkeypatch.setattr(smo, "_polish_plan", lambda *args: NEVER)
    tail = f.solve(method="smo", gap=5e-12)
    assert len(calls) == 1
    assert polished.status == tail.status == "gap"
    assert polished.certificate.passed and polished.certificate.relative_gap <= 1e-10
    assert 2 * polished.n_iter < tail.n_iter
    assert abs(polished.objective - tail.objective) <= (
        polished.certificate.gap + tail.certificate.gap
    )


@pytest.mark.parametrize("intercept", [True, False])
@pytest.mark.parametrize("cached", [True, False])
def test_gathered_unit_rows_follow_the_samples_path(intercept, cached):
    """The units of the soft-margin dual with their rows gathered (``mapped``, the path of SVR
    and the squared losses, here with ``B = D = 0``) are the same problem with the same rows:
    SMO takes the same steps, to the bit, as on the cached rows read in place (the loop's
    specialisation without units, ``None``), shrinking and unshrinking included."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 4))
    y = np.where(X[:, 0] + 0.8 * rng.normal(size=300) > 0, 1, -1)
    f = qpsvm.SoftMarginDual(X, y, C=10.0, kernel="rbf", gamma=0.5, fit_intercept=intercept)
    runs = []
    assert SMOUnits.samples(f).loop_units() is None
    for mapped in (False, True):
        units = dataclasses.replace(SMOUnits.samples(f), mapped=mapped)
        rows = _kernel_rows(f.fresh_copy(), 0.1 if cached else None)  # 43 rows: evictions
        state = _SMOState.start(units, rows, 10**6, True, True)
        runs.append((state.run(1e-3), state.run(1e-9), state.alpha, state.G))
    (first, last, alpha, G), (first2, last2, alpha2, G2) = runs
    assert first == first2 and last == last2
    np.testing.assert_array_equal(alpha, alpha2)
    np.testing.assert_array_equal(G, G2)


def test_kernel_product_over_more_rows_than_the_cache_evicts_none():
    # a product over more support vectors than the slots uses the cached rows in place and
    # computes the others without caching them: the rows a solver had cached stay, and the
    # product is the one of a cache that holds every row, to the bit (same rows, same order)
    from qpsvm.kernels import Kernel, KernelCache

    X = np.random.default_rng(1).normal(size=(40, 3))
    kernel = Kernel("rbf", gamma=0.3)
    small = KernelCache(kernel, X, 10 * 40 * 8 / 2**20)
    assert small.capacity == 10
    held = np.arange(5, 15)
    small.slots(held)
    v = np.random.default_rng(2).normal(size=40)
    product = small.matvec(v)
    assert np.all(small.slot_of[held] >= 0)
    assert small.stats[1] == held.size + 40 - small.capacity
    full = KernelCache(kernel, X, 1.0)
    np.testing.assert_array_equal(product, full.matvec(v))
    np.testing.assert_allclose(product, kernel(X, X) @ v, rtol=1e-13, atol=1e-13)


def _kkt_factors(monkeypatch):
    """Record which factorisation each solve of the KKT equations forms."""
    calls = []
    for name in ("single_solver", "symmetric_solver"):
        real = getattr(support_sets, name)

        def spy(A, real=real, name=name):
            calls.append(name)
            return real(A)

        monkeypatch.setattr(support_sets, name, spy)
    return calls


def _smo_at_1e4():
    """rbf, gamma 0.05, C = 100 on 400 samples and SMO's multipliers at ``tol = 1e-4``."""
    X, y = make_classification(
        n_samples=400, n_features=20, n_informative=10, flip_y=0.1, random_state=0
    )
    f = qpsvm.SoftMarginDual(X, y, kernel="rbf", gamma=0.05, C=100.0)
    return f, f.solve(method="smo", tol=1e-4, certify=False).alpha


def test_kkt_equations_of_a_large_kernel_block_refine_a_single_precision_factor(monkeypatch):
    # rbf, gamma 0.05, C = 100: SMO's 379 free multipliers at 1e-4 (the bordered block's
    # condition number about 1e2, so a single-precision correction divides the residual by
    # about 1e5): the single-precision LDL^T refined in double reaches double's residual floor
    # without a double factor, and its multipliers are the double factor's to round-off
    f, alpha = _smo_at_1e4()
    M = np.flatnonzero((alpha > 0) & (alpha < f.upper))
    E = np.flatnonzero(alpha >= f.upper)
    assert M.size >= support_sets.MIXED_MIN
    calls = _kkt_factors(monkeypatch)
    mixed, b_mixed, _ = support_sets.support_solution(f, M, E)
    assert calls == ["single_solver"]
    monkeypatch.setattr(support_sets, "MIXED_MIN", M.size + 1)
    double, b_double, _ = support_sets.support_solution(f, M, E)
    assert calls == ["single_solver", "symmetric_solver"]
    np.testing.assert_allclose(mixed, double, rtol=0, atol=1e-12 * np.max(np.abs(double)))
    assert b_mixed == pytest.approx(b_double, rel=1e-12)


def test_kkt_polish_with_the_single_precision_factor_certifies_the_same_optimum(monkeypatch):
    # SMO's polish (one decade below its first stage, as at rbf n = 2000, C = 100) solves the
    # equations on its free set by the single-precision factor; the answer is certified and
    # equals the one with the double factor within the two certified gaps
    X, y = make_classification(
        n_samples=400, n_features=20, n_informative=10, flip_y=0.1, random_state=0
    )
    monkeypatch.setattr(smo, "_polish_plan", lambda *args: NEXT)
    calls = _kkt_factors(monkeypatch)
    f = qpsvm.SoftMarginDual(X, y, kernel="rbf", gamma=0.05, C=100.0)
    mixed = f.solve(method="smo", gap=5e-12)
    assert calls == ["single_solver"]
    monkeypatch.setattr(support_sets, "MIXED_MIN", X.shape[0] + 1)
    f = qpsvm.SoftMarginDual(X, y, kernel="rbf", gamma=0.05, C=100.0)
    double = f.solve(method="smo", gap=5e-12)
    assert mixed.status == double.status == "gap"
    assert mixed.certificate.passed and mixed.certificate.relative_gap <= 1e-10
    assert abs(mixed.objective - double.objective) <= (
        mixed.certificate.gap + double.certificate.gap
    )


def test_kkt_equations_on_a_nearby_set_border_the_kept_factor(monkeypatch):
    # rbf, gamma 0.05, C = 100, SMO's free set at 1e-4: solved once with a KKTFactor kept,
    # then on that set with three samples at zero moved in and two of its own out to zero
    # (an active-set round): the kept single-precision factor, bordered by the five through
    # its Schur complement, gives the new set's multipliers as a fresh factor does, to
    # round-off, without a second factorisation
    f, alpha = _smo_at_1e4()
    P = np.flatnonzero((alpha > 0) & (alpha < f.upper))
    E, Z = np.flatnonzero(alpha >= f.upper), np.flatnonzero(alpha == 0)
    assert P.size >= support_sets.MIXED_MIN and Z.size >= 3
    M = np.sort(np.concatenate([np.delete(P, [5, 40]), Z[:3]]))
    calls = _kkt_factors(monkeypatch)
    factor = support_sets.KKTFactor()
    support_sets.support_solution(f, P, E, factor=factor)
    assert calls == ["single_solver"] and np.array_equal(factor.M, P)
    bordered, b_bordered, _ = support_sets.support_solution(f, M, E, factor=factor)
    assert calls == ["single_solver"] and np.array_equal(factor.M, M)
    fresh, b_fresh, _ = support_sets.support_solution(f, M, E)
    assert calls == ["single_solver", "single_solver"]
    np.testing.assert_allclose(bordered, fresh, rtol=0, atol=1e-12 * np.max(np.abs(fresh)))
    assert b_bordered == pytest.approx(b_fresh, rel=1e-12)
    # a set that differs by more than REUSE_SHARE of its size is factored afresh
    monkeypatch.setattr(support_sets, "REUSE_SHARE", 4.0 / M.size)
    support_sets.support_solution(f, P, E, factor=factor)
    assert calls == ["single_solver"] * 3


def test_kkt_equations_fall_back_to_the_double_factor_on_an_ill_conditioned_block(
    monkeypatch,
):
    # rbf, gamma 3e-4: the block of 300 samples has condition number about 6e8, beyond single
    # precision (its first correction does not lower the residual); the double factor then
    # starts from the same point, so the answer is the double path's to the bit
    X, y = make_classification(
        n_samples=400, n_features=20, n_informative=10, flip_y=0.1, random_state=0
    )
    f = qpsvm.SoftMarginDual(X, y, kernel="rbf", gamma=3e-4, C=100.0)
    M, E = np.arange(300), np.arange(0)
    calls = _kkt_factors(monkeypatch)
    mixed, b_mixed, _ = support_sets.support_solution(f, M, E)
    assert calls == ["single_solver", "symmetric_solver"]
    monkeypatch.setattr(support_sets, "MIXED_MIN", M.size + 1)
    double, b_double, _ = support_sets.support_solution(f, M, E)
    np.testing.assert_array_equal(mixed, double)
    assert b_mixed == b_double


@settings(max_examples=30, deadline=None)
@given(
    scale=st.floats(1e-3, 1e3),
    gamma=st.floats(1e-4, 1e2),
    seed=st.integers(0, 2**16),
)
def test_rbf_gram_blocks_are_their_own_magnitudes(scale, gamma, seed):
    # the KKT equations' floor test takes |K| as K itself for the rbf kernel (no copy of the
    # block): every rbf value is exp of a nonpositive number, so the block is bit-equal to its
    # absolute value, at any scale of the data (values underflowing to 0 included)
    rng = np.random.default_rng(seed)
    X = scale * rng.normal(size=(40, 5))
    y = np.where(rng.random(40) < 0.5, -1, 1)
    y[:2] = -1, 1
    f = qpsvm.SoftMarginDual(X, y, kernel="rbf", gamma=gamma, C=1.0)
    K = f.gram_block(np.arange(0, 40, 2))
    np.testing.assert_array_equal(np.abs(K), K)


def test_kkt_refinement_that_stalls_above_the_rounding_level_is_not_the_floor(monkeypatch):
    # a single-precision refinement whose first correction is good (rate about 1e-5) but whose
    # next corrections lower nothing stops "stalled" with a residual at single precision's
    # level, not double's; taken as the floor it left poly n = 8000, C = 100's feature-map
    # point at a relative gap of 2.6e-6 (6.0e-11 with the double factor). The double factor
    # must refine on, to the double path's answer
    f, alpha = _smo_at_1e4()
    M = np.flatnonzero((alpha > 0) & (alpha < f.upper))
    E = np.flatnonzero(alpha >= f.upper)
    real = support_sets.single_solver

    def stalling(A):
        solve, used = real(A), []

        def once(r):
            used.append(True)
            return solve(r) if len(used) == 1 else np.zeros_like(r)

        return once

    monkeypatch.setattr(support_sets, "single_solver", stalling)
    calls = _kkt_factors(monkeypatch)
    mixed, b_mixed, _ = support_sets.support_solution(f, M, E)
    assert calls == ["single_solver", "symmetric_solver"]
    monkeypatch.setattr(support_sets, "MIXED_MIN", M.size + 1)
    double, b_double, _ = support_sets.support_solution(f, M, E)
    np.testing.assert_allclose(mixed, double, rtol=0, atol=1e-12 * np.max(np.abs(double)))
    assert b_mixed == pytest.approx(b_double, rel=1e-12)


def test_kkt_polish_plan_counts_the_rows_the_cache_cannot_hold():
    # rbf n = 20000, gamma = 0.05, C = 1: 18643 first-stage steps, 6017 free of 8817 support
    # vectors, 1310 slots of 20000 entries, the gap 8.5 decades above its target. Priced at
    # the free set alone a tail step is cheap and the equations never pay; a step also
    # computes the two rows the cache misses in proportion 1 - 1310 / 6017 (406 us a step
    # measured, 34 us of it the free set's share), and the equations then pay after a decade
    # (measured: the tail 15.6 s, one decade and the equations 8.2 s)
    n, k, slots, support = 20000, 6017, 1310, 8817
    per_decade = 18643 / np.log10(2 / 1e-3)
    alpha, upper = np.full(k, 0.5), np.ones(k)
    miss = 1.0 - slots / k
    computed = (k - slots) + smo.POLISH_PRODUCTS * support * miss
    misses = (miss * 2.0 * n * smo.ROW_ENTRY, computed * n * smo.ROW_ENTRY)
    assert _polish_plan(alpha, upper, per_decade, 8.5) == NEVER
    assert _polish_plan(alpha, upper, per_decade, 8.5, misses) == NEXT


def test_kkt_polish_after_a_decade_where_the_rows_miss_the_cache(monkeypatch):
    # the same problem with every row cached (no misses: SMO's tail) and with 32 slots for
    # its 400 rows (the tail's rows mostly recomputed: one more decade, then the equations):
    # both certified, the same optimum within their gaps, fewer steps with the small cache;
    # a step priced at its free multipliers alone (with its fixed work the cached problem
    # goes to the equations after a decade too, as rbf n = 500 does, and so it does with the
    # equations' fixed cost at its measured 6e4 units: here it is 2e5, five times that)
    X, y = make_classification(
        n_samples=400, n_features=20, n_informative=10, flip_y=0.1, random_state=0
    )
    monkeypatch.setattr(smo, "STEP_FIXED", 0.0)
    monkeypatch.setattr(smo, "POLISH_FIXED", 2e5)
    plans = []

    def plan(*args):
        plans.append((args[4], _polish_plan(*args)))
        return plans[-1][1]

    monkeypatch.setattr(smo, "_polish_plan", plan)
    solved = []
    for megabytes in (200.0, 0.1):
        f = qpsvm.SoftMarginDual(X, y, kernel="rbf", gamma=0.05, C=1.0)
        f.kernel_cache_size = megabytes
        solved.append(f.solve(method="smo", gap=5e-12))
    assert [p for _, p in plans] == [NEVER, NEXT]
    assert plans[0][0] == (0.0, 0.0) and min(plans[1][0]) > 0
    cached, missed = solved
    assert cached.status == missed.status == "gap"
    assert missed.certificate.passed and cached.certificate.passed
    assert missed.n_iter < cached.n_iter
    assert abs(missed.objective - cached.objective) <= (
        missed.certificate.gap + cached.certificate.gap
    )


@pytest.mark.parametrize(("kernel", "C"), [("rbf", 10.0), ("poly", 1.0)])
def test_smo_paused_and_resumed_takes_the_same_steps(kernel, C):
    # a pause returns before a step with the loop's own state kept: resumed, SMO takes the
    # steps it takes without the pause, to the bit (shrinking, unshrinking and the selection
    # included), and a pause below the violation reached is never taken
    X, y = make_classification(
        n_samples=300, n_features=8, n_informative=5, flip_y=0.1, random_state=3
    )
    f = qpsvm.SoftMarginDual(X, y, kernel=kernel, gamma=0.2, C=C)
    runs = []
    for peeks in ((), (0.3, 3e-2, 3e-3)):
        state = _SMOState.start(SMOUnits.samples(f), _kernel_rows(f, None), 10**6, True, True)
        steps, pauses = 0, []
        for peek in peeks:
            it, violation = state.run(1e-4, peek=peek)
            steps += it
            assert state.is_paused and violation < peek
            pauses.append(it)
        it, violation = state.run(1e-4)
        assert not state.is_paused and violation < 1e-4
        runs.append((steps + it, violation, state.alpha, state.G, state.G_bar))
        assert all(it > 0 for it in pauses[1:])
    (steps, violation, alpha, G, G_bar), (steps2, violation2, alpha2, G2, G_bar2) = runs
    assert steps == steps2 and violation == violation2
    np.testing.assert_array_equal(alpha, alpha2)
    np.testing.assert_array_equal(G, G2)
    np.testing.assert_array_equal(G_bar, G_bar2)


def test_kkt_equations_at_a_pause_give_the_gap_before_the_first_stage(monkeypatch):
    # poly n = 1000 (SMO's steps are many for their decades): the equations are priced at once
    # at the first pause and certify from there, in 4559 steps where the first stage alone
    # takes 11154; the same optimum as without pauses, within the gaps
    X, y = make_classification(
        n_samples=1000, n_features=20, n_informative=10, flip_y=0.1, random_state=0
    )
    f = qpsvm.SoftMarginDual(X, y, kernel="poly", gamma=0.05, degree=3, coef0=1.0, C=1.0)
    first = f.solve(method="smo", certify=False)
    paused, events = recorded_solve(monkeypatch, f)
    assert events == ["run", "polish"]
    assert paused.status == "gap" and paused.n_iter < first.n_iter
    monkeypatch.setattr(smo, "PEEKS", ())
    staged = f.solve(method="smo", gap=1e-11)
    assert staged.n_iter >= first.n_iter
    assert_same_optimum(paused, staged)


def test_accurate_step_puts_the_poly_margins_within_the_certificates_precision(monkeypatch):
    # poly n = 2000, C = 100: the equations' solution meets the gap only within the float
    # scores' round-off (the values, off by a few units of their size, cancel in the sums);
    # one refinement step on the certificate's own scores takes the certified gap below the
    # certificate's early stop (1e-2 of its tolerance), where the plain polish leaves it above
    X, y = make_classification(
        n_samples=2000, n_features=20, n_informative=10, flip_y=0.1, random_state=0
    )
    f = qpsvm.SoftMarginDual(X, y, kernel="poly", gamma=0.05, degree=3, coef0=1.0, C=100.0)
    steps = []
    step = smo._accurate_step
    monkeypatch.setattr(smo, "_accurate_step", lambda *a: steps.append(1) or step(*a))
    refined = f.solve(method="smo", gap=5e-12)
    monkeypatch.setattr(smo, "_accurate_step", lambda *a: None)
    plain = f.solve(method="smo", gap=5e-12)
    assert steps == [1] and refined.status == plain.status == "gap"
    assert refined.certificate.relative_gap < 1e-11 < plain.certificate.relative_gap
    assert_same_optimum(refined, plain)


def test_no_pause_where_no_solve_can_pay(monkeypatch):
    # rbf n = 200: its first stage takes fewer steps a decade than the 200 (60000 units over
    # 200 multipliers and a step's 100, every row cached) for which a solve's fixed part could
    # pay at a pause: the loop never pauses, and the answer is the gap's
    X, y = make_classification(
        n_samples=200, n_features=10, n_informative=5, flip_y=0.1, random_state=0
    )
    f = qpsvm.SoftMarginDual(X, y, kernel="rbf", gamma=0.1, C=1.0)
    assert smo._pause_steps(200, 200) == smo.POLISH_FIXED / 300.0
    paused, run = [], _SMOState.run

    def spy(self, *args, **kwargs):
        out = run(self, *args, **kwargs)
        paused.append(self.is_paused)
        return out

    monkeypatch.setattr(_SMOState, "run", spy)
    sol = f.solve(method="smo", gap=1e-11)
    assert sol.status == "gap" and sol.certificate.passed
    assert paused and not any(paused)
