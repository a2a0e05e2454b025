"""The projection onto the box and the free intercept's coupling (``project_coupled``)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from qpsvm.verify import fenchel
from qpsvm.verify.fenchel import project_coupled


def _instance(seed: int, n: int) -> tuple[np.ndarray, ...]:
    """``u`` in the box ``0 <= u <= hi`` (bounds finite, infinite as the squared hinge's, or
    0 as a zero weight's), labels ``sigma = +-1``."""
    rng = np.random.default_rng(seed)
    sigma = rng.choice([-1.0, 1.0], n)
    lo = np.zeros(n)
    hi = [np.full(n, np.inf), rng.random(n) * 10.0 ** rng.uniform(-3, 3)][seed % 2]
    hi[rng.random(n) < 0.1] = 0.0
    u = np.clip(rng.standard_normal(n) * 10.0 ** rng.uniform(-4, 3), lo, hi)
    if seed % 3 == 0:
        u = np.round(u, 1)  # ties: breakpoints shared by several coordinates
    return u, lo, hi, sigma


def _exact(u, lo, hi, sigma) -> list[Fraction]:
    """The projection in rational arithmetic: ``clip(u - nu sigma)`` at the root ``nu`` of the
    nonincreasing, piecewise linear coupling sum, by its value at every breakpoint and linear
    interpolation on the piece where it changes sign."""
    U = [Fraction(x) for x in u]
    L = [Fraction(x) for x in lo]
    H = [None if np.isinf(x) else Fraction(x) for x in hi]
    S = [int(s) for s in sigma]

    def at(nu):
        out = []
        for x, a, b, s in zip(U, L, H, S, strict=True):
            t = max(x - nu * s, a)
            out.append(t if b is None else min(t, b))
        return out

    def coupling(nu):
        return sum(s * t for s, t in zip(S, at(nu), strict=True))

    knots = sorted(
        {s * (x - a) for x, a, s in zip(U, L, S, strict=True)}
        | {s * (x - b) for x, b, s in zip(U, H, S, strict=True) if b is not None}
    )
    knots = [knots[0] - 1, *knots, knots[-1] + 1]
    values = [coupling(k) for k in knots]
    for j in range(len(knots) - 1):
        (k0, k1), (v0, v1) = knots[j : j + 2], values[j : j + 2]
        if v0 >= 0 >= v1:
            nu = k0 if v0 == v1 else k0 + v0 * (k1 - k0) / (v0 - v1)
            return at(nu)
    raise AssertionError("no root")


@pytest.mark.parametrize("seed", range(24))
def test_projection_is_the_exact_one(seed):
    # the Euclidean projection is unique: the float result agrees with the rational one to
    # rounding, and its coupling sum vanishes to rounding
    n = 1 + seed % 40
    u, lo, hi, sigma = _instance(seed, n)
    point = project_coupled(u, lo, hi, sigma)
    exact = _exact(u, lo, hi, sigma)
    scale = max(1.0, float(np.max(np.abs(u))))
    assert np.all((lo <= point) & (point <= hi))
    assert max(abs(Fraction(p) - e) for p, e in zip(point, exact, strict=True)) <= 1e-14 * scale
    assert abs(float(sigma @ point)) <= 1e-14 * n * scale


def test_projection_takes_a_few_compensated_sums(monkeypatch):
    # Newton's steps on the piecewise linear coupling sum end on the root's piece after a few
    # sums over the multipliers, where a bisection to the last bit took about 100 (10 ms a
    # projection at 20000 rows, a third of the squared hinge's solve with a free intercept)
    u, lo, hi, sigma = _instance(1, 20000)
    calls = []

    def counted(a, b):
        calls.append(1)
        return float(np.sum(np.multiply(a, b)))

    monkeypatch.setattr(fenchel, "fsum_dot", counted)
    project_coupled(u, lo, hi, sigma)
    assert len(calls) <= 20
