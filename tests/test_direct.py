"""The soft-margin primal handed to Clarabel as matrices (qpsvm.solvers.direct), checked against
the math it states, the exact rational optimum and the CVXPY path it bypasses."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import random_problem
from hypothesis import given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm.solution import Candidate
from qpsvm.solvers import direct, working_set
from qpsvm.solvers.backends import SETTINGS, backend_order, solve_model
from qpsvm.solvers.qp import solve_certified_model
from qpsvm.solvers.warm_start import Start
from qpsvm.solvers.working_set import BinarySets
from qpsvm.verify import box_qp as box_qp_module
from qpsvm.verify.box_qp import box_qp
from qpsvm.verify.ranking_fused import rows_active_set


def weighted_problem(seed: int, n: int, d: int, intercept: bool, sparse: bool):
    """A random primal with slack weights (some 0), margins other than 1 and sparse rows."""
    X, y = random_problem(seed, n=n, d=d)
    rng = np.random.default_rng(seed)
    X[rng.random(X.shape) < 0.3] = 0.0
    weights = rng.choice([0.0, 0.5, 1.0, 2.0], size=n)
    margin = rng.choice([0.5, 1.0, 1.5], size=n)
    data = sp.csr_matrix(X) if sparse else X
    f = qpsvm.SoftMarginPrimal(
        data, y, C=1.7, fit_intercept=intercept, sample_weight=weights, margin=margin
    )
    return f, X, np.where(y > 0, 1.0, -1.0), weights, margin


@pytest.mark.parametrize("intercept", [True, False])
@pytest.mark.parametrize("sparse", [True, False])
def test_matrices_state_the_primal(intercept, sparse):
    # row i of A is -(y_i x_i, y_i, e_i) (margin) and row n + i is -(0, 0, e_i) (slack sign);
    # P is the identity on w only and q = (0, 0, C s): the primal written out by hand
    f, X, y, s, m = weighted_problem(1, 9, 4, intercept, sparse)
    P, q, A, b = direct._primal_matrices(f)
    n, d = X.shape
    k = d + int(intercept)
    expected = np.zeros((2 * n, k + n))
    expected[:n, :d] = -(X * y[:, None])
    if intercept:
        expected[:n, d] = -y
    expected[:n, k:] = -np.eye(n)
    expected[n:, k:] = -np.eye(n)
    np.testing.assert_array_equal(A.toarray(), expected)
    np.testing.assert_array_equal(P.toarray(), np.diag(np.r_[np.ones(d), np.zeros(k - d + n)]))
    np.testing.assert_array_equal(q, np.r_[np.zeros(k), 1.7 * s])
    np.testing.assert_array_equal(b, np.r_[-m, np.zeros(n)])
    # stored as scipy stores them: sorted, no duplicates, no explicit zeros (Clarabel's
    # factorization follows the stored pattern)
    for M, dense in ((A, expected), (P, P.toarray())):
        assert M.has_canonical_format
        assert M.nnz == np.count_nonzero(dense)


@pytest.mark.parametrize(
    ("weights", "solver"), [(None, "box_dual"), ([1.0, 1.0, 1.0, 2.0], "CLARABEL")]
)
def test_known_optimum_without_cvxpy(weights, solver):
    # 0, 1 negative and 3, 4 positive: w* = 1, b* = -2, P* = 1/2, alpha* = (0, 1/2, 1/2, 0)
    # (the last weight, of a point beyond the margin, leaves it unchanged): equal weights are
    # solved by the box QPs' search on b, unequal ones by Clarabel
    f = qpsvm.SoftMarginPrimal(
        [[0.0], [1.0], [3.0], [4.0]], [0, 0, 1, 1], C=10.0, sample_weight=weights
    )
    sol = f.solve()
    assert f._model is None  # the CVXPY model was never built
    assert sol.solver == solver and sol.certificate.passed
    assert sol.w[0] == pytest.approx(1.0, abs=1e-12) and sol.b == pytest.approx(-2.0, abs=1e-12)
    np.testing.assert_allclose(sol.alpha, [0.0, 0.5, 0.5, 0.0], atol=1e-12)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), intercept=st.booleans(), sparse=st.booleans())
def test_encloses_the_exact_optimum(seed, intercept, sparse):
    # the certified enclosure [D, P] of the direct answer holds the rational optimum P*, and the
    # CVXPY path's certified answer has the same value within the two gaps
    f, *_ = weighted_problem(seed, 24, 3, intercept, sparse)
    sol = direct.solve_primal_direct(f, 1e-9)
    assert sol is not None and sol.certificate.passed
    exact = f.solve(method="exact").info["exact"].objective
    assert sol.certificate.lower <= exact <= sol.certificate.upper
    g = qpsvm.SoftMarginPrimal(
        f.X, f.y, C=f.C, fit_intercept=intercept, sample_weight=f.sample_weight, margin=f.margin
    )
    other = solve_certified_model(g, g.full_model, backend_order(None), {}, 1e-9)
    slack = sol.certificate.gap + other.certificate.gap
    assert abs(sol.objective - other.objective) <= slack


def test_failure_is_left_to_the_cvxpy_path(monkeypatch, cancer):
    X, y = cancer
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    # Clarabel stopped before it solved (the box QPs left out): no answer from the direct
    # path ...
    monkeypatch.setattr(direct, "_box_dual", lambda f, tol: None)
    monkeypatch.setitem(SETTINGS, "CLARABEL", {**SETTINGS["CLARABEL"], "max_iter": 2})
    assert direct.solve_primal_direct(f, 1e-9) is None
    monkeypatch.undo()
    # ... and then method="qp" solves the CVXPY model, certified as before
    monkeypatch.setattr(direct, "solve_primal_direct", lambda f, tol, refine: None)
    sol = f.solve()
    assert f._model is not None and sol.certificate.passed
    assert sol.info["backend_status"] == "optimal"


def restricted_problems():
    """A weighted primal (dense and sparse rows, with and without intercept) and a ranking SVM
    of graded relevance: each with its working set sorted at its optimum (units within 1e-3 of
    their margin in ``W``, the others fixed at their bound or dropped)."""
    out = [weighted_problem(4, 40, 3, intercept, sparse)[0] for intercept, sparse in _FLAGS]
    rng = np.random.default_rng(14)
    X = rng.normal(size=(60, 4))
    relevance = np.clip(np.round(X @ [1.0, -0.5, 0.3, 0.0] + rng.normal(size=60)), -1, 1)
    out.append(qpsvm.RankingSVM(X, y=relevance, groups=np.repeat(np.arange(6), 10), C=0.5))
    return out


_FLAGS = [(True, False), (False, False), (True, True)]


def both_restricted(ws) -> tuple[Candidate, Candidate, float]:
    """The working set's restricted QP solved from its matrices and as the CVXPY model, both
    by Clarabel, and twice the distance ``sqrt(2 gap)`` within which each lies of the unique
    optimal ``w`` (strong convexity with modulus 1, Clarabel's gap at most 1e-10 relative)."""
    cand, run = ws.direct()
    assert run.solver == "CLARABEL" and run.status == "optimal"
    solve_model(ws.model(), ["CLARABEL"], {})
    other = ws.read(ws.model())
    objective = float(ws.model().problem.value)
    return cand, other, 2 * np.sqrt(2e-10 * max(1.0, abs(objective)))


@pytest.mark.parametrize("k", range(len(_FLAGS) + 1))
def test_restricted_matrices_solve_the_restricted_model(k):
    # the working set's restricted QP from its matrices and as the CVXPY model (solved by
    # Clarabel too) is one problem: each w within sqrt(2 gap) of the unique restricted w*
    # (strong convexity with modulus 1, Clarabel's gap at most 1e-10 relative), the
    # multipliers outside W the same (C s on the fixed units, 0 on the dropped ones)
    f = restricted_problems()[k]
    opt = f.solve(method="qp")
    ws = BinarySets(f, Start(Candidate(w=opt.w, b=opt.b), 1e-3, "optimum", 0))
    assert ws.work.any() and ws.bound.any() and (~ws.work & ~ws.bound).any()
    cand, other, radius = both_restricted(ws)
    assert np.linalg.norm(cand.w - other.w) <= radius
    assert abs(cand.b - other.b) <= radius
    outside = ~ws.work
    np.testing.assert_array_equal(cand.alpha[outside], other.alpha[outside])
    np.testing.assert_allclose(cand.alpha[ws.work], other.alpha[ws.work], atol=1e-6)


def multiclass_problem():
    """A Crammer-Singer SVM with free intercepts whose working set takes several rounds."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 5))
    y = np.argmax(X[:, :3] + 0.5 * rng.normal(size=(120, 3)), axis=1)
    return qpsvm.MulticlassSVM(X, y, C=0.5, intercept="free")


@pytest.mark.parametrize("build", [lambda: restricted_problems()[0], multiclass_problem])
def test_restricted_failure_is_left_to_the_model(monkeypatch, build):
    # Clarabel stopped before it solved the matrices: the working set solves the CVXPY model
    f = build()
    solved = []

    def model_solve(model, *args):
        solved.append(model)
        return solve_model(model, *args)

    monkeypatch.setattr(direct, "_clarabel", lambda *args: None)
    monkeypatch.setattr(working_set, "solve_model", model_solve)
    sol = f.solve(method="working_set")
    assert sol.certificate.passed and sol.solver == "CLARABEL"
    assert len(solved) == sol.info["rounds"] > 0
    assert f.solve(method="qp").objective == pytest.approx(sol.objective, rel=1e-9)


#: The points the counting certifier was given.
CERTIFIED: list[Candidate] = []


def _counting_certifier(f, cand, tol):
    """The binary certificate, counting its calls."""
    from qpsvm.verify.binary import certify_binary

    CERTIFIED.append(cand)
    return certify_binary(f, cand, tol=tol)


def _zero_refinement(f, cand):
    """One refinement far from any optimum: ``w = 0``."""
    yield Candidate(w=np.zeros(f.n_features), b=0.0, alpha=np.zeros(f.n_samples))


def test_first_passing_refinement_ends_the_finish(monkeypatch):
    # the refinements solve the KKT equations of their sets: the first that passes is the
    # answer, and neither the interior-point point nor a later threshold is certified
    f, *_ = weighted_problem(3, 24, 3, True, False)
    CERTIFIED.clear()
    monkeypatch.setattr(f, "certifier", f"{__name__}:_counting_certifier")
    sol = direct.solve_primal_direct(f, 1e-9)
    assert sol is not None and sol.certificate.passed and len(CERTIFIED) == 1
    exact = f.solve(method="exact").info["exact"].objective
    assert sol.certificate.lower <= exact <= sol.certificate.upper


def test_interior_point_answer_where_no_refinement_passes(monkeypatch):
    # a refinement that fails (w = 0, far from the optimum) leaves the interior-point point,
    # which passes: passed first
    f, *_ = weighted_problem(5, 24, 3, False, False)
    monkeypatch.setattr(f, "refinement", f"{__name__}:_zero_refinement")
    sol = direct.solve_primal_direct(f, 1e-9)
    assert sol is not None and sol.certificate.passed and np.any(sol.w != 0.0)
    exact = f.solve(method="exact").info["exact"].objective
    assert sol.certificate.lower <= exact <= sol.certificate.upper


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    C=st.sampled_from([1e-3, 0.1, 1.0, 10.0, 1e3]),
    shape=st.sampled_from([(24, 3), (40, 5), (60, 2)]),
    shift=st.sampled_from([0.0, 0.5, 50.0]),
    intercept=st.booleans(),
)
def test_box_dual_encloses_the_exact_optimum(seed, C, shape, shift, intercept):
    # with unit margins and equal weights the dual is solved by box QPs without Clarabel (with
    # a free intercept, a search on b): the certified enclosure holds the rational optimum and
    # w* lies within the distance bound
    X, y = random_problem(seed, n=shape[0], d=shape[1])
    f = qpsvm.SoftMarginPrimal(
        X + shift, y, C=C, fit_intercept=intercept, sample_weight=np.full(shape[0], 0.5)
    )
    sol = f.solve()
    assert sol.certificate.passed
    exact = f.solve(method="exact").info["exact"]
    assert sol.certificate.lower <= exact.objective <= sol.certificate.upper
    squared = sum((Fraction(float(v)) - e) ** 2 for v, e in zip(sol.w, exact.w, strict=True))
    assert squared <= Fraction(sol.certificate.distance_bound) ** 2


def test_box_dual_serves_only_unit_margins_and_equal_weights():
    # the same data with margins other than 1, unequal weights or too few samples per feature
    # go to Clarabel; as they are, with and without intercept, to the box QPs (standardised
    # and shifted, small and large C: one box QP, or the search on b)
    X, y = random_problem(7, n=40, d=5)
    for shift, C in ((0.0, 1.0), (5.0, 0.01), (5.0, 100.0), (0.0, 1e3)):
        for intercept in (False, True):
            f = qpsvm.SoftMarginPrimal(X + shift, y, C=C, fit_intercept=intercept)
            assert f.solve().solver == "box_dual"
    for kwargs in (
        {"margin": np.full(40, 2.0)},
        {"fit_intercept": False, "sample_weight": np.r_[np.ones(39), 2.0]},
    ):
        assert qpsvm.SoftMarginPrimal(X, y, **kwargs).solve().solver == "CLARABEL"
    Xw, yw = random_problem(7, n=40, d=11)
    assert qpsvm.SoftMarginPrimal(Xw, yw, fit_intercept=False).solve().solver == "CLARABEL"


@pytest.mark.parametrize("intercept", [False, True])
def test_box_dual_point_that_fails_goes_to_clarabel(monkeypatch, intercept):
    # a point the certificate rejects (w = 0, alpha = 0: the sets of b = 0 refined) is never
    # returned: Clarabel solves
    X, y = random_problem(11, n=40, d=5)
    monkeypatch.setattr(
        direct,
        "box_qp",
        lambda Z, v0, cap, start=None, active_steps=0: (np.zeros(Z.shape[0]), np.zeros(Z.shape[1])),
    )
    sol = qpsvm.SoftMarginPrimal(X + 3.0, y, fit_intercept=intercept).solve()
    assert sol.solver == "CLARABEL" and sol.certificate.passed


def test_next_centre_finds_the_root_of_g():
    # g(b) = 2 - b: one point gives a proximal step from it, two on one side their secant
    # (exact for a linear g), a bracket regula falsi between its nearest ends
    g = lambda b: 2.0 - b  # noqa: E731
    assert direct._next_centre([(0.5, g(0.5))]) == 0.5
    assert direct._next_centre([(0.0, g(0.0)), (1.0, g(1.0))]) == pytest.approx(2.0)
    points = [(0.0, g(0.0)), (1.0, g(1.0)), (5.0, g(5.0)), (6.0, g(6.0))]
    assert direct._next_centre(points) == pytest.approx(2.0)


#: The refinements the counting refinement below began: one per point it was asked about.
REFINED: list[int] = []


def _counted_refinement(f, cand):
    """``refine_binary``'s refinements of ``cand``, the call recorded in :data:`REFINED`."""
    from qpsvm.solvers.refine import refine_binary

    REFINED.append(1)
    yield from refine_binary(f, cand)


@pytest.mark.parametrize(("shift", "C"), [(0.0, 1.0), (5.0, 1.0), (5.0, 0.01)])
def test_intercept_search_refines_each_point_once(monkeypatch, shift, C):
    # the KKT screen's refinement is the first one the certificate tries: one refinement of
    # each box QP's point, the screen's, not two
    X, y = random_problem(3, n=100, d=5)
    f = qpsvm.SoftMarginPrimal(X + shift, y, C=C)
    monkeypatch.setattr(f, "refinement", f"{__name__}:_counted_refinement")
    REFINED.clear()
    sol = direct.solve_primal_direct(f, 1e-9)
    assert sol is not None and sol.solver == "box_dual" and sol.certificate.passed
    assert len(REFINED) == sol.n_iter


@pytest.mark.parametrize(("seed", "C"), [(0, 0.1), (1, 1.0), (2, 10.0), (3, 1e3)])
def test_rows_active_set_reaches_the_exact_optimum(seed, C):
    # the primal active-set method on the rows y_i x_i stops at the primal's minimiser: w
    # equal to the rational optimum's w* (without intercept the box QP's rows are the signed
    # examples, v_0 = 0, cap = C)
    X, y = random_problem(seed, n=40, d=5)
    f = qpsvm.SoftMarginPrimal(X, y, C=C, fit_intercept=False)
    Z = np.ascontiguousarray(y[:, None] * X)
    w, settled = rows_active_set(Z, np.zeros(5), C, np.zeros(5), direct._active_steps(40, 5))
    assert settled
    exact = f.solve(method="exact").info["exact"]
    assert max(abs(Fraction(float(v)) - e) for v, e in zip(w, exact.w, strict=True)) <= 1e-12


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_rows_active_set_agrees_with_the_smoothed_steps(seed):
    # with a fixed part v_0 of the expansion (the intercept search's centre) and a start away
    # from 0, the active set's w is the optimum the box QP's own Newton steps find (their
    # exact sets, checked against every margin)
    X, y = random_problem(seed, n=60, d=4)
    Z = np.ascontiguousarray(y[:, None] * X)
    rng = np.random.default_rng(seed)
    v0, start = rng.normal(size=4), rng.normal(size=4)
    w, settled = rows_active_set(Z, v0, 1.0, start, direct._active_steps(60, 4))
    assert settled
    _, w_newton = box_qp(Z, v0, 1.0, start)
    np.testing.assert_allclose(w, w_newton, rtol=0.0, atol=1e-12)


@pytest.mark.parametrize("intercept", [False, True])
def test_box_dual_sets_from_the_active_set(monkeypatch, intercept):
    # the regime grid's small point (200 x 10, C = 1) is solved from the active set's sets
    # alone: with the ascent and the smoothed steps disabled it is still the box dual's,
    # certified
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 10))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=200) > 0, 1, -1)

    def no_newton(*args):
        raise AssertionError("the smoothed steps ran")

    monkeypatch.setattr(box_qp_module, "_ascent_sets", lambda Z, v0, cap: None)
    monkeypatch.setattr(box_qp_module, "_newton_solve", no_newton)
    sol = qpsvm.SoftMarginPrimal(X, y, C=1.0, fit_intercept=intercept).solve()
    assert sol.solver == "box_dual" and sol.certificate.passed
