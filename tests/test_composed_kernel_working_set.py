"""The working set of the kernel composed problems and of support vector regression.

Checked against the exact rational optimum (the dual stated as a linear complementarity problem
in fractions on the exact poly Gram matrix, solved by qpsvm's Lemke method,
:mod:`qpsvm.exact.lemke`), against the full QP (both certified, each objective inside the
other's certified enclosure) and, where the start is not exact, through the restricted QPs it
falls back to.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm.exact.lemke import solve_lcp
from qpsvm.exceptions import RoundingFloorError, UncertifiedSolutionError
from qpsvm.solvers import kernel_start
from tests.conftest import exact_poly

POLY = {"kernel": "poly", "gamma": 0.5, "coef0": 1.0, "degree": 2}
CLASSIFICATION = list(
    itertools.product(("hinge", "squared_hinge"), ("free", "none", "regularized"))
)
REGRESSION = list(
    itertools.product(
        ("epsilon_insensitive", "squared_epsilon_insensitive"), ("free", "none", "regularized")
    )
)


def problem(loss, intercept, seed, n, C=2.0, epsilon=0.2, kernel=None, weights=None):
    """A small classification or regression problem (weights 0.5-2, one of them 0)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    if weights is None:
        weights = rng.uniform(0.5, 2.0, n)
        weights[-1] = 0.0
    common = {
        "loss": loss,
        "intercept": intercept,
        "intercept_scaling": 2.0,
        "sample_weight": weights,
        **(kernel or POLY),
    }
    if "hinge" in loss:
        y = np.where(X[:, 0] + 0.7 * rng.normal(size=n) > 0, 1, -1)
        y[:2] = [1, -1]
        return qpsvm.ComposedClassifier(X, y, C, **common)
    t = np.sin(X.sum(axis=1)) + 0.2 * rng.normal(size=n)
    return qpsvm.SupportVectorRegression(X, t, C, epsilon, **common)


def exact_optimum(f, K=None) -> Fraction:
    r"""The exact optimum of a poly-kernel composed problem: its dual
    :math:`\max \sum_j c_j z_j - \tfrac12 z^T H z` over the units ``z >= 0`` (one per sample,
    or libsvm's ``alpha, alpha^*`` per sample of a tube), capped at the exact ``W_i = C c_i``
    for the unsquared losses, with the coupling for a free intercept, stated as an LCP in
    fractions (KKT: ``Hz - c + caps' multipliers -+ the coupling's >= 0``, complementary).
    ``K`` is the exact Gram matrix in fractions (default: the poly kernel's on ``f.X``)."""
    n = f.n_samples
    if K is None:
        K = exact_poly(f.X, f.kernel.gamma, f.kernel.coef0, f.kernel.degree)
    W = [Fraction(f.C) * Fraction(float(c)) for c in f.sample_weight]
    B2 = Fraction(f.intercept.scaling) ** 2 if f.intercept.regularized else Fraction(0)
    sides = [(i, 1) for i in range(n)]
    if f.regression:
        sides += [(i, -1) for i in range(n)]
    eps = Fraction(f.epsilon)
    sigma = [int(s) for s in f.sigma]
    c = [s * Fraction(float(f.target[i])) - eps for i, s in sides]
    d = [Fraction(1, 2) / W[i] if f.loss.squared and W[i] > 0 else Fraction(0) for i, _ in sides]
    m = len(sides)
    H = [
        [
            s * t * sigma[i] * sigma[k] * (K[i][k] + B2) + (d[a] if a == b else 0)
            for b, (k, t) in enumerate(sides)
        ]
        for a, (i, s) in enumerate(sides)
    ]
    caps = [a for a, (i, _) in enumerate(sides) if not f.loss.squared or W[i] == 0]
    coupling = [sigma[i] * s for i, s in sides] if f.intercept.coupled else None
    size = m + len(caps) + (2 if coupling else 0)
    M = [[Fraction(0)] * size for _ in range(size)]
    q = [Fraction(0)] * size
    for a in range(m):
        M[a][:m] = H[a]
        q[a] = -c[a]
    for r, a in enumerate(caps):
        M[a][m + r], M[m + r][a] = Fraction(1), Fraction(-1)
        q[m + r] = W[sides[a][0]] if not f.loss.squared else Fraction(0)
    if coupling:
        top = m + len(caps)
        for a in range(m):
            M[a][top], M[a][top + 1] = Fraction(-coupling[a]), Fraction(coupling[a])
            M[top][a], M[top + 1][a] = Fraction(coupling[a]), Fraction(-coupling[a])
    z = solve_lcp(M, q).z[:m]
    quad = sum(z[a] * H[a][b] * z[b] for a in range(m) for b in range(m))
    return sum(ci * zi for ci, zi in zip(c, z, strict=True)) - quad / 2


@pytest.mark.parametrize(("loss", "intercept"), CLASSIFICATION + REGRESSION)
def test_kernel_working_set_is_the_exact_optimum(loss, intercept):
    f = problem(loss, intercept, seed=3, n=8 if "eps" in loss else 10)
    sol = f.solve(method="working_set")
    optimum = exact_optimum(f)
    cert = sol.certificate
    assert cert.passed and cert.rigorous
    assert Fraction(cert.lower) <= optimum <= Fraction(cert.upper)
    assert abs(sol.objective - float(optimum)) <= 1e-9 * max(1.0, float(optimum))
    # the answer is SMO's start on the units, polished: no restricted QP was needed
    assert sol.info["start"] == "smo" and sol.info["rounds"] == 0


@pytest.mark.parametrize(("loss", "intercept"), CLASSIFICATION + REGRESSION)
@pytest.mark.parametrize("kernel", [{"kernel": "rbf", "gamma": 0.7}, {"kernel": "linear"}])
def test_working_set_equals_the_full_qp(loss, intercept, kernel):
    f = problem(loss, intercept, seed=5, n=40, kernel=kernel)
    ws = f.fresh_copy().solve(method="working_set")
    full = f.fresh_copy().solve(method="qp")
    for sol in (ws, full):
        assert sol.certificate.passed and sol.certificate.rigorous
    assert ws.certificate.lower <= full.objective * (1 + 1e-12) + 1e-12
    assert full.certificate.lower <= ws.objective * (1 + 1e-12) + 1e-12


def test_restricted_dual_problems_finish_an_inexact_start(monkeypatch):
    """A rough start that is not certified: the restricted kernel duals, with units fixed at
    both sides of the tube, grow to the optimum."""
    monkeypatch.setattr(kernel_start, "START_TOLS", (0.3,))
    rough = kernel_start.kernel_smo_start

    def inexact(f):
        start = rough(f)
        start.exact = False
        start.band = 0.01
        return start

    monkeypatch.setattr(kernel_start, "kernel_smo_start", inexact)
    for loss, intercept in (("epsilon_insensitive", "free"), ("hinge", "regularized")):
        f = problem(loss, intercept, 7, 60, C=10.0, kernel={"kernel": "rbf", "gamma": 0.5})
        sol = f.fresh_copy().solve(method="working_set")
        full = f.fresh_copy().solve(method="qp")
        assert sol.info["rounds"] >= 1 and sol.info["fixed"] > 0
        assert sol.certificate.passed and sol.certificate.rigorous
        assert sol.certificate.lower <= full.objective * (1 + 1e-12)
        assert full.certificate.lower <= sol.objective * (1 + 1e-12)


# any data seed, C, tube, loss and intercept, with or without zero sample weights
random_problems = {
    "seed": st.integers(0, 2**16),
    "log_C": st.floats(-2.0, 3.0),
    "epsilon": st.floats(0.0, 1.0),
    "mode": st.sampled_from(CLASSIFICATION + REGRESSION),
    "zero_weights": st.booleans(),
}


def floored(f, method):
    """``f`` solved by ``method`` at 1e-9, or at 1e-7 where the rounding floor is above 1e-9
    (the typed error says so)."""
    try:
        return f.fresh_copy().solve(method=method)
    except RoundingFloorError:
        return f.fresh_copy().solve(method=method, tol=1e-7)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernel=st.sampled_from(["rbf", "linear"]), **random_problems)
@example(seed=0, log_C=3.0, epsilon=0.0, mode=REGRESSION[0], kernel="rbf", zero_weights=True)
@example(seed=718, log_C=2.5, epsilon=0.0, mode=REGRESSION[0], kernel="rbf", zero_weights=True)
@example(seed=718, log_C=2.5, epsilon=0.0, mode=CLASSIFICATION[2], kernel="rbf", zero_weights=True)
def test_working_set_over_C_epsilon_and_weights(seed, log_C, epsilon, mode, kernel, zero_weights):
    """Any C, tube and weights: the working set's answer is the full QP's optimum. Where the
    data's rounding floor is above 1e-9 (large C), the typed error says so, and both are
    certified at the looser tolerance the floor allows. Where the interior-point backends
    cannot certify the full QP (large C), the working set's answer is still certified."""
    rng = np.random.default_rng(seed)
    weights = rng.uniform(0.1, 3.0, 30)
    if zero_weights:
        weights[rng.random(30) < 0.3] = 0.0
        weights[:2] = 1.0
    f = problem(
        *mode, seed, 30, C=10.0**log_C, epsilon=epsilon, kernel={"kernel": kernel}, weights=weights
    )
    ws = floored(f, "working_set")
    assert ws.certificate.passed and ws.certificate.rigorous
    try:
        full = floored(f, "qp")
    except UncertifiedSolutionError:
        return
    assert full.certificate.passed
    assert ws.certificate.lower <= full.objective * (1 + 1e-12) + 1e-12
    assert full.certificate.lower <= ws.objective * (1 + 1e-12) + 1e-12


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernel=st.sampled_from([{"kernel": "rbf", "gamma": 0.5}, POLY]), **random_problems)
def test_smo_start_is_exact(seed, log_C, epsilon, mode, kernel, zero_weights):
    """SMO on the dual's units (one per sample, or one per side of the tube; the squared
    losses' diagonal, a regularised intercept's ``B^2``, the coupling of a free one), then the
    KKT equations on its free set, is the certified optimum itself over any C, tube and
    weights: the working set solves no restricted QP. Where the data's rounding floor is
    above 1e-9 (large C), at the looser tolerance the floor allows."""
    rng = np.random.default_rng(seed)
    weights = rng.uniform(0.1, 3.0, 40)
    if zero_weights:
        weights[rng.random(40) < 0.3] = 0.0
        weights[:2] = 1.0
    f = problem(*mode, seed, 40, C=10.0**log_C, epsilon=epsilon, kernel=kernel, weights=weights)
    sol = floored(f, "working_set")
    assert sol.certificate.passed and sol.certificate.rigorous
    assert sol.info["start"] == "smo" and sol.info["rounds"] == 0


def test_default_is_the_working_set_for_kernels_only():
    """Measured faster than the full QP for every kernel combination, slower for linear SVR
    (benchmarks/bench_composed_working_set.py)."""
    rbf = {"kernel": "rbf"}
    for loss, intercept in (("squared_hinge", "free"), ("epsilon_insensitive", "free")):
        assert problem(loss, intercept, 1, 20, kernel=rbf).default_method() == "working_set"
        linear = problem(loss, intercept, 1, 20, kernel={"kernel": "linear"})
        assert linear.default_method() == "qp"


def test_kernel_path_shares_the_gram_and_matches_separate_solves():
    """``with_C`` copies share one Gram matrix; each path value is the optimum of the problem
    at that ``C`` solved alone (each objective inside the other's certified enclosure)."""
    rbf = {"kernel": "rbf", "gamma": 0.7}
    f = problem("epsilon_insensitive", "free", seed=4, n=30, kernel=rbf)
    Cs = [0.5, 2.0, 8.0]
    path = f.path(Cs)
    assert f.with_C(1.0).gram() is f.with_C(3.0).gram() is f.gram()
    for C, sol in zip(Cs, path, strict=True):
        alone = problem("epsilon_insensitive", "free", seed=4, n=30, C=C, kernel=rbf).solve()
        for s in (sol, alone):
            assert s.certificate.passed and s.certificate.rigorous
        assert sol.certificate.lower <= alone.objective * (1 + 1e-12) + 1e-12
        assert alone.certificate.lower <= sol.objective * (1 + 1e-12) + 1e-12


@pytest.mark.parametrize("kernel", [{"kernel": "rbf", "gamma": 0.7}, POLY])
def test_composed_and_binary_problems_form_one_gram(kernel):
    """The composed classifier and the binary dual form the same Gram matrix (one definition,
    :meth:`qpsvm.kernels.Kernel.gram`), and with that matrix as a precomputed kernel each takes
    the data as they are."""
    f = problem("hinge", "free", seed=5, n=25, kernel=kernel)
    K = qpsvm.SoftMarginDual(f.X, f.y, **kernel).gram()
    np.testing.assert_array_equal(f.gram(), K)
    precomputed = qpsvm.SoftMarginDual(K, f.y, kernel="precomputed")
    assert precomputed.gram() is precomputed.X
    np.testing.assert_array_equal(precomputed.X, K)
