"""The multiclass SVMs with a regularised per-class intercept (``intercept="regularized"``,
liblinear's ``-s 4 -B``, ``LinearSVC(multi_class="crammer_singer", fit_intercept=True)``):
the problem on ``[X, B]``, checked against the rational oracle, the official LIBLINEAR bindings
and scikit-learn; certificates enclose the exact optimum, reject perturbed answers and bound the
suboptimality within 2x (the free intercept: ``test_multiclass_free_intercept.py``)."""

from __future__ import annotations

from fractions import Fraction

import cvxpy as cp
import numpy as np
import pytest
from conftest import assert_encloses_and_tight
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sklearn.svm import LinearSVC

import qpsvm
from qpsvm.exceptions import InvalidInputError

VARIANTS = ("crammer_singer", "weston_watkins")


def three_classes(seed: int, n: int = 30, d: int = 3):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n // 3)
    return rng.normal(size=(n, d)) + 1.5 * np.eye(3, d)[y] + 2.0, y  # shifted: b matters


@pytest.mark.parametrize("variant", VARIANTS)
def test_regularized_intercept_is_the_problem_on_a_constant_column(variant):
    X, y = three_classes(0)
    B = 3.0
    f = qpsvm.MulticlassSVM(
        X, y, C=2.0, variant=variant, intercept="regularized", intercept_scaling=B
    )
    sol = f.solve()
    assert sol.certificate.passed and sol.certificate.rigorous
    assert f.n_features == X.shape[1] + 1 and sol.w.shape == (3, X.shape[1] + 1)
    np.testing.assert_array_equal(sol.b, B * sol.w[:, -1])
    plain = qpsvm.MulticlassSVM(np.hstack([X, np.full((len(X), 1), B)]), y, C=2.0, variant=variant)
    assert sol.objective == pytest.approx(plain.solve().objective, rel=1e-9)
    # (w, b) candidates, as other tools give them, and the scores of new points
    cert = f.certify(w=sol.w[:, :-1], b=sol.b)
    assert cert.passed
    assert f.objective(sol.w[:, :-1], sol.b) == pytest.approx(sol.objective, rel=1e-12)
    np.testing.assert_allclose(
        f.decision_function(X[:4], sol), X[:4] @ sol.w[:, :-1].T + sol.b, rtol=1e-12
    )
    assert (f.predict(X, sol) == plain.predict(np.hstack([X, np.full((len(X), 1), B)]), sol)).all()


@pytest.mark.parametrize("variant", VARIANTS)
def test_regularized_intercept_against_the_rational_oracle(variant):
    """The exact rational optimum (B = 2: the column is exact) lies in the certified interval
    of the float solve, and the oracle's intercepts are its own weights' column times B."""
    X, y = three_classes(1)
    f = qpsvm.MulticlassSVM(
        X, y, C=1.0, variant=variant, intercept="regularized", intercept_scaling=2.0
    )
    sol, exact = f.solve(method="qp"), f.solve(method="exact")
    optimum = exact.info["exact"].objective
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)
    np.testing.assert_allclose(sol.b, exact.b, atol=1e-6)


@pytest.mark.parametrize("B", [1.0, 3.0])
def test_linearsvc_crammer_singer_with_intercept_is_certified(B):
    """LinearSVC(multi_class="crammer_singer", fit_intercept=True, intercept_scaling=B) at a
    tight tolerance is certified against the problem it solves (directly, and through
    qpsvm.validate), a perturbed answer is rejected, and the gap is within 2x of the true
    suboptimality measured from the exact optimum."""
    X, y = three_classes(2, n=60)
    est = LinearSVC(
        multi_class="crammer_singer",
        fit_intercept=True,
        intercept_scaling=B,
        C=1.0,
        tol=1e-12,
        max_iter=10**6,
    ).fit(X, y)
    f = qpsvm.MulticlassSVM(X, y, C=1.0, intercept="regularized", intercept_scaling=B)
    assert f.certify(w=est.coef_, b=est.intercept_).passed
    assert f.certify(est).passed  # the estimator read as (coef_, intercept_), no warning
    report = qpsvm.validate(est, X, y)
    assert report.passed and "regularized intercept" in report.spec.describe()
    optimum = float(f.solve(method="exact").info["exact"].objective)
    w, b = est.coef_ * 1.01, est.intercept_ + 0.01
    cert = f.certify(w=w, b=b)
    true = f.objective(w, b) - optimum
    floor = 1e-9 * optimum
    assert not cert.passed
    assert true - floor <= cert.gap <= 2.0 * true + floor


def test_official_liblinear_crammer_singer_with_bias():
    """liblinear -s 4 -B 2 (the official bindings) at -e 1e-10: qpsvm.validate builds the
    regularised-intercept problem and certifies the model."""
    liblinear = pytest.importorskip("liblinear.liblinearutil")
    X, y = three_classes(3, n=60)
    rows = [dict(enumerate(map(float, r), start=1)) for r in X]
    model = liblinear.train(list(map(float, y)), rows, "-s 4 -c 1 -B 2 -e 1e-10 -q")
    report = qpsvm.validate(model, X, y)
    assert report.passed, report
    assert report.spec.intercept == "regularized" and report.spec.intercept_scaling == 2.0


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    variant=st.sampled_from(VARIANTS),
    C=st.sampled_from([0.1, 1.0, 10.0]),
    B=st.sampled_from([0.5, 1.0, 4.0]),
)
@example(seed=0, variant="crammer_singer", C=10.0, B=0.5)
def test_certificate_encloses_the_exact_optimum(seed, variant, C, B):
    """For a random candidate ``(w, b)``: ``lower <= P* <= upper`` with the exact rational
    ``P*``, and the gap between the true suboptimality and twice it."""
    X, y = three_classes(seed, n=12, d=2)
    f = qpsvm.MulticlassSVM(
        X, y, C=C, variant=variant, intercept="regularized", intercept_scaling=B
    )
    optimum = f.solve(method="exact").info["exact"].objective
    rng = np.random.default_rng(seed)
    w, b = rng.normal(size=(3, 2)), rng.normal(size=3) * B  # b / B exact: B a power of 2
    cert = f.certify(w=w, b=b)
    assert_encloses_and_tight(cert, f.objective(w, b), optimum)


def test_bad_input_gives_typed_errors():
    X, y = three_classes(4)
    with pytest.raises(InvalidInputError, match="intercept"):
        qpsvm.MulticlassSVM(X, y, intercept="maybe")
    with pytest.raises(InvalidInputError, match="intercept_scaling"):
        qpsvm.MulticlassSVM(X, y, intercept="regularized", intercept_scaling=0.0)
    f = qpsvm.MulticlassSVM(X, y, intercept="regularized")
    with pytest.raises(InvalidInputError, match="per-class intercepts"):
        f.certify(w=np.zeros((3, X.shape[1])))
    with pytest.raises(InvalidInputError, match="disagrees"):
        f.certify(w=np.zeros((3, X.shape[1] + 1)), b=np.ones(3))
    none = qpsvm.MulticlassSVM(X, y)
    with pytest.raises(InvalidInputError, match="intercept='free'"):
        none.certify(w=np.zeros((3, X.shape[1])), b=np.ones(3))


# ------------------------------------------------------------------ the squared hinge
def squared_oracle_rows(f):
    """The squared-hinge multiclass problem with ``C s_i = 2`` as a hard margin: over
    ``(vec W, t)`` each constraint ``(i, c)`` reads ``(w_{y_i} - w_c).x_i + t_g / 2 >= 1``
    (``t_g = 2 xi_g``, so ``1/2 ||t||^2 = 2 sum xi_g^2 = C sum xi_g^2``), with one slack
    coordinate ``g`` per example (Crammer-Singer) or per constraint (Weston-Watkins); the rows
    and their negatives, labelled +1 and -1, for :class:`~qpsvm.HardMargin` without intercept."""
    X = np.asarray(f.X)
    k, d = f.n_classes, X.shape[1]
    groups = f.n_samples if f.crammer_singer else f.rows.size
    rows = np.zeros((f.rows.size, k * d + groups))
    for j, (i, c) in enumerate(zip(f.rows, f.cols, strict=True)):
        rows[j, f.y[i] * d : (f.y[i] + 1) * d] += X[i]
        rows[j, c * d : (c + 1) * d] -= X[i]
        rows[j, k * d + (i if f.crammer_singer else j)] = 0.5
    labels = np.r_[np.ones(len(rows)), -np.ones(len(rows))]
    return np.vstack([rows, -rows]), labels


@pytest.mark.parametrize("variant", VARIANTS)
def test_squared_hinge_against_the_rational_oracle(variant):
    """With ``C = 2`` and unit weights the squared hinge is a hard margin with rational rows:
    its exact optimum lies in the certified interval; the CVXPY problem agrees."""
    X, y = three_classes(5, n=12, d=2)
    X = np.round(X * 8) / 8  # dyadic data: exact rows
    f = qpsvm.MulticlassSVM(X, y, C=2.0, variant=variant, loss="squared_hinge")
    sol = f.solve()
    assert sol.certificate.passed and sol.certificate.rigorous
    oracle = qpsvm.HardMargin(*squared_oracle_rows(f), fit_intercept=False).solve(method="exact")
    optimum = oracle.info["exact"].objective
    assert Fraction(sol.certificate.lower) <= optimum <= Fraction(sol.certificate.upper)
    assert f.problem.value == pytest.approx(sol.objective, rel=1e-7)


def independent_squared(X, y, C, variant):
    """The squared hinge multiclass problem written from scratch in CVXPY (Clarabel, tight)."""
    n, k = X.shape[0], int(y.max()) + 1
    W = cp.Variable((k, X.shape[1]))
    S = X @ W.T
    own = cp.hstack([S[i, y[i]] for i in range(n)])
    hinge = [cp.multiply(y != c, cp.pos(1 - own + S[:, c])) for c in range(k)]
    if variant == "crammer_singer":
        loss = cp.sum_squares(cp.max(cp.vstack(hinge), axis=0))
    else:
        loss = sum(cp.sum_squares(h) for h in hinge)
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(W) + C * loss))
    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return float(problem.value)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("C", [0.1, 100.0])
def test_squared_hinge_is_exact_and_rejects_perturbed_answers(variant, C):
    X, y = three_classes(6, n=60)
    f = qpsvm.MulticlassSVM(X, y, C=C, variant=variant, loss="squared_hinge")
    sol = f.solve()
    assert sol.certificate.passed and sol.certificate.rigorous
    assert sol.objective == pytest.approx(independent_squared(X, y, C, variant), rel=1e-8)
    w = sol.w * 1.01 + 0.01
    cert = f.certify(w=w)
    true = f.objective(w) - sol.objective
    floor = 1e-9 * sol.objective
    assert not cert.passed
    assert true - floor <= cert.gap <= 2.0 * true + floor
    # with a regularised intercept: the same problem on [X, B]
    g = qpsvm.MulticlassSVM(
        X,
        y,
        C=C,
        variant=variant,
        loss="squared_hinge",
        intercept="regularized",
        intercept_scaling=2.0,
    )
    plain = qpsvm.MulticlassSVM(
        np.hstack([X, np.full((len(X), 1), 2.0)]), y, C=C, variant=variant, loss="squared_hinge"
    )
    assert g.solve().objective == pytest.approx(plain.solve().objective, rel=1e-9)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    variant=st.sampled_from(VARIANTS),
    scale=st.sampled_from([1e-3, 0.1, 3.0]),
)
@example(seed=0, variant="crammer_singer", scale=1e-3)
def test_squared_hinge_certificate_encloses_the_exact_optimum(seed, variant, scale):
    """Random and near-optimal candidates: ``lower <= P* <= upper`` with the oracle's exact
    ``P*``; the gap between the true suboptimality and twice it."""
    X, y = three_classes(seed, n=9, d=2)
    X = np.round(X * 8) / 8
    f = qpsvm.MulticlassSVM(X, y, C=2.0, variant=variant, loss="squared_hinge")
    optimum = (
        qpsvm.HardMargin(*squared_oracle_rows(f), fit_intercept=False)
        .solve(method="exact")
        .info["exact"]
        .objective
    )
    best = f.solve()
    rng = np.random.default_rng(seed)
    for w in (rng.normal(size=(3, 2)), best.w + scale * rng.normal(size=(3, 2))):
        cert = f.certify(w=w)
        assert_encloses_and_tight(cert, f.objective(w), optimum)


def test_squared_hinge_bad_input_and_refused_methods():
    X, y = three_classes(7)
    with pytest.raises(InvalidInputError, match="loss"):
        qpsvm.MulticlassSVM(X, y, loss="logistic")
    with pytest.raises(InvalidInputError, match="loss"):
        qpsvm.MulticlassSVM(X, y, loss="epsilon_insensitive")
    f = qpsvm.MulticlassSVM(X, y, loss="squared_hinge")
    assert f.default_method() == "qp"
    for method in ("working_set", "exact", "subgradient"):
        with pytest.raises(InvalidInputError, match="squared hinge"):
            f.solve(method=method)
