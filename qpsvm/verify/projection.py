"""Euclidean projections onto dual feasible sets.

Projecting a solver's (or a heuristic's) dual variables onto the feasible set turns them into a
valid lower bound ``D(alpha) <= P*`` by weak duality.
"""

from __future__ import annotations

import numpy as np

__all__ = ["project_box_hyperplane"]


def project_box_hyperplane(
    alpha: np.ndarray, upper: np.ndarray, y: np.ndarray | None = None
) -> np.ndarray:
    """Project onto ``{a : 0 <= a <= upper, sum_i y_i a_i = 0}`` (``y_i = +-1``).

    Without ``y`` the set is the box and the projection is a clip. With ``y`` the projection is
    ``clip(alpha - nu y, 0, upper)`` for the multiplier ``nu`` that zeroes ``y . a``; ``y . a`` is
    non-increasing in ``nu``, so ``nu`` is bracketed by bisection and then computed exactly from
    the free coordinates, which makes ``|y . a|`` round-off small.

    Parameters
    ----------
    alpha : ndarray of shape (n,)
        Point to project.
    upper : ndarray of shape (n,)
        Upper bounds ``C s_i`` (``inf`` for the hard margin).
    y : ndarray of shape (n,) or None
        Labels ``+-1`` of the balance constraint; ``None`` when there is no intercept.

    Returns
    -------
    ndarray of shape (n,)
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    if y is None:
        return np.clip(alpha, 0.0, upper)

    def clipped(nu: float) -> np.ndarray:
        return np.clip(alpha - nu * y, 0.0, upper)

    if not (np.any(y > 0) and np.any(y < 0)):
        return np.zeros_like(alpha)
    span = float(np.max(np.abs(alpha[np.isfinite(alpha)]), initial=1.0)) + 1.0
    finite_upper = upper[np.isfinite(upper)]
    if finite_upper.size:
        span += float(np.max(finite_upper))
    lo, hi = -span, span
    while y @ clipped(lo) < 0:
        lo *= 2.0
    while y @ clipped(hi) > 0:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if y @ clipped(mid) > 0:
            lo = mid
        else:
            hi = mid
    nu = 0.5 * (lo + hi)
    a = clipped(nu)
    free = (a > 0) & (a < upper)
    if np.any(free):
        at_upper = a >= upper
        nu_exact = (y[free] @ alpha[free] + y[at_upper] @ upper[at_upper]) / np.count_nonzero(free)
        candidate = clipped(nu_exact)
        if abs(y @ candidate) <= abs(y @ a):
            a = candidate
    return a
