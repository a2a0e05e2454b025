"""Certificates of edited problems (``qpsvm.certify_problem``): enclosures checked against exact
optima (the rational oracle, an analytic optimum, exact rational evaluation of feasible points)."""

from __future__ import annotations

from fractions import Fraction

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm.verify.qp import _QP, _balance_flat, _flat_columns, certify_qp

SOLVERS = {
    "clarabel": {},
    "clarabel_high": {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12},
    "osqp": {},
    "osqp_high": {"eps_abs": 1e-10, "eps_rel": 1e-10, "max_iter": 200_000},
    "scs": {},
    "scs_high": {"eps_abs": 1e-10, "eps_rel": 1e-10, "max_iters": 200_000},
}
CVXPY_NAME = {"clarabel": cp.CLARABEL, "osqp": cp.OSQP, "scs": cp.SCS}


def _solve(problem: cp.Problem, solver: str) -> None:
    problem.solve(solver=CVXPY_NAME[solver.split("_")[0]], **SOLVERS[solver])


def _data(n: int = 30, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def _encloses(cert: qpsvm.Certificate, value: Fraction) -> bool:
    return Fraction(cert.lower) <= value <= Fraction(cert.upper)


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_inactive_constraints_keep_the_exact_svm_optimum(solver: str) -> None:
    # constraints the optimum does not reach (a cap on w_0 above w*_0, a box on b): the edited
    # problem's optimum is the SVM's exact rational optimum
    X, y = _data()
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    exact = f.solve(method="exact").info["exact"]
    w, b = f.variables["w"], f.variables["b"]
    cap = float(exact.w_float[0]) + 1.0
    edited = cp.Problem(
        f.problem.objective, [*f.problem.constraints, w[0] <= cap, b >= -50, b <= 50]
    )
    _solve(edited, solver)
    cert = qpsvm.certify_problem(edited)
    assert cert.lower_rigorous and cert.upper_rigorous and cert.rigorous
    assert _encloses(cert, exact.objective)
    if solver.endswith("_high") or solver == "osqp":  # OSQP polishes to the exact active set
        assert cert.passed


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_w_fixed_at_zero_has_its_analytic_optimum(solver: str) -> None:
    # with w = 0 the hinge terms are minimised by b in [-1, 1]: P* = 2 C min(n+, n-)
    X, y = _data(seed=1)
    C = 0.5
    f = qpsvm.SoftMarginPrimal(X, y, C=C)
    w, b = f.variables["w"], f.variables["b"]
    edited = cp.Problem(
        f.problem.objective, [*f.problem.constraints, w <= 0, w >= 0, b >= -3, b <= 3]
    )
    _solve(edited, solver)
    cert = qpsvm.certify_problem(edited)
    optimum = Fraction(2) * Fraction(C) * min(int(np.sum(y > 0)), int(np.sum(y < 0)))
    assert cert.rigorous
    assert _encloses(cert, optimum)


@pytest.mark.parametrize("solver", ["clarabel", "clarabel_high", "osqp_high"])
def test_changed_objective_matches_the_composed_squared_hinge(solver: str) -> None:
    # the objective edited to squared slacks is qpsvm's squared hinge, whose own certificate is
    # rigorous: both enclosures hold, so they overlap
    X, y = _data(seed=2)
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    w, b, xi = f.variables["w"], f.variables["b"], f.variables["xi"]
    objective = cp.Minimize(0.5 * cp.sum_squares(w) + 1.0 * cp.sum_squares(xi))
    edited = cp.Problem(objective, [*f.problem.constraints, b >= -50, b <= 50])
    _solve(edited, solver)
    cert = qpsvm.certify_problem(edited)
    reference = qpsvm.SoftMarginPrimal(X, y, C=1.0, loss="squared_hinge").solve().certificate
    assert cert.rigorous and reference.rigorous
    assert cert.lower <= reference.upper and reference.lower <= cert.upper
    if solver.endswith("_high"):
        assert cert.passed


@pytest.mark.parametrize("solver", ["clarabel_high", "osqp", "scs_high"])
def test_unedited_svm_is_rigorous_with_its_free_intercept(solver: str) -> None:
    # b is free and has no curvature: its residual sum_i -y_i z_i is balanced exactly (the
    # multipliers on a grid where the sum is exact, one of them set to the balance)
    X, y = _data()
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    _solve(f.problem, solver)
    cert = qpsvm.certify_problem(f)  # a formulation is read as its f.problem
    assert cert.rigorous and not cert.notes
    exact = f.solve(method="exact").info["exact"]
    assert _encloses(cert, exact.objective)


def test_free_variable_with_other_coefficients_is_reported() -> None:
    # min 1/2 ||w||^2 + 0.1 t s.t. w_0 >= 3 t + 1, -3 t <= 3: t = -1, w = 0, p* = -0.1 (the
    # float 0.1). t is free, flat, and its coefficients 3 are not powers of two: its residual
    # is not proven zero, and a box on t that the optimum does not reach fixes that
    w, t = cp.Variable(2, name="w"), cp.Variable(name="t")
    objective = cp.Minimize(0.5 * cp.sum_squares(w) + 0.1 * t)
    rows = [w[0] >= 3 * t + 1, -3 * t <= 3]
    optimum = -Fraction(0.1)
    problem = cp.Problem(objective, rows)
    _solve(problem, "clarabel_high")
    cert = qpsvm.certify_problem(problem)
    assert cert.upper_rigorous and not cert.lower_rigorous
    assert any(note.startswith("lower bound not proven: t unbounded") for note in cert.notes)
    assert _encloses(cert, optimum)  # the float value still encloses it
    boxed = cp.Problem(objective, [*rows, t >= -5, t <= 5])
    _solve(boxed, "clarabel_high")
    cert = qpsvm.certify_problem(boxed)
    assert cert.rigorous and _encloses(cert, optimum)


def test_balance_leaves_multipliers_near_underflow() -> None:
    # a flat coordinate (free, no curvature) in rows y = (1, -1) whose multipliers are subnormal:
    # no grid exists, the exact residual decides (5e-324 - 5e-324 = 0 is balanced)
    form = _Form(np.zeros((1, 1)), np.zeros(1), np.array([[1.0], [-1.0]]), np.ones(2), None, None)
    qp = _QP.of(form)
    flat = _flat_columns(qp)
    z, balanced = _balance_flat(qp, np.array([5e-324, 5e-324]), flat, 0.5)
    assert list(flat) == [0] and balanced[0] and np.array_equal(z, [5e-324, 5e-324])
    _, unbalanced = _balance_flat(qp, np.array([5e-324, 0.0]), flat, 0.5)
    assert not unbalanced[0]


@pytest.mark.parametrize("solver", sorted(SOLVERS))
@pytest.mark.parametrize("seed", [0, 1])
def test_kernel_dual_is_a_maximisation_proven_at_both_ends(solver: str, seed: int) -> None:
    # the dual's value is P*. Its balance (sum alpha y = 0, coefficients +-1) is made exact on a
    # grid, and CVXPY's auxiliary variables (t = X^T (alpha y) for sum_squares) are taken as the
    # exact values their rows define, enclosed; so both ends are claimed, and hold in rationals
    X, y = _data(seed=seed)
    f = qpsvm.SoftMarginDual(X, y, C=1.0)
    _solve(f.problem, solver)
    cert = qpsvm.certify_problem(f.problem)
    exact = qpsvm.SoftMarginPrimal(X, y, C=1.0).solve(method="exact").info["exact"]
    assert cert.lower_rigorous and cert.upper_rigorous, cert.notes
    assert _encloses(cert, exact.objective)
    if solver.endswith("_high"):
        assert cert.passed


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_ranking_scores_are_proven_at_both_ends(solver: str) -> None:
    # RankingSVM states scores s = X w as variables: each is defined by its equality row (the
    # candidate's end takes it exactly, enclosed) and is free without curvature (its row's
    # multiplier is set so that its stationarity residual is exactly zero, checked in rationals)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    rel = np.digitize(X @ [1.0, -1.0, 0.5] + 0.3 * rng.normal(size=40), [-1.0, 0.0, 1.0])
    qid = np.repeat(np.arange(4), 10)
    f = qpsvm.RankingSVM(X, y=rel, groups=qid, C=0.5)
    _solve(f.problem, solver)
    cert = qpsvm.certify_problem(f.problem)
    exact = qpsvm.RankingSVM(X, y=rel, groups=qid, C=0.5).solve(method="exact").info["exact"]
    assert cert.lower_rigorous and cert.upper_rigorous, cert.notes
    assert _encloses(cert, exact.objective)


@pytest.mark.parametrize("kernel", ["rbf", "poly"])
def test_nonlinear_kernel_duals_are_rigorous_for_the_stated_gram(kernel: str) -> None:
    # CVXPY states the kernel dual with a float64 Gram matrix (through its factor): the
    # enclosure is of that problem, proven at both ends, and agrees with qpsvm's own solve (whose
    # certificate bounds the exact kernel's problem) to the kernel's rounding
    X, y = _data(n=40)
    f = qpsvm.SoftMarginDual(X, y, C=1.0, kernel=kernel, gamma=0.5)
    _solve(f.problem, "clarabel_high")
    cert = qpsvm.certify_problem(f.problem)
    assert cert.lower_rigorous and cert.upper_rigorous and cert.passed, cert.notes
    own = f.solve().certificate
    assert abs(cert.upper - own.primal_objective) <= 1e-9 * own.primal_objective


def test_infeasible_candidate_fails() -> None:
    X, y = _data()
    f = qpsvm.SoftMarginPrimal(X, y, C=1.0)
    w = f.variables["w"]
    edited = cp.Problem(f.problem.objective, [*f.problem.constraints, w[0] + w[1] <= 0.25])
    _solve(edited, "clarabel_high")
    w.value = w.value + np.array([0.5, 0.5, 0.0])  # breaks the added cap by 1
    cert = qpsvm.certify_problem(edited)
    assert not cert.passed and not cert.upper_rigorous
    assert cert.primal_infeasibility >= 1.0 - 1e-9
    # a candidate off by more than rounding is not repaired into a pass
    h = qpsvm.HardMargin(np.array([[0.0], [2.0]]), np.array([-1.0, 1.0]))
    h.variables["w"].value = np.array([0.5])  # margins 0.5 < 1
    h.variables["b"].value = np.array(-0.5).reshape(h.variables["b"].shape)
    bad = qpsvm.certify_problem(h)
    assert not bad.passed and bad.primal_infeasibility >= 0.5 - 1e-12


def test_unsolved_problem_is_refused() -> None:
    X, y = _data()
    with pytest.raises(qpsvm.InvalidInputError, match="holds no value"):
        qpsvm.certify_problem(qpsvm.SoftMarginPrimal(X, y).problem)


# ----------------------------------------------------------------------------- random QPs
class _Form:
    """A QP in standard form with exact box bounds."""

    def __init__(self, P, q, G, h, lb, ub) -> None:
        self.P, self.q, self.G, self.h = P, q, G, h
        self.A = self.b = None
        self.lb, self.ub = lb, ub
        self.offset, self.sign = 0.0, 1.0


def _exact_objective(form: _Form, x: np.ndarray) -> Fraction:
    xs = [Fraction(float(v)) for v in x]
    n = len(xs)
    P = form.P
    quad = sum(Fraction(float(P[i, j])) * xs[i] * xs[j] for i in range(n) for j in range(n))
    return quad / 2 + sum(Fraction(float(form.q[i])) * xs[i] for i in range(n))


def _exactly_feasible(form: _Form, x: np.ndarray) -> bool:
    xs = [Fraction(float(v)) for v in x]
    for r in range(0 if form.G is None else form.G.shape[0]):
        row = sum(Fraction(float(form.G[r, j])) * xs[j] for j in range(len(xs)))
        if row > Fraction(float(form.h[r])):
            return False
    return all(form.lb[i] <= x[i] <= form.ub[i] for i in range(len(xs)))


def _make_qp(n: int, m: int, seed: int, coupled: bool, curved: bool) -> tuple[_Form, np.ndarray]:
    """A random QP with a diagonal ``P`` (convexity proven), a box and ``m`` rows with a
    strictly feasible point ``x0``."""
    rng = np.random.default_rng(seed)
    L = rng.normal(size=(n, n)) * float(coupled)
    diag = rng.uniform(0.0, 2.0, size=n) * float(curved)
    P = np.diag(diag + np.sum(np.abs(L), axis=1))
    q = rng.normal(size=n) * 3
    x0 = rng.normal(size=n)
    G = rng.normal(size=(m, n))
    h = G @ x0 + rng.uniform(0.0, 1.0, size=m)
    lb, ub = x0 - rng.uniform(0.5, 2.0, size=n), x0 + rng.uniform(0.5, 2.0, size=n)
    return _Form(P, q, G if m else None, h if m else None, lb, ub), x0


_random_qp = st.builds(
    _make_qp,
    st.integers(1, 4),
    st.integers(0, 4),
    st.integers(0, 2**31 - 1),
    st.booleans(),
    st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(_random_qp, st.sampled_from(["clarabel", "clarabel_high", "osqp", "scs"]))
@example(
    _Form(np.zeros((1, 1)), np.array([1.0]), None, None, np.array([-1.0]), np.array([2.0])),
    "clarabel",
).via("an LP in a box: the lower bound is the box's corner, exact")
# SCS at its defaults misses rows by 2e-6 to 4e-5: the candidate's end was not proven until the
# push inside covered a solver's inaccuracy, not only its rounding
@example(_make_qp(2, 2, 4519, False, False), "scs")
@example(_make_qp(3, 3, 39722, True, True), "scs")
@example(_make_qp(1, 3, 90645120, True, False), "scs")
@example(_make_qp(3, 4, 753, True, True), "scs")
def test_random_qp_enclosure_is_sound(qp_and_point, solver) -> None:
    form, x0 = qp_and_point if isinstance(qp_and_point, tuple) else (qp_and_point, None)
    n = form.q.size
    x = cp.Variable(n)
    constraints = [x >= form.lb, x <= form.ub]
    if form.G is not None:
        constraints.append(form.G @ x <= form.h)
    problem = cp.Problem(cp.Minimize(0.5 * cp.quad_form(x, form.P) + form.q @ x), constraints)
    _solve(problem, solver)
    cert = certify_qp(form, x.value)
    # bounded variables absorb every residual; the rows have an interior (x0), so a point
    # that misses them by rounding is pushed inside
    assert cert.lower_rigorous and cert.upper_rigorous
    # every claim checked in rationals: the lower bound is below the exact objective of every
    # exactly feasible point, the upper bound above the certified point's
    assert _exactly_feasible(form, cert.x)
    value = _exact_objective(form, cert.x)
    assert Fraction(cert.lower) <= value <= Fraction(cert.upper)
    if x0 is not None and _exactly_feasible(form, x0):
        assert Fraction(cert.lower) <= _exact_objective(form, x0)
    if solver == "clarabel_high":  # the multipliers are tight at an accurate point
        assert cert.passed


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dense_quad_form_is_proven_convex_and_rigorous(seed):
    """A general ``quad_form`` (a dense definite ``B^T B``, not diagonally dominant): convexity
    is proven (shifted Cholesky with a rigorous residual), so both ends are claimed, and both
    hold in rationals."""
    rng = np.random.default_rng(seed)
    n = 6
    B = rng.normal(size=(n + 2, n))
    P = B.T @ B
    P = np.triu(P) + np.triu(P, 1).T
    x0 = rng.normal(size=n)
    G = rng.normal(size=(3, n))
    form = _Form(P, rng.normal(size=n), G, G @ x0 + 0.5, x0 - 1.0, x0 + 1.0)
    x = cp.Variable(n)
    constraints = [x >= form.lb, x <= form.ub, form.G @ x <= form.h]
    cp.Problem(cp.Minimize(0.5 * cp.quad_form(x, P) + form.q @ x), constraints).solve(
        solver=cp.CLARABEL
    )
    cert = certify_qp(form, x.value)
    assert cert.lower_rigorous and cert.upper_rigorous, cert.notes
    assert _exactly_feasible(form, cert.x)
    assert Fraction(cert.lower) <= _exact_objective(form, cert.x) <= Fraction(cert.upper)
