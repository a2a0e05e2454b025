"""Multiclass SVMs: Crammer-Singer against liblinear, Weston-Watkins against the binary SVM,
certificates, the dual projection and the numpy oracles."""

from __future__ import annotations

import warnings
from fractions import Fraction

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.datasets import load_iris, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC

import qpsvm
from qpsvm.exceptions import ProblemMismatchWarning
from qpsvm.solution import Candidate
from qpsvm.solvers.warm_start import multiclass_dual
from qpsvm.verify import multiclass as multiclass_verify
from qpsvm.verify.certificate import TIGHT
from qpsvm.verify.projection import project_capped_simplex
from qpsvm.verify.rigorous import lower_sum, multiclass_feasible, upper_row_sums

VARIANTS = ("crammer_singer", "weston_watkins")


def assert_in_budget(f, alpha):
    """``alpha`` is dual feasible up to the rounding of a row's sum, as the library bounds it:
    nonnegative, 0 at the labels, and each entry (Weston-Watkins) or the exact sum of each row
    (Crammer-Singer: its rigorous lower bound, :func:`~qpsvm.verify.rigorous.lower_sum`) within
    ``C s_i``."""
    assert np.all(alpha >= 0) and np.all(alpha[~f.mask] == 0)
    if f.crammer_singer:
        assert all(lower_sum(row) <= cap for row, cap in zip(alpha, f.upper, strict=True))
    else:
        assert np.all(alpha <= f.upper[:, None])


def multiclass_problem(seed: int, n: int = 40, d: int = 3, k: int = 3):
    """Gaussian classes around random centres that overlap: a generic problem."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % k
    X = rng.normal(size=(n, d)) + rng.normal(scale=1.5, size=(k, d))[y]
    return X, y


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="module", params=VARIANTS)
def solved(request, iris):
    X, y = iris
    f = qpsvm.MulticlassSVM(X, y, C=1.0, variant=request.param)
    return f, f.solve()


def liblinear_cs(X, y, C, tol=1e-10):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LinearSVC(
            multi_class="crammer_singer",
            fit_intercept=False,
            C=C,
            tol=tol,
            max_iter=100_000,
            random_state=0,
        ).fit(X, y)


# ------------------------------------------------------------------- reference solvers
@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_crammer_singer_agrees_with_liblinear(C):
    # liblinear's Crammer-Singer minimises the same 1/2||W||^2 + C sum xi_i; at tol=1e-10 its
    # objective matches our certified optimum to ~1e-9 relative and its W is within the
    # distance bound sqrt(2 gap) of ours
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    f = qpsvm.MulticlassSVM(X, y, C=C)
    sol = f.solve()
    assert sol.certificate.passed
    est = liblinear_cs(X, y, C)
    cert = f.certify(est)
    assert cert.primal_objective == pytest.approx(sol.objective, rel=1e-8)
    assert np.linalg.norm(est.coef_ - sol.w) <= cert.distance_bound + sol.certificate.distance_bound


@pytest.mark.parametrize("tol", [1e-4, 1e-6])
def test_gap_is_tight_for_liblinear(iris, tol):
    # from liblinear's bare W the certificate builds a dual point whose gap is the true
    # suboptimality up to a factor 1.1 (measured on iris: 1.0001 at tol 1e-3 to 1e-7; only far
    # from the optimum, at tol=1e-2 and 2e-4 relative suboptimality, it grows to 5): it says how
    # far W is, not only that it is not exact
    X, y = iris
    f = qpsvm.MulticlassSVM(X, y, C=1.0)
    opt = f.solve().objective
    cert = f.certify(liblinear_cs(X, y, 1.0, tol=tol))
    true_sub = cert.primal_objective - opt
    assert true_sub > 0 and not cert.passed
    assert true_sub <= cert.gap <= 1.1 * true_sub


@pytest.mark.parametrize("variant", VARIANTS)
def test_two_classes_are_the_binary_svm_at_twice_C(variant):
    # with k = 2 both variants have one constraint per example, y_i v.x_i >= 1 - xi_i with
    # v = w_1 - w_0; the regulariser is smallest at w_1 = -w_0 = v/2, where 1/2||W||^2 = 1/4||v||^2
    # so P_multi(W) = 1/2 P_binary(v; 2C): the binary SVM without intercept at C_binary = 2C
    X, y = multiclass_problem(3, k=2)
    f = qpsvm.MulticlassSVM(X, y, C=0.4, variant=variant)
    sol = f.solve()
    b = qpsvm.SoftMarginPrimal(X, y, C=0.8, fit_intercept=False).solve()
    assert sol.objective == pytest.approx(0.5 * b.objective, rel=1e-9)
    np.testing.assert_allclose(sol.w[1], 0.5 * b.w, atol=1e-8)
    np.testing.assert_allclose(sol.w[0], -0.5 * b.w, atol=1e-8)


def test_two_class_liblinear_is_read_as_half_differences():
    # scikit-learn collapses two-class Crammer-Singer to coef_ = w_1 - w_0; the reader rebuilds
    # W = (-coef/2, coef/2), which is liblinear's W (rows of any optimum sum to zero)
    X, y = multiclass_problem(4, k=2)
    f = qpsvm.MulticlassSVM(X, y, C=1.0)
    sol = f.solve()
    est = liblinear_cs(X, y, 1.0)
    assert est.coef_.shape == (1, 3)
    cert = f.certify(est)
    assert cert.relative_gap <= 1e-8
    assert cert.primal_objective == pytest.approx(sol.objective, rel=1e-8)


# ------------------------------------------------------------------------ certificates
def test_certificate_accepts_the_optimum_from_every_entry_point(solved):
    f, sol = solved
    for cert in (f.certify(sol), f.certify(w=sol.w), f.certify(alpha=sol.alpha)):
        assert cert.passed and cert.relative_gap <= 1e-9
    assert sol.w.shape == (f.n_classes, f.n_features)
    assert sol.alpha.shape == (f.n_samples, f.n_classes)
    assert np.all(sol.alpha[np.arange(f.n_samples), f.y] == 0)
    expected_xi = (f.n_samples,) if f.crammer_singer else (f.n_samples, f.n_classes)
    assert sol.xi.shape == expected_xi
    assert f.dual_infeasibility(sol.alpha) <= 1e-9


def test_optimum_satisfies_stationarity_and_the_dual_budget(solved):
    # W* = A^T X, and each example's duals respect its budget (sum or bound)
    f, sol = solved
    alpha = f.project_dual(sol.alpha)
    np.testing.assert_allclose(f.expansion(alpha), sol.w, atol=1e-6)
    assert_in_budget(f, alpha)
    # strong duality at the optimum
    assert f.dual_objective(alpha) == pytest.approx(sol.objective, rel=1e-8)


def test_certificate_rejects_perturbations(solved):
    f, sol = solved
    rng = np.random.default_rng(0)
    W = sol.w + 1e-4 * rng.normal(size=sol.w.shape)
    cert = f.certify(w=W)
    assert not cert.passed
    assert cert.gap >= f.objective(W) - sol.objective
    assert not f.certify(alpha=0.9 * sol.alpha).passed
    xi = np.zeros_like(sol.xi)
    cand = qpsvm.Solution(w=sol.w, b=0.0, xi=xi, alpha=None, objective=0.0, status="",
                          solver="", solve_time=0.0, n_iter=0)  # fmt: skip
    bad = f.certify(cand)
    assert bad.primal_infeasibility == pytest.approx(np.max(sol.xi)) and not bad.passed


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    C=st.floats(0.05, 20.0),
    eps=st.floats(1e-5, 1e-1),
    variant=st.sampled_from(VARIANTS),
)
def test_gap_bounds_true_suboptimality(seed, C, eps, variant):
    # weak duality: P(W) - D(alpha) >= P(W) - P*; sqrt(2 gap) >= ||W - W*|| by strong convexity
    X, y = multiclass_problem(seed, n=24, d=3, k=3)
    f = qpsvm.MulticlassSVM(X, y, C=C, variant=variant)
    sol = f.solve()
    assert f.certify(sol).passed
    W = sol.w + eps * np.random.default_rng(seed).normal(size=sol.w.shape)
    cert = f.certify(w=W)
    true_sub = f.objective(W) - sol.objective
    assert cert.gap >= true_sub - 1e-9 * max(1.0, sol.objective)
    assert cert.distance_bound >= np.linalg.norm(W - sol.w) - 1e-9
    if true_sub > 1e-8 * max(1.0, sol.objective):
        assert not cert.passed


@pytest.mark.parametrize("variant", VARIANTS)
def test_failing_candidate_gets_a_tight_gap_at_the_cost_of_one_search(variant, monkeypatch):
    # a candidate 1e-3 off: its own points fail, so certify() takes the problem's own
    # solution's multipliers, and with that solution's primal as a ceiling on P* stops there:
    # a multiple of W has a lower objective, so the first call solves the problem before any
    # fit of the candidate's tight sets (it fitted them once, and again after the hint) and
    # fits only what the solve does; a later call fits none (the cached solution's point is
    # tried first); the gap is
    # proven (D <= P* <= P, P* the exact rational optimum) and within 1 / (1 - TIGHT) of the
    # true suboptimality
    X, y = multiclass_problem(3, n=40, d=3, k=3)
    opt = qpsvm.MulticlassSVM(X, y, C=1.0, variant=variant).solve(method="exact")
    p_star = opt.info["exact"].objective
    W = opt.w + 1e-3 * np.random.default_rng(3).normal(size=opt.w.shape)
    fits = []
    fit = multiclass_verify._fit_tight
    monkeypatch.setattr(multiclass_verify, "_fit_tight", lambda *a: fits.append(1) or fit(*a))
    f = qpsvm.MulticlassSVM(X, y, C=1.0, variant=variant)
    f.fresh_copy().solve()  # what the reference solve fits in its own certificates
    solve = len(fits)
    fits.clear()
    multiclass_verify.certify_multiclass(f, Candidate(w=W))
    own = len(fits)
    assert own > 0
    for search in (solve, 0):
        fits.clear()
        cert = f.certify(w=W)
        assert len(fits) == search and not cert.passed
        assert Fraction(cert.dual_objective) <= p_star <= Fraction(cert.primal_objective)
        true_sub = Fraction(cert.primal_objective) - p_star
        assert Fraction(cert.gap) <= true_sub / (1 - Fraction(TIGHT))


@pytest.mark.parametrize("variant", VARIANTS)
def test_own_multipliers_that_certify_alone_come_before_any_fit(variant, monkeypatch):
    # W with multipliers that certify their own expansion A^T X (a solution's): they are the
    # first point tried, so the certificate passes without a least-squares fit, and its alpha
    # still certifies alone (certify(alpha=...) of the solution it goes into)
    X, y = multiclass_problem(4, n=60, d=4, k=4)
    f = qpsvm.MulticlassSVM(X, y, C=10.0, variant=variant)
    sol = f.solve()
    fits = []
    fit = multiclass_verify._fit_tight
    monkeypatch.setattr(multiclass_verify, "_fit_tight", lambda *a: fits.append(1) or fit(*a))
    cert = multiclass_verify.certify_multiclass(f, Candidate(w=sol.w, alpha=sol.alpha))
    assert cert.passed and not fits
    assert f.certify(alpha=cert.alpha, reference=False).passed
    # multipliers that do not (a solution's, moved on one constraint): the fits come first
    alpha = sol.alpha.copy()
    i, c = np.argwhere(f.mask & (alpha == 0))[0]
    alpha[i, c] = 1e-3
    cert = multiclass_verify.certify_multiclass(f, Candidate(w=sol.w, alpha=alpha))
    assert cert.passed and fits


# ------------------------------------------------------------- labels, weights, models
def test_any_hashable_labels_and_argmax_prediction():
    X, y = multiclass_problem(5)
    names = np.array(["cat", "dog", "eel"])[y]
    f = qpsvm.MulticlassSVM(X, names, C=1.0)
    g = qpsvm.MulticlassSVM(X, y, C=1.0)
    sol = f.solve()
    assert f.classes_.tolist() == ["cat", "dog", "eel"]
    # the labels are only names: the same problem as with 0, 1, 2 in the same sorted order
    assert sol.objective == pytest.approx(g.solve().objective, rel=1e-9)
    scores = f.decision_function(X, sol)
    np.testing.assert_allclose(scores, X @ sol.w.T)
    assert f.predict(X, sol).tolist() == f.classes_[np.argmax(scores, axis=1)].tolist()


@pytest.mark.parametrize("variant", VARIANTS)
def test_sample_weight_equals_replication(variant):
    # DESIGN: replicating a point k times equals s_i = k
    X, y = multiclass_problem(6, n=30)
    s = np.ones(len(y))
    s[:5] = 3.0
    a = qpsvm.MulticlassSVM(X, y, C=0.5, variant=variant, sample_weight=s).solve()
    Xr, yr = np.vstack([X, X[:5], X[:5]]), np.r_[y, y[:5], y[:5]]
    b = qpsvm.MulticlassSVM(Xr, yr, C=0.5, variant=variant).solve()
    assert a.objective == pytest.approx(b.objective, rel=1e-9)
    np.testing.assert_allclose(a.w, b.w, atol=1e-7)


def test_sparse_data_give_the_same_optimum(solved, iris):
    f, sol = solved
    g = qpsvm.MulticlassSVM(sp.csr_matrix(iris[0]), iris[1], C=1.0, variant=f.variant)
    s = g.solve()
    assert s.objective == pytest.approx(sol.objective, rel=1e-9)
    assert g.certify(sol).passed


@pytest.mark.parametrize("variant", VARIANTS)
def test_working_set_model_reproduces_the_optimum(variant):
    # KKT: drop the constraints that are slack at the optimum (alpha = 0) and fold in those at
    # their bound (Weston-Watkins: alpha_ic = C s_i); the smaller model has the same optimum
    X, y = multiclass_problem(7)
    f = qpsvm.MulticlassSVM(X, y, C=0.5, variant=variant)
    sol = f.solve()
    margins = f.margins(f.scores(sol.w))[f.rows, f.cols]
    slack = sol.xi[f.rows] if f.crammer_singer else sol.xi[f.rows, f.cols]
    tight = margins - 1 + slack <= 1e-7
    at_bound = np.zeros_like(tight) if f.crammer_singer else tight & (slack > 1e-7)
    model = f.build(subset=np.flatnonzero(tight & ~at_bound), at_bound=np.flatnonzero(at_bound))
    model.problem.solve(solver="CLARABEL")
    np.testing.assert_allclose(model.variables["w"].value, sol.w, atol=1e-6)
    assert f.read_model(model).alpha.shape == (f.n_samples, f.n_classes)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("sparse", [False, True])
def test_dual_coordinate_start_reaches_the_optimum(variant, sparse):
    # the sequential dual method keeps W = A^T X through its steps and its multipliers in the
    # dual feasible set (a Crammer-Singer row sums to C up to its rounding); run to a tight
    # tolerance, D(alpha) = P* (strong duality)
    X, y = multiclass_problem(9, n=60, d=4, k=4)
    f = qpsvm.MulticlassSVM(sp.csr_matrix(X) if sparse else X, y, C=0.7, variant=variant)
    start = multiclass_dual(f, tol=1e-11, max_epochs=100_000)
    alpha = start.candidate.alpha
    np.testing.assert_allclose(start.candidate.w, f.expansion(alpha), atol=1e-9)
    assert_in_budget(f, alpha)
    optimum = f.solve(method="qp").objective
    assert f.dual_objective(alpha) == pytest.approx(optimum, rel=1e-9)


@pytest.mark.parametrize("variant", VARIANTS)
def test_loss_subgradient_satisfies_the_subgradient_inequality(variant):
    # G is a subgradient of L(W) = sum_i s_i loss_i(W) iff L(V) >= L(W) + <G, V - W> for all V
    X, y = multiclass_problem(8)
    f = qpsvm.MulticlassSVM(X, y, C=1.0, variant=variant)
    rng = np.random.default_rng(0)

    def loss(W):
        return (f.objective(W) - 0.5 * np.sum(W * W)) / f.C

    for _ in range(20):
        W = rng.normal(size=(3, 3))
        G = f.loss_subgradient(W)
        for _ in range(5):
            V = W + rng.normal(scale=0.3, size=W.shape)
            assert loss(V) >= loss(W) + np.sum(G * (V - W)) - 1e-9
        # a batch is the sum of its examples' subgradients
        np.testing.assert_allclose(
            f.loss_subgradient(W, [0, 1, 2]),
            sum(f.loss_subgradient(W, [i]) for i in range(3)),
            atol=1e-12,
        )


# ----------------------------------------------------------------- dual projection
@settings(max_examples=60, deadline=None)
@given(
    V=arrays(np.float64, (4, 3), elements=st.floats(-5, 5)),
    r=arrays(np.float64, (4,), elements=st.floats(0, 4)),
    seed=st.integers(0, 100),
)
def test_capped_simplex_projection_is_the_projection(V, r, seed):
    # P is the projection onto a closed convex set K iff P in K and <V - P, Q - P> <= 0 for
    # every Q in K; test it against random feasible points (scaled clips of random vectors)
    mask = np.random.default_rng(seed).random(V.shape) < 0.8
    P = project_capped_simplex(V, r, mask)
    assert np.all(P >= 0) and np.all(P[~mask] == 0)
    assert np.all(P.sum(axis=1) <= r * (1 + 1e-12) + 1e-300)
    rng = np.random.default_rng(seed)
    for _ in range(10):
        Q = np.where(mask, np.abs(rng.normal(size=V.shape)), 0.0)
        Q *= (r * rng.random(len(r)) / np.maximum(Q.sum(axis=1), 1e-12))[:, None]
        assert np.sum((np.where(mask, V, 0.0) - P) * (Q - P)) <= 1e-9
    np.testing.assert_allclose(project_capped_simplex(P, r, mask), P, atol=1e-12)


# ----------------------------------------------------------------- rigorous row sums
ROWS = arrays(
    np.float64,
    st.tuples(st.integers(1, 6), st.integers(1, 12)),
    elements=st.floats(0.0, 1e300, allow_subnormal=True) | st.sampled_from([0.0, 1.0, 2.0**-53]),
)


@settings(max_examples=200, deadline=None)
@given(a=ROWS)
@example(a=np.array([[1.0, 2.0**-53, 2.0**-53]]))  # the float sum rounds down to 1
@example(a=np.array([[5e-324, 5e-324, 1e-310]]))  # subnormal terms
def test_upper_row_sums_bound_the_exact_sums_tightly(a):
    # every row's exact rational sum is below its bound, and the bound exceeds it by at most
    # the rounding of k terms (a relative (k + 2) u, plus a few subnormal units)
    bound = upper_row_sums(a)
    k = a.shape[1]
    for row, b in zip(a, bound, strict=True):
        exact = sum((Fraction(float(v)) for v in row), Fraction(0))
        assert exact <= Fraction(float(b))
        slack = exact * Fraction(2 * (k + 2), 2**53) + Fraction(k + 2) * Fraction(2.0**-1070)
        assert Fraction(float(b)) <= exact + slack


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(2, 8), excess=st.integers(-3, 3))
def test_crammer_singer_rows_are_made_exactly_feasible(seed, k, excess):
    # rows summing to the budget C s_i up to a few ulps either way: after multiclass_feasible
    # every row's exact rational sum is within its budget, every entry nonnegative and 0 at
    # the label, and rows already feasible by a margin are unchanged
    rng = np.random.default_rng(seed)
    n = 30
    X, y = rng.normal(size=(n, 2)), np.arange(n) % k
    weight = rng.uniform(0.5, 2.0, n)
    f = qpsvm.MulticlassSVM(X, y, C=0.37, sample_weight=weight)
    alpha = np.where(f.mask, rng.random((n, k)), 0.0)
    alpha *= (f.upper / alpha.sum(axis=1))[:, None]
    alpha *= 1.0 + excess * 2.0**-52
    loose = np.arange(n) < 5
    alpha[loose] *= 0.5
    a = multiclass_feasible(f, alpha)
    assert np.all(a >= 0) and np.all(a[~f.mask] == 0)
    for row, s in zip(a, weight, strict=True):
        budget = Fraction(0.37) * Fraction(float(s))  # C s_i exactly
        assert sum((Fraction(float(v)) for v in row), Fraction(0)) <= budget
    np.testing.assert_array_equal(a[loose], alpha[loose])


def test_capped_simplex_projection_matches_a_qp():
    rng = np.random.default_rng(1)
    V, r = 3 * rng.normal(size=(5, 4)), rng.random(5)
    P = cp.Variable(V.shape)
    cp.Problem(cp.Minimize(cp.sum_squares(P - V)), [P >= 0, cp.sum(P, axis=1) <= r]).solve(
        solver="CLARABEL"
    )
    np.testing.assert_allclose(project_capped_simplex(V, r), P.value, atol=1e-6)


# -------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"y": [0, 0, 0, 0]}, qpsvm.InvalidInputError, "one class"),
        ({"y": [0, 1, 2]}, qpsvm.InvalidInputError, "match"),
        ({"variant": "one_vs_rest"}, qpsvm.InvalidInputError, "variant"),
        ({"variant": 3}, qpsvm.InvalidTypeError, "variant"),
        ({"fit_intercept": True, "intercept": "none"}, qpsvm.InvalidInputError, "contradicts"),
        ({"C": -1.0}, qpsvm.InvalidInputError, "C"),
        ({"sample_weight": [1, 1, -1, 1]}, qpsvm.InvalidInputError, "non-negative"),
        ({"sample_weight": [1, 1]}, qpsvm.InvalidInputError, "sample_weight"),
    ],
)
def test_bad_input_is_a_typed_error(kwargs, error, match):
    X = np.arange(8.0).reshape(4, 2)
    args = {"y": [0, 1, 2, 0], **kwargs}
    with pytest.raises(error, match=match):
        qpsvm.MulticlassSVM(X, **args)


def test_bad_candidates_are_typed_errors(iris):
    X, y = iris
    f = qpsvm.MulticlassSVM(X, y)
    with pytest.raises(qpsvm.InvalidInputError, match="shape"):
        f.certify(w=np.zeros((2, 4)))
    with pytest.raises(qpsvm.InvalidInputError, match="alpha"):
        f.certify(alpha=np.zeros(5))
    with pytest.raises(qpsvm.InvalidInputError, match="intercept_scaling"):
        f.certify(w=np.zeros((3, 4)), b=[0.0, 1.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with_intercept = LinearSVC(multi_class="crammer_singer").fit(X, y)
    with (
        pytest.warns(ProblemMismatchWarning, match="intercept 'regularized' \\(here 'none'\\)"),
        pytest.raises(qpsvm.InvalidInputError, match="regularised"),
    ):
        f.certify(with_intercept)
    with pytest.raises(qpsvm.InvalidTypeError, match="SVC"):
        f.certify(SVC().fit(X, y))
    with pytest.raises(qpsvm.InvalidInputError, match="classes"):
        f.certify(liblinear_cs(X[y < 2], y[y < 2], 1.0))
    with pytest.raises(qpsvm.InvalidInputError, match="features"):
        f.predict(np.zeros((2, 3)), np.zeros((3, 4)))


def test_path_equals_separate_solves():
    # the path reuses one compiled problem (C is a parameter); each point is the optimum at its C
    X, y = multiclass_problem(9)
    f = qpsvm.MulticlassSVM(X, y, C=1.0)
    path = f.path([0.1, 1.0, 10.0], method="qp")
    for sol, C in zip(path, [0.1, 1.0, 10.0], strict=True):
        assert sol.certificate.passed and sol.info["C"] == C
        exact = qpsvm.MulticlassSVM(X, y, C=C).solve().objective
        assert sol.objective == pytest.approx(exact, rel=1e-9)
