"""The working-set engine: the same certified optimum as the full QP, at any start, on any data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import random_problem
from hypothesis import given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm.formulations.binary import SoftMarginPrimal
from qpsvm.solution import Candidate
from qpsvm.solvers.warm_start import Start, dual_coordinate_descent, smoothed_newton
from qpsvm.solvers.working_set import BinarySets, run_working_set, start_binary
from qpsvm.verify.certificate import Certificate

EXACT = 1e-9


def assert_same_optimum(ws: qpsvm.Solution, full: qpsvm.Solution) -> None:
    """Both certified; objectives equal to 1e-9 relative; ``||w - w'|| <= sqrt(2 gap) +
    sqrt(2 gap')`` (each is within its distance bound of the unique ``w*``), where a gap is
    only resolved to about ``1e-15 |P|`` in floating point."""
    assert ws.certificate.passed and full.certificate.passed
    assert ws.method == "working_set" and ws.status == "optimal"
    assert ws.objective == pytest.approx(full.objective, rel=EXACT, abs=EXACT)
    if ws.w is not None:
        resolution = math.sqrt(2e-15 * max(1.0, abs(full.objective)))
        bound = ws.certificate.distance_bound + full.certificate.distance_bound
        assert np.linalg.norm(ws.w - full.w) <= bound + 2 * resolution


def overlapping(n: int = 300, d: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    return random_problem(seed, n=n, d=d, shift=0.5)


def bad_start(f: qpsvm.Formulation) -> Start:
    """``w = 0``: every sample is inside its margin, and a tiny band puts none of them into the
    working set, so the engine has to discover the support sets round after round."""
    return Start(Candidate(w=np.zeros(f.n_features), b=0.0), 1e-12, "zero", 0)


@pytest.mark.parametrize("C", [0.01, 1.0, 100.0])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_primal_equals_full_qp(C, fit_intercept):
    X, y = overlapping()
    f = qpsvm.SoftMarginPrimal(X, y, C=C, fit_intercept=fit_intercept)
    assert_same_optimum(f.solve(method="working_set"), f.solve(method="qp"))


def test_weights_and_margins(cancer):
    # weighted slacks and per-sample margins change the optimum; both methods solve the same one
    X, y = cancer
    rng = np.random.default_rng(1)
    s, m = rng.uniform(0.0, 3.0, len(y)), rng.uniform(0.5, 2.0, len(y))
    f = qpsvm.SoftMarginPrimal(X, y, C=0.3, sample_weight=s, margin=m)
    assert_same_optimum(f.solve(method="working_set"), f.solve(method="qp"))


def test_bad_start_needs_rounds_and_still_matches():
    X, y = overlapping(seed=3)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    sol = f.solve(method="working_set", start=bad_start(f))
    assert sol.info["rounds"] > 1 and len(sol.history) == sol.info["rounds"]
    assert_same_optimum(sol, f.solve(method="qp"))


def test_hard_margin(blobs):
    X, y = blobs
    f = qpsvm.HardMargin(X, y)
    assert_same_optimum(f.solve(method="working_set"), f.solve(method="qp"))
    # from w = 0 every constraint is violated and W has to be grown by cutting planes
    assert_same_optimum(f.solve(method="working_set", start=bad_start(f)), f.solve(method="qp"))


def test_hard_margin_not_separable():
    # a subset of the constraints is infeasible only if all of them are
    X, y = overlapping(n=100)
    with pytest.raises(qpsvm.NotSeparableError):
        qpsvm.HardMargin(X, y).solve(method="working_set")


@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly"])
def test_dual_kernels(kernel):
    X, y = overlapping(n=200, d=3, seed=4)
    f = qpsvm.SoftMarginDual(X, y, C=2.0, kernel=kernel)
    assert_same_optimum(f.solve(method="working_set"), f.solve(method="qp"))


def test_dual_bad_start():
    X, y = overlapping(n=150, d=3, seed=5)
    f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel="rbf")
    start = Start(Candidate(w=None, b=0.0, alpha=np.zeros(f.n_samples)), 1e-12, "zero", 0)
    sol = f.solve(method="working_set", start=start)
    assert sol.info["rounds"] > 1
    assert_same_optimum(sol, f.solve(method="qp"))


def test_sparse_wide_data_uses_coordinate_descent():
    # more features than the Newton start allows: dual coordinate descent starts the engine
    import scipy.sparse as sp

    rng = np.random.default_rng(2)
    X = sp.random(200, 1500, density=0.01, format="csr", random_state=3)
    y = np.where(rng.random(200) < 0.5, -1, 1)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    assert start_binary(f).method == "dual_coordinate_descent"
    assert_same_optimum(f.solve(method="working_set"), f.solve(method="qp"))


@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    C=st.floats(1e-3, 1e3),
    intercept=st.booleans(),
    width=st.floats(1e-6, 20.0),
)
def test_random_problems_match_full_qp(seed, C, intercept, width):
    X, y = random_problem(seed, n=60, d=4)
    f = qpsvm.SoftMarginPrimal(X, y, C=C, fit_intercept=intercept)
    assert_same_optimum(f.solve(method="working_set", width=width), f.solve(method="qp"))


def test_ranking_equals_full_qp():
    # the ranking SVM is a binary SVM without intercept on pair differences: the same sets apply
    rng = np.random.default_rng(14)
    X = rng.normal(size=(60, 4))
    relevance = np.clip(np.round(X @ [1.0, -0.5, 0.3, 0.0] + rng.normal(size=60)), -1, 1)
    f = qpsvm.RankingSVM(X, y=relevance, groups=np.repeat(np.arange(6), 10), C=0.5)
    assert_same_optimum(f.solve(method="working_set"), f.solve(method="qp"))


@pytest.mark.parametrize("variant", ["crammer_singer", "weston_watkins"])
@pytest.mark.parametrize("C", [0.05, 5.0])
def test_multiclass_equals_full_qp(variant, C):
    rng = np.random.default_rng(15)
    y = rng.integers(0, 4, 150)
    X = rng.normal(size=(150, 3)) + 0.8 * np.eye(4)[y][:, :3]
    f = qpsvm.MulticlassSVM(X, y, C=C, variant=variant)
    sol, full = f.solve(method="working_set"), f.solve(method="qp")
    assert_same_optimum(sol, full)
    assert sol.w.shape == (4, 3) and sol.alpha.shape == (150, 4)


@pytest.mark.parametrize("variant", ["crammer_singer", "weston_watkins"])
def test_multiclass_bad_start(variant):
    # a random W puts most examples confidently in the wrong status
    rng = np.random.default_rng(16)
    y = rng.integers(0, 3, 90)
    X = rng.normal(size=(90, 2)) + np.eye(3)[y][:, :2]
    f = qpsvm.MulticlassSVM(X, y, C=1.0, variant=variant)
    start = Start(Candidate(w=3.0 * rng.normal(size=(3, 2)), b=0.0), 1e-12, "random", 0)
    sol = f.solve(method="working_set", start=start)
    assert sol.info["rounds"] > 1
    assert_same_optimum(sol, f.solve(method="qp"))


# ----------------------------------------------------------------------------- degenerate data
def test_duplicates():
    # every point twice, and some twice with opposite labels (those must end inside the margin)
    X, y = overlapping(n=80, d=3, seed=6)
    X2, y2 = np.vstack([X, X, X[:10]]), np.concatenate([y, y, -y[:10]])
    f = qpsvm.SoftMarginPrimal(X2, y2, C=1.0)
    assert_same_optimum(f.solve(method="working_set"), f.solve(method="qp"))


def test_all_points_on_the_margin():
    # the square's corners +-1 (label = sign of the first coordinate) all lie on the margin of
    # w = (1, 0), b = 0 (1/2 ||w||^2 = 1/2): every constraint is active at the optimum
    X = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]])
    y = np.array([1, 1, -1, -1])
    for f in (qpsvm.HardMargin(X, y), qpsvm.SoftMarginPrimal(X, y, C=10.0)):
        sol = f.solve(method="working_set")
        assert sol.certificate.passed
        np.testing.assert_allclose(sol.w, [1.0, 0.0], atol=1e-8)
        assert sol.objective == pytest.approx(0.5, rel=EXACT)


@pytest.mark.parametrize("C", [1e-8, 1e8])
def test_extreme_C(C):
    X, y = overlapping(n=120, d=3, seed=7)
    f = qpsvm.SoftMarginPrimal(X, y, C=C)
    assert_same_optimum(f.solve(method="working_set"), f.solve(method="qp"))


def test_unbalanced_classes_keep_the_restricted_problem_bounded():
    # 95% negatives and C tiny: nearly every sample is fixed at alpha = C s_i, and W must hold
    # enough positives to balance them (otherwise the restricted primal is unbounded in b)
    rng = np.random.default_rng(8)
    y = np.where(rng.random(400) < 0.05, 1, -1)
    X = rng.normal(size=(400, 3)) + 0.3 * y[:, None]
    f = qpsvm.SoftMarginPrimal(X, y, C=1e-3)
    assert_same_optimum(f.solve(method="working_set"), f.solve(method="qp"))


def test_round_cap_is_a_clear_error():
    X, y = overlapping()
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    with pytest.raises(qpsvm.InaccurateSolutionError, match="max_rounds=1"):
        f.solve(method="working_set", start=bad_start(f), max_rounds=1)


# ---------------------------------------------------------------------- never uncertified
class _Refuted(SoftMarginPrimal):
    """A formulation whose certifier refutes every candidate."""

    certifier = "test_working_set:refute"


def refute(f, cand, tol=EXACT):
    return Certificate(1.0, 0.0, 0.0, 0.0, 0.0, 0.0, tol=tol, formulation="refuted")


@pytest.mark.parametrize("refine", [True, False])
def test_never_returns_uncertified(refine):
    X, y = overlapping(n=50)
    with pytest.raises(qpsvm.UncertifiedSolutionError, match="relative gap"):
        _Refuted(X, y).solve(method="working_set", refine=refine)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), C=st.floats(1e-2, 1e2), tol=st.floats(1e-12, 1e-6))
def test_returned_answers_pass_an_independent_certificate(seed, C, tol):
    X, y = random_problem(seed, n=50, d=3)
    f = qpsvm.SoftMarginPrimal(X, y, C=C)
    try:
        sol = f.solve(method="working_set", tol=tol)
    except qpsvm.UncertifiedSolutionError:
        return  # refusing is allowed; returning a bad point is not
    assert f.certify(sol, tol=tol).passed


# ------------------------------------------------------------------------- options and defaults
@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("max_rounds", 0, qpsvm.InvalidInputError),
        ("max_rounds", 1.5, qpsvm.InvalidTypeError),
        ("width", -1.0, qpsvm.InvalidInputError),
    ],
)
def test_bad_options(option, value, error):
    X, y = overlapping(n=30)
    with pytest.raises(error, match=option):
        qpsvm.SoftMarginPrimal(X, y).solve(method="working_set", **{option: value})


def test_default_method_switches_with_size():
    X, y = overlapping(n=1001, d=2)
    assert qpsvm.SoftMarginPrimal(X[:1000], y[:1000]).default_method() == "qp"
    assert qpsvm.SoftMarginPrimal(X, y).default_method() == "working_set"
    # with the rbf kernel the working set (its certified SMO start) is the default at every
    # size; another kernel's full QP stays the default up to 200 samples
    assert qpsvm.SoftMarginDual(X[:5], y[:5], kernel="rbf").default_method() == "working_set"
    assert qpsvm.SoftMarginDual(X[:200], y[:200], kernel="rbf").default_method() == "working_set"
    assert qpsvm.SoftMarginDual(X[:200], y[:200], kernel="poly").default_method() == "qp"
    assert qpsvm.SoftMarginDual(X[:201], y[:201], kernel="poly").default_method() == "working_set"


def test_large_problem_solves_by_default():
    X, y = overlapping(n=3000, d=5, seed=9)
    sol = qpsvm.SoftMarginPrimal(X, y, C=1.0).solve()
    assert sol.method == "working_set" and sol.certificate.passed
    assert sol.info["working"] < 3000  # the QP saw a fraction of the constraints


# ------------------------------------------------------------------------------ starting points
def test_smoothed_newton_is_close():
    # h_mu <= hinge <= h_mu + mu/2, so the minimiser of F_mu is within C sum_i s_i mu / 2 of the
    # optimum; Newton stops its last level once a step moves no margin by more than mu, so the
    # start is allowed twice that
    X, y = overlapping(n=200, seed=10)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    start = smoothed_newton(f, mu_final=0.05)
    optimum = f.solve(method="qp").objective
    gap = f.objective(start.candidate.w, start.candidate.b) - optimum
    assert -1e-9 <= gap <= f.C * f.sample_weight.sum() * start.band
    assert start.band == pytest.approx(0.05) and start.method == "smoothed_newton"
    assert np.all((start.candidate.alpha >= 0) & (start.candidate.alpha <= f.upper))


def test_dual_coordinate_descent_converges_without_intercept():
    # without an intercept DCD solves exactly our dual, so at a tight tolerance its w and alpha
    # bracket the optimum: D(alpha) <= P* <= P(w), and the gap closes
    X, y = overlapping(n=200, seed=11)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=False)
    start = dual_coordinate_descent(f, tol=1e-8, max_epochs=5000)
    cand = start.candidate
    np.testing.assert_allclose(cand.w, f.expansion(cand.alpha), atol=1e-10)
    optimum = f.solve(method="qp").objective
    lower, upper = f.dual_objective(cand.alpha), f.objective(cand.w)
    assert lower <= optimum + 1e-9 and optimum <= upper + 1e-9
    assert upper - lower <= 1e-6 * optimum


def test_dual_coordinate_descent_is_seeded():
    X, y = overlapping(n=100, seed=12)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    a, b = (dual_coordinate_descent(f, max_epochs=3, seed=s).candidate for s in (4, 4))
    np.testing.assert_array_equal(a.alpha, b.alpha)


def test_margin_sets_statuses():
    # a start at the optimum: the sets are those of its multipliers (up to the band)
    X, y = overlapping(n=200, seed=13)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    opt = f.solve(method="qp")
    sets = BinarySets(f, Start(Candidate(w=opt.w, b=opt.b), 1e-6, "optimum", 0), width=1.0)
    free = (opt.alpha > 1e-6) & (opt.alpha < f.upper - 1e-6)
    assert np.all(sets.work[free]) and not np.any(sets.bound & sets.work)
    assert np.all(opt.alpha[sets.bound] == pytest.approx(f.C))
    sol = run_working_set(sets)
    assert sol.info["rounds"] == 1 and math.isclose(sol.objective, opt.objective, rel_tol=EXACT)
