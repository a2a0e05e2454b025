"""The kernel composed and support vector regression certificates are proofs.

For the rbf and poly kernels, every loss and intercept mode, the certificate of a solve's
answer and of perturbed multipliers must satisfy, in exact arithmetic on the float64 data (poly
in fractions, rbf to 40 digits, :func:`tests.test_kernel_rigorous.exact_rbf`):

- ``upper >= P(u, b)``, the candidate's kernel primal
  ``1/2 (u sigma)^T K (u sigma) [+ 1/2 (b/B)^2] + sum_i W_i ell(sigma_i ((K u sigma)_i + b))``;
- the returned dual point lies in the exact box (``[0, W_i]``, ``[-W_i, W_i]``, ``u >= 0`` or
  free as the loss says; ``u_i = 0`` for a zero weight);
- ``lower <= D(u) = sum_i phi_i(u_i) - 1/2 (u sigma)^T K (u sigma) [- 1/2 (B sigma.u)^2]``,
  less a free intercept's coupling residual times the proven bound on ``|b*|``
  (:mod:`qpsvm.verify.rigorous_composed`).

With weak duality (the Gram matrix on the data positive semidefinite) these give
``lower <= P* <= upper``; where the rational oracle applies (the hinge loss, L2, free
intercept: ``SoftMarginDual``'s problem) the enclosure is checked against its exact ``P*``.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm._numerics import up
from qpsvm.exceptions import QPSVMError
from qpsvm.verify.binary import kernel_ulps
from qpsvm.verify.psd import gram_verdict
from qpsvm.verify.rigorous_composed import _intercept_bound
from tests.conftest import exact_poly
from tests.test_kernel_rigorous import DIGITS, exact_rbf

CLASSIFICATION = [
    (loss, icpt)
    for loss in ("hinge", "squared_hinge")
    for icpt in ("free", "none", "regularized")
    if (loss, icpt) != ("hinge", "none")
]
REGRESSION = [
    (loss, icpt)
    for loss in ("epsilon_insensitive", "squared_epsilon_insensitive")
    for icpt in ("free", "none", "regularized")
]
MODES = CLASSIFICATION + REGRESSION


def build(loss, intercept, seed, shift, log_C, kernel):
    """A small problem with zero weights, shifted features and the kernel's parameters."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(6, 12)), int(rng.integers(1, 4))
    X = rng.normal(size=(n, d)) + shift
    weights = np.where(rng.random(n) < 0.2, 0.0, rng.uniform(0.5, 2.0, n))
    weights[0] = 1.0
    common = {
        "loss": loss,
        "intercept": intercept,
        "sample_weight": weights,
        "intercept_scaling": float(2.0 ** rng.integers(-2, 3)),
        **kernel,
    }
    if loss in ("hinge", "squared_hinge"):
        y = np.where(rng.random(n) < 0.5, -1, 1)
        y[:2] = [1, -1]
        return qpsvm.ComposedClassifier(X, y, 10.0**log_C, **common)
    target = np.sin(X.sum(axis=1)) + 0.1 * rng.normal(size=n)
    return qpsvm.SupportVectorRegression(X, target, 10.0**log_C, epsilon=0.1, **common)


def exact_gram(f) -> list[list]:
    """The exact Gram matrix: fractions (poly) or 40-digit decimals (rbf)."""
    k = f.kernel
    if k.name == "poly":
        return exact_poly(f.X, k.gamma, k.coef0, k.degree)
    return exact_rbf(f.X, k.gamma)


def exact_objectives(f, u_p, b, u_d, upper) -> tuple:
    """``P(u_p, b)`` and the lower bound ``D(u_d)`` less the coupling's price, exactly (poly) or
    to 40 digits (rbf), and whether ``u_d`` lies in the exact box (:func:`in_exact_box`)."""
    K = exact_gram(f)
    num = Fraction if f.kernel.name == "poly" else (lambda v: Decimal(float(v)))
    n = f.n_samples
    sigma = [num(float(s)) for s in f.sigma]
    target = [num(float(t)) for t in f.target]
    eps = num(f.epsilon)
    zero = num(0.0)
    with localcontext() as ctx:
        ctx.prec = DIGITS
        W = [num(f.C) * num(float(c)) for c in f.sample_weight]

        def quad(u):
            v = [num(float(u[i])) * sigma[i] for i in range(n)]
            g = [sum(K[i][j] * v[j] for j in range(n)) for i in range(n)]
            return v, g, sum(v[i] * g[i] for i in range(n))

        _, g, q = quad(u_p)
        bb = num(float(b))
        primal = q / 2
        if f.intercept.regularized:
            primal += (bb / num(f.intercept.scaling)) ** 2 / 2
        for i in range(n):
            z = sigma[i] * (g[i] + bb)
            excess = max(zero, abs(z - target[i]) - eps if f.loss.regression else target[i] - z)
            primal += W[i] * (excess * excess if f.loss.squared else excess)
        v, _, q = quad(u_d)
        u = [num(float(t)) for t in u_d]
        dual = -q / 2
        for i in range(n):
            dual += target[i] * u[i]
            if f.loss.regression:
                dual -= eps * abs(u[i])
            if f.loss.squared and u[i] != 0:
                dual -= u[i] * u[i] / (4 * W[i])
        balance = abs(sum(v))
        if f.intercept.regularized:
            dual -= (num(f.intercept.scaling) * sum(v)) ** 2 / 2
        if f.intercept.coupled and balance != 0:
            bound = kernel_ulps(f).diagonal if f.kernel.name == "poly" else 1.0
            price = _intercept_bound(f, upper, float(up(math.sqrt(bound))))
            dual -= num(price) * balance
    return primal, dual, in_exact_box(f, u_d)


def in_exact_box(f, u) -> bool:
    """Whether ``u`` lies in the loss's box with the exact caps ``W_i = C c_i`` (fractions)."""
    for ui, ci in zip(u, f.sample_weight, strict=True):
        ui, Wi = Fraction(float(ui)), Fraction(f.C) * Fraction(float(ci))
        if Wi == 0 and ui != 0:
            return False
        if not f.loss.squared and not (-Wi if f.loss.regression else 0) <= ui <= Wi:
            return False
        if f.loss.squared and not f.loss.regression and ui < 0:
            return False
    return True


def assert_rigorous_enclosure(f, u, b) -> None:
    cert = f.certify(alpha=u, b=b)
    assert cert.rigorous
    primal, dual, inside = exact_objectives(f, u, b, cert.alpha, cert.upper)
    conv = Fraction if f.kernel.name == "poly" else (lambda v: Decimal(float(v)))
    assert inside
    assert primal <= conv(cert.upper)
    assert conv(cert.lower) <= dual


KERNELS = {
    "rbf": {"kernel": "rbf", "gamma": 0.7},
    "poly": {"kernel": "poly", "gamma": 0.5, "degree": 3, "coef0": 1.0},
    "poly-c0": {"kernel": "poly", "gamma": 0.25, "degree": 2, "coef0": 0.0},
}


@pytest.mark.parametrize("kernel", list(KERNELS))
@pytest.mark.parametrize("mode", MODES, ids=["-".join(m) for m in MODES])
@settings(max_examples=2, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    shift=st.sampled_from([0.0, 3.0, 20.0]),
    log_C=st.floats(-2.0, 3.0),
)
def test_kernel_composed_enclosures_are_rigorous(mode, kernel, seed, shift, log_C):
    f = build(*mode, seed, shift, log_C, KERNELS[kernel])
    try:
        sol = f.solve()
    except QPSVMError:
        return  # a typed refusal (a backend that cannot reach 1e-9) is allowed
    rng = np.random.default_rng(seed)
    assert_rigorous_enclosure(f, sol.alpha, sol.b)
    for eps in (1e-6, 1e-2):
        scale = max(1.0, float(np.abs(sol.alpha).max()))
        u = sol.alpha + rng.normal(size=sol.alpha.shape) * eps * scale
        assert_rigorous_enclosure(f, u, sol.b + eps if f.intercept.fitted else 0.0)


@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    log_C=st.floats(-2.0, 4.0),
    coef0=st.sampled_from([0.0, 1.0, 2.5]),
    degree=st.integers(1, 3),
)
@example(seed=0, log_C=4.0, coef0=0.0, degree=1)
@example(seed=3, log_C=4.0, coef0=2.5, degree=3)  # the composed solve's floor is above 1e-9
def test_kernel_composed_encloses_the_exact_optimum(seed, log_C, coef0, degree):
    # hinge + L2 + free intercept: SoftMarginDual's problem, whose rational oracle gives P*;
    # the composed certificate of any candidate encloses it, and passes only near it
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 16))
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1, -1)
    y[:2] = [1, -1]
    kernel = {"kernel": "poly", "gamma": 0.5, "degree": degree, "coef0": coef0}
    C = 10.0**log_C
    exact = qpsvm.SoftMarginDual(X, y, C, **kernel).solve(method="exact").info["exact"]
    star = exact.objective
    # candidates: the oracle's optimum rounded to floats, and perturbations of it (a solve may
    # refuse with a typed error where the rounding floor exceeds 1e-9)
    f = qpsvm.ComposedClassifier(X, y, C, loss="hinge", intercept="free", **kernel)
    b = float(exact.b)
    for eps in (0.0, 1e-8, 1e-3):
        u = np.clip(exact.alpha_float * (1.0 + eps * rng.normal(size=n)), 0.0, C)
        cert = f.certify(alpha=u, b=b)
        assert cert.rigorous
        assert Fraction(cert.lower) <= star <= Fraction(cert.upper)
        if cert.passed:
            value, _, _ = exact_objectives(f, u, b, cert.alpha, cert.upper)
            assert value - star <= Fraction(cert.tol) * max(1, abs(value))


def test_kernel_regression_with_negative_coef0():
    # (gamma x.x' + c0)^p, c0 < 0: proven positive definite on these data, a rigorous
    # certificate; proven indefinite on others, refused as nonconvex
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 10))
    t = rng.normal(size=8)
    kernel = {"kernel": "poly", "gamma": 0.1, "degree": 2, "coef0": -0.01}
    f = qpsvm.SupportVectorRegression(X, t, 1.0, epsilon=0.1, **kernel)
    assert gram_verdict(kernel_ulps(f), f.X).psd is True
    sol = f.solve()
    assert sol.certificate.rigorous and sol.certificate.passed
    assert_rigorous_enclosure(f, sol.alpha, sol.b)
    X = rng.normal(size=(12, 3))
    g = qpsvm.SupportVectorRegression(
        X, X[:, 0], 1.0, kernel="poly", gamma=0.2, degree=2, coef0=-1.0
    )
    with pytest.raises(qpsvm.NonConvexProblemError):
        g.certify(alpha=np.zeros(12), b=0.0)


def test_precomputed_kernel_regression_is_rigorous():
    # a precomputed Gram matrix's values are the data: proven positive definite on them
    # (verify.psd.gram_verdict with no value error), the certificate is a proof
    rng = np.random.default_rng(1)
    X = rng.normal(size=(10, 2))
    K = qpsvm.kernels.Kernel("rbf", gamma=0.5)(X, X)
    K = np.triu(K) + np.triu(K, 1).T  # exactly symmetric
    f = qpsvm.SupportVectorRegression(K, X[:, 0], 1.0, epsilon=0.1, kernel="precomputed")
    cert = f.solve().certificate
    assert cert.passed and cert.rigorous
