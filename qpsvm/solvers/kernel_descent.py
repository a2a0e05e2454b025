r"""The exact start of the kernel composed problems: greedy dual coordinate descent on the Gram
matrix, then the KKT equations on its free set.

The dual of a composed problem with a nonlinear kernel (:mod:`qpsvm.formulations.composed`),
written as a minimisation,

.. math::

    \min_u\ F(u) = \tfrac12 u^T Q u - \sum_i \big(a_i u_i - \varepsilon_i |u_i|
    - \tfrac12 d_i u_i^2\big),\qquad Q_{ij} = \sigma_i \sigma_j (K_{ij} + B^2),
    \quad lo_i \le u_i \le hi_i,

(``B^2`` for a regularised intercept only; ``a = p``, ``eps``, ``d`` and the box from the loss,
:meth:`~qpsvm.formulations.composed.ComposedProblem.loss_conjugate`) is minimised one
coordinate at a time, each step the exact minimiser of a one-dimensional piecewise quadratic,
the coordinate of largest step first (the greedy rule of SMO, Platt 1998, without the pair: no
coupling to keep). The gradient ``G = Q u`` is updated with one Gram row per step.

A free intercept couples the multipliers, ``sum_i sigma_i u_i = 0``. Fixing ``b`` removes the
coupling (``a = p - b sigma``: the problem with that intercept), and the optimal ``b`` is where
the fixed-``b`` multipliers balance: ``rho(b) = sum_i sigma_i u_i(b)`` is non-increasing (minus
the derivative of the convex optimal value in ``b``), so its root is bracketed and found by the
Illinois variant of regula falsi, each inner descent warm-started (a change of ``b`` leaves
``G`` as it is).

The descent identifies the free set ``F`` (multipliers strictly inside their box and, where the
loss has a kink at 0, nonzero); the KKT equations on it,

.. math::

    (Q_{FF} + D_F)\,u_F + \sigma_F\, b = p_F - \varepsilon_F \operatorname{sign}(u_F)
    - Q_{FE}\, u_E, \qquad \sigma_F \cdot u_F = -\sigma_E \cdot u_E

(the second equation and ``b`` with a free intercept only), give the optimum to round-off once
``F`` is right. The point is an exact start of the working set
(:func:`~qpsvm.solvers.working_set.composed_sets`): certified first, and returned when it passes;
the restricted QPs, sorted at it, are the fallback.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from qpsvm._jit import ENTRY
from qpsvm._numerics import fsum
from qpsvm.contract import CompositeProblem
from qpsvm.solution import Candidate
from qpsvm.solvers.warm_start import Start
from qpsvm.verify.fenchel import coordinate_minimiser

__all__ = ["kernel_descent_start", "kkt_polish"]

#: Tolerances of the descent, tried in turn (each run warm from the last), relative to the
#: targets' scale: no coordinate moves by more than this, in units of ``sqrt(Q_kk + d_k)`` (the
#: square root of twice its decrease). The KKT equations are solved after each, and the first
#: whose solution no coordinate step improves by more than :data:`EXACT_TOL` ends the search:
#: the free set is usually right long before the descent converges (measured at n = 2000, rbf:
#: the squared hinge's 1242 free multipliers at ``1e-4``, its descent to ``1e-9`` 3 s longer).
DESCENT_TOLS = (1e-3, 1e-5, 1e-7, 1e-9)
#: A polished point is kept as exact when its largest coordinate step is below this (relative
#: to the targets' scale): round-off, not a wrong free set.
EXACT_TOL = 1e-11
#: Steps of one descent at most, per sample.
STEPS_PER_SAMPLE = 200
#: Regula falsi iterations on the intercept at most, and the coupling residual (relative to
#: ``sum_i |u_i|``) below which the search stops.
INTERCEPT_ITERATIONS = 100
BALANCE_TOL = 1e-9
#: Thresholds (relative to the multipliers' scale) under which a restricted optimum's
#: multiplier counts as at its bound or 0 in :func:`kkt_polish` (an interior-point answer
#: leaves them ``1e-10``-``1e-8`` off).
SNAP_TAUS = (0.0, 1e-10, 1e-8, 1e-6)
#: The start's band for sorting the working set's units, relative to the targets' scale.
START_BAND = 1e-6


@numba.njit(**ENTRY)
def _descent(K, sigma, B2, a, eps, d, lo, hi, u, G, tol, max_steps):  # pragma: no cover
    """Greedy exact coordinate descent on ``F`` (module docstring); ``G = Q u`` kept up to date.
    Returns the steps taken and the largest step left (below ``tol`` unless ``max_steps``
    ended it; ``max_steps = 0`` only measures it)."""
    n = u.shape[0]
    steps = 0
    largest = 0.0
    while True:
        best = -1
        largest = tol
        best_new = 0.0
        for k in range(n):
            q = K[k, k] + B2
            denom = q + d[k]
            if denom <= 0.0 or lo[k] == hi[k]:
                continue
            new = coordinate_minimiser(a[k], eps[k], q * u[k] - G[k], denom, lo[k], hi[k])
            size = abs(new - u[k]) * math.sqrt(denom)
            if size > largest:
                largest = size
                best = k
                best_new = new
        if best < 0 or steps >= max_steps:
            break
        step = (best_new - u[best]) * sigma[best]
        u[best] = best_new
        row = K[best]
        for j in range(n):
            G[j] += sigma[j] * (row[j] + B2) * step
        steps += 1
    return steps, largest


class _Descent:
    """The descent's data and state for one composed problem ``f`` (module docstring)."""

    def __init__(self, f: CompositeProblem) -> None:
        self.f = f
        self.K = np.ascontiguousarray(f.gram(), dtype=np.float64)
        c = f.loss_conjugate()
        self.p, self.eps, self.d, self.lo, self.hi = c.p, c.eps, c.d, c.lo, c.hi
        self.sigma = np.asarray(f.sigma, dtype=np.float64)
        self.B2 = f.intercept.scaling**2 if f.intercept.regularized else 0.0
        self.u = np.zeros(f.n_samples)
        self.G = np.zeros(f.n_samples)
        self.scale = max(1.0, float(np.max(np.abs(self.p), initial=0.0)))
        self.steps = 0
        self.tol = DESCENT_TOLS[0]

    def step(self, u: np.ndarray, G: np.ndarray, b: float, tol: float, max_steps: int) -> float:
        """Descend from ``u`` (gradient ``G``, both updated in place) with the intercept fixed at
        ``b``; returns the largest step left."""
        a = self.p - b * self.sigma
        args = (self.K, self.sigma, self.B2, a, self.eps, self.d, self.lo, self.hi)
        steps, largest = _descent(*args, u, G, tol * self.scale, max_steps)
        self.steps += steps
        return float(largest)

    def run(self, b: float) -> float:
        """Descend with the intercept fixed at ``b``; returns the coupling ``sum sigma u``."""
        self.step(self.u, self.G, b, self.tol, STEPS_PER_SAMPLE * self.u.size)
        return fsum(self.sigma * self.u)

    def balanced(self) -> float:
        """The intercept where the fixed-``b`` multipliers balance (regula falsi, Illinois)."""
        lo_b, hi_b = -self.scale, self.scale
        r_lo, r_hi = self.run(lo_b), self.run(hi_b)
        while r_lo < 0.0 and lo_b > -1e12:
            lo_b, r_lo = 2.0 * lo_b, self.run(2.0 * lo_b)
        while r_hi > 0.0 and hi_b < 1e12:
            hi_b, r_hi = 2.0 * hi_b, self.run(2.0 * hi_b)
        b, side = 0.5 * (lo_b + hi_b), 0
        for _ in range(INTERCEPT_ITERATIONS):
            if r_lo == r_hi:
                break
            b = hi_b - r_hi * (hi_b - lo_b) / (r_hi - r_lo)
            if not lo_b < b < hi_b:
                b = 0.5 * (lo_b + hi_b)
            r = self.run(b)
            if abs(r) <= BALANCE_TOL * max(1.0, float(np.sum(np.abs(self.u)))):
                break
            if r > 0.0:
                lo_b, r_lo = b, r
                if side == 1:
                    r_hi *= 0.5
                side = 1
            else:
                hi_b, r_hi = b, r
                if side == -1:
                    r_lo *= 0.5
                side = -1
        return b

    def gradient(self, u: np.ndarray) -> np.ndarray:
        """``G = Q u`` from the Gram matrix."""
        su = self.sigma * u
        return self.sigma * (self.K @ su + self.B2 * fsum(su))

    def exact(self, u: np.ndarray, b: float) -> bool:
        """Whether no coordinate step improves ``u`` (with intercept ``b``) by more than
        :data:`EXACT_TOL`, its gradient recomputed from the Gram matrix."""
        return self.step(u.copy(), self.gradient(u), b, EXACT_TOL, 0) <= EXACT_TOL * self.scale

    def free(self, u: np.ndarray) -> np.ndarray:
        """The free set of ``u``: strictly inside the box and, where the loss has a kink at 0,
        nonzero."""
        return (u > self.lo) & (u < self.hi) & ((self.eps == 0.0) | (u != 0.0))

    def polish(self, u: np.ndarray, b: float) -> tuple[np.ndarray, float]:
        """The KKT equations on the free set of ``u`` (module docstring), the others fixed at
        their values, the solution clipped into the box, and its intercept (``b`` when it is
        not free)."""
        free = self.free(u)
        F, E = np.flatnonzero(free), np.flatnonzero(~free)
        if F.size == 0:
            return u.copy(), b
        sF, sE = self.sigma[F], self.sigma[E]
        Q = (self.K[np.ix_(F, F)] + self.B2) * np.outer(sF, sF) + np.diag(self.d[F])
        fixed = sE * u[E]
        rhs = self.p[F] - self.eps[F] * np.sign(u[F])
        rhs -= sF * ((self.K[np.ix_(F, E)] + self.B2) @ fixed)
        if self.f.intercept.coupled:
            Q = np.block([[Q, sF[:, None]], [sF[None, :], np.zeros((1, 1))]])
            rhs = np.append(rhs, -fsum(fixed))
        try:
            solved = np.linalg.solve(Q, rhs)
        except np.linalg.LinAlgError:
            solved = np.linalg.lstsq(Q, rhs, rcond=None)[0]
        if not np.all(np.isfinite(solved)):
            return u.copy(), b
        out = u.copy()
        out[F] = np.clip(solved[: F.size], self.lo[F], self.hi[F])
        return out, float(solved[-1]) if self.f.intercept.coupled else b


def kernel_descent_start(f: CompositeProblem) -> Start:
    """The exact start of a kernel composed problem (module docstring): the descent (with the
    intercept search for a free intercept) to each of :data:`DESCENT_TOLS` in turn, each
    followed by the KKT equations on its free set, until they give a point no coordinate step
    improves (else the last descent's point: the certificate decides, and the working set's
    restricted problems, sorted at it, finish)."""
    state = _Descent(f)
    u = state.u
    for tol in DESCENT_TOLS:
        state.tol = tol
        b = state.balanced() if f.intercept.coupled else (state.run(0.0), 0.0)[1]
        u, b = state.polish(state.u, b)
        if state.exact(u, b):
            break
        u = state.u.copy()
    b = f.kernel_intercept(u, f.kernel_product(u))
    band = START_BAND * state.scale
    return Start(Candidate(w=None, b=b, alpha=u), band, "descent", state.steps, exact=True)


def kkt_polish(f: CompositeProblem, u: np.ndarray, b: float) -> list[Candidate]:
    """The KKT equations on the free set of multipliers ``u`` (an interior-point answer of the
    working set's restricted problems, accurate to about ``1e-8``), each multiplier within
    ``tau max(1, max |u|)`` of a bound or of 0 first moved there, for each ``tau`` of
    :data:`SNAP_TAUS`: exact to round-off when that free set is the optimum's, as for the
    descent's start (module docstring)."""
    state = _Descent(f)
    u = np.asarray(u, dtype=np.float64)
    scale = max(1.0, float(np.max(np.abs(u), initial=0.0)))
    out = []
    for tau in SNAP_TAUS:
        near = tau * scale
        snapped = np.where(np.abs(u - state.lo) <= near, state.lo, u)
        snapped = np.where(np.abs(u - state.hi) <= near, state.hi, snapped)
        snapped = np.where(np.abs(u) <= near, 0.0, snapped)
        polished, _ = state.polish(snapped, b)
        g = f.kernel_product(polished)
        out.append(Candidate(w=None, b=f.kernel_intercept(polished, g), alpha=polished))
    return out
