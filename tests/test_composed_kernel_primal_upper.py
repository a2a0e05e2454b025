"""The kernel composed primal's upper bound from scores known within their errors, for every
loss (hinge, squared hinge, epsilon-insensitive, squared epsilon-insensitive) and intercept mode
(free, none, regularised with a scaling ``B``): above the exact objective for every score in the
errors' box (checked in rational arithmetic, the floats taken as the rationals they are), and
within its own roundings of the largest such objective, which is the intercept's term plus the
sum over samples of each term's larger end (each term is convex in its one score)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction as F

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from qpsvm._numerics import TINY, gamma
from qpsvm.formulations.pieces.intercepts import INTERCEPTS, Intercept
from qpsvm.formulations.pieces.losses import LOSSES, Loss, make_loss
from qpsvm.verify.rigorous_composed import composed_kernel_primal_upper

MARGIN_LOSSES = ("hinge", "squared_hinge")
TUBE_LOSSES = ("epsilon_insensitive", "squared_epsilon_insensitive")


@dataclass
class Problem:
    """The parts of a composed problem the bound reads."""

    C: float
    sample_weight: np.ndarray
    sigma: np.ndarray
    target: np.ndarray
    epsilon: float
    loss: Loss
    intercept: Intercept


def problem(loss: str, mode: str, seed: int, n: int, C: float, error: float, b: float, B: float):
    """Scores at the losses' kinks (margins, tube edges), within a few errors of them, or far
    from them; free, bound and zero multipliers (some outside the box), some weights and errors
    zero."""
    rng = np.random.default_rng(seed)
    regression = loss in TUBE_LOSSES
    weight = rng.choice([1.0, 0.0, 3.7], size=n, p=[0.7, 0.1, 0.2])
    cap = C * weight
    u = np.select(
        [rng.random(n) < 0.3, rng.random(n) < 0.5],
        [np.zeros(n), cap],
        cap * rng.uniform(-0.1, 1.1, size=n),
    )
    offset = rng.choice([0.0, 1.0, -1.0, 1e3], size=n) * rng.uniform(0, 3, size=n) * error
    if regression:
        sigma = np.ones(n)
        target = rng.normal(size=n)
        epsilon = float(rng.choice([0.0, 0.1, 1e-3]))
        side = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        u *= -side  # u > 0 below the tube
        scores = target + side * epsilon + offset - b
    else:
        sigma = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        target = rng.choice([1.0, 0.5, 2.0], size=n)
        epsilon = 0.0
        scores = sigma * (target + offset) - b
    err = error * rng.choice([0.0, 1.0, 10.0], size=n) * rng.random(n)
    f = Problem(C, weight, sigma, target, epsilon, make_loss(loss, regression), Intercept(mode, B))
    return f, u, scores, err


def exact_loss(f: Problem, i: int, z: F) -> F:
    """``ell(z)`` of sample ``i`` in rational arithmetic."""
    t = F(float(f.target[i]))
    excess = max(F(0), abs(z - t) - F(f.epsilon)) if f.loss.regression else max(F(0), t - z)
    return excess * excess if f.loss.squared else excess


def intercept_term(f: Problem, b: float) -> F:
    """``1/2 (b/B)^2`` for a regularised intercept, else 0."""
    return (F(b) / F(f.intercept.scaling)) ** 2 / 2 if f.intercept.regularized else F(0)


def exact_largest(f: Problem, u, b, scores, err) -> F:
    """``max P`` over the exact scores ``|g_i - hat g_i| <= e_i``: each term at its larger end."""
    total, bb = intercept_term(f, b), F(float(b))
    for i in range(u.size):
        v, g, e = F(float(u[i])) * int(f.sigma[i]), F(float(scores[i])), F(float(err[i]))
        W, s = F(f.C) * F(float(f.sample_weight[i])), int(f.sigma[i])
        total += max(v * t / 2 + W * exact_loss(f, i, s * (t + bb)) for t in (g - e, g + e))
    return total


def magnitude(f: Problem, u, b, scores, err) -> F:
    """The sum of the magnitudes each term's roundings are relative to: ``|u_i| |t| / 2`` and
    ``W_i`` times the loss of the sum of the magnitudes it is computed from."""
    total = intercept_term(f, b)
    for i in range(u.size):
        g = abs(F(float(scores[i]))) + F(float(err[i]))
        reach = abs(F(float(f.target[i]))) + g + abs(F(b)) + F(f.epsilon)
        W = F(f.C) * F(float(f.sample_weight[i]))
        total += abs(F(float(u[i]))) * g / 2 + W * (reach * reach if f.loss.squared else reach)
    return total


@settings(max_examples=120, deadline=None)
@given(
    loss=st.sampled_from(sorted(LOSSES)),
    mode=st.sampled_from(INTERCEPTS),
    seed=st.integers(0, 10_000),
    n=st.integers(1, 14),
    C=st.sampled_from([1e-4, 1.0, 100.0, 7.5e4]),
    error=st.sampled_from([0.0, 1e-15, 1e-10, 1e-3]),
    b=st.sampled_from([0.0, 0.3, -2.5, 1e3]),
    B=st.sampled_from([1.0, 0.1, 10.0]),
)
@example(loss="epsilon_insensitive", mode="free", seed=0, n=1, C=100.0, error=1e-10, b=0.0, B=1.0)
@example(loss="squared_hinge", mode="regularized", seed=1, n=5, C=7.5e4, error=1e-3, b=1e3, B=0.1)
def test_bound_is_above_the_exact_objective_and_tight(loss, mode, seed, n, C, error, b, B):
    f, u, scores, err = problem(loss, mode, seed, n, C, error, b, B)
    bound = composed_kernel_primal_upper(f, u, b, scores, err)
    largest = exact_largest(f, u, b, scores, err)
    assert F(bound) >= largest
    # the excess is within about 11 roundings of its reach (the shortfall's enclosure, 4 u on
    # each side, and the roundings after it), its square within twice that, the weight, the
    # products and the term's sum within 7 more, Sum2 within 3 of the terms' magnitudes, the
    # intercept's term within 5 of its own: n + 48 roundings bound them all
    slack = F(gamma(n + 48)) * magnitude(f, u, b, scores, err) + 32 * n * F(TINY)
    assert F(bound) - largest <= slack


def test_tube_samples_pay_their_error_once():
    # epsilon-insensitive, W = 100: a free sample on the lower edge of its tube (u = W / 4 > 0:
    # the target above the prediction) and one at its bound above the tube (u = -W, 0.5 beyond
    # it), scores wrong by up to e: the larger ends cost (W - u / 2) e and W e / 2, not
    # (|u| / 2 + W) e
    C, e, eps = 100.0, 1e-6, 0.25
    f = Problem(
        C,
        np.ones(2),
        np.ones(2),
        np.array([1.0, -1.0]),
        eps,
        make_loss("epsilon_insensitive", True),
        Intercept("free"),
    )
    u = np.array([C / 4, -C])
    scores = np.array([1.0 - eps, -1.0 + eps + 0.5])
    err = np.full(2, e)
    at_scores = F(C) / 8 * F(scores[0]) - F(C) / 2 * F(scores[1]) + F(C) * F(0.5)
    largest = exact_largest(f, u, 0.0, scores, err)
    assert largest == at_scores + (F(C) - F(C) / 8 + F(C) / 2) * F(e)
    bound = composed_kernel_primal_upper(f, u, 0.0, scores, err)
    assert largest <= F(bound) <= largest + F(gamma(50)) * magnitude(f, u, 0.0, scores, err)


def test_squared_hinge_free_samples_pay_half_their_multiplier():
    # squared hinge, W = 10: a sample short of its margin by xi = 1/4 has u = 2 W xi = 5; its
    # term 1/2 u y t + W (m - y t)^2 has slope -u/2 at its score, so an error e costs u e / 2
    # (to first order) where bounding ||w||^2 and the loss apart costs (u / 2 + 2 W xi) e
    C, e, xi = 10.0, 1e-6, 0.25
    f = Problem(
        C,
        np.ones(1),
        np.ones(1),
        np.ones(1),
        0.0,
        make_loss("squared_hinge", False),
        Intercept("none"),
    )
    u = np.array([2 * C * xi])
    scores = np.array([1.0 - xi])
    err = np.array([e])
    g, E = F(scores[0]), F(e)
    at_scores = F(u[0]) * g / 2 + F(C) * (1 - g) ** 2
    largest = exact_largest(f, u, 0.0, scores, err)
    assert largest == at_scores + F(u[0]) / 2 * E + F(C) * E * E
    bound = composed_kernel_primal_upper(f, u, 0.0, scores, err)
    assert largest <= F(bound) <= largest + F(gamma(50)) * magnitude(f, u, 0.0, scores, err)
