"""Conjugate gradients on SMO's free set (:mod:`qpsvm.solvers.free_cg`) and the plan that
replaces SMO's tail by them (:func:`qpsvm.solvers.smo._cg_pays`)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification

import qpsvm
from qpsvm.kernels import KernelCache, make_kernel
from qpsvm.solvers import smo
from qpsvm.solvers.free_cg import (
    box_step,
    decades_per_product,
    free_block_product,
    free_step,
    off_diagonal_sum,
    projected_cg,
)
from qpsvm.solvers.smo import NEVER, SMOUnits, _cg_pays, _kernel_rows, _SMOState


def never_give_up(it, res):
    return False


@pytest.mark.parametrize("held", [0, 90, 300])
def test_free_block_product_is_the_kernel_block(held):
    # the rows the cache holds, their transposes and the formed upper-triangular blocks make
    # K_FF v for any split of the free rows between them (the kernel's own rows as reference)
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 5))
    kernel = make_kernel("rbf", X, 0.3, 3, 1.0)
    cache = KernelCache(kernel, X, 300 * 8 * 300 / 2**20)
    if held:
        cache.slots(rng.choice(300, held, replace=False))
    F = np.sort(rng.choice(300, 200, replace=False))
    product = free_block_product(X, np.einsum("ij,ij->i", X, X), 0.3, F, cache.arrays)
    K = kernel(X, X)
    v = rng.standard_normal(200)
    np.testing.assert_allclose(product(v), K[np.ix_(F, F)] @ v, rtol=0, atol=1e-13)


def bordered(Q, g, y):
    """The equality-constrained minimiser by the bordered KKT system (the reference)."""
    k = y.size
    A = np.block([[Q, y[:, None]], [y[None, :], np.zeros((1, 1))]])
    return np.linalg.solve(A, np.concatenate([-g, [0.0]]))[:k]


def test_projected_cg_solves_the_equality_constrained_equations():
    # min 1/2 d'Qd + g'd subject to y'd = 0: the same d as the bordered system, y'd = 0
    rng = np.random.default_rng(2)
    A = rng.standard_normal((40, 40))
    Q = np.eye(40) + 0.02 * (A + A.T)
    y = rng.choice([-1.0, 1.0], 40)
    g = rng.standard_normal(40)
    d, it, res = projected_cg(lambda v: Q @ v, g, y, 1e-13, 100, never_give_up)
    assert res <= 1e-13 and it <= 40
    assert abs(y @ d) <= 1e-13
    np.testing.assert_allclose(d, bordered(Q, g, y), rtol=0, atol=1e-12)


def test_projected_cg_stops_when_told_to_give_up():
    rng = np.random.default_rng(3)
    Q = np.diag(np.logspace(0, 6, 50))
    y = rng.choice([-1.0, 1.0], 50)
    calls = []

    def give_up(it, res):
        calls.append(it)
        return it >= 3

    d, it, res = projected_cg(lambda v: Q @ v, rng.standard_normal(50), y, 1e-13, 100, give_up)
    assert it == 3 and calls == [0, 1, 2, 3] and res > 1e-13
    assert abs(y @ d) <= 1e-12


def test_free_step_fixes_the_multipliers_that_leave_the_box():
    # the unconstrained step takes multiplier 0 above its bound: it is fixed there and the
    # others solve their equations with it fixed (the bordered system on the rest)
    rng = np.random.default_rng(4)
    k = 30
    A = rng.standard_normal((k, k))
    Q = np.eye(k) + 0.01 * (A + A.T)
    y = rng.choice([-1.0, 1.0], k)
    alpha = np.full(k, 0.5)
    upper = np.ones(k)
    g = 0.05 * rng.standard_normal(k)
    g[0] = -3.0  # pushes alpha_0 far above 1
    d, taken, fixed = free_step(lambda v: Q @ v, alpha, g, y, upper, 1e-13, 100, never_give_up)
    assert fixed[0] and np.count_nonzero(fixed) == 1 and taken > 2  # two solves
    assert alpha[0] + d[0] == 1.0
    R = np.arange(1, k)
    d0 = d[0]
    # the rest: min over d_R with d_0 fixed, y_R'd_R = -y_0 d_0
    shift = -y[R] * (y[0] * d0) / R.size
    g_R = g[R] + Q[R, 0] * d0 + Q[np.ix_(R, R)] @ shift
    np.testing.assert_allclose(d[R], shift + bordered(Q[np.ix_(R, R)], g_R, y[R]), atol=1e-12)
    assert abs(y @ d) <= 1e-12
    assert box_step(alpha, d, upper) == 1.0


def test_box_step_stops_at_the_first_bound():
    alpha = np.array([0.2, 0.5, 0.9])
    assert box_step(alpha, np.array([-0.4, 0.0, 0.05]), np.ones(3)) == 0.5
    assert box_step(alpha, np.array([0.0, 1.0, 0.2]), np.ones(3)) == pytest.approx(0.5)
    assert box_step(alpha, np.array([0.1, -0.1, 0.0]), np.ones(3)) == 1.0


def test_gershgorin_radius_and_rate():
    # the identity has radius 0 (one product solves it exactly); a radius of 1 or more gives
    # no bound; in between the classical rate of (sqrt(kappa) - 1) / (sqrt(kappa) + 1)
    X = 100.0 * np.eye(10)
    assert off_diagonal_sum(X, np.einsum("ij,ij->i", X, X), 1.0, np.arange(10), 4) == 0.0
    assert decades_per_product(1.0) == 0.0 and decades_per_product(3.0) == 0.0
    kappa = 1.1 / 0.9
    rho = (np.sqrt(kappa) - 1) / (np.sqrt(kappa) + 1)
    assert decades_per_product(0.1) == pytest.approx(-np.log10(rho))


def problem(gamma, C, n=400):
    X, y = make_classification(
        n_samples=n, n_features=20, n_informative=10, flip_y=0.1, random_state=0
    )
    return qpsvm.SoftMarginDual(X, y, kernel="rbf", gamma=gamma, C=C)


@pytest.mark.parametrize("C", [1.0, 100.0])
def test_cg_tail_gives_the_certified_optimum(monkeypatch, C):
    # gamma = 0.5 in 20 dimensions: the free block is nearly the identity; conjugate
    # gradients replace SMO's tail, at once where every multiplier is free (C = 100), after
    # one more decade of steps at C = 1 (multipliers at C too); the answer is certified and
    # agrees with the full QP within both gaps, with fewer than half the tail's steps after
    # the first stage
    f = problem(0.5, C)
    steps, settled = [], []
    real = smo._cg_step

    def spy(f, state, *args):
        settled.append(bool(np.all((state.alpha > 0) & (state.alpha < f.upper))))
        steps.append(real(f, state, *args))
        return steps[-1]

    monkeypatch.setattr(smo, "_cg_step", spy)
    cg = f.solve(method="smo", gap=5e-12)
    monkeypatch.setattr(smo, "_cg_pays", lambda *args: 0.0)
    monkeypatch.setattr(smo, "_polish_plan", lambda *args: NEVER)
    tail = f.solve(method="smo", gap=5e-12)
    assert len(steps) == 1 and 0 < steps[0] <= 20
    assert cg.status == tail.status == "gap"
    assert cg.certificate.passed and cg.certificate.relative_gap <= 1e-10
    first = f.solve(method="smo", certify=False).n_iter
    assert 2 * (cg.n_iter - first) < tail.n_iter - first
    # every multiplier free at the first stage (C = 100): the step at once, no decade first
    assert settled == [C == 100.0]
    exact = f.solve(method="qp")
    assert abs(cg.objective - exact.objective) <= cg.certificate.gap + exact.certificate.gap
    assert f.dual_infeasibility(cg.alpha) <= 1e-12


def test_cg_step_with_rows_outside_the_cache_is_certified(monkeypatch):
    # a cache of 40 rows for 400 free: the products form most of the block; the plan pays
    # (every tail step recomputes rows) and the answer is the certified optimum
    f = problem(0.5, 100.0)
    f.kernel_cache_size = 40 * 400 * 8 / 2**20
    plans = []
    real = smo._cg_pays
    monkeypatch.setattr(smo, "_cg_pays", lambda *a: plans.append(real(*a)) or plans[-1])
    sol = f.solve(method="smo", gap=5e-12)
    assert plans and plans[0] > 0
    assert sol.status == "gap" and sol.certificate.passed
    exact = f.solve(method="qp")
    assert abs(sol.objective - exact.objective) <= sol.certificate.gap + exact.certificate.gap


def state_at(f, tol):
    state = _SMOState.start(SMOUnits.samples(f), _kernel_rows(f, None), 10**7, True, True)
    state.run(tol)
    return state


def test_cg_plan_only_where_the_block_is_well_conditioned():
    # gamma = 0.5: radius about 0.04, the step is planned; gamma = 0.05: radius above 1 (the
    # conjugate gradients would gain a decade in tens of products), never; the poly kernel
    # and a problem without intercept: never
    assert _cg_pays(problem(0.5, 100.0), state_at(problem(0.5, 100.0), 1e-3), 900.0, 8.0) > 0
    f = problem(0.05, 1.0)
    assert _cg_pays(f, state_at(f, 1e-3), 900.0, 8.0) == 0.0
    X, y = make_classification(n_samples=200, n_features=20, random_state=0)
    for g in (
        qpsvm.SoftMarginDual(X, y, kernel="poly", gamma=0.5, C=1.0),
        qpsvm.SoftMarginDual(X, y, kernel="rbf", gamma=0.5, C=1.0, fit_intercept=False),
    ):
        assert _cg_pays(g, state_at(g, 1e-3), 900.0, 8.0) == 0.0
    # a tail of no decades never pays for the step
    f = problem(0.5, 100.0)
    assert _cg_pays(f, state_at(f, 1e-3), 900.0, 0.0) == 0.0
    assert NEVER == "never"


def test_cg_plan_stops_at_the_first_row_whose_radius_is_one(monkeypatch):
    # gamma = 0.05: the first free row's off-diagonal sum is already above 1, so the radius
    # of the 64 sampled rows (at least that row's) gives no rate and the block of 64 rows is
    # never formed; that row is read from SMO's cache (no block at all), or formed alone when
    # the cache no longer holds it; gamma = 0.5 (radius about 0.04) goes on to the 64 rows
    sizes = []
    real = smo.off_diagonal_sum

    def counted(X, sq, gamma, F, size):
        sizes.append(size)
        return real(X, sq, gamma, F, size)

    monkeypatch.setattr(smo, "off_diagonal_sum", counted)
    f = problem(0.05, 1.0)
    state = state_at(f, 1e-3)
    free = np.flatnonzero((state.alpha > 0) & (state.alpha < f.upper))
    rows, slot_of = state.arrays[0], state.arrays[1]
    assert slot_of[free[0]] >= 0
    assert _cg_pays(f, state, 900.0, 8.0) == 0.0
    assert sizes == []
    X = np.asarray(f.X, dtype=np.float64)
    formed = real(X, np.einsum("ij,ij->i", X, X), 0.05, free, 1)
    cached = float(np.sum(rows[slot_of[free[0]]][free])) - 1.0
    # the same values, but for the block's distances from the squared norms (round-off)
    assert formed >= 1.0 and abs(cached - formed) <= 1e-12 * formed
    slot_of[free[0]] = -1  # as if evicted
    assert _cg_pays(f, state, 900.0, 8.0) == 0.0
    assert sizes == [1]
    sizes.clear()
    g = problem(0.5, 100.0)
    assert _cg_pays(g, state_at(g, 1e-3), 900.0, 8.0) > 0
    assert sizes == [smo.CG_SAMPLE]
