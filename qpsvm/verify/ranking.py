r"""Certificates for the ranking SVM — the binary certificate on pair differences.

The ranking SVM (:class:`~qpsvm.RankingSVM`) is the binary soft-margin SVM without intercept on
the differences :math:`z_p = x_i - x_j`, all labelled ``+1``. Its dual, in the sign convention of
the binary case (:mod:`qpsvm.verify.conventions`), has one variable per pair:

.. math::

    D(\alpha) = \sum_p \alpha_p - \tfrac12 \Big\|\sum_p \alpha_p (x_i - x_j)\Big\|^2,
    \qquad 0 \le \alpha_p \le C s_p,

with no balance constraint (no intercept) and stationarity :math:`w = X^T D^T \alpha`. The
multiplier :math:`\alpha_p` is the CVXPY dual value of the pair's ``margin`` constraint
``score_i - score_j >= 1 - xi_p``; the dual of ``slack`` is :math:`C s_p - \alpha_p`.

The formulation's data matrix is the pair-difference operator, so the binary certifier applies
unchanged: products with it never form the differences, and the dual point built from a bare
``w`` forms only the rows of the pairs on the margin.

Pairs from relevance labels (every ``y_i > y_j`` inside a query, unit pair weights) are never
formed: :func:`certify_grouped` sums over them by sorting (:mod:`qpsvm.verify.ranking_sweep`).
Its dual point is read off the margins ``r_p = s_i - s_j`` of the candidate's item scores ``s``
at a threshold ``tau``: :math:`\alpha_p = C` on the pairs short of the margin (``r_p < 1 - tau``,
aggregated per item into ``a_B = cnt - cnt'`` and their number ``n_B``), :math:`\alpha_p = 0`
beyond it, and on the few pairs ``M`` within ``tau`` of it the exact maximiser of the dual with
the others fixed (a box-constrained QP in ``|M|`` variables, :func:`window_dual`). Then

.. math::

    D(\alpha) = C n_B + \sum_{p \in M} \alpha_p - \tfrac12 \big\|X^T (C a_B + D_M^T
    \alpha_M)\big\|^2,

and the primal's hinge sum :math:`\sum_p \max(0, 1 - s_i + s_j)` is bounded from above by the
same sweep on enclosures of the scores: both ends of the certificate are rigorous
(:mod:`qpsvm.verify.rigorous`) at ``O(n log n)`` cost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from qpsvm._numerics import fsum, fsum_dot
from qpsvm._validation import check_tol
from qpsvm.contract import RankingProblem
from qpsvm.solution import Candidate
from qpsvm.verify.ascent import CoordinateData
from qpsvm.verify.binary import certify_binary
from qpsvm.verify.certificate import DEFAULT_TOL, GOOD_ENOUGH, Certificate, relative
from qpsvm.verify.ranking_sweep import QueryLayout, pair_sums, pair_window
from qpsvm.verify.rigorous import (
    TINY,
    DualSums,
    U,
    _abs_product,
    down,
    dual_lower_value,
    enclosed_product,
    gamma,
    lower_sum,
    primal_upper,
    up,
    upper_sum,
)

__all__ = [
    "WindowDual",
    "bound_sets",
    "certify_grouped",
    "certify_ranking",
    "grouped_expansion",
    "grouped_gain_lower",
    "grouped_hinge_upper",
    "window_dual",
    "window_sets",
]

#: Thresholds ``tau`` on ``|r_p - 1|`` for "on the margin", tightest first.
WINDOW_TAUS = (1e-12, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2)
#: Rounds of the active-set method on a window's sets.
ACTIVE_SET_ROUNDS = 50
#: A fixed multiplier's gradient ``1 - z_p . w`` counts as pointing into the box only beyond
#: this (relative to the offset's size): round-off must not free it.
ACTIVE_SET_SLACK = 1e-12
#: Most pairs listed in a window (a larger window is skipped).
MAX_WINDOW = 20_000
#: Spread of the projected gradients, and epochs at most, of the ascent that identifies a
#: window's sets (the active-set method then solves them exactly, so a loose ascent only costs
#: active-set rounds).
WINDOW_ASCENT_TOL = 1e-9
WINDOW_EPOCHS = 300


def certify_ranking(
    f: RankingProblem, cand: Candidate, tol: float = DEFAULT_TOL, hints: Sequence[np.ndarray] = ()
) -> Certificate:
    """Certify a candidate ``w`` (intercept 0) and/or pair duals ``alpha`` of a ranking SVM.

    Parameters
    ----------
    f : RankingSVM
    cand : Candidate
        ``w`` of shape ``(n_features,)`` and/or ``alpha`` of shape ``(n_pairs,)``.
    tol : float
        Relative tolerance of the test.
    hints : sequence of ndarray, optional
        More dual points to try (see :func:`~qpsvm.verify.binary.certify_binary`).
    """
    lay = f.query_layout
    if lay is not None and cand.alpha is None and not hints:
        if cand.b is not None:
            f.check_b(cand.b)
        return certify_grouped(f, f.check_w(cand.w), tol)
    return certify_binary(f, cand, tol, pairs=(f.items, f.pairs), hints=hints)


@dataclass(frozen=True)
class WindowDual:
    r"""A dual point of the ranking SVM read off item scores at a window ``tau``.

    Attributes
    ----------
    n_bound : int
        ``n_B``, pairs at ``alpha_p = C`` (margin below ``1 - tau``).
    bound_coef : ndarray of int64
        ``a_B = cnt - cnt'``: ``sum_{p in B} (x_i - x_j) = X^T a_B``.
    window : ndarray of shape (k, 2)
        The pairs ``M`` within ``tau`` of the margin, rows ``(i, j)``.
    alpha : ndarray of shape (k,)
        Their multipliers in ``[0, C]``: the exact maximiser of the dual with the others fixed.
    w : ndarray
        The primal point of the dual point, ``X^T (C a_B + D_M^T alpha_M)`` (rounded).
    """

    n_bound: int
    bound_coef: np.ndarray
    window: np.ndarray
    alpha: np.ndarray
    w: np.ndarray


def _matvec_T(X: Any, v: np.ndarray) -> np.ndarray:
    return np.asarray(X.T @ v).ravel()


def _rows(X: Any, idx: np.ndarray) -> np.ndarray:
    R = X[idx]
    return R.toarray() if sp.issparse(R) else R


def _active_set(
    Z: np.ndarray, v0: np.ndarray, alpha: np.ndarray, cap: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """From ``alpha``'s sets, the KKT point of the window's box QP by an active-set method:
    the free multipliers solve ``z_p . w = 1`` (least squares; at most ``rank Z`` of them
    generically), those leaving the box are fixed at their bound, the fixed ones whose
    gradient ``1 - z_p . w`` points into the box are freed, until no sign is wrong (``None``
    if that does not happen in :data:`ACTIVE_SET_ROUNDS` rounds)."""
    alpha = alpha.copy()
    free = (alpha > 0.0) & (alpha < cap)
    slack = ACTIVE_SET_SLACK * max(1.0, float(np.max(np.abs(v0), initial=0.0)))
    for _ in range(ACTIVE_SET_ROUNDS):
        upper = ~free & (alpha >= cap)
        fixed = v0 + cap * Z[upper].sum(axis=0)
        ZF = Z[free]
        exact = np.linalg.lstsq(ZF @ ZF.T, 1.0 - ZF @ fixed, rcond=None)[0]
        if np.any(exact < 0.0) or np.any(exact > cap):
            idx = np.flatnonzero(free)
            alpha[idx] = np.clip(exact, 0.0, cap)
            free[idx[(exact <= 0.0) | (exact >= cap)]] = False
            continue
        alpha[free] = exact
        w = fixed + ZF.T @ exact
        g = 1.0 - Z @ w
        wrong = ~free & (((alpha <= 0.0) & (g > slack)) | ((alpha >= cap) & (g < -slack)))
        if not np.any(wrong):
            return alpha, w
        free |= wrong
    return None


def _window_qp(Z: np.ndarray, v0: np.ndarray, cap: float) -> tuple[np.ndarray, np.ndarray]:
    r"""The maximiser of :math:`\sum_p \alpha_p - \tfrac12 \|v_0 + Z^T\alpha\|^2` over
    ``[0, cap]^k`` and its ``w``: coordinate ascent in ``O(k d)`` a sweep identifies the sets,
    the active-set method (:func:`_active_set`) solves them exactly. The ascent is
    :func:`qpsvm.verify.ascent.coordinate_epochs` (``p = 1``, ``d = 0``, ``hi = cap``, no
    intercept) started from ``v = v0``: it updates ``v`` along with ``alpha``, so the fixed
    offset of the pairs outside the window is carried as it is."""
    k = Z.shape[0]
    ones = np.ones(k)
    data = CoordinateData(Z, sigma=ones, p=ones, d=np.zeros(k), hi=np.full(k, cap))
    alpha = np.zeros(k)
    v = np.append(v0, 0.0)  # starts at the offset: w = v0 + Z^T alpha throughout
    data.run(alpha, v, WINDOW_ASCENT_TOL, WINDOW_EPOCHS, shift=0.0, seed=0)
    exact = _active_set(Z, v0, alpha, cap)
    return (alpha, v[:-1]) if exact is None else exact


def bound_sets(
    lay: QueryLayout, scores: np.ndarray, tau: float, extra: np.ndarray | None = None
) -> tuple[int, np.ndarray]:
    r"""The pairs short of the margin at scores ``s`` and window ``tau`` (``B``: ``s_j >
    fl(s_i - (1 - tau))``), less the pairs ``extra`` (rows ``(i, j)``): their number ``n_B``
    and ``a_B = cnt - cnt'`` (:func:`~qpsvm.verify.ranking_sweep.pair_sums`)."""
    inner = scores - (1.0 - tau)
    cnt, cnt_other, _, _ = pair_sums(lay, inner, scores)
    n_bound = int(cnt.sum())
    coef_bound = cnt - cnt_other
    if extra is not None and extra.size:
        moved = extra[scores[extra[:, 1]] > inner[extra[:, 0]]]  # B's pairs that join M
        np.subtract.at(coef_bound, moved[:, 0], 1)
        np.add.at(coef_bound, moved[:, 1], 1)
        n_bound -= moved.shape[0]
    return n_bound, coef_bound


def window_sets(
    lay: QueryLayout, scores: np.ndarray, tau: float, extra: np.ndarray | None = None
) -> tuple[int, np.ndarray, np.ndarray] | None:
    """The sides of the pairs at scores ``s`` and window ``tau`` (:func:`window_dual`): ``n_B``,
    ``a_B`` (:func:`bound_sets`) and the window ``M`` with the pairs ``extra``; ``None`` when
    ``M`` has more than :data:`MAX_WINDOW` pairs."""
    window = pair_window(lay, scores - (1.0 + tau), scores - (1.0 - tau), scores, MAX_WINDOW)
    if window is None:
        return None
    if extra is not None and extra.size:
        window = np.unique(np.vstack([window, extra]), axis=0)
        if window.shape[0] > MAX_WINDOW:
            return None
    return (*bound_sets(lay, scores, tau, extra), window)


def window_dual(
    X: Any,
    C: float,
    lay: QueryLayout,
    scores: np.ndarray,
    tau: float,
    extra: np.ndarray | None = None,
) -> WindowDual | None:
    r"""The dual point of the pairs' sides at scores ``s`` and window ``tau`` (module docstring).

    The three sets are cut by per-item thresholds on the other item's score, ``s_j > fl(s_i -
    (1 - tau))`` (``B``), ``fl(s_i - (1 + tau)) < s_j <= fl(s_i - (1 - tau))`` (``M``), so they
    partition the pairs exactly. The pairs ``extra`` (rows ``(i, j)`` of pairs of the problem,
    e.g. earlier windows) join ``M`` wherever they lie. ``None`` when ``M`` has more than
    :data:`MAX_WINDOW` pairs.
    """
    sets = window_sets(lay, scores, tau, extra)
    if sets is None:
        return None
    n_bound, coef_bound, window = sets
    v0 = C * _matvec_T(X, coef_bound.astype(np.float64))
    alpha = np.zeros(window.shape[0])
    w = v0
    if window.shape[0]:
        Z = np.ascontiguousarray(_rows(X, window[:, 0]) - _rows(X, window[:, 1]))
        alpha, w = _window_qp(Z, v0, C)
    return WindowDual(n_bound, coef_bound, window, alpha, w)


def grouped_dual_value(X: Any, C: float, point: WindowDual) -> float:
    """``D(alpha)`` at ``point`` in floating point (no bound on its rounding)."""
    return C * point.n_bound + float(point.alpha.sum()) - 0.5 * float(point.w @ point.w)


def grouped_primal_upper(X: Any, C: float, lay: QueryLayout, w: np.ndarray) -> float:
    r"""An upper bound on the exact :math:`\tfrac12\|w\|^2 + C \sum_p \max(0, 1 - s_i +
    s_j)` over the pairs of ``lay``, by one sweep on enclosures of the item scores: with
    ``t_i >= 1 - s_i`` and ``h_j >= s_j`` (rounded outward), every hinge is at most
    ``max(0, t_i + h_j)``, summed per preferred item as ``cnt_i t_i + sum_j h_j`` (at most
    ``max_query + max_levels + 2`` roundings each, bounded by the sums of magnitudes)."""
    return primal_upper(upper_sum(w * w), C, grouped_hinge_upper(X, lay, w))


def grouped_hinge_upper(X: Any, lay: QueryLayout, w: np.ndarray) -> float:
    r"""An upper bound on the exact hinge sum :math:`\sum_p \max(0, 1 - s_i + s_j)` over the
    pairs of ``lay`` (see :func:`grouped_primal_upper`): over disjoint sets of queries these
    combine by :func:`~qpsvm.verify.rigorous.upper_sum`."""
    hi, lo, err = enclosed_product(X.T, w)
    t = hi + lo
    low = down(down(t) - err)
    high = up(up(t) + err)
    pref = up(1.0 - low)
    cnt, _, total, magnitude = pair_sums(lay, -pref, high)
    cntf = cnt.astype(np.float64)
    terms = cntf * pref + total
    size = fsum(cntf * np.abs(pref) + magnitude) * (1.0 + gamma(cntf.size + 2))
    rounding = gamma(lay.max_query + lay.max_levels + 4) * size + cntf.size * TINY
    s = fsum(terms)
    return float(up(max(0.0, s) + up(2.0 * U * abs(s) + rounding)))


def grouped_expansion(X: Any, C: float, point: WindowDual) -> tuple:
    r"""The expansion ``X^T coef`` of ``point`` enclosed (``hi, lo, err``): ``coef = C a_B +
    D_M^T alpha_M`` rounded, its rounding bounded and carried through ``|X|^T``. Over disjoint
    sets of queries these combine by :func:`~qpsvm.verify.rigorous.dd_add`."""
    coef = C * point.bound_coef.astype(np.float64)
    size = np.abs(coef)
    alpha = point.alpha
    k = 0
    if alpha.size:
        i, j = point.window[:, 0], point.window[:, 1]
        np.add.at(coef, i, alpha)
        np.add.at(coef, j, -alpha)
        np.add.at(size, i, alpha)
        np.add.at(size, j, alpha)
        k = int(np.max(np.bincount(point.window.ravel())))
    coef_err = up(gamma(k + 3) * size)
    hi, lo, err = enclosed_product(X, coef)
    return hi, lo, err + 2.0 * _abs_product(X, coef_err) + X.shape[0] * TINY


def grouped_gain_lower(C: float, n_bound: int, alpha: np.ndarray) -> float:
    """A lower bound on ``C n_B + sum_M alpha_p``."""
    return float(down(float(down(C * float(n_bound))) + lower_sum(alpha)))


def grouped_dual_lower(X: Any, C: float, point: WindowDual) -> tuple[float, np.ndarray]:
    r"""A lower bound on ``D(alpha)`` at ``point`` (exactly feasible: ``alpha = C`` on ``B``,
    ``alpha_M`` in ``[0, C]``), with the expansion enclosed (:func:`grouped_expansion`).
    Returns the bound and the rounded expansion."""
    hi, lo, err = grouped_expansion(X, C, point)
    zero = np.zeros(1)
    sums = DualSums(grouped_gain_lower(C, point.n_bound, point.alpha), (hi, lo, err), (zero,) * 3)
    return dual_lower_value(sums, None), hi + lo


def certify_grouped(f: RankingProblem, w: np.ndarray, tol: float = DEFAULT_TOL) -> Certificate:
    """Certify ``w`` for a ranking SVM whose pairs come from relevance labels (unit pair
    weights), without forming the pairs (module docstring).

    Parameters
    ----------
    f : RankingSVM
        With ``f.query_layout`` set.
    w : ndarray of shape (n_features,)
    tol : float
        Relative tolerance of the test.
    """
    tol = check_tol(tol)
    X, C, lay = f.items, f.C, f.query_layout
    primal = grouped_primal_upper(X, C, lay, w)
    scores = np.asarray(X @ w).ravel()
    dual, best, expansion = 0.0, None, np.zeros_like(w)
    for tau in WINDOW_TAUS:
        point = window_dual(X, C, lay, scores, tau)
        if point is None:
            break
        value, v = grouped_dual_lower(X, C, point)
        if value > dual:
            dual, best, expansion = value, point, v
        if relative(primal - dual, primal) <= GOOD_ENOUGH * tol:
            break
    comp = 0.0
    if best is not None and best.alpha.size:
        i, j = best.window[:, 0], best.window[:, 1]
        r = scores[i] - scores[j]
        xi = np.maximum(0.0, 1.0 - r)
        comp = float(np.max(np.maximum(np.abs(best.alpha * (r - 1.0 + xi)), (C - best.alpha) * xi)))
    return Certificate(
        primal_objective=primal,
        dual_objective=dual if math.isfinite(dual) else 0.0,
        primal_infeasibility=0.0,
        dual_infeasibility=0.0,
        complementarity=comp,
        stationarity=float(np.sqrt(fsum_dot(w - expansion, w - expansion))),
        tol=tol,
        formulation=type(f).__name__,
        rigorous=True,
    )
