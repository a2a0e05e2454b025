"""Exact refinement of an approximate optimum on its support sets.

Given the sets a solver identified — ``E`` (margin violated, ``alpha_i = C s_i``), ``M`` (on the
margin) and ``O`` (beyond it, ``alpha_i = 0``) — the KKT conditions are linear equations
(:func:`qpsvm.support_sets.support_solution`); their solution is the
optimum to round-off whenever the sets are right, and the certificate decides which point is
better.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp

from qpsvm._threads import one_blas_thread
from qpsvm.contract import BinaryProblem, MulticlassProblem
from qpsvm.solution import Candidate
from qpsvm.support_sets import (
    ON_MARGIN,
    kkt_on_sets,
    margin_scale,
    support_sets,
    support_solution,
    symmetric_solver,
)
from qpsvm.verify.binary import kernel_scores, kernel_ulps
from qpsvm.verify.multiclass import tight_sets, tightness

__all__ = [
    "aimed_inside",
    "multiclass_kkt",
    "refine_binary",
    "refine_multiclass",
    "refine_sparse_weights",
    "residuals",
]

#: Thresholds (relative to ``max(1, max m_i)``) on ``|y_i f(x_i) - m_i|`` defining ``M``.
TAUS = (1e-7, 1e-5, 1e-9)
#: How many times its scores' error bound plus the KKT solve's residual a free sample is aimed
#: inside its margin (:func:`aimed_inside`): above 1 by the aimed solve's own round-off.
AIM = 3.0
#: Threshold of the polishing rounds, once the point solves the KKT equations of its sets.
POLISH_TAU = ON_MARGIN
#: Refinement is skipped when more samples than this lie on the margin.
MAX_SUPPORT = 4000
#: Multiclass refinement is skipped when more constraints than this are free (its KKT system is
#: dense in them).
MAX_FREE = 2500
#: Thresholds (relative to ``max(1, max |W|)``) below which an L1-penalised weight is read as 0.
ZERO_TAUS = (1e-9, 1e-7)


def residuals(f: BinaryProblem, cand: Candidate) -> np.ndarray:
    """``y_i (w . phi(x_i) + b) - m_i`` on the training data, from ``w`` or ``alpha``."""
    if cand.w is not None:
        scores = f.scores(w=cand.w)
    else:
        scores = f.scores(alpha=cand.alpha)
    return f.y * (scores + float(cand.b or 0.0)) - f.margin


def refine_binary(f: BinaryProblem, cand: Candidate, rounds: int = 5) -> Iterator[Candidate]:
    """Candidates from the KKT equations on the support sets read off ``cand`` at several
    thresholds, each polished by re-reading the sets off its own point until they are stable
    (a primal-dual active-set iteration); yielded one threshold at a time, so that a caller
    that stops at the first certified one computes no other."""
    if cand.w is None and cand.alpha is None:
        return
    scale = margin_scale(f)
    seen: set[bytes] = set()
    first_point: Candidate | None = None
    for first in TAUS:
        r, tau, last = residuals(f, cand), first, None
        for _ in range(rounds):
            on, bound = support_sets(f, r, tau)
            key = on.tobytes() + bound.tobytes()
            if key in seen or np.count_nonzero(on) > MAX_SUPPORT:
                break
            seen.add(key)
            alpha, b = kkt_on_sets(f, np.flatnonzero(on), bound)
            last = Candidate(w=f.expansion(alpha) if f.linear else None, b=b, alpha=alpha)
            r = residuals(f, last)
            # the KKT point lies exactly on the margin where 0 < alpha < C s: the residuals it
            # shows there are round-off (of alpha itself, ~eps |x|^2 on badly scaled data), a
            # floor below which re-reading the sets would misread them
            free = on & (alpha > 0) & (alpha < f.upper)
            tau = max(POLISH_TAU, 2.0 * float(np.max(np.abs(r[free]), initial=0.0)) / scale)
        if last is not None:
            first_point = first_point or last
            yield last
    if first_point is not None and not f.linear:
        aimed = aimed_inside(f, first_point)
        if aimed is not None:
            yield aimed


def aimed_inside(f: BinaryProblem, cand: Candidate) -> Candidate | None:
    r"""The KKT point of ``cand``'s sets with the free samples aimed :data:`AIM` times their
    scores' error bound and the KKT solve's residual inside their margins,
    ``y_i (g_i + b) = m_i + AIM (e_i + rho)`` (kernels), ``rho`` the largest distance of
    ``cand``'s free samples from their margins (``cand`` solves the same equations on the
    margins: that is the solve's residual, to within ``e_i``, which the aimed solve leaves
    again in a draw of its own; the poly kernel's ``e_i``, Dot2's ``u |g_i|``, is far below it).

    A point exactly on its margins cannot have its slacks proven zero: its computed scores
    are within ``e_i`` (:func:`~qpsvm.verify.binary.kernel_scores`) of the exact ones, so its
    certified primal pays ``C s_i e_i`` per free sample; aimed inside by more than the error,
    it pays nothing there and gives up about :math:`\sum_{i \in M} \alpha_i\, AIM\, (e_i + \rho)`
    of the objective, far less where :math:`\alpha_i \ll C s_i` (the free support vectors of
    a large ``C``). ``None`` when the sets are not ``cand``'s own or the point leaves the box.
    """
    alpha = np.asarray(cand.alpha, dtype=np.float64)
    upper = f.upper
    M = np.flatnonzero((alpha > 0) & (alpha < upper))
    E = np.flatnonzero(alpha >= upper)
    if M.size == 0 or M.size > MAX_SUPPORT:
        return None
    g, err = kernel_scores(f, [alpha], kernel_ulps(f))[0]
    residual = f.y[M] * (g[M] + float(cand.b or 0.0)) - f.margin[M]
    depth = AIM * (err[M] + float(np.max(np.abs(residual))))
    aM, b, _ = support_solution(f, M, E, target=f.margin[M] + depth)
    if not np.all((aM > 0) & (aM < upper[M])):
        return None
    aimed = np.where(alpha >= upper, upper, 0.0)
    aimed[M] = aM
    return Candidate(b=b, alpha=aimed)


def refine_sparse_weights(f: MulticlassProblem, cand: Candidate) -> list[Candidate]:
    """Candidates with the penalised weights that an interior-point solver leaves near 0 set to
    0 exactly (at the thresholds :data:`ZERO_TAUS`), the multipliers kept: an L1 penalty's
    optimum has exact zeros, where the penalty's gradient is undetermined, and a weight of
    ``1e-10`` instead fixes it at ``+-1`` in the certificate's fit (measured on a
    Crammer-Singer L1 problem with free intercepts: relative gap ``2e-11`` to ``2e-13``)."""
    if cand.w is None:
        return []
    W = np.asarray(cand.w, dtype=np.float64)
    P = f.penalised(W)
    scale = max(1.0, float(np.max(np.abs(P), initial=0.0)))
    out = []
    for tau in ZERO_TAUS:
        small = (np.abs(P) < tau * scale) & (P != 0.0)
        if np.any(small):
            Z = W.copy()
            f.penalised(Z)[small] = 0.0
            out.append(Candidate(w=Z, b=cand.b, alpha=cand.alpha))
    return out


def multiclass_kkt(
    f: MulticlassProblem, fixed: np.ndarray, free: np.ndarray, budget: np.ndarray
) -> np.ndarray:
    r"""Multipliers that solve the KKT equations of a multiclass SVM (hinge, L2) on given sets.

    ``alpha_ic = C s_i`` on ``fixed``, 0 off ``fixed | free``; on the free constraints
    ``j = (i, c)`` the margins of ``W = A^T X`` are met, :math:`m_j(W) = 1 - \xi_i`, with
    :math:`\xi_i = 0` except on the Crammer-Singer examples of ``budget``, whose slack is one
    more unknown and whose multipliers satisfy :math:`\sum_c \alpha_{ic} = C s_i`. With
    :math:`a_j = (e_{y_i} - e_c) x_i^T` and :math:`W_0` the expansion of the fixed part, the
    equations read

    .. math::

        \begin{pmatrix} G & B \\ B^T & 0 \end{pmatrix}
        \begin{pmatrix} \alpha_F \\ \xi \end{pmatrix} =
        \begin{pmatrix} 1 - m(W_0) \\ C s \end{pmatrix},
        \qquad G_{jl} = \langle a_j, a_l \rangle
        = (e_{y_j} - e_{c_j}) \cdot (e_{y_l} - e_{c_l})\; x_j \cdot x_l,

    ``B`` the membership of the free constraints in the budget examples, solved by
    :func:`~qpsvm.support_sets.symmetric_solver` (minimum norm where ``G`` is singular: more
    free constraints than ``k d`` leave the multipliers, never ``W``, undetermined). When the
    sets are the optimum's, the result is the optimum to round-off; nothing here checks that
    (the certificate does).
    """
    upper = f.upper
    alpha = np.where(fixed, upper[:, None], 0.0)
    fi, fc = np.nonzero(free)
    if fi.size == 0:
        return alpha
    XF = f.X[fi]
    XF = XF.toarray() if sp.issparse(XF) else np.asarray(XF)
    rows = np.arange(fi.size)
    Y = np.zeros((fi.size, f.n_classes))
    Y[rows, f.y[fi]] = 1.0
    Y[rows, fc] -= 1.0
    S0 = XF @ f.expansion(alpha).T
    rhs = 1.0 - (S0[rows, f.y[fi]] - S0[rows, fc])
    with one_blas_thread():
        G = (Y @ Y.T) * (XF @ XF.T)
        ex = np.flatnonzero(budget)
        if ex.size:
            B = (fi[:, None] == ex[None, :]).astype(np.float64)
            G = np.block([[G, B], [B.T, np.zeros((ex.size, ex.size))]])
            rhs = np.append(rhs, upper[ex])
        x = symmetric_solver(G)(rhs)
    alpha[fi, fc] = x[: fi.size]
    return alpha


def refine_multiclass(
    f: MulticlassProblem, cand: Candidate, rounds: int = 5, taus: tuple[float, ...] = TAUS
) -> list[Candidate]:
    """Candidates from the KKT equations (:func:`multiclass_kkt`) on the sets a point makes
    tight (:func:`~qpsvm.verify.multiclass.tight_sets`) at the thresholds ``taus``, each
    polished by a primal-dual active-set iteration: the sets are read again off the new point,
    a free multiplier that came out negative leaves them, one above its bound (an example's
    budget, for Crammer-Singer) is fixed there, while the sets change and the primal objective
    does not grow (a chain yields its point of lowest objective: the optimum ``W*`` is the
    unique minimiser of ``P``). ``taus`` are absolute thresholds on the residuals (margin
    units): :data:`TAUS` for an interior-point answer, the error band of a rougher start. For
    the hinge with the L2 penalty and no free intercept (other problems get none)."""
    if f.squared or f.intercept.coupled or f.penalty.name != "l2":
        return []
    if cand.w is None and cand.alpha is None:
        return []
    start = f.check_w(cand.w) if cand.w is not None else f.expansion(f.check_alpha(cand.alpha))
    # more free constraints than twice the entries of W: far from the optimum's sets (G is
    # singular beyond k d, and its dense solve costs seconds)
    limit = min(MAX_FREE, 2 * f.n_classes * f.n_features)
    out: list[Candidate] = []
    seen: set[bytes] = set()
    for first in taus:
        W, tau, prev = start, first, None
        S = f.scores(W)
        best, lowest = None, math.inf
        for _ in range(rounds):
            residual, slack = tightness(f, f.margins(S), f.slacks_from_scores(S))
            if prev is not None:
                residual, slack = _corrected(f, residual, slack, *prev)
            tight, fixed, budget = tight_sets(f, residual, slack, tau)
            free = tight & ~fixed & (f.upper[:, None] > 0)
            key = tight.tobytes() + fixed.tobytes() + budget.tobytes()
            if key in seen or np.count_nonzero(free) > limit:
                break
            seen.add(key)
            alpha = multiclass_kkt(f, fixed, free, budget)
            W = f.expansion(alpha)
            S = f.scores(W)
            value = f.primal_value(f.penalty_value(W), S)
            if value > lowest:  # the active-set steps are not settling
                break
            best, lowest, prev = Candidate(w=W, b=0.0, alpha=alpha), value, (free, budget, alpha)
            # the free constraints' residuals at the KKT point are round-off: a floor below
            # which re-reading the sets would misread them
            on = tightness(f, f.margins(S), f.slacks_from_scores(S))[0][free & ~budget[:, None]]
            tau = max(POLISH_TAU, 2.0 * float(np.max(np.abs(on), initial=0.0)))
        if best is not None:
            out.append(best)
    return out


def _corrected(
    f: MulticlassProblem,
    residual: np.ndarray,
    slack: np.ndarray,
    free: np.ndarray,
    budget: np.ndarray,
    alpha: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The residuals and slacks of the next active-set round: a free multiplier below 0 makes
    its constraint loose (residual ``inf``); one above its bound (Weston-Watkins) or an example
    over its budget (Crammer-Singer, without a budget row) makes it violated (slack 1)."""
    residual = np.where(free & (alpha < 0.0), np.inf, residual)
    if f.crammer_singer:
        over = (np.sum(np.where(free, alpha, 0.0), axis=1) > f.upper) & ~budget
        over = np.broadcast_to(over[:, None], slack.shape)
    else:
        over = free & (alpha > f.upper[:, None])
    return residual, np.where(over, 1.0, slack)
