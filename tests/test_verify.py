"""The verifier: accepts exact optima, rejects perturbations, and its gap bounds suboptimality."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import random_problem
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import SGDClassifier
from sklearn.svm import SVC, LinearSVC

import qpsvm
from qpsvm.exceptions import ProblemMismatchWarning


@pytest.fixture(scope="module")
def solved(cancer):
    X, y = cancer
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    return f, f.solve()


def test_accepts_optimum_all_entry_points(solved):
    f, sol = solved
    for cert in (f.certify(sol), f.certify(w=sol.w, b=sol.b), f.certify(alpha=sol.alpha)):
        assert cert.passed and cert.relative_gap <= 1e-9
        assert cert.primal_objective == pytest.approx(sol.objective, rel=1e-12)


def test_bare_w_gets_optimal_intercept(solved):
    # b=None means the best intercept for w, which at w* is b*
    f, sol = solved
    cert = f.certify(w=sol.w)
    assert cert.passed


@pytest.mark.parametrize("scale", [1e-3, 1e-5])
def test_rejects_perturbed_w(solved, scale):
    f, sol = solved
    rng = np.random.default_rng(0)
    w = sol.w + scale * rng.normal(size=sol.w.shape)
    cert = f.certify(w=w, b=sol.b)
    assert not cert.passed
    # the certified gap is an upper bound on the true suboptimality ...
    true_sub = f.objective(w, sol.b) - sol.objective
    assert cert.gap >= true_sub - 1e-9 * sol.objective
    # ... and the distance bound sqrt(2 gap) covers the true distance
    assert cert.distance_bound >= np.linalg.norm(w - sol.w)


def test_rejects_perturbed_intercept_and_alpha(solved):
    f, sol = solved
    assert not f.certify(w=sol.w, b=sol.b + 1e-3).passed
    alpha = sol.alpha.copy()
    alpha[np.argmax(alpha)] *= 0.9
    cert = f.certify(alpha=alpha)
    assert not cert.passed


def test_reports_infeasible_slacks(solved):
    f, sol = solved
    cand = qpsvm.Solution(
        w=sol.w,
        b=sol.b,
        xi=np.zeros_like(sol.xi),
        alpha=None,
        objective=0.0,
        status="",
        solver="",
        solve_time=0.0,
        n_iter=0,
    )
    cert = f.certify(cand)
    assert cert.primal_infeasibility == pytest.approx(np.max(sol.xi))
    assert not cert.passed


def test_hard_margin_rejects_infeasible_w(blobs):
    X, y = blobs
    f = qpsvm.HardMargin(X, y)
    sol = f.solve()
    cert = f.certify(w=0.5 * sol.w, b=sol.b)  # half the norm: violates the margin constraints
    assert cert.primal_infeasibility > 0.1 and not cert.passed
    assert f.certify(sol).passed


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), C=st.floats(0.05, 20.0), eps=st.floats(1e-6, 1e-1))
def test_gap_bounds_true_suboptimality(seed, C, eps):
    # weak duality: P(w) - D(alpha) >= P(w) - P* for any dual-feasible alpha
    X, y = random_problem(seed, n=30, d=4)
    f = qpsvm.SoftMarginPrimal(X, y, C=C)
    sol = f.solve()
    rng = np.random.default_rng(seed)
    w = sol.w + eps * rng.normal(size=sol.w.shape)
    b = sol.b + eps * rng.normal()
    cert = f.certify(w=w, b=b)
    true_sub = f.objective(w, b) - sol.objective
    assert cert.gap >= true_sub - 1e-9 * max(1.0, sol.objective)
    assert cert.dual_objective <= sol.objective * (1 + 1e-9) + 1e-12


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("tol", [1e-3, 1e-5])
def test_gap_is_tight_for_libsvm(cancer, kernel, tol):
    # libsvm stops within ~tol of the optimum; the certificate's gap must not overstate its
    # suboptimality by more than 2x (it measures what is wrong, not just that something is)
    X, y = cancer
    f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel=kernel)
    opt = f.solve().objective
    cert = f.certify(SVC(kernel=kernel, C=1.0, tol=tol).fit(X, y))
    true_sub = cert.primal_objective - opt
    assert true_sub > 0
    assert true_sub <= cert.gap <= 2 * true_sub


def test_certifies_linear_sklearn_models(cancer, solved):
    X, y = cancer
    f, sol = solved
    # LinearSVC regularises its intercept and SGD is approximate: both are certified as
    # suboptimal for our problem, with gaps bounding their true suboptimality
    # (LinearSVC's is another problem: certify says so with a warning; SGD's is the same)
    for est, other_problem in (
        (LinearSVC(loss="hinge", C=1.0, max_iter=100_000, tol=1e-8), True),
        (SGDClassifier(alpha=1.0 / len(y), max_iter=50, tol=None, random_state=0), False),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ProblemMismatchWarning)
            cert = f.certify(est.fit(X, y))
        warned = [w for w in caught if issubclass(w.category, ProblemMismatchWarning)]
        assert bool(warned) == other_problem
        if other_problem:
            assert "intercept 'regularized' (here 'free')" in str(warned[0].message)
        true_sub = cert.primal_objective - sol.objective
        assert true_sub > 0 and not cert.passed
        assert cert.gap >= true_sub


def test_estimator_must_match(cancer, blobs):
    X, y = cancer
    f = qpsvm.SoftMarginDual(X, y, kernel="rbf")
    with pytest.raises(qpsvm.InvalidInputError, match="kernel"):
        f.certify(SVC(kernel="linear").fit(X, y))
    with pytest.raises(qpsvm.InvalidInputError, match="not fitted"):
        f.certify(SVC())
    with pytest.raises(qpsvm.InvalidInputError, match="classes"):
        f.certify(SVC(kernel="rbf").fit(*blobs))
    with pytest.raises(qpsvm.InvalidTypeError):
        f.certify(object())


def test_readable_as_text_and_html(solved):
    f, sol = solved
    cert = f.certify(sol)
    text, page = str(cert), cert._repr_html_()
    assert "relative gap" in text and "passed" in text and "True" in text
    assert "certified optimal" in page and "<table>" in page
    bad = f.certify(w=sol.w * 1.1, b=sol.b)
    assert "NOT certified" in bad._repr_html_()


def test_order_of_samples_does_not_matter(cancer):
    X, y = cancer
    perm = np.random.default_rng(1).permutation(len(y))
    a = qpsvm.SoftMarginPrimal(X, y).solve()
    b = qpsvm.SoftMarginPrimal(X[perm], y[perm]).solve()
    assert a.objective == pytest.approx(b.objective, rel=2e-9)
    np.testing.assert_allclose(a.w, b.w, atol=1e-7)


@pytest.mark.parametrize("intercept_scaling", [1.0, 10.0])
def test_gap_is_tight_for_liblinear(cancer, intercept_scaling):
    # liblinear regularises its intercept, so its answer is suboptimal for our problem by
    # ~1e-6 relative; for a bare (w, b) the certificate's constructed dual point (support sets
    # read off the margins, KKT equations, active-set corrections) still bounds that within 2x
    X, y = cancer
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    opt = f.solve().objective
    est = LinearSVC(
        loss="hinge", C=1.0, tol=1e-8, max_iter=1_000_000, intercept_scaling=intercept_scaling
    ).fit(X, y)
    with pytest.warns(ProblemMismatchWarning, match="regularized"):
        cert = f.certify(est)
    true_sub = cert.primal_objective - opt
    assert 0 < true_sub <= 1e-3 * opt
    assert true_sub <= cert.gap <= 2 * true_sub


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(2, 60),
    noise=st.sampled_from([0.0, 1e-12, 1e-6, 1e-2, 1.0, 10.0]),
)
def test_balance_projection_is_the_euclidean_projection(seed, n, noise):
    # a feasible point plus noise of every size: near-feasible points take the Newton steps, far
    # ones the kink search; both must give clip(alpha - nu y, 0, u) with y . a = 0, the unique
    # projection, here checked against nu found by bisection to full precision
    from qpsvm.verify.projection import project_box_hyperplane

    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    y[0], y[1] = 1.0, -1.0
    upper = rng.uniform(0.1, 2.0, n)
    base = project_box_hyperplane(rng.uniform(0.0, 1.0, n) * upper, upper, y)
    alpha = base + noise * rng.normal(size=n)
    a = project_box_hyperplane(alpha, upper, y)
    assert np.all(a >= 0) and np.all(a <= upper) and abs(y @ a) <= 1e-12 * n
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if y @ np.clip(alpha - mid * y, 0, upper) > 0 else (lo, mid)
    np.testing.assert_allclose(a, np.clip(alpha - lo * y, 0, upper), atol=1e-10)


def test_solver_multipliers_made_feasible_keep_their_support(solved):
    # off balance by round-off: the free multipliers absorb it, the zeros stay zero (the
    # Euclidean projection would spread it over every zero, each a kernel row for the dual)
    from qpsvm.verify.binary import feasible_near

    f, sol = solved
    alpha = sol.alpha.copy()
    free = np.flatnonzero((alpha > 0) & (alpha < f.upper))
    alpha[free[0]] += 1e-13
    a = feasible_near(f, alpha)
    assert abs(f.y @ a) <= 1e-15 * np.sum(a) and np.all(a >= 0) and np.all(a <= f.upper)
    np.testing.assert_array_equal(a > 0, alpha > 0)
    assert np.max(np.abs(a - alpha)) <= 1e-13
    # far from feasible it is the projection
    rough = np.full(f.n_samples, 2.0 * f.C)
    np.testing.assert_allclose(feasible_near(f, rough), f.project_dual(rough))


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    log_scale=st.sampled_from([-310.0, -160.0, 0.0, 150.0, 300.0]),
    close=st.booleans(),
)
def test_distance_lower_bounds_the_exact_distance(seed, log_scale, close):
    # the exact ||a - b||^2 of the float vectors, in rationals, is never below the bound's
    # square; and the bound is tight to a few units of round-off where nothing underflows
    # (np.linalg.norm is not: at 1e-160 its squares lose digits in the subnormals)
    from decimal import Decimal, localcontext

    from qpsvm.verify.rigorous import distance_lower

    rng = np.random.default_rng(seed)
    a = rng.normal(size=7) * 10.0**log_scale
    b = a * (1 + 1e-12 * rng.normal(size=7)) if close else rng.normal(size=7) * 10.0**log_scale
    bound = distance_lower(a, b)
    exact = sum((Fraction(x) - Fraction(z)) ** 2 for x, z in zip(a, b, strict=True))
    assert Fraction(bound) ** 2 <= exact
    with localcontext() as ctx:
        ctx.prec = 40
        true = float((Decimal(exact.numerator) / Decimal(exact.denominator)).sqrt())
    if log_scale > -300:
        assert bound >= true * (1 - 1e-14)


def test_abs_product_reads_any_layout():
    # |M|^T |v| without forming |M|: row-major, column-major (a transposed view) and sparse
    # matrices (np.matrix too) give the product of the absolute values, up to
    # the order of summation
    from qpsvm.verify.rigorous import _abs_product

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 7))
    with warnings.catch_warnings():  # np.matrix is pending deprecation, still accepted
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        matrix = np.asmatrix(X)
    for M in (X, X.T, np.asfortranarray(X), sp.csr_matrix(X), X.astype(np.float32), matrix):
        v = rng.normal(size=M.shape[0])
        want = np.abs(np.asarray(M.todense() if sp.issparse(M) else M)).T @ np.abs(v)
        np.testing.assert_allclose(_abs_product(M, v), want, rtol=1e-12)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_sparse_certificate_expands_its_dual_point_once(monkeypatch, fit_intercept):
    # the search's enclosure of the dual point is the one the rigorous bound uses: one Dot2
    # expansion a certificate, and the same bound as a fresh enclosure of that point
    from qpsvm import _numerics
    from qpsvm.verify import rigorous

    rng = np.random.default_rng(3)
    X = sp.random(60, 200, density=0.05, random_state=3, format="csr")
    y = np.where(rng.random(60) < 0.5, -1, 1)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=fit_intercept)
    sol = f.solve(method="dcd")
    # the solver's own expansion of its multipliers, which the certificate would reuse (no
    # pass at all), not kept: the certificate's own passes counted
    monkeypatch.setattr(f, "_kept", None)
    calls = []

    def counted(original):
        def spy(M, *args, **kwargs):
            calls.append(sp.issparse(M))
            return original(M, *args, **kwargs)

        return spy

    # every Dot2 expansion over the rows: alone, or with its magnitudes in one pass
    monkeypatch.setattr(_numerics, "tdot2", counted(_numerics.tdot2))
    monkeypatch.setattr(rigorous, "tdot2", counted(rigorous.tdot2))
    monkeypatch.setattr(rigorous, "csr_tdot2_abs", counted(rigorous.csr_tdot2_abs))
    cert = f.certify(sol)
    assert cert.passed and sum(calls) == 1  # X^T (alpha y) once
    # the bound from a fresh enclosure of the certificate's point, to the bit
    assert (
        cert.dual_objective == rigorous.binary_dual_lower(f, cert.alpha, cert.primal_objective)[0]
    )


@pytest.mark.parametrize("compiled", [True, False])
def test_expansion_norms_of_the_touched_entries_equal_the_whole_vectors(compiled, monkeypatch):
    # a vector whose other entries are exact zeros with no error, or (the enclosure over all
    # columns) zeros within a subnormal error: the given entries with size = the whole length
    # give the whole vector's floats, compiled pass and numpy evaluation alike
    from qpsvm import _numerics
    from qpsvm._numerics import TINY
    from qpsvm.verify.rigorous import expansion_norms

    monkeypatch.setattr(_numerics, "compiled", lambda kernel: compiled)
    rng = np.random.default_rng(6)
    touched = np.sort(rng.choice(20000, 3000, replace=False))
    hi = rng.standard_normal(touched.size)
    lo = hi * 2.0**-60 * rng.standard_normal(touched.size)
    err = np.abs(hi) * 1e-14 * rng.random(touched.size)
    whole = [np.zeros(20000), np.zeros(20000), np.full(20000, 40 * TINY)]
    for part, entries in zip(whole, (hi, lo, err), strict=True):
        part[touched] = entries
    full = expansion_norms(*whole)
    assert expansion_norms(hi, lo, err, size=20000) == full


@pytest.mark.parametrize("compiled", [True, False])
def test_dual_sums_over_touched_columns_round_to_their_whole_vector(monkeypatch, compiled):
    # an expansion over columns 1, 3 and 4 of 6 (its entry at 4 an exact 0): its vector has
    # exact zeros elsewhere, and a w equals it only if it does at the columns and is 0 at the
    # others; the compiled pass and its numpy equivalent give the same verdicts
    from qpsvm.verify import rigorous
    from qpsvm.verify.rigorous import DualSums

    monkeypatch.setattr(rigorous, "uncompiled", lambda kernel, rows, budget: not compiled)
    hi, lo = np.array([1.0, -2.0, 0.0]), np.array([2.0**-60, 0.0, 0.0])
    sums = DualSums(0.0, (hi, lo, np.zeros(3)), None, columns=np.array([1, 3, 4]), size=6)
    v = sums.vector()
    assert np.array_equal(v, [0.0, 1.0, 0.0, -2.0, 0.0, 0.0]) and sums.rounds_to(v)
    for j, value in ((0, 1e-300), (3, -2.0 + 2.0**-52), (4, -1.0), (5, 1.0), (1, np.nan)):
        w = v.copy()
        w[j] = value
        assert not sums.rounds_to(w)
    assert not sums.rounds_to(v[:4])
    strided = np.zeros(12)
    strided[::2] = v
    assert sums.rounds_to(strided[::2])  # a view: the numpy equivalent
    strided[0] = 1.0  # the view's entry 0, an untouched column
    assert not sums.rounds_to(strided[::2])


def test_expansion_norms_compiled_pass_equals_numpy(monkeypatch):
    # one compiled pass gives the numpy evaluation's floats to the bit: the bound on ||v||^2
    # (each entry's magnitude moved up, the squares' Sum2 bounded) and the estimate ||hi+lo||^2
    from qpsvm import _numerics
    from qpsvm._numerics import U, fsum, up
    from qpsvm.verify.rigorous import expansion_norms, upper_sum

    monkeypatch.setattr(_numerics, "compiled", lambda kernel: True)  # the compiled pass

    rng = np.random.default_rng(5)
    for scale in (1e-150, 1e-3, 1.0, 1e4, 1e140):
        hi = rng.standard_normal(5000) * scale * 10.0 ** rng.integers(-8, 8, 5000)
        hi[::7] = 0.0
        lo = hi * 2.0**-60 * rng.standard_normal(5000)
        err = np.abs(hi) * 1e-14 * rng.random(5000)
        v = hi + lo
        bound = up(np.abs(v) * (1.0 + 2.0 * U) + err)
        assert expansion_norms(hi, lo, err) == (upper_sum(bound * bound), fsum(v * v))
