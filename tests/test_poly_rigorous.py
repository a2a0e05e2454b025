"""The poly-kernel certificate is a proof: every value the certificate evaluates within its
proven per-pair bound, the scores within theirs, and the enclosure ``[lower, upper]`` around the
exact objectives, all checked in rational arithmetic (``(gamma x.x' + c0)^p`` is rational in
the data: every float64 ``x``, ``gamma`` and ``c0`` is the rational it represents)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_classification

import qpsvm
from qpsvm._numerics import tdot2
from qpsvm.verify.binary import kernel_ulps
from qpsvm.verify.psd import gram_verdict
from qpsvm.verify.rigorous_poly import (
    PolyBound,
    int_power,
    poly_bound,
    poly_pair_rows,
    poly_rows,
    poly_score_error,
)
from tests.conftest import exact_poly, random_problem

F = Fraction


def cancelling_rows(seed: int, shift: float, n: int = 9, d: int = 4) -> np.ndarray:
    """Rows of norms over two decades, plus pairs nearly orthogonal to others (inner products
    that cancel by many digits) and a shift (large, uncancelled inner products)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.logspace(-1, 1, n)[:, None] + shift
    # x_1 orthogonal to x_0 up to rounding: x_0 . x_1 cancels completely
    x0 = X[0]
    X[1] = X[1] - (X[1] @ x0) / (x0 @ x0) * x0
    return X


params = {
    "seed": st.integers(0, 10_000),
    "shift": st.sampled_from([0.0, 1.0, 100.0]),
    "gamma": st.sampled_from([1e-3, 0.1, 3.0]),
    "coef0": st.sampled_from([0.0, 1.0, 7.5, -2.0]),
    "degree": st.integers(1, 5),
}


@settings(max_examples=30, deadline=None)
@given(**params, sparse=st.booleans(), tiny=st.booleans())
@example(seed=0, shift=100.0, gamma=3.0, coef0=0.0, degree=5, sparse=False, tiny=False)
@example(seed=1, shift=0.0, gamma=0.1, coef0=0.0, degree=3, sparse=True, tiny=False)
@example(seed=2, shift=0.0, gamma=3.0, coef0=0.0, degree=2, sparse=False, tiny=True)
def test_poly_values_are_within_their_proven_bound(seed, shift, gamma, coef0, degree, sparse, tiny):
    # |K^_ij - K_ij| <= E_ij for every pair, the exact K in fractions; the bound follows the
    # pair's base: where the inner product cancels it is far below the largest bound. Tiny
    # rows (1e-160): the split's grids would underflow, so the plain products are bounded,
    # and the values underflow to subnormals or 0
    size = 1e-160 if tiny else 1.0
    X = cancelling_rows(seed, shift) * size
    if sparse:
        X[np.abs(X) < 0.5 * size] = 0.0
        X = sp.csr_matrix(X)
    bound = poly_bound(gamma, coef0, degree, X)
    assert (bound.split is None) == tiny
    K, E = poly_rows(bound, X, np.arange(9))
    exact = exact_poly(X, gamma, coef0, degree)
    for i in range(9):
        for j in range(9):
            assert abs(F(float(K[i, j])) - exact[i][j]) <= F(float(E[i, j])), (i, j)
    if coef0 >= 0.0:
        assert max(exact[i][i] for i in range(9)) <= F(bound.diagonal)
    # the bound at the cancelling pair: its value's size, not the largest value's
    assert E[0, 1] <= 1e-12 * max(1.0, float(np.max(np.abs(K))))
    # the unevaluated sums hi + lo: within their own bound, and that bound far below a unit
    # of round-off of the value (the base and the power in double-double arithmetic: the
    # cross part of the split inner product, ~2^-24 of it, known to ~gamma_L, and u^2 terms);
    # the plain inner products of tiny rows are known to gamma_L only
    hi, lo, E2 = poly_pair_rows(bound, X, np.arange(9))
    for i in range(9):
        for j in range(9):
            assert abs(F(float(hi[i, j])) + F(float(lo[i, j])) - exact[i][j]) <= F(float(E2[i, j]))
    if not tiny:
        largest = float(np.max(np.abs(hi)))
        assert np.all(E2 <= 1e-18 * np.abs(hi) + 1e-20 * largest)


@given(base=st.floats(-1e3, 1e3), degree=st.integers(1, 9))
def test_int_power_is_a_product_of_degree_factors(base, degree):
    # binary powering: within gamma_{p-1} of the exact power (p - 1 roundings on every path)
    exact = F(base) ** degree
    got = F(int_power(base, degree))
    g = F(degree - 1, 2**53 - (degree - 1))
    assert abs(got - exact) <= g * abs(exact) + F(2) ** -1070 * degree


@settings(max_examples=15, deadline=None)
@given(**params, C=st.sampled_from([1.0, 1e4]))
def test_poly_score_error_encloses_the_exact_scores(seed, shift, gamma, coef0, degree, C):
    # |g^_i - (K (alpha y))_i| <= e_i, g summed by Dot2 from the certificate's own values
    X = cancelling_rows(seed, shift, n=10, d=3)
    rng = np.random.default_rng(seed + 1)
    alpha = C * rng.uniform(size=10) * (rng.uniform(size=10) < 0.8)
    y = np.where(rng.uniform(size=10) < 0.5, -1.0, 1.0)
    bound = poly_bound(gamma, coef0, degree, X)
    K, E = poly_rows(bound, X, np.arange(10))
    hi, lo = tdot2(K, alpha * y)
    g = hi + lo
    e = poly_score_error(alpha, np.abs(K).T @ alpha, E.T @ alpha, g)
    exact = exact_poly(X, gamma, coef0, degree)
    v = [F(float(a)) * F(float(s)) for a, s in zip(alpha, y, strict=True)]
    for i in range(10):
        true = sum((exact[j][i] * v[j] for j in range(10)), F(0))
        assert abs(F(float(g[i])) - true) <= F(float(e[i])), i


def exact_objectives(f, alpha_p, b, alpha_d):
    """``P(alpha_p, b)`` and ``D(alpha_d)`` of the exact problem, and ``|sum alpha_d y|``."""
    kernel = f.kernel
    K = exact_poly(f.X, kernel.gamma, kernel.coef0, kernel.degree)
    n = f.n_samples
    y = [F(int(v)) for v in f.y]
    m = [F(float(v)) for v in f.margin]
    C, s = F(float(f.C)), [F(float(v)) for v in f.sample_weight]

    def quad(a):
        v = [F(float(a[i])) * y[i] for i in range(n)]
        g = [sum((K[i][j] * v[j] for j in range(n)), F(0)) for i in range(n)]
        return g, sum((v[i] * g[i] for i in range(n)), F(0))

    g, q = quad(alpha_p)
    bb = F(float(b))
    slack = sum((C * s[i] * max(F(0), m[i] - y[i] * (g[i] + bb)) for i in range(n)), F(0))
    _, qd = quad(alpha_d)
    dual = sum((m[i] * F(float(alpha_d[i])) for i in range(n)), F(0)) - qd / 2
    balance = abs(sum((F(float(alpha_d[i])) * y[i] for i in range(n)), F(0)))
    return q / 2 + slack, dual, balance


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    C=st.sampled_from([0.05, 1.0, 1e3]),
    shift=st.sampled_from([0.0, 10.0, 1e3]),
    scale=st.sampled_from([1e-3, 1.0, 30.0]),
    degree=st.integers(2, 4),
    coef0=st.sampled_from([0.0, 1.0]),
    rough=st.booleans(),
    duplicates=st.booleans(),
)
@example(seed=0, C=1e3, shift=0.0, scale=1.0, degree=3, coef0=1.0, rough=False, duplicates=True)
@example(seed=1, C=1.0, shift=1e3, scale=1.0, degree=2, coef0=1.0, rough=True, duplicates=False)
@example(seed=2, C=1e3, shift=0.0, scale=1e-3, degree=4, coef0=0.0, rough=False, duplicates=False)
@example(seed=3, C=0.05, shift=10.0, scale=30.0, degree=3, coef0=1.0, rough=True, duplicates=True)
@example(seed=0, C=0.05, shift=10.0, scale=1e-3, degree=4, coef0=0.0, rough=False, duplicates=False)
@example(seed=2, C=1e3, shift=0.0, scale=1e-3, degree=4, coef0=0.0, rough=False, duplicates=False)
@example(seed=0, C=1e3, shift=1e3, scale=1e-3, degree=2, coef0=0.0, rough=False, duplicates=True)
def test_poly_certificate_against_the_exact_optimum(
    seed, C, shift, scale, degree, coef0, rough, duplicates
):
    # against P* of the rational oracle: [lower, upper] contains P*, upper >= P(candidate)
    # exactly, no false accept, and the gap bounds the true suboptimality P(candidate) - P*
    # within a factor 2 plus the rounding allowance, computed here exactly: (upper - P) of
    # the candidate and (D - lower) of the certificate's dual point, and the resolution of
    # its search, an ulp of D* (it compares dual points by their float64 values of D, which
    # cannot tell apart two points closer than that) and what a float64 dual point can reach,
    # |D* - D(fl(alpha*))|: so the dual point is within the candidate's suboptimality of D*.
    # Where the rounding of huge kernel values costs more than the dual value (the rigorous
    # lower end below 0), the certificate keeps the zero point, D = lower = 0, and its
    # rounding floor reports what rounding cost instead. Adversarial data: shifted or scaled
    # features, points repeated under the opposite label
    X, y = random_problem(seed, n=12, d=3)
    if duplicates:
        X, y = np.vstack([X, X[:3]]), np.concatenate([y, -y[:3]])
    f = qpsvm.SoftMarginDual(
        X * scale + shift, y, C=C, kernel="poly", gamma=0.2, degree=degree, coef0=coef0
    )
    optimum = f.solve(method="exact").info["exact"]
    star = optimum.objective
    sol = f.solve(method="smo", tol=1e-1 if rough else 1e-3, certify=False)
    cert = f.certify(alpha=sol.alpha, b=sol.b)
    assert cert.rigorous
    primal, dual, _ = exact_objectives(f, sol.alpha, sol.b, cert.alpha)
    assert F(cert.upper) >= primal >= star
    assert F(cert.lower) <= star
    assert F(cert.lower) <= dual  # the balance's residual is subtracted, B |sum a y|
    true = primal - star
    assert F(cert.gap) >= true
    if cert.passed:
        assert true <= F(cert.tol) * max(F(1), abs(F(cert.upper)))
    allowance = (F(cert.upper) - primal) + (dual - F(cert.lower))
    nearest = optimum.alpha_float
    reach = abs(star - exact_objectives(f, nearest, 0.0, nearest)[1])
    resolution = F(2.0**-52) * abs(star)
    rounding = max(allowance + reach + resolution, F(cert.rounding_floor))
    assert F(cert.gap) <= 2 * true + rounding


def test_poly_with_negative_coef0_and_an_indefinite_gram_matrix_is_refused():
    # (gamma x.x' + c0)^p with c0 < 0 need not be positive semidefinite; on these data it is
    # proven not to be: the dual is nonconvex and no certificate exists
    X, y = random_problem(0, n=12, d=3)
    f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="poly", gamma=0.2, degree=2, coef0=-1.0)
    bound = kernel_ulps(f)
    assert isinstance(bound, PolyBound) and not bound.positive_semidefinite
    assert gram_verdict(bound, f.X).psd is False
    sol = f.solve(method="smo", tol=1e-3, certify=False)
    with pytest.raises(qpsvm.NonConvexProblemError):
        f.certify(alpha=sol.alpha, b=sol.b)
    # the vector the proof found: v^T K v < 0 with K in fractions
    K = exact_poly(f.X, 0.2, -1.0, 2)
    v = [F(float(t)) for t in np.linalg.eigh(np.array(K, dtype=float))[1][:, 0]]
    assert sum(v[i] * K[i][j] * v[j] for i in range(12) for j in range(12)) < 0


def negative_coef0_problem(duplicates: bool):
    """8 points in 10 dimensions, ``(0.1 x.x' - 0.01)^2``: positive definite on the data (and
    only semidefinite with two points repeated)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 10))
    y = np.array([1, -1] * 4)
    if duplicates:
        X, y = np.vstack([X, X[:2]]), np.concatenate([y, y[:2]])
    return qpsvm.SoftMarginDual(X, y, C=1.0, kernel="poly", gamma=0.1, degree=2, coef0=-0.01)


@pytest.mark.parametrize("C", [0.1, 1.0, 100.0])
def test_poly_with_negative_coef0_proven_semidefinite_is_rigorous(C):
    # the Gram matrix proven positive definite on the data: weak duality holds and the
    # certificate is a proof, checked against P* of the oracle
    f = negative_coef0_problem(duplicates=False).with_C(C)
    assert gram_verdict(kernel_ulps(f), f.X).psd is True
    star = f.solve(method="exact").info["exact"].objective
    sol = f.solve()
    cert = sol.certificate
    assert cert.rigorous and cert.passed
    assert F(cert.lower) <= star <= F(cert.upper)


def test_poly_with_negative_coef0_undecided_is_not_rigorous():
    # singular (repeated points): semidefinite, but neither the shifted Cholesky factor nor an
    # eigenvector decides it in floating point; the certificate says it is not a proof
    f = negative_coef0_problem(duplicates=True)
    assert gram_verdict(kernel_ulps(f), f.X).psd is None
    sol = f.solve(method="smo", tol=1e-6, certify=False)
    assert not f.certify(alpha=sol.alpha, b=sol.b).rigorous


def test_poly_optimum_is_certified_rigorously_where_inner_products_cancel():
    # standardised features, c0 = 0: many bases gamma x.x' near 0; the certificate's floor
    # follows each pair's own base and the optimum passes at 1e-9
    X, y = random_problem(3, n=80, d=4, shift=0.0)
    sol = qpsvm.SoftMarginDual(X, y, C=10.0, kernel="poly", gamma=0.5, degree=3, coef0=0.0).solve()
    assert sol.certificate.rigorous and sol.certificate.passed
    assert sol.certificate.relative_floor < 1e-11


def test_poly_floor_below_tol_where_large_values_cancel_in_the_scores():
    # features scaled by 3: kernel values up to ~1e5 and more, scores of order 1, C = 1e4. A
    # value rounded to float64 carries ~8u of itself, which the scores' bounds summed over
    # sum_j alpha_j |K_ij| (relative floor 1.0e-8 there, RoundingFloorError); values as
    # unevaluated sums hi + lo leave Dot2's final rounding u |g_i|, 2e-10 of the objective
    X, y = make_classification(
        n_samples=100, n_features=20, n_informative=10, flip_y=0.1, random_state=0
    )
    f = qpsvm.SoftMarginDual(X * 3.0, y, kernel="poly", C=1e4, gamma=0.05, degree=3, coef0=1.0)
    cert = f.solve().certificate
    assert cert.rigorous and cert.passed
    assert cert.relative_floor < cert.tol
