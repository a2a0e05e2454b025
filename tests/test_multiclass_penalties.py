"""The multiclass SVMs with the L1 and elastic-net penalties (``penalty="l1"``, ``"l1_l2"``,
``l1_ratio``, the pieces of the composed problems): checked against an LP written from scratch
for HiGHS (the hinge with L1 is a linear program), a CVXPY statement written from scratch for
every loss, penalty and intercept, and Hypothesis; certificates are rigorous, tight for
candidates of any quality, give no distance bound without strong convexity, and reject perturbed
answers. The two-class identity ties the L1 problem to the composed binary one."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import qpsvm
from qpsvm.exceptions import InvalidInputError

VARIANTS = ("crammer_singer", "weston_watkins")


def classes(seed: int, n: int = 45, d: int = 6, k: int = 3):
    """Three shifted classes in ``d`` features, of which only the first ``k`` carry signal."""
    rng = np.random.default_rng(seed)
    y = np.sort(rng.integers(0, k, n))
    y[:k] = np.arange(k)
    return rng.normal(size=(n, d)) + 1.5 * np.eye(k, d)[y] + 1.0, y


def lp_optimum(X, y, C, variant, free):
    """``min sum_c ||w_c||_1 + C sum xi`` (the hinge) as an LP over ``W = W+ - W-``, slacks and
    (free) ``b = b+ - b-``, solved by HiGHS."""
    n, d = X.shape
    k = int(y.max()) + 1
    pairs = [(i, c) for i in range(n) for c in range(k) if c != y[i]]
    n_xi = n if variant == "crammer_singer" else len(pairs)
    n_b = k if free else 0
    size = 2 * k * d + n_xi + 2 * n_b
    cost = np.concatenate([np.ones(2 * k * d), C * np.ones(n_xi), np.zeros(2 * n_b)])
    A = np.zeros((len(pairs), size))
    for j, (i, c) in enumerate(pairs):
        for sign, cls in ((1.0, y[i]), (-1.0, c)):
            A[j, cls * d : (cls + 1) * d] -= sign * X[i]  # W+ part
            A[j, k * d + cls * d : k * d + (cls + 1) * d] += sign * X[i]  # W- part
            if free:
                A[j, 2 * k * d + n_xi + cls] -= sign
                A[j, 2 * k * d + n_xi + k + cls] += sign
        A[j, 2 * k * d + (i if variant == "crammer_singer" else j)] = -1.0
    lp = linprog(cost, A_ub=A, b_ub=-np.ones(len(pairs)), bounds=(0, None), method="highs")
    assert lp.status == 0
    return float(lp.fun)


def cvxpy_optimum(X, y, C, variant, loss, penalty, intercept, r=0.5, B=1.0):
    """Every combination written from scratch in CVXPY (Clarabel, tight)."""
    n, k = X.shape[0], int(y.max()) + 1
    W, b = cp.Variable((k, X.shape[1])), cp.Variable(k)
    S = X @ W.T
    if intercept != "none":
        S = S + np.ones((n, 1)) @ cp.reshape(b, (1, k), order="C")
    own = cp.hstack([S[i, y[i]] for i in range(n)])
    hinge = [cp.multiply(y != c, cp.pos(1 - own + S[:, c])) for c in range(k)]
    if variant == "crammer_singer":
        worst = cp.max(cp.vstack(hinge), axis=0)
        data = cp.sum(cp.square(worst)) if loss == "squared_hinge" else cp.sum(worst)
    else:
        data = sum(cp.sum(cp.square(h)) if loss == "squared_hinge" else cp.sum(h) for h in hinge)
    entries = cp.vec(W, order="C")
    if intercept == "regularized":
        entries = cp.hstack([entries, b / B])
    l1, l2 = cp.norm1(entries), 0.5 * cp.sum_squares(entries)
    reg = {"l1": l1, "l1_l2": r * l1 + (1 - r) * l2, "l2": l2}[penalty]
    problem = cp.Problem(cp.Minimize(reg + C * data))
    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return float(problem.value)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("intercept", ["none", "free"])
def test_hinge_l1_against_highs(variant, intercept):
    X, y = classes(0)
    f = qpsvm.MulticlassSVM(X, y, C=0.5, variant=variant, penalty="l1", intercept=intercept)
    sol = f.solve()
    cert = sol.certificate
    assert cert.passed and cert.rigorous and cert.distance_bound is None
    assert sol.objective == pytest.approx(lp_optimum(X, y, 0.5, variant, intercept == "free"))
    assert np.count_nonzero(f.penalised(sol.w) == 0.0) > 0  # L1 zeros some weights exactly


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
@pytest.mark.parametrize(
    ("penalty", "intercept"),
    [("l1", "regularized"), ("l1_l2", "none"), ("l1_l2", "free"), ("l1", "free")],
)
def test_against_cvxpy_written_from_scratch(variant, loss, penalty, intercept):
    X, y = classes(1)
    kwargs = {"intercept_scaling": 2.0} if intercept == "regularized" else {}
    f = qpsvm.MulticlassSVM(
        X,
        y,
        C=1.0,
        variant=variant,
        loss=loss,
        penalty=penalty,
        intercept=intercept,
        l1_ratio=0.3,
        **kwargs,
    )
    sol = f.solve()
    assert sol.certificate.passed and sol.certificate.rigorous
    reference = cvxpy_optimum(X, y, 1.0, variant, loss, penalty, intercept, r=0.3, B=2.0)
    assert sol.objective == pytest.approx(reference, rel=1e-8)
    assert f.problem.value == pytest.approx(reference, rel=1e-7)
    if penalty == "l1_l2":  # strongly convex with modulus 1 - r
        assert sol.certificate.distance_bound is not None
    w = sol.w * 1.01
    cert = f.certify(w=w)
    true = f.objective(w) - sol.objective
    floor = 1e-9 * sol.objective
    assert not cert.passed
    assert true - floor <= cert.gap <= 2.0 * true + floor


@pytest.mark.parametrize("intercept", ["none", "free"])
def test_two_classes_are_the_composed_binary_problem(intercept):
    """With two classes both variants constrain only ``v = w_1 - w_0`` (and ``b_1 - b_0``), and
    ``min ||w_0||_1 + ||w_1||_1`` over the splits of ``v`` is ``||v||_1``: the optimum is the
    composed binary problem's with the L1 penalty and the same ``C``."""
    X, y = classes(2, n=30, k=2)
    binary = qpsvm.SoftMarginPrimal(X, y, C=0.7, penalty="l1", intercept=intercept).solve()
    for variant in VARIANTS:
        f = qpsvm.MulticlassSVM(X, y, C=0.7, variant=variant, penalty="l1", intercept=intercept)
        assert f.solve().objective == pytest.approx(binary.objective, rel=1e-8)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    variant=st.sampled_from(VARIANTS),
    penalty=st.sampled_from(["l1", "l1_l2"]),
    intercept=st.sampled_from(["none", "free", "regularized"]),
    scale=st.sampled_from([1e-4, 1e-2, 1.0]),
)
@example(seed=0, variant="crammer_singer", penalty="l1", intercept="free", scale=1e-4)
def test_certificates_of_any_candidate_are_tight_and_consistent(
    seed, variant, penalty, intercept, scale
):
    """Near-optimal and random candidates: the rigorous enclosure meets the solution's, and the
    gap lies between the true suboptimality and twice it."""
    X, y = classes(seed, n=18, d=4)
    f = qpsvm.MulticlassSVM(X, y, C=1.0, variant=variant, penalty=penalty, intercept=intercept)
    best = f.solve()
    rng = np.random.default_rng(seed)
    w = best.w + scale * rng.normal(size=best.w.shape)
    cert = f.certify(w=w)
    assert cert.rigorous
    assert cert.lower <= best.certificate.upper and best.certificate.lower <= cert.upper
    true = f.objective(w) - best.objective
    floor = 2e-9 * max(1.0, best.objective)
    assert true - floor <= cert.gap <= 2.0 * true + floor


def test_bad_input_and_refused_methods():
    X, y = classes(3)
    with pytest.raises(InvalidInputError, match="penalty"):
        qpsvm.MulticlassSVM(X, y, penalty="l0")
    with pytest.raises(InvalidInputError, match="l1_ratio"):
        qpsvm.MulticlassSVM(X, y, penalty="l1_l2", l1_ratio=1.0)
    f = qpsvm.MulticlassSVM(X, y, penalty="l1")
    assert f.default_method() == "qp"
    for method in ("exact", "subgradient"):  # the working set solves it (the hinge)
        with pytest.raises(InvalidInputError, match="L1 and elastic-net"):
            f.solve(method=method)
