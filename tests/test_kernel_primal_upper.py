"""The kernel primal's upper bound from scores known within their errors: above the exact
objective for every score in the errors' box (checked in rational arithmetic, the floats taken as
the rationals they are), and within its own roundings of the largest such objective, which is
the sum over samples of each term's larger end (each term is convex in its one score)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction as F

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from qpsvm._numerics import TINY, gamma
from qpsvm.verify.rigorous import kernel_primal_upper


@dataclass
class Rows:
    """The parts of a binary problem the bound reads."""

    y: np.ndarray
    margin: np.ndarray
    C: float
    sample_weight: np.ndarray


def problem(seed: int, n: int, C: float, error: float, b: float):
    """Scores near the margins (free, bound and zero multipliers, some outside the box), some
    weights and errors zero."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    margin = rng.choice([1.0, 0.5, 2.0], size=n)
    weight = rng.choice([1.0, 0.0, 3.7], size=n, p=[0.7, 0.1, 0.2])
    cap = C * weight
    alpha = np.select(
        [rng.random(n) < 0.3, rng.random(n) < 0.5],
        [np.zeros(n), cap],
        cap * rng.uniform(-0.1, 1.1, size=n),
    )
    # margins y (g + b) at m_i, within a few errors of it, or far from it
    offset = rng.choice([0.0, 1.0, -1.0, 1e3], size=n) * rng.uniform(0, 3, size=n) * error
    scores = y * (margin + offset) - b
    err = error * rng.choice([0.0, 1.0, 10.0], size=n) * rng.random(n)
    return Rows(y, margin, C, weight), alpha, scores, err


def exact_largest(f: Rows, alpha, b, scores, err) -> F:
    """``max P`` over the exact scores ``|g_i - hat g_i| <= e_i``: each term at its larger end."""
    total, bb = F(0), F(float(b))
    for i in range(alpha.size):
        v, g, e = F(float(alpha[i])) * int(f.y[i]), F(float(scores[i])), F(float(err[i]))
        cost = F(f.C) * F(float(f.sample_weight[i])) if math.isfinite(f.C) else F(0)
        m, s = F(float(f.margin[i])), int(f.y[i])
        total += max(v * t / 2 + cost * max(F(0), m - s * (t + bb)) for t in (g - e, g + e))
    return total


def magnitude(f: Rows, alpha, b, scores, err) -> F:
    """The sum of the magnitudes each term's roundings are relative to."""
    C = F(f.C) if math.isfinite(f.C) else F(0)
    total = F(0)
    for i in range(alpha.size):
        g = abs(F(float(scores[i]))) + F(float(err[i]))
        s = C * F(float(f.sample_weight[i]))
        total += abs(F(float(alpha[i]))) * g / 2 + s * (F(float(f.margin[i])) + g + abs(F(b)))
    return total


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 14),
    C=st.sampled_from([1e-4, 1.0, 100.0, 7.5e4]),
    error=st.sampled_from([0.0, 1e-15, 1e-10, 1e-3]),
    b=st.sampled_from([0.0, 0.3, -2.5, 1e3]),
)
@example(seed=0, n=1, C=100.0, error=1e-10, b=0.0)
def test_bound_is_above_the_exact_objective_and_tight(seed, n, C, error, b):
    f, alpha, scores, err = problem(seed, n, C, error, b)
    bound = kernel_primal_upper(f, alpha, b, scores, err)
    largest = exact_largest(f, alpha, b, scores, err)
    assert F(bound) >= largest
    # each term is rounded upward a few times and summed upward: n + 16 roundings at most
    slack = F(gamma(n + 16)) * magnitude(f, alpha, b, scores, err) + 16 * n * F(TINY)
    assert F(bound) - largest <= slack


def test_free_and_bound_samples_pay_their_error_once():
    # a free sample on its margin (alpha = C / 4) and one at its bound, scores wrong by up to e:
    # the larger end costs max(alpha / 2, C - alpha / 2) e and C e / 2, not (alpha / 2 + C) e
    C, e = 100.0, 1e-6
    f = Rows(np.array([1.0, -1.0]), np.ones(2), C, np.ones(2))
    alpha = np.array([C / 4, C])
    scores = np.array([1.0, 1.0])  # margins 1 and -1
    err = np.full(2, e)
    bound = kernel_primal_upper(f, alpha, 0.0, scores, err)
    at_scores = F(C / 8 + (-C / 2 + 2 * C))
    largest = exact_largest(f, alpha, 0.0, scores, err)
    assert largest == at_scores + (F(C) - F(C) / 8 + F(C) / 2) * F(e)
    assert largest <= F(bound) <= largest + F(gamma(18)) * magnitude(f, alpha, 0.0, scores, err)


def test_hard_margin_bound_needs_every_margin_proven():
    f = Rows(np.array([1.0, -1.0]), np.ones(2), math.inf, np.ones(2))
    alpha = np.array([0.5, 0.5])
    # margins 1 + 1e-9 against errors 1e-10: proven; against 1e-8: not
    scores = np.array([1.0 + 1e-9, -1.0 - 1e-9])
    proven = kernel_primal_upper(f, alpha, 0.0, scores, np.full(2, 1e-10))
    assert F(proven) >= exact_largest(f, alpha, 0.0, scores, np.full(2, 1e-10))
    assert kernel_primal_upper(f, alpha, 0.0, scores, np.full(2, 1e-8)) == math.inf
