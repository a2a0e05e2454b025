"""Euclidean projections onto dual feasible sets.

Projecting a solver's (or a heuristic's) dual variables onto the feasible set turns them into a
valid lower bound ``D(alpha) <= P*`` by weak duality.
"""

from __future__ import annotations

import numpy as np

from qpsvm._lazy import lazy_module

#: scipy.optimize, imported on first use (a tenth of a second of ``import qpsvm`` that the
#: certificates of the common problems never need).
optimize = lazy_module("scipy.optimize")

__all__ = ["bounded_fit", "project_box_hyperplane", "project_capped_simplex"]

#: Newton steps on the balance constraint tried before the search over the kinks.
NEWTON_STEPS = 4
#: Tolerance of :func:`bounded_fit` (scipy's ``lsq_linear``): far below any certificate's
#: ``tol``; a fit only proposes a dual point, which the certificate then evaluates.
FIT_TOL = 1e-13
#: Bounded fits with at most this many unknowns use BVLS (an active-set method, exact at its
#: end); larger ones the trust-region reflective method, whose cost grows more slowly.
BVLS_MAX_SET = 300


def bounded_fit(A: np.ndarray, target: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``argmin ||A x - target||`` over ``lo <= x <= hi`` (dense ``A``): the multipliers that
    best explain a candidate's stationarity within their box."""
    method = "bvls" if A.shape[1] <= BVLS_MAX_SET else "trf"
    return optimize.lsq_linear(A, target, bounds=(lo, hi), tol=FIT_TOL, method=method).x


def project_box_hyperplane(
    alpha: np.ndarray, upper: np.ndarray, y: np.ndarray | None = None
) -> np.ndarray:
    """Project onto ``{a : 0 <= a <= upper, sum_i y_i a_i = 0}`` (``y_i = +-1``).

    Without ``y`` the set is the box and the projection is a clip. With ``y`` the projection is
    ``clip(alpha - nu y, 0, upper)`` for the multiplier ``nu`` that zeroes ``y . a``; ``y . a`` is
    non-increasing and piecewise linear in ``nu``. On the piece where the coordinates ``F`` are
    free and ``U`` at their bound its root is
    ``nu = (sum_F y_i alpha_i + sum_U y_i upper_i) / |F|``; a few of these Newton steps from
    ``nu = 0`` end on a consistent piece for a nearly feasible ``alpha`` (the common case: a
    solver's multipliers), else ``nu`` is bracketed by a binary search over the kinks and then
    computed on its piece. Either way ``|y . a|`` is at round-off.

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

    def piece_root(a: np.ndarray) -> float | None:
        free = (a > 0) & (a < upper)
        if not np.any(free):
            return None
        at_upper = a >= upper
        return float(y[free] @ alpha[free] + y[at_upper] @ upper[at_upper]) / np.count_nonzero(free)

    if not (np.any(y > 0) and np.any(y < 0)):
        return np.zeros_like(alpha)
    nu: float | None = 0.0
    a = clipped(0.0)
    for _ in range(NEWTON_STEPS):
        nu = piece_root(a)
        if nu is None:
            break
        step = clipped(nu)
        same = np.array_equal(step > 0, a > 0) and np.array_equal(step < upper, a < upper)
        a = step
        if same:  # nu is the root of the piece it lies on: the projection
            return a
    span = float(np.max(np.abs(alpha[np.isfinite(alpha)]), initial=1.0)) + 1.0
    finite_upper = upper[np.isfinite(upper)]
    if finite_upper.size:
        span += float(np.max(finite_upper))
    lo, hi = -span, span
    while y @ clipped(lo) < 0:
        lo *= 2.0
    while y @ clipped(hi) > 0:
        hi *= 2.0
    # y . a(nu) is piecewise linear with kinks where a coordinate meets 0 or its bound: binary
    # search over the sorted kinks (~log2(2n) passes), then solve the linear piece exactly
    kinks = np.concatenate([alpha * y, (alpha - upper) * y])
    kinks = np.unique(np.concatenate([[lo, hi], kinks[(kinks > lo) & (kinks < hi)]]))
    i, j = 0, kinks.size - 1
    while j - i > 1:
        k = (i + j) // 2
        if y @ clipped(kinks[k]) > 0:
            i = k
        else:
            j = k
    a = clipped(0.5 * (float(kinks[i]) + float(kinks[j])))
    nu = piece_root(a)
    if nu is not None:
        candidate = clipped(nu)
        if abs(y @ candidate) <= abs(y @ a):
            a = candidate
    return a


def project_capped_simplex(
    V: np.ndarray, radius: np.ndarray, mask: np.ndarray | None = None
) -> np.ndarray:
    """Project each row ``v_i`` onto ``{a : a >= 0, sum_c a_c <= r_i, a_c = 0 off mask_i}``.

    This is the Crammer-Singer dual set of one example (``r_i = C s_i``). If clipping at 0
    already meets the budget, the clip is the projection; otherwise the projection is onto the
    simplex ``sum_c a_c = r_i``: ``a = max(v - tau, 0)`` with the threshold ``tau > 0`` found by
    sorting (Held, Wolfe & Crowder 1974; Duchi et al., ICML 2008). Entries off the mask are
    projected as if they were 0, which keeps them at 0 because ``tau > 0``. Rows whose sum still
    exceeds ``r_i`` by round-off are scaled down to it.

    Parameters
    ----------
    V : ndarray of shape (n, k)
        Rows to project.
    radius : ndarray of shape (n,)
        Budgets ``r_i >= 0``.
    mask : ndarray of bool, shape (n, k), optional
        Entries allowed to be nonzero (default: all).

    Returns
    -------
    ndarray of shape (n, k)
    """
    V = np.asarray(V, dtype=np.float64)
    radius = np.asarray(radius, dtype=np.float64)
    if mask is not None:
        V = np.where(mask, V, 0.0)
    out = np.maximum(V, 0.0)
    over = np.flatnonzero(out.sum(axis=1) > radius)
    if over.size:
        U = -np.sort(-V[over], axis=1)
        r = radius[over]
        excess = np.cumsum(U, axis=1) - r[:, None]
        ranks = np.arange(1, V.shape[1] + 1)
        rho = np.maximum(np.sum(U * ranks > excess, axis=1), 1)  # r_i = 0 gives tau = max
        tau = excess[np.arange(over.size), rho - 1] / rho
        out[over] = np.maximum(V[over] - tau[:, None], 0.0)
    sums = out.sum(axis=1)
    big = sums > radius
    if np.any(big):
        out[big] *= (radius[big] / sums[big])[:, None]
    return out
