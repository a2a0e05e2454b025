r"""The KKT machinery of the binary SVMs (the ranking SVM included): support sets read off a
point at a threshold, and the KKT equations solved on them.

With the sets known -- ``M`` on the margin, ``E`` inside it (``alpha_i = C s_i``), the rest
beyond it (``alpha_i = 0``) -- the KKT conditions of

.. math::

    \max_\alpha \sum_i m_i \alpha_i - \tfrac12 \Big\|\sum_i \alpha_i y_i \phi(x_i)\Big\|^2,
    \quad 0 \le \alpha_i \le C s_i,\ \sum_i \alpha_i y_i = 0

are linear equations (:func:`support_solution`); their solution is the optimum to round-off
whenever the sets are right. The refinement of a solver's point
(:func:`qpsvm.solvers.refine.refine_binary`), the regularisation path's event tracking
(:mod:`qpsvm.solvers.homotopy`) and the verifier's dual points (:mod:`qpsvm.verify.binary`) all
read their sets with :func:`support_sets` and solve them here, in floating point (the
rational oracle's counterpart, exact on the sets it is given, is :mod:`qpsvm.exact.kkt`). This
module imports no formulation, solver or CVXPY (it is shared by the solvers and the verifier).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from qpsvm._numerics import fsum_dot, scale2, tdot2
from qpsvm.contract import BinaryProblem

__all__ = [
    "KKT_ROUNDS",
    "KKT_SOLVES",
    "ON_MARGIN",
    "kkt_on_sets",
    "margin_scale",
    "support_sets",
    "support_solution",
    "symmetric_solver",
]

#: A residual ``|y_i f(x_i) - m_i|`` at most this (relative to :func:`margin_scale`) reads as
#: "on the margin" at the exact KKT point of its sets: their margins are met to round-off
#: (well below ``1e-9`` on standardised data), while a sample that is off its margin is off by
#: far more at an optimum of relative accuracy ``1e-9``.
ON_MARGIN = 1e-9
#: Active-set rounds of :func:`kkt_on_sets` at most (each moves the coordinates that left the
#: box to their bound; a handful suffice when the sets are nearly right).
KKT_ROUNDS = 20


def margin_scale(f: BinaryProblem) -> float:
    """``max(1, max_i m_i)``: the scale residuals are compared at (the margins' size)."""
    return max(1.0, float(np.max(f.margin)))


def support_sets(
    f: BinaryProblem, residual: np.ndarray, tau: float = ON_MARGIN
) -> tuple[np.ndarray, np.ndarray]:
    """The support sets read off the residuals ``r_i = y_i f(x_i) - m_i`` at threshold ``tau``
    (relative to :func:`margin_scale`): the mask of ``M`` (``|r_i| <= t``) and the mask of ``E``
    (``r_i < -t`` with a finite bound ``C s_i``)."""
    t = tau * margin_scale(f)
    return np.abs(residual) <= t, (residual < -t) & np.isfinite(f.upper)


#: Most solves of the KKT equations in :func:`support_solution` (the first,
#: then iterative-refinement corrections while the residual at least halves).
KKT_SOLVES = 4


def symmetric_solver(A: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """``rhs -> x`` with ``A x = rhs`` for a symmetric ``A``, factored once: LDL^T
    (Bunch-Kaufman, LAPACK ``dsytrf``), or, when ``A`` is singular to working precision
    (reciprocal condition number below ``k eps``; sets with more points on the margin than
    dimensions make it rank deficient), the minimum-norm least-squares solution through the
    eigendecomposition ``A = V diag(lam) V^T``, eigenvalues below ``k eps max|lam|`` dropped."""
    k = A.shape[0]
    eps = np.finfo(float).eps
    lapack = scipy.linalg.lapack
    lwork = max(k, int(lapack.dsytrf_lwork(k, lower=1)[0]))
    ldu, ipiv, info = lapack.dsytrf(A, lower=1, lwork=lwork)
    if info == 0:
        anorm = float(np.max(np.sum(np.abs(A), axis=0), initial=0.0))
        rcond = lapack.dsycon(ldu, ipiv, anorm, lower=1)[0] if anorm > 0 else 0.0
        if rcond > k * eps:
            return lambda rhs: lapack.dsytrs(ldu, ipiv, rhs, lower=1)[0]
    lam, V = scipy.linalg.eigh(A, check_finite=False)
    keep = np.abs(lam) > k * eps * float(np.max(np.abs(lam), initial=0.0))
    lam, V = lam[keep], V[:, keep]
    return lambda rhs: V @ ((V.T @ rhs) / lam)


def support_solution(
    f: BinaryProblem,
    M: np.ndarray,
    E: np.ndarray,
    bound_sum: tuple[np.ndarray, np.ndarray] | None = None,
    target: np.ndarray | None = None,
) -> tuple[np.ndarray, float, np.ndarray | None]:
    r"""Solve the KKT equations given the support sets, in least squares.

    With ``alpha_i = C s_i`` on ``E`` (margin violated), ``alpha_i = 0`` off ``M`` and ``E``,
    and every ``i`` in ``M`` exactly on its margin:

    .. math::

        \sum_{j\in M} \alpha_j y_i y_j K_{ij} + y_i b
          = m_i - y_i \sum_{j\in E} C s_j y_j K_{ij} \quad (i\in M),
        \qquad \sum_{j\in M}\alpha_j y_j = -\sum_{j\in E} C s_j y_j .

    Returns ``alpha_M`` (not clipped: outside ``[0, C s_M]`` the sets are not optimal),
    ``b`` (0 without an intercept) and, for the linear kernel, ``w = sum_j alpha_j y_j x_j``
    (``None`` for the others). For the linear kernel only ``X_M X_M^T`` is formed.

    The system is factored once and its solution refined (iterative refinement, at most
    :data:`KKT_SOLVES` solves) with residuals of the margin equations evaluated at the
    iterate itself; for the linear kernel through ``w = sum_j alpha_j y_j x_j`` in twice the
    working precision (:func:`qpsvm._numerics.tdot2`). On badly scaled data the terms of
    ``w`` cancel by many digits (``|x| ~ 1e4``, ``|w| ~ 1e-4``) and a single solve leaves
    margins wrong in the 8th digit; refined, they are exact to round-off. ``bound_sum``, the
    unevaluated sum ``hi + lo`` of ``sum_{j in E} s_j y_j x_j`` in that precision (e.g.
    updated from a neighbouring ``E``), saves the product over all of ``E``. ``target``, when
    given, replaces the margins ``m_M`` the samples of ``M`` are put on.
    """
    yM = f.y[M]
    mM = f.margin[M] if target is None else target
    k = M.size
    fixed = np.zeros(f.n_samples)
    fixed[E] = f.upper[E]
    w_fixed = None
    if f.linear:
        w_fixed = tdot2(f.X, fixed * f.y) if bound_sum is None else scale2(f.C, *bound_sum)
    if k == 0:
        return np.zeros(0), 0.0, (w_fixed[0] + w_fixed[1] if w_fixed is not None else None)
    if f.linear:
        XM = f.X[M]
        KMM = XM @ XM.T
        KMM = KMM.toarray() if sp.issparse(KMM) else np.asarray(KMM)

        def expansion(aM: np.ndarray) -> np.ndarray:
            hi, lo = tdot2(XM, yM * aM, w_fixed)
            return hi + lo

        def margin_scores(aM: np.ndarray) -> np.ndarray:
            return np.asarray(XM @ expansion(aM)).ravel()

    else:
        KMM = f.gram_block(M)
        pushed = f.scores(alpha=fixed)[M] if E.size else np.zeros(k)

        def margin_scores(aM: np.ndarray) -> np.ndarray:
            return pushed + KMM @ (yM * aM)

    # balance the blocks: with c = 1/max diag(Q) solve for (alpha, c b); the unscaled system
    # mixes entries of size ||x||^2 and 1 and loses b to round-off on badly scaled data. The
    # matrix c Q = c diag(y_M) K_MM diag(y_M) is formed in place, bordered by y_M
    c = 1.0 / max(float(np.max(np.diag(KMM), initial=0.0)), np.finfo(float).tiny)
    size = k + int(f.fit_intercept)
    A = np.zeros((size, size))
    np.multiply(KMM, yM[:, None], out=A[:k, :k])
    A[:k, :k] *= c * yM
    if f.fit_intercept:
        A[:k, k] = A[k, :k] = yM
    solve = symmetric_solver(A)
    balance = -fsum_dot(f.y, fixed)  # sum_{j in M} alpha_j y_j (exact: y_j = +-1)

    def residual(x: np.ndarray) -> np.ndarray:
        b = x[k] / c if f.fit_intercept else 0.0
        r = c * (mM - yM * (margin_scores(x[:k]) + b))
        return np.append(r, balance - fsum_dot(yM, x[:k])) if f.fit_intercept else r

    best = np.zeros(size)
    r = residual(best)
    best_norm = float(np.max(np.abs(r)))
    for _ in range(KKT_SOLVES):
        x = best + solve(r)
        r_x = residual(x)
        norm = float(np.max(np.abs(r_x)))
        if not norm < best_norm:
            break
        halved = norm < 0.5 * best_norm
        best, best_norm, r = x, norm, r_x
        if not halved:
            break
    aM = best[:k]
    b = float(best[k]) / c if f.fit_intercept else 0.0
    return aM, b, (expansion(aM) if f.linear else None)


def kkt_on_sets(
    f: BinaryProblem, M: np.ndarray, bound: np.ndarray, rounds: int = KKT_ROUNDS
) -> tuple[np.ndarray, float]:
    """Maximise ``D`` with the sets fixed: :func:`support_solution` on ``M`` with
    ``alpha = C s`` on the mask ``bound``, moving coordinates that leave the box to the bound
    they cross (an active-set loop), then clipping. Returns ``alpha`` and the best ``b``
    for it."""
    M = np.asarray(M, dtype=np.intp)
    bound = np.asarray(bound, dtype=bool).copy()
    aM = np.zeros(0)
    for _ in range(rounds):
        aM = support_solution(f, M, np.flatnonzero(bound))[0]
        low, high = aM < 0, aM > f.upper[M]
        if M.size == 0 or not (np.any(low) or np.any(high)):
            break
        bound[M[high]] = True
        M = M[~(low | high)]
        aM = np.zeros(0)
    alpha = np.where(bound, f.upper, 0.0)
    if M.size and aM.size == M.size:
        alpha[M] = np.clip(aM, 0.0, f.upper[M])
    # for the alpha found, the best intercept is exact (a breakpoint computed from the data)
    return alpha, f.optimal_intercept(f.scores(alpha=alpha))
