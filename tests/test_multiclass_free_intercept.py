"""The multiclass SVMs with free, unpenalised per-class intercepts (``intercept="free"``):
checked against the rational oracle (``method="exact"``, and the binary one through the
two-class identity), a CVXPY statement written
from scratch, and Hypothesis; the certificates enclose the exact optimum, are tight for
candidates of any quality, do not depend on the intercepts' common shift, and reject perturbed
answers. No installed client solves this problem (liblinear's and scikit-learn's multiclass
intercepts are regularised; their test is in ``test_multiclass_composed.py``)."""

from __future__ import annotations

from fractions import Fraction

import cvxpy as cp
import numpy as np
import pytest
from conftest import assert_encloses_and_tight
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm.exceptions import InvalidInputError
from qpsvm.solvers.exact import multiclass_qp
from qpsvm.verify.rigorous import multiclass_intercept_spread

VARIANTS = ("crammer_singer", "weston_watkins")
LOSSES = ("hinge", "squared_hinge")


def shifted_classes(seed: int, n: int = 30, d: int = 3, k: int = 3):
    """Classes around shifted centres of unequal sizes: the intercepts differ and matter."""
    rng = np.random.default_rng(seed)
    y = np.sort(rng.integers(0, k, n))
    y[:k] = np.arange(k)  # every class present
    return rng.normal(size=(n, d)) + 1.5 * np.eye(k, d)[y] + 2.0, y


def independent(X, y, C, variant, loss, s=None):
    """The problem written from scratch in CVXPY: explicit unpenalised ``b`` (Clarabel, tight).
    Returns the optimal value and the intercepts' differences to class 0."""
    n, k = X.shape[0], int(y.max()) + 1
    s = np.ones(n) if s is None else s
    W, b = cp.Variable((k, X.shape[1])), cp.Variable(k)
    S = X @ W.T + np.ones((n, 1)) @ cp.reshape(b, (1, k), order="C")
    own = cp.hstack([S[i, y[i]] for i in range(n)])
    hinge = [cp.multiply(y != c, cp.pos(1 - own + S[:, c])) for c in range(k)]
    if variant == "crammer_singer":
        worst = cp.max(cp.vstack(hinge), axis=0)
        loss_term = s @ (cp.square(worst) if loss == "squared_hinge" else worst)
    else:
        loss_term = sum(s @ (cp.square(h) if loss == "squared_hinge" else h) for h in hinge)
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(W) + C * loss_term))
    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return float(problem.value)


def binary_optimum(X, y, C):
    """The exact rational optimum of two classes through the binary identity: with
    ``v = w_1 - w_0`` and ``beta = b_1 - b_0`` both variants are ``min 1/4 ||v||^2 + C sum xi``
    s.t. ``+-(v.x_i + beta) >= 1 - xi_i`` (``w_1 = -w_0 = v/2`` is optimal for fixed ``v``),
    half the free-intercept soft margin with ``2C``."""
    exact = qpsvm.SoftMarginPrimal(X, y, C=2.0 * C, fit_intercept=True).solve(method="exact")
    return exact.info["exact"].objective / 2, exact


@pytest.mark.parametrize("variant", VARIANTS)
def test_two_classes_against_the_rational_oracle(variant):
    """The exact optimum (the binary oracle's, halved) lies in the certified interval of both
    methods; ``w_1 - w_0`` and ``b_1 - b_0`` are the binary ``w`` and ``b``."""
    X, y = shifted_classes(0, n=24, d=2, k=2)
    X = np.round(X * 8) / 8
    optimum, exact = binary_optimum(X, y, 1.5)
    f = qpsvm.MulticlassSVM(X, y, C=1.5, variant=variant, intercept="free")
    for method in ("qp", "working_set"):
        sol = f.solve(method=method)
        cert = sol.certificate
        assert cert.passed and cert.rigorous
        assert Fraction(cert.lower) <= optimum <= Fraction(cert.upper)
        np.testing.assert_allclose(sol.w[1, :-1] - sol.w[0, :-1], exact.w, atol=1e-7)
        assert sol.b[1] - sol.b[0] == pytest.approx(exact.b, abs=1e-6)
        assert sol.b.sum() == pytest.approx(0.0, abs=1e-12)  # the normalisation


@pytest.mark.parametrize("variant", VARIANTS)
def test_rational_oracle_is_the_binary_optimum_with_two_classes(variant):
    """``method="exact"`` states the free intercepts itself (``b_{y_i} - b_c`` on each row, the
    last class's fixed at 0): with two classes its ``P*`` is exactly half the binary
    free-intercept optimum at ``2C``, ``b_1 - b_0`` its ``b`` and the intercepts sum to 0."""
    X, y = shifted_classes(0, n=24, d=2, k=2)
    X = np.round(X * 8) / 8
    optimum, binary = binary_optimum(X, y, 1.5)
    f = qpsvm.MulticlassSVM(X, y, C=1.5, variant=variant, intercept="free")
    sol = f.solve(method="exact")
    exact = sol.info["exact"]
    assert exact.objective == optimum
    assert exact.b[1] - exact.b[0] == binary.info["exact"].b
    assert sum(exact.b) == 0
    np.testing.assert_array_equal(sol.b, [float(v) for v in exact.b])
    assert f.certify(sol).passed


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    variant=st.sampled_from(VARIANTS),
    C=st.sampled_from([0.1, 1.0, 10.0]),
    k=st.integers(3, 4),
)
@example(seed=1, variant="crammer_singer", C=10.0, k=4)
def test_rational_oracle_lies_in_the_float_certificate(seed, variant, C, k):
    """Three or four classes: the exact ``P*`` lies in the rigorous enclosure of the float
    QP's certified optimum, the exact point's objective (recomputed exactly) is ``P*``, its
    float view certifies, and the intercepts sum to 0."""
    X, y = shifted_classes(seed, n=8 * k, d=2, k=k)
    f = qpsvm.MulticlassSVM(X, y, C=C, variant=variant, intercept="free")
    exact = f.solve(method="exact")
    opt = exact.info["exact"]
    cert = f.solve(method="qp").certificate
    assert cert.rigorous
    assert Fraction(cert.lower) <= opt.objective <= Fraction(cert.upper)
    assert sum(opt.b) == 0
    assert f.certify(exact).passed
    # the primal objective at (W*, b*), recomputed exactly (the last class's b is the QP's 0)
    assert multiclass_qp(f).objective(opt.w, opt.b[:-1] - opt.b[-1]) == opt.objective
    assert f.objective(exact.w) == pytest.approx(float(opt.objective), rel=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("loss", LOSSES)
def test_against_cvxpy_written_from_scratch(variant, loss):
    """Four classes, sample weights: the certified optimum equals the independent statement's,
    the free intercepts lower it below no intercept, the duals balance per class and the
    intercepts sum to 0; the working set agrees with the QP."""
    X, y = shifted_classes(1, n=48, k=4)
    s = np.random.default_rng(1).uniform(0.5, 2.0, size=len(y))
    f = qpsvm.MulticlassSVM(
        X, y, C=2.0, variant=variant, loss=loss, intercept="free", sample_weight=s
    )
    assert f.n_features == X.shape[1] + 1
    sol = f.solve(method="qp")
    assert sol.certificate.passed and sol.certificate.rigorous
    reference = independent(X, y, 2.0, variant, loss, s)
    assert sol.objective == pytest.approx(reference, rel=1e-8)
    assert f.problem.value == pytest.approx(reference, rel=1e-7)
    none = qpsvm.MulticlassSVM(X, y, C=2.0, variant=variant, loss=loss, sample_weight=s)
    assert sol.objective < none.solve().objective
    assert np.max(np.abs(f.balance(sol.certificate.alpha))) < 1e-8
    assert sol.b.sum() == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_array_equal(sol.b, sol.w[:, -1])
    # the intercepts' range within the proven bound the certificate uses
    assert np.ptp(sol.b) <= multiclass_intercept_spread(f, sol.certificate.upper)
    if loss == "hinge":
        ws = f.solve(method="working_set")
        assert ws.certificate.passed
        assert ws.objective == pytest.approx(sol.objective, rel=1e-9)
    # (w, b) as other tools give them, and the scores of new points
    assert f.certify(w=sol.w[:, :-1], b=sol.b).passed
    np.testing.assert_allclose(
        f.decision_function(X[:5], sol), X[:5] @ sol.w[:, :-1].T + sol.b, rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("variant", VARIANTS)
def test_certificate_ignores_the_common_shift_and_rejects_perturbed_answers(variant):
    X, y = shifted_classes(2, n=60)
    f = qpsvm.MulticlassSVM(X, y, C=1.0, variant=variant, intercept="free")
    sol = f.solve()
    w = sol.w[:, :-1]
    for shift in (0.0, 3.0, -250.0):
        cert = f.certify(w=w, b=sol.b + shift)
        assert cert.passed
        assert cert.primal_objective == pytest.approx(sol.objective, rel=1e-12)
    w2, b2 = w * 1.01 + 0.01, sol.b + np.array([0.02, -0.01, 0.0])
    cert = f.certify(w=w2, b=b2)
    true = f.objective(w2, b2) - sol.objective
    floor = 1e-9 * sol.objective
    assert not cert.passed
    assert true - floor <= cert.gap <= 2.0 * true + floor


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    variant=st.sampled_from(VARIANTS),
    C=st.sampled_from([0.1, 1.0, 10.0]),
    scale=st.sampled_from([0.0, 1e-3, 1.0]),
)
@example(seed=0, variant="crammer_singer", C=10.0, scale=0.0)
def test_certificate_encloses_the_exact_optimum(seed, variant, C, scale):
    """Two classes (the oracle's exact ``P*``): for the solution, a near-optimal and a random
    candidate, ``lower <= P* <= upper`` and the gap between the true suboptimality and twice
    it."""
    X, y = shifted_classes(seed, n=12, d=2, k=2)
    X = np.round(X * 8) / 8
    optimum, _ = binary_optimum(X, y, C)
    f = qpsvm.MulticlassSVM(X, y, C=C, variant=variant, intercept="free")
    best = f.solve()
    rng = np.random.default_rng(seed)
    w = best.w[:, :-1] + scale * rng.normal(size=(2, 2))
    b = best.b + scale * rng.normal(size=2)
    cert = f.certify(w=w, b=b)
    assert_encloses_and_tight(cert, f.objective(w, b), optimum)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    variant=st.sampled_from(VARIANTS),
    loss=st.sampled_from(LOSSES),
)
@example(seed=0, variant="weston_watkins", loss="squared_hinge")
def test_three_classes_agree_with_cvxpy(seed, variant, loss):
    """Random three-class problems: the certified optimum equals the independent statement's."""
    X, y = shifted_classes(seed, n=18, d=2)
    f = qpsvm.MulticlassSVM(X, y, C=1.0, variant=variant, loss=loss, intercept="free")
    sol = f.solve()
    assert sol.certificate.passed and sol.certificate.rigorous
    assert sol.objective == pytest.approx(independent(X, y, 1.0, variant, loss), rel=1e-7)


def test_bad_input_and_refused_methods():
    X, y = shifted_classes(3)
    with pytest.raises(InvalidInputError, match="contradicts"):
        qpsvm.MulticlassSVM(X, y, fit_intercept=True, intercept="none")
    f = qpsvm.MulticlassSVM(X, y, fit_intercept=True)
    assert f.intercept.coupled
    with pytest.raises(InvalidInputError, match="free per-class intercept"):
        f.solve(method="subgradient")
    with pytest.raises(InvalidInputError, match="per-class intercepts"):
        f.certify(w=np.zeros((3, X.shape[1])))
    with pytest.raises(InvalidInputError, match="disagrees"):
        f.certify(w=np.zeros((3, X.shape[1] + 1)), b=np.ones(3))
    g = qpsvm.MulticlassSVM(X, y, intercept="free", loss="squared_hinge")
    with pytest.raises(InvalidInputError, match="squared hinge"):
        g.solve(method="working_set")
