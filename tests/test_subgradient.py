"""Online subgradient descent (Pegasos and variants) and the convergence plot."""

from __future__ import annotations

import math
import sys
from types import SimpleNamespace

import matplotlib
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import qpsvm
from qpsvm.formulations.multiclass import MulticlassSVM
from qpsvm.formulations.ranking import RankingSVM
from qpsvm.plotting import plot_convergence
from qpsvm.solvers.subgradient import pegasos_bound, step_sizes
from tests.conftest import random_problem

matplotlib.use("Agg")


def reference_run(f, *, epochs, step, batch=1, average=False, radius=0.0, seed=0):
    """Plain numpy mini-batch Pegasos, step by step: the algorithm as written in the docstring,
    with the same shuffling (one ``rng.permutation`` per epoch) as the solver."""
    X, y, s, m = np.asarray(f.X), f.y, f.sample_weight, f.margin
    n = X.shape[0]
    lam = 1.0 / (f.C * n)
    rng = np.random.default_rng(seed)
    w, b = np.zeros(X.shape[1]), 0.0
    w_sum, b_sum, t = np.zeros_like(w), 0.0, 0
    for _ in range(epochs):
        order = rng.permutation(n)
        for k0 in range(0, n, batch):
            B = order[k0 : k0 + batch]
            t += 1
            eta = step(t)
            V = B[y[B] * (X[B] @ w + b) < m[B]]
            g = (s[V] * y[V]) @ X[V] / len(B)
            w = (1.0 - eta * lam) * w + eta * g
            if f.fit_intercept:
                b += eta * float(np.sum(s[V] * y[V])) / len(B)
            if radius and np.linalg.norm(w) > radius:
                w *= radius / np.linalg.norm(w)
            w_sum += w
            b_sum += b
    return (w_sum / t, b_sum / t) if average else (w, b)


@pytest.fixture(scope="module")
def weighted():
    """A small weighted, margin-shifted problem with an intercept."""
    X, y = random_problem(3, n=30, d=4)
    rng = np.random.default_rng(3)
    return qpsvm.SoftMarginPrimal(
        X, y, C=0.5, sample_weight=rng.uniform(0.2, 2.0, 30), margin=rng.uniform(0.5, 1.5, 30)
    )


# ------------------------------------------------------------------ the kernel is the math
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"average": True},
        {"batch_size": 7},
        {"projection": True},
        {"average": True, "batch_size": 4, "projection": True},
    ],
)
def test_kernel_matches_plain_numpy_pegasos(weighted, options):
    # the numba kernel keeps w = a v and the averaged iterate as p + beta v; unrolled, it must
    # be the textbook update (reference_run) up to round-off
    f = weighted
    sol = f.solve(method="subgradient", epochs=3, random_state=5, **options)
    radius = sol.info["radius"] if options.get("projection") else 0.0
    w, b = reference_run(
        f,
        epochs=3,
        step=lambda t: 1.0 / (sol.info["lambda"] * t),
        batch=options.get("batch_size", 1),
        average=options.get("average", False),
        radius=radius,
        seed=5,
    )
    np.testing.assert_allclose(sol.w, w, rtol=1e-9, atol=1e-9)
    assert sol.b == pytest.approx(b, rel=1e-9, abs=1e-9)


def test_sqrt_and_callable_steps_follow_their_schedules(weighted):
    # "sqrt" is eta0 / sqrt(t); a callable is evaluated on the array of step indices
    f = weighted
    for step, rule in [("sqrt", lambda t: 0.3 / math.sqrt(t)), (lambda t: 0.05 / t**0.6, None)]:
        sol = f.solve(method="subgradient", epochs=2, step=step, eta0=0.3, random_state=1)
        w, b = reference_run(f, epochs=2, step=rule or (lambda t: 0.05 / t**0.6), seed=1)
        np.testing.assert_allclose(sol.w, w, rtol=1e-9, atol=1e-12)
        assert sol.b == pytest.approx(b, rel=1e-9, abs=1e-12)


def test_step_sizes_schedules():
    t = np.arange(1, 5)
    # Pegasos: 1 / (lambda t); sqrt: eta0 / sqrt(t); a constant callable is broadcast
    np.testing.assert_allclose(step_sizes("pegasos", t, 0.5), 2.0 / t)
    np.testing.assert_allclose(step_sizes("sqrt", t, 0.5, eta0=3.0), 3.0 / np.sqrt(t))
    np.testing.assert_allclose(step_sizes(lambda t: 0.1, t, 0.5), np.full(4, 0.1))


def test_sparse_and_dense_give_the_same_run(weighted):
    # the CSR kernel reads the same numbers as the dense one
    f = weighted
    fs = qpsvm.SoftMarginPrimal(
        sp.csr_matrix(f.X), f.y, C=f.C, sample_weight=f.sample_weight, margin=f.margin
    )
    a = f.solve(method="subgradient", epochs=4, random_state=2, average=True)
    b = fs.solve(method="subgradient", epochs=4, random_state=2, average=True)
    np.testing.assert_allclose(a.w, b.w, rtol=1e-10, atol=1e-12)
    assert a.b == pytest.approx(b.b, rel=1e-10)


def test_linear_dual_formulation_runs_on_its_primal(weighted):
    # SoftMarginDual with the linear kernel has the same primal: identical run
    f = weighted
    fd = qpsvm.SoftMarginDual(f.X, f.y, C=f.C, sample_weight=f.sample_weight, margin=f.margin)
    a = f.solve(method="subgradient", epochs=2, random_state=0)
    b = fd.solve(method="subgradient", epochs=2, random_state=0)
    np.testing.assert_array_equal(a.w, b.w)


# ----------------------------------------------------------------------- the solution
def test_solution_fields_are_recomputed_from_the_data(weighted):
    f = weighted
    sol = f.solve(method="subgradient", epochs=5, random_state=0, record_gap=True)
    assert sol.status == "max_epochs" and sol.method == "subgradient" and sol.alpha is None
    assert sol.n_iter == 5 and sol.info["steps"] == 5 * f.n_samples
    # objective and slacks are the exact ones of (w, b)
    assert sol.objective == f.objective(sol.w, sol.b)
    np.testing.assert_allclose(sol.xi, f.slacks(sol.w, sol.b))
    h = sol.history
    assert len(h) == 5 and h.iteration.tolist() == [30, 60, 90, 120, 150]
    assert h.objective[-1] == sol.objective
    assert np.all(np.diff(h.time) >= 0)
    # the certified gap bounds the suboptimality: P - P* <= P - D = gap
    p_star = f.solve().objective
    assert np.all(h.objective - p_star <= h.gap + 1e-9)
    assert sol.certificate.gap == h.gap[-1]


def test_random_state_makes_runs_reproducible(weighted):
    f = weighted
    a = f.solve(method="subgradient", epochs=3, random_state=7)
    b = f.solve(method="subgradient", epochs=3, random_state=np.random.default_rng(7))
    c = f.solve(method="subgradient", epochs=3, random_state=8)
    # same seed: same permutations, bit-identical iterates and history
    np.testing.assert_array_equal(a.w, b.w)
    np.testing.assert_array_equal(a.history.objective, b.history.objective)
    # another seed shuffles differently
    assert not np.array_equal(a.w, c.w)


def test_projection_radius_contains_the_optimum():
    # ||w*||^2 = sum m alpha - C sum s xi <= C sum s m (strong duality, alpha <= C s): R^2
    for seed in range(4):
        X, y = random_problem(seed, n=40, d=3, shift=0.3)
        rng = np.random.default_rng(seed)
        f = qpsvm.SoftMarginPrimal(
            X,
            y,
            C=10.0 ** rng.uniform(-2, 2),
            sample_weight=rng.uniform(0, 2, 40),
            margin=rng.uniform(0, 2, 40),
            fit_intercept=bool(seed % 2),
        )
        sol = f.solve(method="subgradient", epochs=2, projection=True, random_state=seed)
        assert sol.info["radius"] == pytest.approx(np.sqrt(f.C * f.sample_weight @ f.margin))
        assert np.linalg.norm(f.solve().w) <= sol.info["radius"] * (1 + 1e-9)
        # the projected iterate stays in the ball
        assert np.linalg.norm(sol.w) <= sol.info["radius"] * (1 + 1e-12)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    log_c=st.floats(-2, 2),
    fit_intercept=st.booleans(),
    average=st.booleans(),
    batch_size=st.integers(1, 8),
    step=st.sampled_from(["pegasos", "sqrt"]),
)
def test_online_solution_never_beats_the_certified_optimum(
    seed, log_c, fit_intercept, average, batch_size, step
):
    # weak duality: P(w, b) >= P* >= D(alpha) for the certified optimum's dual point
    X, y = random_problem(seed, n=25, d=3)
    f = qpsvm.SoftMarginPrimal(X, y, C=10.0**log_c, fit_intercept=fit_intercept)
    exact = f.solve()
    sol = f.solve(
        method="subgradient",
        epochs=3,
        step=step,
        average=average,
        batch_size=batch_size,
        random_state=seed,
    )
    assert sol.objective >= exact.certificate.dual_objective


# ------------------------------------------------------------------------ convergence
def _mean_suboptimality(f, p_star, epochs, **options):
    return np.mean(
        [
            f.solve(method="subgradient", epochs=epochs, random_state=r, **options).objective
            - p_star
            for r in range(4)
        ]
    )


@pytest.mark.parametrize("options", [{}, {"average": True}, {"projection": True}])
def test_pegasos_rate_on_a_strongly_convex_problem(options):
    # without an intercept the objective is lambda-strongly convex in w: Pegasos reaches
    # suboptimality O(log T / T). Four times more epochs must shrink it by about
    # 4 (1 + log T) / (1 + log 4T) ~ 3.3 at T ~ 1e3-1e4; we ask for a factor 2 (noise slack),
    # twice in a row, and the theory bound must hold
    X, y = random_problem(11, n=200, d=5, shift=0.4)
    f = qpsvm.SoftMarginPrimal(X, y, C=0.05, fit_intercept=False)
    p_star = f.solve().objective
    subs = [_mean_suboptimality(f, p_star, e, **options) for e in (5, 20, 80)]
    assert subs[1] < subs[0] / 2 and subs[2] < subs[1] / 2
    sol = f.solve(method="subgradient", epochs=80, random_state=0, **options)
    assert 0 <= sol.objective - p_star <= sol.info["theory_bound"]


def test_history_slope_is_at_least_the_theory_rate():
    # log-log slope of suboptimality vs T for the averaged iterate: the O(log T / T) rate has
    # local slope -1 + 1/(1 + log T) ~ -0.9 for T >= 1e3; -0.7 leaves room for noise
    X, y = random_problem(5, n=150, d=4, shift=0.4)
    f = qpsvm.SoftMarginPrimal(X, y, C=0.1, fit_intercept=False)
    p_star = f.solve().objective
    h = f.solve(method="subgradient", epochs=200, average=True, random_state=0).history
    slope = np.polyfit(np.log(h.iteration[9:]), np.log(h.objective[9:] - p_star), 1)[0]
    assert slope < -0.7


def test_intercept_and_weights_converge(weighted):
    # b is unregularised (no strong convexity in b) and has no theory bound, but the relative
    # suboptimality of the last iterate still goes to 0: 1e-3 after 400 epochs here, and more
    # epochs get closer (the uniform average, which remembers the large early steps of b,
    # is slower on this problem)
    f = weighted
    p_star = f.solve().objective
    sols = [f.solve(method="subgradient", epochs=e, random_state=0) for e in (100, 400)]
    assert sols[1].info["theory_bound"] is None
    assert 0 <= sols[1].objective - p_star < sols[0].objective - p_star
    assert (sols[1].objective - p_star) / p_star < 1e-3


def test_theory_bound_definition(weighted):
    # G = 2 max_i s_i ||x_i|| for Pegasos (it keeps ||w_t|| <= S / lambda), and the bound is
    # G^2 (1 + log T) / (lambda T) divided by lambda (qpsvm's scale P = F / lambda)
    X, y = weighted.X, weighted.y
    f = qpsvm.SoftMarginPrimal(
        X, y, C=0.5, sample_weight=weighted.sample_weight, fit_intercept=False
    )
    sol = f.solve(method="subgradient", epochs=3, random_state=0)
    S = np.max(f.sample_weight * np.linalg.norm(X, axis=1))
    lam, T = 1.0 / (0.5 * 30), 90
    assert sol.info["G"] == pytest.approx(2 * S)
    assert sol.info["theory_bound"] == pytest.approx(
        (2 * S) ** 2 * (1 + np.log(T)) / (lam * T) / lam
    )
    assert pegasos_bound(lam, 2 * S, T) == pytest.approx(sol.info["theory_bound"])
    # with the projection, ||w_t|| <= min(R, S / lambda)
    proj = f.solve(method="subgradient", epochs=3, projection=True, random_state=0)
    assert proj.info["G"] == pytest.approx(S + min(lam * proj.info["radius"], S))
    # other schedules have no bound in the lectures; G needs eta_t lambda <= 1 or a projection
    small = f.solve(method="subgradient", epochs=1, step="sqrt", eta0=0.5)
    assert small.info["theory_bound"] is None and small.info["G"] == pytest.approx(2 * S)
    assert f.solve(method="subgradient", epochs=1, step=lambda t: 100.0).info["G"] is None


# ------------------------------------------------------------------ ranking, multiclass
def test_ranking_runs_on_pairs_as_a_binary_svm_on_differences():
    # the ranking SVM is the binary SVM without intercept on z_p = x_i - x_j, all labelled +1:
    # the pair kernel (reading two item rows) must give the same run as the materialised one
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    rel = np.digitize(X @ rng.normal(size=4) + 0.3 * rng.normal(size=30), [-1, 0, 1])
    f = RankingSVM(X, y=rel, groups=np.repeat(np.arange(3), 10), C=0.2)
    binary = SimpleNamespace(
        X=f.X.materialize(),
        y=np.ones(f.n_pairs),
        sample_weight=f.sample_weight,
        margin=np.ones(f.n_pairs),
        C=f.C,
        fit_intercept=False,
    )
    for options in ({}, {"average": True, "projection": True, "batch_size": 3}):
        sol = f.solve(method="subgradient", epochs=3, random_state=4, **options)
        w, _ = reference_run(
            binary,
            epochs=3,
            step=lambda t: f.C * f.n_pairs / t,
            batch=options.get("batch_size", 1),
            average=options.get("average", False),
            radius=sol.info["radius"] if options.get("projection") else 0.0,
            seed=4,
        )
        np.testing.assert_allclose(sol.w, w, rtol=1e-9, atol=1e-12)
    exact = f.solve()
    sol = f.solve(method="subgradient", epochs=200, average=True, random_state=0)
    assert exact.certificate.dual_objective <= sol.objective <= exact.objective * (1 + 1e-2)
    assert sol.objective - exact.objective <= sol.info["theory_bound"]


@pytest.mark.parametrize("variant", ["crammer_singer", "weston_watkins"])
def test_multiclass_steps_follow_the_loss_subgradient(variant):
    # two full-batch steps of constant size eta: W1 = -eta/n G(0), W2 = (1 - eta lam) W1 -
    # eta/n G(W1), with G the formulation's own loss subgradient (true class and arg-max class
    # for Crammer-Singer, every violating class for Weston-Watkins)
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(20, 3)), rng.integers(0, 4, 20)
    f = MulticlassSVM(X, y, C=0.3, variant=variant, sample_weight=rng.uniform(0.5, 2, 20))
    eta, n = 0.7, 20
    lam = 1.0 / (f.C * n)
    sol = f.solve(method="subgradient", epochs=2, batch_size=n, step=lambda t: eta)
    W1 = -eta / n * f.loss_subgradient(np.zeros((4, 3)))
    W2 = (1 - eta * lam) * W1 - eta / n * f.loss_subgradient(W1)
    np.testing.assert_allclose(sol.w, W2, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("variant", ["crammer_singer", "weston_watkins"])
def test_multiclass_converges_and_respects_weak_duality(variant):
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(90, 4)), rng.integers(0, 3, 90)
    X += 0.8 * np.eye(4)[y]
    f = MulticlassSVM(X, y, C=0.1, variant=variant)
    exact = f.solve()
    sol = f.solve(method="subgradient", epochs=150, average=True, random_state=0)
    assert sol.w.shape == (3, 4)
    # weak duality, then the theory bound (no intercept: strongly convex)
    assert sol.objective >= exact.certificate.dual_objective
    assert sol.objective - exact.objective <= sol.info["theory_bound"]
    assert (sol.objective - exact.objective) / exact.objective < 2e-2
    # W* lies in the projection ball: ||W*||^2 <= sum alpha <= C sum s (times k - 1 for WW)
    assert np.linalg.norm(exact.w) <= sol.info["radius"]


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"step": "adagrad"}, ValueError, "unknown step"),
        ({"step": 0.1}, TypeError, "step must be"),
        ({"step": lambda t: -t}, ValueError, "not finite and > 0"),
        ({"epochs": 0}, ValueError, "epochs must be >= 1"),
        ({"epochs": 2.5}, TypeError, "epochs must be an integer"),
        ({"batch_size": 0}, ValueError, "batch_size must be >= 1"),
        ({"eta0": 0.0}, ValueError, "eta0"),
        ({"solver": "CLARABEL"}, ValueError, "uses no CVXPY solver"),
    ],
)
def test_bad_arguments_raise_clear_errors(weighted, options, error, message):
    with pytest.raises(error, match=message):
        weighted.solve(method="subgradient", **options)


def test_formulations_without_a_subgradient_method_say_why():
    X, y = random_problem(0)
    with pytest.raises(qpsvm.InvalidInputError, match="no finite lambda"):
        qpsvm.HardMargin(X, y).solve(method="subgradient")
    with pytest.raises(qpsvm.InvalidInputError, match="method='smo'"):
        qpsvm.SoftMarginDual(X, y, kernel="rbf").solve(method="subgradient")


# ------------------------------------------------------------------------------ plot
def test_plot_convergence_draws_each_schedule_and_the_theory_line():
    X, y = random_problem(1, n=60, d=3)
    f = qpsvm.SoftMarginPrimal(X, y, C=0.1, fit_intercept=False)
    ax = plot_convergence(
        f, {"pegasos": "pegasos", "t^-3/4": lambda t: 0.5 / t**0.75}, epochs=5, random_state=0
    )
    labels = ax.get_legend_handles_labels()[1]
    assert labels == ["pegasos", "t^-3/4", "theory (Pegasos)"]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    # the theory line is pegasos_bound at the recorded iterations
    sol = f.solve(method="subgradient", epochs=5, random_state=0)
    x, y_line = ax.get_lines()[-1].get_data()
    np.testing.assert_allclose(y_line, pegasos_bound(sol.info["lambda"], sol.info["G"], x))


def test_plot_convergence_without_matplotlib_names_the_extra(monkeypatch):
    X, y = random_problem(1)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install qpsvm\[plot\]"):
        plot_convergence(qpsvm.SoftMarginPrimal(X, y), epochs=1)
