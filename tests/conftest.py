"""Shared fixtures (small real and synthetic data sets) and the hypothesis profiles.

The test command gives the same answer on every run, with ``CI`` set or not: the default
profile, ``deterministic``, derandomizes hypothesis (each test draws the same examples every
time, seeded from the test itself) and keeps no example database between runs. Every example
that ever failed is pinned in its test with ``@example``. To hunt for new failures, opt in to
fresh random examples on every run, remembered in ``.hypothesis/`` when they fail::

    python -m pytest --hypothesis-profile=hunt            # new examples each run
    python -m pytest --hypothesis-profile=hunt --hypothesis-seed=12345   # replay one run
"""

from __future__ import annotations

from fractions import Fraction

import matplotlib
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import settings
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

matplotlib.use("Agg")

settings.register_profile("deterministic", derandomize=True, database=None, print_blob=True)
settings.register_profile("hunt", derandomize=False, print_blob=True)
settings.load_profile("deterministic")


@pytest.fixture(scope="session", autouse=True)
def compiled_paths():
    """Every test takes the compiled paths, whether or not this machine's compile cache is
    filled: a kernel problem's default solve does not start as the full QP or by numpy's SMO
    steps before the SMO loop is compiled, a small dense primal is solved by the box QPs, not
    by Clarabel, before their ascent is compiled, and the sparse ascent's passes and conjugate
    gradients, the cutting plane's plane products, the chain's Viterbi, the 1-slack planes'
    QP and the rbf Gram matrix's distances and exponential are the compiled ones, not their
    numpy equivalents, the box QPs and the ranking windows try the primal active set and the
    compiled all-pairs pass, and a multiclass SVM starts from its
    compiled descent, not numpy's gradient steps (``tests/test_cold_start.py`` runs
    those paths in a fresh process). Without this, which solver answers would depend on the
    tests run before."""
    from qpsvm import kernels
    from qpsvm.models import chain
    from qpsvm.solvers import cutting_plane, direct, one_slack, smo, warm_start
    from qpsvm.verify import ascent, ranking_fused

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(smo, "FULL_QP_FIRST_CALLS", 0)
        patch.setattr(direct, "uncompiled", lambda kernel, rows, budget: False)
        patch.setattr(ascent, "uncompiled", lambda kernel, rows, budget: False)
        patch.setattr(ranking_fused, "uncompiled", lambda kernel, rows, budget: False)
        patch.setattr(smo, "uncompiled", lambda kernel, rows, budget: False)
        patch.setattr(cutting_plane, "uncompiled", lambda kernel, rows, budget: False)
        patch.setattr(one_slack, "uncompiled", lambda kernel, rows, budget: False)
        patch.setattr(chain, "uncompiled", lambda kernel, rows, budget: False)
        patch.setattr(warm_start, "uncompiled", lambda kernel, rows, budget: False)
        patch.setattr(kernels, "uncompiled", lambda kernel, rows, budget: False)
        yield


@pytest.fixture(scope="session")
def cancer() -> tuple[np.ndarray, np.ndarray]:
    """Breast cancer (569 x 30), standardised: a real, non-separable binary problem."""
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="session")
def blobs() -> tuple[np.ndarray, np.ndarray]:
    """Two separable Gaussian blobs in 2-D (60 points), labels 'a' / 'b'."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-2.0, 0.6, (30, 2)), rng.normal(2.0, 0.6, (30, 2))])
    y = np.array(["a"] * 30 + ["b"] * 30)
    return X, y


def random_problem(seed: int, n: int = 40, d: int = 5, shift: float = 0.5):
    """Overlapping Gaussian classes: a generic non-separable problem."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1, 1)
    X = rng.normal(size=(n, d)) + shift * y[:, None]
    return X, y


def exact_poly(X, gamma, coef0, degree) -> list[list[Fraction]]:
    """``(gamma x_i . x_j + c0)^p`` in rationals, the float data taken as they are."""
    X = X.toarray() if sp.issparse(X) else X
    rows = [[Fraction(float(v)) for v in x] for x in X]
    g, c = Fraction(float(gamma)), Fraction(float(coef0))
    return [
        [(g * sum(a * b for a, b in zip(xi, xj, strict=True)) + c) ** degree for xj in rows]
        for xi in rows
    ]


def assert_encloses_and_tight(cert, value: float, optimum) -> None:
    """A rigorous certificate of a candidate of objective ``value``: ``[lower, upper]`` holds
    the exact ``optimum`` (a ``Fraction``), and the gap lies between the true suboptimality and
    twice it, up to a relative floor of 2e-9 (the certificate's own tolerance)."""
    assert cert.rigorous
    assert Fraction(cert.lower) <= optimum <= Fraction(cert.upper)
    true = value - float(optimum)
    floor = 2e-9 * max(1.0, float(optimum))
    assert true - floor <= cert.gap <= 2.0 * true + floor


def ranking_problem(seed: int, n_queries: int = 6, per_query: int = 8, d: int = 4):
    """Items scored by a hidden linear utility plus noise, cut into 3 relevance levels."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * per_query, d))
    utility = X @ rng.normal(size=d) + 0.7 * rng.normal(size=len(X))
    y = np.digitize(utility, [-0.8, 0.8])
    groups = np.repeat(np.arange(n_queries), per_query)
    return X, y, groups


def hard_variants(X, labels) -> dict:
    """The badly scaled variants of a problem that every formulation must solve exactly or
    refuse clearly (issue 8): ``name -> (X, labels, keyword arguments)``."""
    return {
        "features shifted by 1e3": (X + 1e3, labels, {}),
        "features scaled by 1e-4": (X * 1e-4, labels, {}),
        "features scaled by 1e4": (X * 1e4, labels, {}),
        "C = 1e-4": (X, labels, {"C": 1e-4}),
        "C = 1e4": (X, labels, {"C": 1e4}),
        "C = 1e4, shifted by 1e3": (X + 1e3, labels, {"C": 1e4}),
    }


def composed_optimum(
    Z, weights, C, loss, penalty, *, sigma=None, intercept="none", scaling=1.0, l1_ratio=0.5
):
    """The composed problem ``R(w[, b/B]) + C sum_i s_i loss(sigma_i (z_i . w + b))`` stated
    from scratch on the rows ``Z`` (no qpsvm code), solved by Clarabel at tight tolerances:
    the reference optimum of the composed binary and ranking tests (``sigma`` default 1)."""
    import cvxpy as cp

    w = cp.Variable(Z.shape[1])
    b = cp.Variable() if intercept != "none" else 0.0
    sigma = np.ones(Z.shape[0]) if sigma is None else sigma
    excess = cp.pos(1 - cp.multiply(sigma, Z @ w + b))
    term = cp.square(excess) if loss == "squared_hinge" else excess
    v = w
    if intercept == "regularized":
        v = cp.hstack([w, cp.reshape(b / scaling, (1,), order="C")])
    reg = {
        "l2": 0.5 * cp.sum_squares(v),
        "l1": cp.norm1(v),
        "l1_l2": l1_ratio * cp.norm1(v) + 0.5 * (1 - l1_ratio) * cp.sum_squares(v),
    }[penalty]
    problem = cp.Problem(cp.Minimize(reg + C * (weights @ term)))
    problem.solve(
        solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, max_iter=500
    )
    return float(problem.value)
