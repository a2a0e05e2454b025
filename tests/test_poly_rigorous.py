"""The poly-kernel certificate is a proof: every value the certificate evaluates within its
proven per-pair bound, the scores within theirs, and the enclosure ``[lower, upper]`` around the
exact objectives, all checked in rational arithmetic (``(gamma x.x' + c0)^p`` is rational in
the data: every float64 ``x``, ``gamma`` and ``c0`` is the rational it represents)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import scipy.sparse as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm._numerics import tdot2
from qpsvm.verify.binary import kernel_ulps
from qpsvm.verify.rigorous_poly import (
    PolyBound,
    int_power,
    poly_bound,
    poly_rows,
    poly_score_error,
)
from tests.conftest import random_problem

F = Fraction


def exact_poly(X, gamma, coef0, degree) -> list[list[Fraction]]:
    """``(gamma x_i . x_j + c0)^p`` in rationals, the float data taken as they are."""
    X = X.toarray() if sp.issparse(X) else X
    rows = [[F(float(v)) for v in x] for x in X]
    g, c = F(float(gamma)), F(float(coef0))
    return [
        [(g * sum(a * b for a, b in zip(xi, xj, strict=True)) + c) ** degree for xj in rows]
        for xi in rows
    ]


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


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    C=st.sampled_from([0.05, 1.0, 1e3]),
    shift=st.sampled_from([0.0, 10.0]),
    degree=st.integers(2, 4),
    coef0=st.sampled_from([0.0, 1.0]),
    rough=st.booleans(),
)
def test_poly_certificate_encloses_the_exact_objectives(seed, C, shift, degree, coef0, rough):
    # upper >= P(candidate) and lower <= D(its dual point) - B |sum a y| <= P*, both exact
    X, y = random_problem(seed, n=12, d=3)
    f = qpsvm.SoftMarginDual(
        X + shift, y, C=C, kernel="poly", gamma=0.2, degree=degree, coef0=coef0
    )
    sol = f.solve(method="smo", tol=1e-1 if rough else 1e-3, certify=False)
    cert = f.certify(alpha=sol.alpha, b=sol.b)
    assert cert.rigorous
    primal, dual, balance = exact_objectives(f, sol.alpha, sol.b, cert.alpha)
    assert F(cert.upper) >= primal
    assert F(cert.lower) <= dual  # the balance's residual is subtracted, B |sum a y|
    assert cert.lower <= cert.upper
    if balance == 0:
        assert F(cert.lower) <= primal


def test_poly_with_negative_coef0_is_not_rigorous():
    # (gamma x.x' + c0)^p with c0 < 0 need not be positive semidefinite: no duality to prove
    # anything with, though its values' bounds still hold
    X, y = random_problem(0, n=12, d=3)
    f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="poly", gamma=0.2, degree=2, coef0=-1.0)
    bound = kernel_ulps(f)
    assert isinstance(bound, PolyBound) and not bound.positive_semidefinite
    sol = f.solve(method="smo", tol=1e-3, certify=False)
    assert not f.certify(alpha=sol.alpha, b=sol.b).rigorous


def test_poly_optimum_is_certified_rigorously_where_inner_products_cancel():
    # standardised features, c0 = 0: many bases gamma x.x' near 0; the certificate's floor
    # follows each pair's own base and the optimum passes at 1e-9
    X, y = random_problem(3, n=80, d=4, shift=0.0)
    sol = qpsvm.SoftMarginDual(X, y, C=10.0, kernel="poly", gamma=0.5, degree=3, coef0=0.0).solve()
    assert sol.certificate.rigorous and sol.certificate.passed
    assert sol.certificate.relative_floor < 1e-11
