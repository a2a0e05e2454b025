"""Composed problems: every (loss, penalty, intercept) solved exactly and certified; the answers
of scikit-learn, LIBLINEAR and LIBSVM at tight tolerances certified against the problem they
solve; perturbed answers rejected; the Fenchel gap tight; bad input refused with typed errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sklearn.svm import SVR, LinearSVC, LinearSVR

import qpsvm
from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.formulations import ComposedProblem
from qpsvm.formulations.pieces.losses import LOSSES
from qpsvm.kernels import make_kernel
from qpsvm.verify import fenchel, rigorous_composed

PENALTIES = ("l2", "l1", "l1_l2")
INTERCEPTS = ("free", "none", "regularized")
CLASSIFY = list(itertools.product(("hinge", "squared_hinge"), PENALTIES, INTERCEPTS))
REGRESS = list(
    itertools.product(("epsilon_insensitive", "squared_epsilon_insensitive"), PENALTIES, INTERCEPTS)
)


def classifier(X, y, loss, penalty, intercept, **kw):
    return qpsvm.SoftMarginPrimal(
        X, y, kw.pop("C", 1.0), loss=loss, penalty=penalty, intercept=intercept, **kw
    )


@pytest.fixture(scope="module")
def regression_data(cancer):
    X, _ = cancer
    return X[:, 1:], X[:, 0]  # predict the first (standardised) feature from the others


def assert_tight(f, cert, w, b, optimum, factor=2.0):
    """Weak duality: the gap is at least the true suboptimality; tightness: at most ``factor``
    times it (up to the 1e-9 relative floor of an exact certificate)."""
    true = f.objective(w, b) - optimum
    floor = 1e-9 * max(1.0, abs(optimum))
    # ``optimum`` is certified to the floor only: ``true`` may come out slightly negative, and
    # ``factor = inf`` (no tightness claim) must not turn that into an upper bound of -inf
    upper = math.inf if math.isinf(factor) else factor * true + floor
    assert true - floor <= cert.gap <= upper, (true, cert.gap)


def check_exact_and_rejects_perturbed(f, sol, penalty):
    """The solution is certified at 1e-9, its objective is the CVXPY problem's optimum, and a
    perturbed w is rejected with a gap at least its true suboptimality (weak duality)."""
    assert sol.certificate.passed and sol.certificate.relative_gap <= 1e-9
    # the CVXPY problem states the same objective: its value at the optimum agrees (solved here
    # when the method never built it: the soft-margin primal's direct Clarabel solve)
    value = f.problem.value
    if value is None:
        value = f.problem.solve(solver="CLARABEL")
    assert abs(value - sol.objective) <= 1e-6 * max(1.0, abs(sol.objective))
    w = sol.w * 1.01 + 0.01
    cert = f.certify(w=w, b=sol.b)
    true = f.objective(w, sol.b) - sol.objective
    assert not cert.passed
    assert cert.gap >= true - 1e-9 * abs(sol.objective)
    if penalty == "l2" and isinstance(f, ComposedProblem):  # dual ascent: a tight bound
        assert cert.gap <= 2.0 * true
    if penalty == "l1":
        assert cert.distance_bound is None
    else:
        assert cert.distance_bound is not None


@pytest.mark.parametrize(("loss", "penalty", "intercept"), CLASSIFY)
def test_every_classification_combination_is_exact(cancer, loss, penalty, intercept):
    X, y = cancer
    f = classifier(X, y, loss, penalty, intercept, intercept_scaling=2.0)
    sol = f.solve()
    check_exact_and_rejects_perturbed(f, sol, penalty)
    if intercept == "none":
        assert sol.b == 0.0


@pytest.mark.parametrize(("loss", "penalty", "intercept"), REGRESS)
def test_every_regression_combination_is_exact(regression_data, loss, penalty, intercept):
    X, y = regression_data
    f = qpsvm.SupportVectorRegression(
        X, y, 1.0, 0.1, loss=loss, penalty=penalty, intercept=intercept
    )
    check_exact_and_rejects_perturbed(f, f.solve(), penalty)


def test_default_keywords_are_todays_soft_margin(cancer):
    """Hinge + L2 + free/none is SoftMarginPrimal itself; the generic route agrees with it."""
    X, y = cancer
    f = qpsvm.SoftMarginPrimal(X, y, 1.0, loss="hinge", penalty="l2", intercept="free")
    assert type(f) is qpsvm.SoftMarginPrimal
    assert type(qpsvm.SoftMarginPrimal(X, y, fit_intercept=False)) is qpsvm.SoftMarginPrimal
    generic = qpsvm.ComposedClassifier(X, y, 1.0)
    assert generic.solve().objective == pytest.approx(f.solve().objective, rel=1e-9)


def test_class_weight_equals_sample_weight(cancer):
    """A class weight multiplies the weight of every sample of its class (both routes)."""
    X, y = cancer
    weights = {0: 2.0, 1: 0.5}
    per_sample = np.where(y == 0, 2.0, 0.5)
    for loss in ("hinge", "squared_hinge"):
        a = qpsvm.SoftMarginPrimal(X, y, loss=loss, class_weight=weights).solve()
        b = qpsvm.SoftMarginPrimal(X, y, loss=loss, sample_weight=per_sample).solve()
        assert a.objective == pytest.approx(b.objective, rel=1e-9)
    balanced = qpsvm.ComposedClassifier(X, y, class_weight="balanced")
    counts = np.bincount(y)
    assert balanced.sample_weight == pytest.approx(len(y) / (2 * counts[y]))


def test_regularized_intercept_is_a_constant_feature(cancer):
    """intercept="regularized" with scaling B is the no-intercept problem on [X, B]."""
    X, y = cancer
    B = 3.0
    reg = classifier(X, y, "squared_hinge", "l2", "regularized", intercept_scaling=B).solve()
    augmented = np.hstack([X, np.full((X.shape[0], 1), B)])
    plain = classifier(augmented, y, "squared_hinge", "l2", "none").solve()
    assert reg.objective == pytest.approx(plain.objective, rel=1e-9)
    assert reg.b == pytest.approx(B * plain.w[-1], rel=1e-6)


@pytest.mark.parametrize("intercept", INTERCEPTS)
def test_a_certificate_expands_each_dual_point_once(cancer, intercept, monkeypatch):
    """Making a dual point feasible, valuing it, taking its Fenchel-Young gaps and bounding its
    value rigorously share one expansion ``sum_i u_i sigma_i x_i`` (each a Dot2 pass over X:
    at 10000 x 1e6 the four were half of the certificate), and the certificate's numbers are
    the solve's."""
    X, y = cancer
    f = classifier(X, y, "squared_hinge", "l2", intercept)
    sol = f.solve()
    expanded: list[bytes] = []

    def counted(expand):
        def expansion(M, v, *args):
            expanded.append(np.asarray(v).tobytes())
            return expand(M, v, *args)

        return expansion

    for module, name in [
        (fenchel, "tdot"),
        (fenchel, "binary_expansion"),
        (rigorous_composed, "binary_expansion"),
    ]:
        monkeypatch.setattr(module, name, counted(getattr(module, name)))
    cert = f.certify(sol)
    assert expanded and len(expanded) == len(set(expanded))
    assert cert.passed
    assert cert.gap == sol.certificate.gap
    assert cert.stationarity == sol.certificate.stationarity


def test_a_kernel_without_gamma_keeps_its_default(cancer):
    """``gamma="scale"`` is a pass over the data (the variance) that only rbf and poly use:
    the linear and precomputed kernels keep the default, whatever the data."""
    X, _ = cancer
    assert make_kernel("linear", X, "scale", 3, 0.0).gamma == 1.0
    assert make_kernel("linear", 10.0 * X, None, 3, 0.0).gamma == 1.0
    scale = 1.0 / (X.shape[1] * X.var())
    assert make_kernel("rbf", X, "scale", 3, 0.0).gamma == pytest.approx(scale)


@pytest.mark.parametrize("B", [1.0, 10.0])
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_linearsvc_l2_is_certified(cancer, loss, B):
    """LinearSVC (liblinear -s 1/-s 3 with -B) at tol 1e-12 is certified against the
    regularised-intercept problem it solves, and the gap matches its true suboptimality
    (``random_state`` fixed: liblinear permutes its coordinates at random)."""
    X, y = cancer
    est = LinearSVC(
        loss=loss, C=1.0, tol=1e-12, max_iter=1_000_000, intercept_scaling=B, random_state=0
    )
    est.fit(X, y)
    f = classifier(X, y, loss, "l2", "regularized", intercept_scaling=B)
    w, b = est.coef_.ravel(), est.intercept_[0]
    optimum = f.solve().objective
    cert = f.certify(est)
    assert_tight(f, cert, w, b, optimum)
    if loss == "squared_hinge":  # liblinear's -s 1 converges here; -s 3 may stop far off
        assert cert.passed, cert
    if B == 1.0:  # judged against a free intercept, the same answer is not optimal
        assert not classifier(X, y, loss, "l2", "free").certify(est).passed


def test_moderately_converged_answers_get_a_tight_gap(cancer, regression_data):
    """For answers at liblinear's default tolerance the gap is within 2x of the true
    suboptimality (measured against the exact optimum)."""
    X, y = cancer
    est = LinearSVC(C=1.0, tol=1e-2, max_iter=1_000_000, random_state=0).fit(X, y)
    f = classifier(X, y, "squared_hinge", "l2", "regularized")
    assert_tight(f, f.certify(est), est.coef_.ravel(), est.intercept_[0], f.solve().objective)
    Xr, yr = regression_data
    svr = LinearSVR(C=1.0, epsilon=0.1, tol=1e-2, max_iter=1_000_000, random_state=0)
    svr.fit(Xr, yr)
    g = qpsvm.SupportVectorRegression(Xr, yr, 1.0, 0.1, intercept="regularized")
    assert_tight(g, g.certify(svr), svr.coef_, svr.intercept_[0], g.solve().objective)


def test_linearsvc_l1_gap_bounds_its_suboptimality(cancer):
    """LinearSVC(penalty="l1") (liblinear -s 5, the bias inside the L1 penalty): the gap bounds
    its true suboptimality; no distance bound (not strongly convex)."""
    X, y = cancer
    est = LinearSVC(penalty="l1", dual=False, C=0.1, tol=1e-12, max_iter=100_000, random_state=0)
    est.fit(X, y)
    f = classifier(X, y, "squared_hinge", "l1", "regularized", C=0.1)
    cert = f.certify(est)
    assert_tight(f, cert, est.coef_.ravel(), est.intercept_[0], f.solve().objective, np.inf)
    assert cert.distance_bound is None


@pytest.mark.parametrize("tol", [1e-2, 1e-3, 1e-4])
def test_l1_gap_is_tight_for_answers_of_any_quality(cancer, tol):
    """LinearSVC(penalty="l1") stopped early: the gap is its true suboptimality to a factor 2.
    The candidate's own multipliers, scaled into ``||v||_inf <= 1``, lose a gap linear in its
    error; the problem's own solution's multipliers (certify's reference) do not."""
    X, y = cancer
    est = LinearSVC(penalty="l1", dual=False, C=0.1, tol=tol, max_iter=100_000, random_state=0)
    est.fit(X, y)
    f = classifier(X, y, "squared_hinge", "l1", "regularized", C=0.1)
    w, b = est.coef_.ravel(), est.intercept_[0]
    cert = f.certify(est)
    assert_tight(f, cert, w, b, f.solve().objective)
    assert f.objective(w, b) - f.solve().objective > 1e-9 * cert.primal_objective  # not optimal
    assert f.certify(est, reference=False).gap >= cert.gap


@pytest.mark.parametrize("loss", ["epsilon_insensitive", "squared_epsilon_insensitive"])
def test_linearsvr_gap_is_tight(regression_data, loss):
    """LinearSVR (liblinear -s 12/-s 13 with -B) at tol 1e-12: the gap is its true
    suboptimality to a factor 2 (liblinear's dual solver may stop at its iteration limit)."""
    X, y = regression_data
    est = LinearSVR(C=1.0, epsilon=0.1, loss=loss, tol=1e-12, max_iter=100_000, random_state=0)
    est.fit(X, y)
    f = qpsvm.SupportVectorRegression(X, y, 1.0, 0.1, loss=loss, intercept="regularized")
    assert_tight(f, f.certify(est), est.coef_, est.intercept_[0], f.solve().objective)


def test_svr_is_certified_against_the_free_intercept(regression_data):
    """libsvm's epsilon-SVR (free intercept) at tol 1e-10, with and without its multipliers."""
    X, y = regression_data
    est = SVR(C=1.0, epsilon=0.1, kernel="linear", tol=1e-10).fit(X, y)
    f = qpsvm.SupportVectorRegression(X, y, 1.0, 0.1)
    optimum = f.solve().objective
    w, b = est.coef_.ravel(), est.intercept_[0]
    assert_tight(f, f.certify(est), w, b, optimum)
    assert_tight(f, f.certify(w=w, b=b), w, b, optimum)


def test_official_liblinear_bindings(cancer):
    """The official LIBLINEAR bindings (the first label met is +1) at -e 1e-10: -s 1, -s 2,
    -s 3 (with -B 1) judged against the problem each solves, with a tight gap; -s 5 (L1)
    with a valid one."""
    liblinear = pytest.importorskip("liblinear.liblinearutil")
    X, y = cancer
    rows = [dict(enumerate(map(float, r), start=1)) for r in X]
    for options, loss, penalty in [
        ("-s 1", "squared_hinge", "l2"),
        ("-s 2", "squared_hinge", "l2"),
        ("-s 3", "hinge", "l2"),
        ("-s 5", "squared_hinge", "l1"),
    ]:
        model = liblinear.train(list(map(float, y)), rows, f"{options} -c 0.5 -B 1 -e 1e-10 -q")
        w, b = model.get_decfun()
        sign = 1.0 if model.get_labels()[0] == 1 else -1.0  # qpsvm: the larger label is +1
        w, b = sign * np.array(w), sign * b
        f = classifier(X, y, loss, penalty, "regularized", C=0.5)
        factor = 2.0 if penalty == "l2" else np.inf
        assert_tight(f, f.certify(w=w, b=b), w, b, f.solve().objective, factor)


def test_official_libsvm_svr(regression_data):
    """libsvm -s 3 (epsilon-SVR, linear kernel): w = sum_i sv_coef_i x_i, b = -rho."""
    libsvm = pytest.importorskip("libsvm.svmutil")
    X, y = regression_data
    rows = [dict(enumerate(map(float, r), start=1)) for r in X]
    model = libsvm.svm_train(list(map(float, y)), rows, "-s 3 -t 0 -c 1 -p 0.1 -e 1e-10 -q")
    u = np.zeros(X.shape[0])
    u[np.array(model.get_sv_indices()) - 1] = np.array(model.get_sv_coef()).ravel()
    f = qpsvm.SupportVectorRegression(X, y, 1.0, 0.1)
    w, b = X.T @ u, -model.rho[0]
    assert_tight(f, f.certify(w=w, b=b), w, b, f.solve().objective)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    combination=st.sampled_from(CLASSIFY + REGRESS),
    C=st.sampled_from([0.01, 1.0, 100.0]),
)
@example(seed=0, combination=("squared_hinge", "l1", "free"), C=1.0)
def test_dual_bound_never_exceeds_the_optimum(seed, combination, C):
    """For any candidate, the certificate's dual value is a lower bound of the exact optimum
    (weak duality) and its primal value the candidate's objective."""
    loss, penalty, intercept = combination
    rng = np.random.default_rng(seed)
    n, d = 12, 3
    X = rng.normal(size=(n, d))
    if LOSSES[loss].regression:
        f = qpsvm.SupportVectorRegression(
            X, rng.normal(size=n), C, 0.2, loss=loss, penalty=penalty, intercept=intercept
        )
    else:
        y = np.array([0, 1] * (n // 2))
        f = classifier(X, y, loss, penalty, intercept, C=C, intercept_scaling=0.5)
    best = f.solve()
    w = rng.normal(size=d)
    b = 0.0 if intercept == "none" else float(rng.normal())
    cert = f.certify(w=w, b=b)
    assert cert.primal_objective == pytest.approx(f.objective(w, b), rel=1e-12)
    if cert.rigorous and best.certificate.rigorous:
        # both enclose P*: the candidate's lower end cannot pass the optimum's upper end
        assert cert.lower <= best.certificate.upper
    else:  # the elastic net's certificate is not rigorous yet: within the optimum's tolerance
        assert cert.dual_objective <= best.objective * (1 + 1e-9) + 1e-12
    assert cert.gap >= f.objective(w, b) - best.objective - 1e-9 * max(1.0, best.objective)


def test_bad_input_gives_typed_errors(cancer, regression_data):
    X, y = cancer
    Xr, yr = regression_data
    with pytest.raises(InvalidInputError, match="loss"):
        qpsvm.SoftMarginPrimal(X, y, loss="logistic")
    with pytest.raises(InvalidInputError, match="loss"):
        qpsvm.SoftMarginPrimal(X, y, loss="epsilon_insensitive")
    with pytest.raises(InvalidInputError, match="penalty"):
        qpsvm.SoftMarginPrimal(X, y, penalty="l3")
    with pytest.raises(InvalidInputError, match="intercept"):
        qpsvm.SoftMarginPrimal(X, y, intercept="maybe")
    with pytest.raises(InvalidInputError, match="contradicts"):
        qpsvm.SoftMarginPrimal(X, y, fit_intercept=False, intercept="regularized")
    with pytest.raises(InvalidInputError, match="l1_ratio"):
        qpsvm.SoftMarginPrimal(X, y, penalty="l1_l2", l1_ratio=1.0)
    with pytest.raises(InvalidInputError, match="intercept_scaling"):
        qpsvm.SoftMarginPrimal(X, y, intercept="regularized", intercept_scaling=0.0)
    with pytest.raises(InvalidInputError, match="class_weight"):
        qpsvm.SoftMarginPrimal(X, y, class_weight={7: 1.0})
    with pytest.raises(InvalidInputError, match="class_weight"):
        qpsvm.SoftMarginPrimal(X, y, loss="squared_hinge", class_weight="even")
    with pytest.raises(InvalidInputError, match="epsilon"):
        qpsvm.SupportVectorRegression(Xr, yr, epsilon=-0.1)
    with pytest.raises(InvalidInputError, match="loss"):
        qpsvm.SupportVectorRegression(Xr, yr, loss="hinge")
    f = qpsvm.SupportVectorRegression(Xr, yr, intercept="none")
    with pytest.raises(InvalidInputError, match="no intercept"):
        f.certify(w=np.zeros(Xr.shape[1]), b=1.0)
    with pytest.raises(InvalidTypeError):
        f.certify(LinearSVC().fit(Xr, yr > 0))
    l1 = qpsvm.SoftMarginPrimal(X, y, penalty="l1")
    with pytest.raises(InvalidInputError, match="pass w"):
        l1.certify(alpha=np.zeros(X.shape[0]))


@pytest.fixture(scope="module")
def small(cancer):
    X, y = cancer
    return X[:150], y[:150]


@pytest.mark.parametrize(("loss", "intercept"), list(itertools.product(LOSSES, INTERCEPTS)))
def test_kernel_dual_equals_the_primal(small, loss, intercept):
    """The kernel dual on the Gram matrix X X^T has the primal's optimum (strong duality), for
    every loss and intercept mode; a perturbed alpha is rejected."""
    X, y = small
    if LOSSES[loss].regression:
        target = X[:, 0]
        X = X[:, 1:]

        def make(data, kernel):
            return qpsvm.SupportVectorRegression(
                data, target, 1.0, 0.1, loss=loss, intercept=intercept, kernel=kernel
            )
    else:

        def make(data, kernel):
            return qpsvm.SoftMarginDual(data, y, 1.0, kernel, loss=loss, intercept=intercept)

    if loss == "hinge" and intercept != "regularized":
        pytest.skip("today's SoftMarginDual: tested in test_binary")
    primal = make(X, "linear").solve()
    f = make(X @ X.T, "precomputed")
    sol = f.solve()
    assert sol.certificate.passed
    assert sol.objective == pytest.approx(primal.objective, rel=1e-8)
    cert = f.certify(alpha=sol.alpha * 1.05, b=sol.b)
    assert not cert.passed
    assert cert.gap >= f.objective_alpha(sol.alpha * 1.05, sol.b) - sol.objective - 1e-9


def test_rbf_svr_is_certified(small):
    """libsvm's epsilon-SVR with the RBF kernel (free intercept), read from scikit-learn."""
    X, _ = small
    Xr, yr = X[:, 1:], X[:, 0]
    est = SVR(C=1.0, epsilon=0.1, kernel="rbf", gamma=0.05, tol=1e-10).fit(Xr, yr)
    f = qpsvm.SupportVectorRegression(Xr, yr, 1.0, 0.1, kernel="rbf", gamma=0.05)
    sol = f.solve()
    assert sol.certificate.passed
    cert = f.certify(est)
    true = f.objective_alpha(cert_alpha(est, f.n_samples), est.intercept_[0]) - sol.objective
    assert true - 1e-9 * sol.objective <= cert.gap <= 2.0 * true + 1e-9 * sol.objective
    wrong = qpsvm.SupportVectorRegression(Xr, yr, 1.0, 0.1, kernel="rbf")
    with pytest.raises(InvalidInputError, match="gamma"):
        wrong.certify(est)


def cert_alpha(est, n):
    u = np.zeros(n)
    u[est.support_] = est.dual_coef_.ravel()
    return u


def test_squared_hinge_rbf_dual_is_certified(small):
    X, y = small
    f = qpsvm.SoftMarginDual(X, y, 1.0, "rbf", loss="squared_hinge", intercept="regularized")
    sol = f.solve()
    assert sol.certificate.passed
    assert f.predict(X[:5], sol).shape == (5,)


def test_l1_with_a_kernel_is_refused(small):
    X, _ = small
    with pytest.raises(InvalidInputError, match="kernel"):
        qpsvm.SupportVectorRegression(X, X[:, 0], penalty="l1", kernel="rbf")


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("penalty", ["l2", "l1", "l1_l2"])
def test_penalty_with_the_intercept_apart_is_that_of_the_appended_vector(
    penalty, compiled, monkeypatch
):
    # R((w, b / B)) with the regularised intercept's coordinate passed apart (Intercept.tail)
    # goes on with the compensated sums over it: the float of R of the appended vector, with
    # the compiled sums and the Python ones, without a copy of w; terms of both signs and
    # magnitudes 1e-8 to 1e8, so the compensation matters
    from qpsvm import _numerics
    from qpsvm.formulations.pieces.intercepts import make_intercept
    from qpsvm.formulations.pieces.penalties import make_penalty

    monkeypatch.setattr(_numerics, "uncompiled", lambda *args: not compiled)
    rng = np.random.default_rng(5)
    w = rng.normal(size=1000) * 10.0 ** rng.integers(-8, 9, size=1000)
    R = make_penalty(penalty, 0.3)
    for b in (0.0, -3.7e7, 2.5e-9, 1.0 / 3.0):
        intercept = make_intercept("regularized", 3.0)
        augmented = intercept.augment(w, b)
        assert augmented.size == w.size + 1
        assert R.value(w, intercept.tail(b)) == R.value(augmented)
        v = rng.normal(size=w.size + 1)
        tail = [t * float(v[-1]) for t in intercept.tail(b)]
        assert _numerics.fsum_dot(w, v[:-1], tail) == _numerics.fsum_dot(augmented, v)
    # without a regularised intercept, nothing after w
    assert make_intercept("free").tail(2.0) == ()
    assert R.value(w, make_intercept("none").tail(0.0)) == R.value(w)


def test_l2_penalty_bound_sums_the_squares_in_its_loop():
    # penalty_upper's L2 term is Sum2 of the squares formed in the compiled loop (fsum_dot),
    # the float of Sum2 over the array of squares; it bounds the exact R((w, e)) from above
    from fractions import Fraction

    from qpsvm._numerics import fsum_dot
    from qpsvm.formulations.pieces.penalties import make_penalty
    from qpsvm.verify.rigorous import penalty_upper, sum2_upper, upper_sum

    rng = np.random.default_rng(11)
    w = rng.normal(size=5000) * 10.0 ** rng.integers(-6, 7, size=5000)
    extra = 0.37
    bound = penalty_upper(make_penalty("l2"), w, extra)
    assert sum2_upper(fsum_dot(w, w), w.size) == upper_sum(w * w)
    exact = sum(Fraction(x) ** 2 for x in w.tolist()) + Fraction(extra) ** 2
    assert Fraction(bound) >= exact / 2
