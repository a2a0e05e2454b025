"""The multiclass KKT refinement, the exact start it gives the working set, and the shrinking
dual coordinate descents, each checked against the exact rational optimum
(``method="exact"``) or an identity of the math."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm.solvers import working_set
from qpsvm.solvers.backends import backend_order, solve_model
from qpsvm.solvers.refine import refine_multiclass
from qpsvm.solvers.warm_start import multiclass_dual
from qpsvm.solvers.working_set import kkt_start, tightened_kkt_start
from qpsvm.verify import multiclass as multiclass_verify
from qpsvm.verify.certificate import PROVEN, best_dual_point
from tests.conftest import assert_encloses_and_tight

VARIANTS = ("crammer_singer", "weston_watkins")
#: The intercept modes the refinement serves (the free intercept has none).
INTERCEPTS = ("none", "regularized")


def problem(
    seed: int,
    variant: str,
    intercept: str = "none",
    weighted: bool = False,
    n: int = 36,
    C: float = 0.9,
):
    """Overlapping classes (4 of them, d = 3), optional per-example weights."""
    rng = np.random.default_rng(seed)
    k, d = 4, 3
    y = np.arange(n) % k
    X = rng.normal(size=(n, d)) + rng.normal(scale=1.2, size=(k, d))[y]
    weights = rng.uniform(0.2, 2.0, n) if weighted else None
    return qpsvm.MulticlassSVM(
        X, y, C=C, variant=variant, sample_weight=weights, intercept=intercept
    )


def exact_weights(f):
    """``W*`` of the exact rational optimum (rounded), shape ``(n_classes, n_features)`` on the
    problem's data (with the intercepts' column when there is one), and ``P*``."""
    opt = f.solve(method="exact").info["exact"]
    return opt.w_float.reshape(f.n_classes, -1), opt.objective


def interior_point(f):
    """The full QP's answer as Clarabel leaves it (about 1e-10 from the optimum)."""
    model = f.build()
    solve_model(model, backend_order(None), {}, True)
    return f.read_model(model)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("intercept", INTERCEPTS)
@pytest.mark.parametrize("weighted", [False, True])
def test_refinement_of_an_interior_point_is_the_exact_optimum(variant, intercept, weighted):
    # the KKT equations on the optimum's sets have the optimum as their solution: the refined
    # W is the exact W* (unique, the objective is strongly convex in W) to round-off, and its
    # certificate encloses P* with a gap within twice the true suboptimality
    f = problem(3, variant, intercept, weighted)
    W_star, P_star = exact_weights(f)
    refined = refine_multiclass(f, interior_point(f))
    assert refined
    best = min(refined, key=lambda c: f.objective(c.w))
    np.testing.assert_allclose(best.w, W_star, atol=1e-9)
    cert = f.certify(best)
    assert cert.passed
    assert_encloses_and_tight(cert, f.objective(best.w), P_star)


@pytest.mark.parametrize("variant", VARIANTS)
def test_refined_multipliers_solve_the_kkt_equations(variant):
    # stationarity W = A^T X by construction, and the multipliers in their dual feasible set
    # (the box, or the Crammer-Singer budget) to round-off at the optimum's sets
    f = problem(4, variant, weighted=True)
    best = min(refine_multiclass(f, interior_point(f)), key=lambda c: f.objective(c.w))
    np.testing.assert_allclose(best.w, f.expansion(best.alpha), atol=1e-12)
    assert f.dual_infeasibility(best.alpha) <= 1e-9
    # strong duality at the optimum: D(alpha) = P(W)
    assert f.dual_objective(best.alpha) == pytest.approx(f.objective(best.w), rel=1e-11)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"intercept": "free"},
        {"loss": "squared_hinge"},
        {"penalty": "l1"},
    ],
)
def test_no_refinement_outside_the_hinge_l2_without_free_intercept(kwargs):
    # the equations assume alpha = C s on violated constraints and W = A^T X on every column
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 2)), np.arange(20) % 3
    f = qpsvm.MulticlassSVM(X, y, **kwargs)
    cand = qpsvm.solution.Candidate(w=np.zeros((3, f.n_features)), b=0.0, alpha=None)
    assert refine_multiclass(f, cand) == []


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("intercept", INTERCEPTS)
def test_exact_start_when_given_is_the_optimum(variant, intercept):
    # the start marked exact claims the optimum to round-off: it must be W* (the certificate
    # then returns it without a restricted QP)
    f = problem(5, variant, intercept, weighted=True, n=60)
    start = kkt_start(f, multiclass_dual(f, tol=1e-6, max_epochs=100_000))
    assert start is not None and start.exact
    np.testing.assert_allclose(start.candidate.w, exact_weights(f)[0], atol=1e-9)


def test_no_exact_start_from_a_start_that_did_not_converge():
    # the dual coordinate descent stopped by its epochs, not its tolerance: its sets are not
    # trusted (band above the default tolerance), and the restricted QPs decide
    f = problem(6, "weston_watkins", n=60)
    assert kkt_start(f, multiclass_dual(f, max_epochs=1)) is None


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    variant=st.sampled_from(VARIANTS),
    intercept=st.sampled_from(INTERCEPTS),
    weighted=st.booleans(),
    C=st.sampled_from([0.05, 1.0, 20.0]),
)
@example(seed=0, variant="crammer_singer", intercept="none", weighted=False, C=20.0)
def test_default_solve_is_the_exact_optimum(seed, variant, intercept, weighted, C):
    # whichever way the working set ends (the exact start or the restricted QPs, polished by
    # the refinement), the answer is W* and its certificate encloses P*
    f = problem(seed, variant, intercept, weighted, n=24, C=C)
    sol = f.solve()
    assert sol.method == "working_set"
    W_star, P_star = exact_weights(f)
    W = f.joint_weights(sol.w, sol.b)
    assert np.linalg.norm(W - W_star) <= sol.certificate.distance_bound + 1e-9
    assert_encloses_and_tight(sol.certificate, sol.objective, P_star)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("variant", VARIANTS)
def test_shrinking_descent_reaches_the_exact_optimum(seed, variant):
    # most examples are beyond every margin and get shrunk (Crammer-Singer: class by class,
    # the true class too when its multiplier sits at C s_i); run to a tight tolerance, the
    # descent still ends at the optimum: D(alpha) = P* (strong duality, P* exact), with
    # W = A^T X kept through its steps and alpha in its feasible set
    f = problem(seed, variant, weighted=True, n=200)
    start = multiclass_dual(f, tol=1e-10, max_epochs=1_000_000)
    W, alpha = start.candidate.w, start.candidate.alpha
    np.testing.assert_allclose(W, f.expansion(alpha), atol=1e-10)
    assert start.band == 1e-10
    assert np.all(alpha[f.mask] >= 0.0) and np.all(alpha[~f.mask] == 0.0)
    spent = alpha.sum(axis=1)[:, None] if variant == "crammer_singer" else alpha
    assert np.all(spent <= f.upper[:, None] * (1.0 + 1e-12))
    optimum = float(exact_weights(f)[1])
    assert f.dual_objective(alpha) == pytest.approx(optimum, rel=1e-9)


def test_dual_point_search_stops_once_the_tolerance_is_proven():
    # points of D = 1, 5, 9.6, 9.9 against P = 10, tol 0.1: the gap 0.4 of the third is below
    # PROVEN * tol * P = 0.5, so the search stops there and leaves the fourth in the iterator;
    # searched on from the third (its value given), it ends at the best point
    values = {1: 1.0, 2: 5.0, 3: 9.6, 4: 9.9}
    points = iter([np.array([v]) for v in values])
    value = lambda a: values[int(a[0])]  # noqa: E731
    start = np.array([0.0])
    alpha, dual, early = best_dual_point(value, points, start, 10.0, 0.1, enough=PROVEN)
    assert (alpha[0], dual, early) == (3, 9.6, True)
    alpha, dual, early = best_dual_point(value, points, alpha, 10.0, 0.1, dual=dual)
    assert (alpha[0], dual, early) == (4, 9.9, False)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), variant=st.sampled_from(VARIANTS))
def test_gap_encloses_and_is_tight_for_candidates_of_any_quality(seed, variant):
    # the search for a dual point stops once the candidate passes (gap below PROVEN * tol),
    # else it runs through every point: for candidates on the segment from W* to a rough
    # start, from far below the tolerance to far above it, [lower, upper] holds the exact P*,
    # the gap is within twice the exact suboptimality (or below the tolerance), and the
    # candidate passes exactly when its gap is below tol
    f = problem(seed, variant, weighted=True, n=30, C=2.0)
    W_star, P_star = exact_weights(f)
    rough = multiclass_dual(f, tol=0.5, max_epochs=3).candidate.w
    passed = []
    for t in (1e-11, 1e-10, 1e-9, 1e-8, 1e-6, 1e-4, 1.0):
        W = W_star + t * (rough - W_star)
        cert = f.certify(w=W)
        assert_encloses_and_tight(cert, f.objective(W), P_star)
        assert cert.passed == (cert.relative_gap <= cert.tol)
        passed.append(cert.passed)
    assert passed[0] and not passed[-1]  # the segment crosses the tolerance


@pytest.mark.parametrize(("seed", "variant"), [(30, "crammer_singer"), (8, "weston_watkins")])
def test_descent_continues_from_where_it_stopped(seed, variant):
    # continued at its own tolerance, a converged descent stops after its checking passes, its
    # steps never lowering the dual (each is an exact minimisation over its coordinates; the
    # slack allows the float evaluation's rounding); continued at a tighter one it converges
    # (Crammer-Singer's label multiplier is rebuilt from the others: left a rounding below its
    # bound, the descent counted a violation of 1.3 it never mended and ran out of epochs), and
    # run on to 1e-10 it ends at the exact optimum, D(alpha) = P*
    f = problem(seed, variant, weighted=True, n=60)
    start = multiclass_dual(f)
    w, alpha = start.candidate.w.copy(), start.candidate.alpha.copy()
    same = multiclass_dual(f, tol=start.band, warm=start.candidate)
    assert same.iterations <= 3 and same.band <= start.band
    before = f.dual_objective(alpha)
    assert f.dual_objective(same.candidate.alpha) >= before - 1e-12 * abs(before)
    tighter = multiclass_dual(f, tol=start.band / 10, max_epochs=10_000, warm=start.candidate)
    assert tighter.band == start.band / 10
    np.testing.assert_array_equal(start.candidate.w, w)  # the warm point is left as it was
    np.testing.assert_array_equal(start.candidate.alpha, alpha)
    tight = multiclass_dual(f, tol=1e-10, max_epochs=1_000_000, warm=tighter.candidate)
    optimum = float(exact_weights(f)[1])
    assert f.dual_objective(tight.candidate.alpha) == pytest.approx(optimum, rel=1e-9)


@pytest.mark.parametrize(("seed", "variant"), [(3, "weston_watkins"), (18, "crammer_singer")])
def test_tightened_descent_gives_the_exact_start(seed, variant):
    # the default tolerance's sets miss the optimum's, so the exact start fails there; the
    # descent continued at tighter tolerances finds them, and the exact start is W*: the solve
    # then returns it without a restricted QP
    f = problem(seed, variant, weighted=True, n=60)
    start = multiclass_dual(f)
    assert kkt_start(f, start) is None
    tighter, exact = tightened_kkt_start(f, start)
    assert exact is not None and exact.exact and tighter.band < start.band
    W_star, P_star = exact_weights(f)
    np.testing.assert_allclose(exact.candidate.w, W_star, atol=1e-9)
    sol = f.solve()
    assert (sol.info["start"], sol.info["rounds"]) == ("kkt", 0)
    assert_encloses_and_tight(sol.certificate, sol.objective, P_star)


def test_no_tightening_after_a_long_descent(monkeypatch):
    # past KKT_TIGHTEN_VISITS example visits the continuation is not tried (on large data it
    # cost more than the restricted QP it would save): the start comes back as it was
    monkeypatch.setattr(working_set, "KKT_TIGHTEN_VISITS", 0)
    f = problem(3, "weston_watkins", weighted=True, n=60)
    start = multiclass_dual(f)
    assert tightened_kkt_start(f, start) == (start, None)


@pytest.mark.parametrize("variant", VARIANTS)
def test_exact_start_certified_by_its_own_multipliers(monkeypatch, variant):
    # the exact start's multipliers solve the KKT equations with its W: they are tried first
    # and certify it alone (no dual point is fitted to W), and the answer is W* with P*
    # enclosed
    f = problem(2, variant, n=36)

    def no_fit(*args):
        raise AssertionError("a dual point was fitted to W")

    monkeypatch.setattr(multiclass_verify, "_fit_tight", no_fit)
    sol = f.solve()
    assert sol.info["start"] == "kkt" and sol.info["rounds"] == 0
    W_star, P_star = exact_weights(f)
    assert np.linalg.norm(f.joint_weights(sol.w, sol.b) - W_star) <= (
        sol.certificate.distance_bound + 1e-9
    )
    assert_encloses_and_tight(sol.certificate, sol.objective, P_star)
