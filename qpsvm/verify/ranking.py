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

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import scipy.linalg
import scipy.sparse as sp

from qpsvm._jit import CALLEE, ENTRY
from qpsvm._numerics import fsum, fsum_dot, uncompiled
from qpsvm._rows import data_arrays, row_sq_norms
from qpsvm._validation import check_tol
from qpsvm.contract import RankingProblem
from qpsvm.solution import Candidate
from qpsvm.verify.ascent import UNSHRINK_EVERY, coordinate_epochs
from qpsvm.verify.binary import certify_binary
from qpsvm.verify.certificate import (
    DEFAULT_TOL,
    GOOD_ENOUGH,
    Certificate,
    evaluation_allowance,
    relative,
)
from qpsvm.verify.projection import bounded_fit
from qpsvm.verify.ranking_fused import (
    FusedResult,
    FusedSettings,
    fused_all_pairs,
    fused_certificate,
)
from qpsvm.verify.ranking_sweep import QueryLayout, pair_sums, sorted_by_query, window_sides
from qpsvm.verify.rigorous import (
    TINY,
    DualSums,
    U,
    down,
    dual_estimate,
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
    "certify_all_pairs",
    "certify_grouped",
    "certify_ranking",
    "grouped_expansion",
    "grouped_gain_lower",
    "grouped_hinge_upper",
    "grouped_hinge_value",
    "hinge_upper",
    "window_dual",
    "window_sets",
]

#: Thresholds ``tau`` on ``|r_p - 1|`` for "on the margin", tightest first.
WINDOW_TAUS = (1e-12, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2)
#: Most pairs listed in a window (a larger window is skipped).
MAX_WINDOW = 20_000
#: The window's smoothed problems: widths ``mu`` from the largest ``|1 - z_p . w|`` at the
#: start (no pair beyond its quadratic piece) down by ``SMOOTH_SHRINK``
#: to ``SMOOTH_LAST``, where the smoothed optimum's own dual point is within ``C mu / 4`` per
#: pair of the hinge's (far below any certificate's tolerance).
SMOOTH_SHRINK = 10.0
SMOOTH_LAST = 1e-10
#: The first width is at least this: from a start whose margins are all within ``1e-12`` of 1
#: a first width that narrow would make Newton's system ill-conditioned (``cap / mu``).
SMOOTH_FIRST = 1e-2
#: Newton steps per width at most (each ends in an exact line search).
SMOOTH_STEPS = 50
#: Below this width the exact limit of the width's pieces is tried (:func:`_piece_limit`),
#: when at most ``LIMIT_PAIRS`` times ``d`` pairs are on the quadratic piece (at the optimum
#: generically at most ``d`` pairs are on the margin; dependent pairs of graded relevance add
#: a few).
LIMIT_BELOW = 0.1
LIMIT_PAIRS = 4
#: A margin counts as on its side (and a free pair's as on the margin) within this of 1: the
#: margins are measured against 1, and the limit's own round-off stays far below it.
LIMIT_SLACK = 1e-9
#: A width's Newton steps stop when the decrease they predict is this small relative to
#: ``max(1, ||w||^2)`` (round-off of the objective).
NEWTON_DECREMENT = 1e-15
#: Newton's system ``I + k Z_Q^T Z_Q`` is solved directly while ``k tr(Z_Q^T Z_Q)`` (a bound
#: on its condition number less 1) is at most this: the direction then keeps about 8 digits,
#: plenty for a descent direction whose step is found by an exact line search.
NEWTON_DIRECT = 1e8
#: The window's QP is first solved by dual coordinate ascent (:func:`_ascent_sets`) to this
#: projected-gradient tolerance, and its sets are tried as the exact sets (measured, windows of
#: 319 to 1193 pairs in 5 to 40 features at dlib's ``c`` 1 to 10: 45 to 65 epochs, 0.1 to 0.8 ms
#: with the exact sets' fit, against 0.9 to 2.7 ms by the smoothed Newton steps).
ASCENT_TOL = 1e-7
#: The ascent runs in rounds of ``ASCENT_ROUND`` epochs; after each round whose projected
#: gradients' spread is below ``ASCENT_TRY`` its sets are tried (measured, windows of 884 and
#: 1191 pairs in 40 features at dlib's ``c = 1``: the sets are right after 15 epochs, at a
#: spread near ``2e-5``, where the ascent to :data:`ASCENT_TOL` takes 33 to 43; in CPU time
#: 0.25 to 0.33 ms against 0.51 to 0.63 ms).
ASCENT_ROUND = 5
ASCENT_TRY = 1e-4
#: The ascent stops after ``ASCENT_EPOCHS[0]`` epochs unless its spread is below ``ASCENT_ON``
#: by then, and after ``ASCENT_EPOCHS[1]`` in all (at dlib's ``c = 100`` the ascent is slow,
#: about 100 epochs to ``1e-3``, and the smoothed steps solve the window).
ASCENT_EPOCHS = (40, 100)
ASCENT_ON = 1e-3
#: Pairs the smoothed Newton steps may solve in a process before the ascent's kernel is
#: compiled (:func:`~qpsvm._numerics.uncompiled`): its compile time (about 1.2 s) at their
#: cost (about 2.5 us a pair of the window).
ASCENT_PAIRS = 2**19
#: The line search stops when its bracket is this narrow relative to its right end (round-off),
#: after at most ``LINE_STEPS`` regula falsi steps.
LINE_WIDTH = 1e-15
LINE_STEPS = 100
#: The constants above as the compiled pass of small problems takes them.
FUSED = FusedSettings(
    MAX_WINDOW,
    LIMIT_PAIRS,
    LIMIT_SLACK,
    (ASCENT_ROUND, ASCENT_TOL, ASCENT_TRY, *ASCENT_EPOCHS, ASCENT_ON, UNSHRINK_EVERY),
)


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
    hinge : float
        The hinge sum :math:`\sum_p \max(0, 1 - s_i + s_j)` at the scores the sets were cut
        from, in floating point over ``B`` and the window's pairs short of the margin (the
        value :func:`grouped_hinge_value` computes by a sweep of its own); ``nan`` when not
        known (pairs ``extra`` joined the window).
    """

    n_bound: int
    bound_coef: np.ndarray
    window: np.ndarray
    alpha: np.ndarray
    w: np.ndarray
    hinge: float = math.nan


def _matvec_T(X: Any, v: np.ndarray) -> np.ndarray:
    return np.asarray(X.T @ v).ravel()


def _rows(X: Any, idx: np.ndarray) -> np.ndarray:
    R = X[idx]
    return R.toarray() if sp.issparse(R) else R


@numba.njit(**CALLEE)
def _slope(t, dz, mu, base, curve, cap, s):  # pragma: no cover - compiled
    """``phi'(s) = base + s curve - cap sum_p dz_p clip((t_p - s dz_p) / mu, 0, 1)``."""
    total = 0.0
    for p in range(t.shape[0]):
        r = (t[p] - s * dz[p]) / mu
        if r > 0.0:
            total += dz[p] * (r if r < 1.0 else 1.0)
    return base + s * curve - cap * total


@numba.njit(**ENTRY)
def _line_step(t, dz, mu, base, curve, cap, width, steps):  # pragma: no cover - compiled
    """The exact minimiser ``s > 0`` of the smoothed objective along a Newton direction: the
    root of its non-decreasing, piecewise linear slope :func:`_slope` (negative at 0),
    bracketed by doubling from 1, then regula falsi (Illinois), exact once the bracket lies on
    one piece; stops when the bracket is ``width`` narrow relative to its right end."""
    lo, g_lo = 0.0, _slope(t, dz, mu, base, curve, cap, 0.0)
    hi, g_hi = 1.0, _slope(t, dz, mu, base, curve, cap, 1.0)
    while g_hi < 0.0:
        lo, g_lo, hi = hi, g_hi, 2.0 * hi
        g_hi = _slope(t, dz, mu, base, curve, cap, hi)
    side = 0
    for _ in range(steps):
        if g_hi <= 0.0 or hi - lo <= width * hi:
            break
        s = hi - g_hi * (hi - lo) / (g_hi - g_lo)
        g = _slope(t, dz, mu, base, curve, cap, s)
        if g == 0.0:
            return s
        if g < 0.0:
            lo, g_lo = s, g
            if side < 0:
                g_hi *= 0.5
            side = -1
        else:
            hi, g_hi = s, g
            if side > 0:
                g_lo *= 0.5
            side = 1
    return hi


def _pieces(t: np.ndarray, mu: float) -> tuple[np.ndarray, np.ndarray]:
    """The pairs on the quadratic (``0 < t_p < mu``) and on the linear (``t_p >= mu``) piece."""
    return (t > 0.0) & (t < mu), t >= mu


def _piece_limit(
    Z: np.ndarray, v0: np.ndarray, cap: float, t: np.ndarray, mu: float
) -> tuple[np.ndarray, np.ndarray] | None:
    r"""The exact optimum of the window's box QP if the pieces of the smoothed optimum at width
    ``mu`` are its sets: the pairs on the linear piece at ``alpha_p = cap``, those on the
    quadratic piece ``Q`` on the margin, ``w = u + delta`` with ``u = v_0 + cap \sum_L z_p``
    and ``delta`` the least-norm solution of ``Z_Q delta = 1 - Z_Q u`` (the projection onto
    ``{w : Z_Q w = 1}``, the limit ``mu -> 0`` of the piece's optimum), and ``alpha_Q`` in
    ``[0, cap]`` with ``Z_Q^T alpha_Q = delta`` (least squares, clipped to the box when the
    margin's pairs are independent and the fit unique, or bounded least squares when they are
    dependent); ``O(|Q| d^2)``. ``None`` when ``Q`` has more than
    :data:`LIMIT_PAIRS` ``d`` pairs, or unless every margin is on its side within
    :data:`LIMIT_SLACK` and the multipliers reproduce ``w``."""
    return _sets_limit(Z, v0, cap, *_pieces(t, mu))


def _sets_limit(
    Z: np.ndarray, v0: np.ndarray, cap: float, quad: np.ndarray, linear: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """The exact optimum of the window's box QP if ``quad`` are the pairs on the margin and
    ``linear`` those at ``alpha_p = cap`` (:func:`_piece_limit`), else ``None``."""
    size = int(np.count_nonzero(quad))
    if size > LIMIT_PAIRS * Z.shape[1]:
        return None
    u = v0 + cap * Z[linear].sum(axis=0)
    ZQ = Z[quad]
    delta = _least_squares(ZQ, 1.0 - ZQ @ u)[0] if size else np.zeros_like(u)
    if not _on_sides(Z, u + delta, quad, linear):  # the multipliers' fit is not needed
        return None
    alpha_q = np.zeros(size)
    if size:
        alpha_q, rank = _least_squares(ZQ.T, delta)
        if rank == size:  # the only fit: clipped, it is the box's (or the sets are wrong)
            alpha_q = np.clip(alpha_q, 0.0, cap)
        elif np.any(alpha_q < 0.0) or np.any(alpha_q > cap):
            alpha_q = bounded_fit(ZQ.T, delta, np.zeros(size), np.full(size, cap))
    alpha = np.where(linear, cap, 0.0)
    alpha[quad] = alpha_q
    w = v0 + Z.T @ alpha
    return (alpha, w) if _on_sides(Z, w, quad, linear) else None


def _least_squares(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int]:
    """The least-norm least-squares solution of ``A x = b`` and the numerical rank of ``A``
    (singular values below ``eps max(A.shape)`` times the largest are dropped, as
    :func:`numpy.linalg.lstsq` does), by a rank-revealing QR factorisation (LAPACK ``gelsy``:
    several times faster than the SVD at these sizes)."""
    cond = np.finfo(np.float64).eps * max(A.shape)
    x, _, rank, _ = scipy.linalg.lstsq(A, b, cond=cond, lapack_driver="gelsy", check_finite=False)
    return x, int(rank)


def _on_sides(Z: np.ndarray, w: np.ndarray, quad: np.ndarray, linear: np.ndarray) -> bool:
    """Every margin ``z_p . w`` on its side of 1 within :data:`LIMIT_SLACK`: on it for the
    pairs ``quad``, below it for ``linear``, above it for the others."""
    g = 1.0 - Z @ w
    wrong = np.where(quad, np.abs(g), np.where(linear, -g, g))
    return float(np.max(wrong, initial=0.0)) <= LIMIT_SLACK


def _newton_solve(ZQ: np.ndarray, k: float, g: np.ndarray) -> np.ndarray:
    r"""``(I + k Z_Q^T Z_Q)^{-1} g`` through the eigenvectors ``V`` and eigenvalues ``lambda``
    of ``Z_Q^T Z_Q``: ``g - V (k lambda / (1 + k lambda) * V^T g)``. Formed as a matrix, the
    identity drowns in ``k Z_Q^T Z_Q`` once ``k ||z_p||^2`` passes ``1 / eps`` (features of
    size ``1e4`` at narrow widths) and the system turns singular; this form stays exact on
    both subspaces. Below :data:`NEWTON_DIRECT` the matrix is solved as it stands (its
    condition number is at most ``1 + k tr(Z_Q^T Z_Q)``)."""
    if ZQ.shape[0] == 0:
        return g
    A = ZQ.T @ ZQ
    if k * float(np.trace(A)) <= NEWTON_DIRECT:
        M = k * A
        M.flat[:: M.shape[0] + 1] += 1.0  # the diagonal
        return np.linalg.solve(M, g)
    lam, V = np.linalg.eigh(A)
    r = k * np.maximum(lam, 0.0)
    return g - V @ (r / (1.0 + r) * (V.T @ g))


def _ascent_sets(Z: np.ndarray, v0: np.ndarray, cap: float) -> tuple[np.ndarray, np.ndarray] | None:
    r"""The exact optimum of the window's box QP from the sets of a dual coordinate ascent
    (:func:`~qpsvm.verify.ascent.coordinate_epochs`) from ``alpha = 0`` (``w = v_0``): the pairs
    with ``0 < alpha_p < cap`` on the margin, those at ``cap`` short of it
    (:func:`_sets_limit`), tried after each round of :data:`ASCENT_ROUND` epochs whose spread
    is below :data:`ASCENT_TRY` and once the spread reaches :data:`ASCENT_TOL` or the ascent
    stops (:data:`ASCENT_EPOCHS`, :data:`ASCENT_ON`); ``None`` if no try gave its sets."""
    k = Z.shape[0]
    alpha, v = np.zeros(k), np.append(v0, 0.0)
    ones, zeros, box = np.ones(k), np.zeros(k), np.full(k, cap)
    M, norms = data_arrays(Z), row_sq_norms(Z)
    done = 0
    while True:
        epochs, spread = coordinate_epochs(
            M,
            ones,
            ones,
            zeros,
            box,
            0.0,
            norms,
            alpha,
            v,
            ASCENT_ROUND,
            ASCENT_TOL,
            0,
            UNSHRINK_EVERY,
        )
        done += epochs
        last = (
            spread <= ASCENT_TOL
            or done >= ASCENT_EPOCHS[1]
            or (done >= ASCENT_EPOCHS[0] and spread > ASCENT_ON)
        )
        if spread <= ASCENT_TRY or last:
            exact = _sets_limit(Z, v0, cap, (alpha > 0.0) & (alpha < cap), alpha >= cap)
            if exact is not None or last:
                return exact


def _window_qp(
    Z: np.ndarray, v0: np.ndarray, cap: float, start: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    r"""The maximiser of :math:`\sum_p \alpha_p - \tfrac12 \|v_0 + Z^T\alpha\|^2` over
    ``[0, cap]^k`` and its ``w``, through the primal

    .. math::

        \min_w\ \tfrac12\|w\|^2 - v_0 \cdot w + \mathrm{cap} \sum_p h(1 - z_p \cdot w),

    with the hinge ``h`` smoothed (Huber) at widths ``mu`` shrinking from the largest
    ``|1 - z_p . w|`` at the start ``w`` (``start``, default ``v_0``; at least
    :data:`SMOOTH_FIRST`): ``h_mu(t) = t^2 / (2 mu)`` on ``0 < t < mu``, ``t - mu/2`` above.
    Each width is minimised by Newton steps (Hessian ``I + (cap / mu) Z_Q^T Z_Q`` over the
    quadratic piece ``Q``, ``d x d``) with exact line search, warm started from the last width;
    its optimum gives ``alpha_p = cap clip(t_p / mu, 0, 1)`` with ``w = v_0 + Z^T alpha``
    (stationarity). The start's own sets (margins within :data:`LIMIT_SLACK` of 1 on the
    margin) are tried first, so that a start at the optimum (the certificate of an exact
    point) costs one least-squares fit; then, once its kernel is compiled, those of a dual
    coordinate ascent (:func:`_ascent_sets`). Below :data:`LIMIT_BELOW` each width's pieces are
    tried as the exact sets (:func:`_piece_limit`); if none passes, the dual point of the last width
    :data:`SMOOTH_LAST` is returned (within ``cap mu / 4`` per pair of the optimum). Unlike an
    active-set method on the multipliers this does not cycle when pairs sharing items are
    dependent on the margin (graded relevance), nor when many pairs lie within ``1e-6`` of it.
    """
    w = (v0 if start is None else start).copy()
    t = 1.0 - Z @ w
    exact = _sets_limit(Z, v0, cap, np.abs(t) <= LIMIT_SLACK, t > LIMIT_SLACK)
    if exact is not None:  # the start's own sets: a start at the optimum returns at once
        return exact
    if not uncompiled(coordinate_epochs, Z.shape[0], ASCENT_PAIRS):
        exact = _ascent_sets(Z, v0, cap)
        if exact is not None:
            return exact
    mu = max(SMOOTH_FIRST, float(np.max(np.abs(t), initial=0.0)))
    wider = None  # the last width, whose pieces predict the first step of the next one
    while True:
        settled = False
        for _ in range(SMOOTH_STEPS):
            quad, _ = _pieces(t, mu)
            grad = w - v0 - cap * (Z.T @ np.clip(t / mu, 0.0, 1.0))
            dw = -_newton_solve(Z[quad], cap / mu, grad)
            if -float(grad @ dw) <= NEWTON_DECREMENT * max(1.0, float(w @ w)):
                settled = True
                break
            if wider is not None:
                dw = _predicted_step(Z, v0, cap, w, t, mu, wider, grad, dw)
                wider = None
            dz = Z @ dw
            base, curve = float((w - v0) @ dw), float(dw @ dw)
            step = _line_step(t, dz, mu, base, curve, cap, LINE_WIDTH, LINE_STEPS)
            moved = t - step * dz
            settled = np.array_equal(_pieces(t, mu)[0], _pieces(moved, mu)[0]) and np.array_equal(
                t >= mu, moved >= mu
            )
            w, t = w + step * dw, moved
            # on one piece the step lands on its exact minimiser; a step that moves every
            # margin by less than mu is close enough to go on to the next width
            if settled or step * float(np.max(np.abs(dz), initial=0.0)) <= mu:
                break
        if mu < LIMIT_BELOW:
            exact = _piece_limit(Z, v0, cap, t, mu)
            if exact is not None:
                return exact
        if mu <= SMOOTH_LAST:
            alpha = cap * np.clip(t / mu, 0.0, 1.0)
            return alpha, v0 + Z.T @ alpha
        wider, mu = mu, max(mu / SMOOTH_SHRINK, SMOOTH_LAST)


def _predicted_step(
    Z: np.ndarray,
    v0: np.ndarray,
    cap: float,
    w: np.ndarray,
    t: np.ndarray,
    mu: float,
    wider: float,
    grad: np.ndarray,
    newton: np.ndarray,
) -> np.ndarray:
    r"""The first step at a new width ``mu``: the Newton step of the smoothed objective with
    the pieces of the last width ``wider`` kept (its quadratic pieces ``Q`` stay quadratic at
    ``mu``), which lands on the new width's optimum when no pair changes piece. Each width's
    optimum moves its margins' ``t_p`` on ``Q`` to about ``t_p mu / wider``; read at ``mu``
    they all sit on the linear piece, and Newton steps on the pieces as read bring them back a
    few at a time (measured: 15 to 20 steps per width). Returns ``newton`` (the step on the
    pieces as read) unless the predicted step descends the objective at ``mu`` (``grad``)."""
    quad, linear = _pieces(t, wider)
    model = w - v0 - cap * (Z[linear].sum(axis=0) + Z[quad].T @ (t[quad] / mu))
    step = -_newton_solve(Z[quad], cap / mu, model)
    return step if float(grad @ step) < 0.0 else newton


def bound_sets(
    lay: QueryLayout,
    scores: np.ndarray,
    tau: float,
    extra: np.ndarray | None = None,
    order: np.ndarray | None = None,
) -> tuple[int, np.ndarray]:
    r"""The pairs short of the margin at scores ``s`` and window ``tau`` (``B``: ``s_j >
    fl(s_i - (1 - tau))``), less the pairs ``extra`` (rows ``(i, j)``): their number ``n_B``
    and ``a_B = cnt - cnt'`` (:func:`~qpsvm.verify.ranking_sweep.pair_sums`; ``order`` the
    items sorted by score, when known)."""
    inner = scores - (1.0 - tau)
    cnt, cnt_other, total, _ = pair_sums(lay, inner, scores, monotone=True, order=order)
    return _bound_sides(scores, inner, cnt, cnt_other, total, extra)[:2]


def _bound_sides(
    scores: np.ndarray,
    inner: np.ndarray,
    cnt: np.ndarray,
    cnt_other: np.ndarray,
    total: np.ndarray,
    extra: np.ndarray | None,
) -> tuple[int, np.ndarray, float]:
    """:func:`bound_sets` from the sums over ``B`` (``s_j > inner_i``) of
    :func:`~qpsvm.verify.ranking_sweep.pair_sums`, and the hinge sum over ``B``, ``sum_i cnt_i
    (1 - s_i) + sum_{(i, j) in B} s_j`` in floating point (``nan`` with pairs ``extra``)."""
    n_bound = int(cnt.sum())
    coef_bound = cnt - cnt_other
    if extra is not None and extra.size:
        moved = extra[scores[extra[:, 1]] > inner[extra[:, 0]]]  # B's pairs that join M
        np.subtract.at(coef_bound, moved[:, 0], 1)
        np.add.at(coef_bound, moved[:, 1], 1)
        return n_bound - moved.shape[0], coef_bound, math.nan
    return n_bound, coef_bound, fsum(cnt * (1.0 - scores)) + fsum(total)


def window_sets(
    lay: QueryLayout,
    scores: np.ndarray,
    tau: float,
    extra: np.ndarray | None = None,
    order: np.ndarray | None = None,
) -> tuple[int, np.ndarray, np.ndarray, float] | None:
    """The sides of the pairs at scores ``s`` and window ``tau`` (:func:`window_dual`): ``n_B``,
    ``a_B`` (:func:`bound_sets`), the window ``M`` with the pairs ``extra``, and the hinge sum
    at ``s`` in floating point (:attr:`WindowDual.hinge`); ``None`` when ``M`` has more than
    :data:`MAX_WINDOW` pairs; ``order`` is ``sorted_by_query(lay, scores)``, when the caller
    has it. The window and ``B``'s sums come from one pass
    (:func:`~qpsvm.verify.ranking_sweep.window_sides`)."""
    if order is None:
        order = sorted_by_query(lay, scores)
    inner = scores - (1.0 - tau)
    window, cnt, cnt_other, total = window_sides(
        lay, scores - (1.0 + tau), inner, scores, MAX_WINDOW, order
    )
    if window is None:
        return None
    if extra is not None and extra.size:
        window = np.unique(np.vstack([window, extra]), axis=0)
        if window.shape[0] > MAX_WINDOW:
            return None
    n_bound, coef_bound, hinge = _bound_sides(scores, inner, cnt, cnt_other, total, extra)
    if window.shape[0]:  # the window's pairs short of the margin
        hinge += fsum(np.maximum(0.0, 1.0 - (scores[window[:, 0]] - scores[window[:, 1]])))
    return n_bound, coef_bound, window, hinge


def window_dual(
    X: Any,
    C: float,
    lay: QueryLayout,
    scores: np.ndarray,
    tau: float,
    extra: np.ndarray | None = None,
    start: np.ndarray | None = None,
    order: np.ndarray | None = None,
) -> WindowDual | None:
    r"""The dual point of the pairs' sides at scores ``s`` and window ``tau`` (module docstring).

    The three sets are cut by per-item thresholds on the other item's score, ``s_j > fl(s_i -
    (1 - tau))`` (``B``), ``fl(s_i - (1 + tau)) < s_j <= fl(s_i - (1 - tau))`` (``M``), so they
    partition the pairs exactly. The pairs ``extra`` (rows ``(i, j)`` of pairs of the problem,
    e.g. earlier windows) join ``M`` wherever they lie. ``None`` when ``M`` has more than
    :data:`MAX_WINDOW` pairs. ``start`` (the ``w`` of the scores, when known) starts the
    window's QP (:func:`_window_qp`) near its optimum; ``order`` is ``sorted_by_query(lay,
    scores)``, when the caller has it.
    """
    sets = window_sets(lay, scores, tau, extra, order)
    if sets is None:
        return None
    n_bound, coef_bound, window, hinge = sets
    v0 = C * _matvec_T(X, coef_bound.astype(np.float64))
    alpha = np.zeros(window.shape[0])
    w = v0
    if window.shape[0]:
        Z = np.ascontiguousarray(_rows(X, window[:, 0]) - _rows(X, window[:, 1]))
        alpha, w = _window_qp(Z, v0, C, start)
    return WindowDual(n_bound, coef_bound, window, alpha, w, hinge)


def grouped_primal_upper(
    X: Any, C: float, lay: QueryLayout, w: np.ndarray, dot2: bool = True
) -> float:
    r"""An upper bound on the exact :math:`\tfrac12\|w\|^2 + C \sum_p \max(0, 1 - s_i +
    s_j)` over the pairs of ``lay``, by one sweep on enclosures of the item scores: with
    ``t_i >= 1 - s_i`` and ``h_j >= s_j`` (rounded outward), every hinge is at most
    ``max(0, t_i + h_j)``, summed per preferred item as ``cnt_i t_i + sum_j h_j`` (at most
    ``max_query + max_levels + 2`` roundings each, bounded by the sums of magnitudes). The
    scores are enclosed by Dot2, or by the plain product if not ``dot2``
    (:func:`~qpsvm.verify.rigorous.enclosed_product`)."""
    return primal_upper(upper_sum(w * w), C, grouped_hinge_upper(X, lay, w, dot2))


def grouped_hinge_upper(X: Any, lay: QueryLayout, w: np.ndarray, dot2: bool = True) -> float:
    r"""An upper bound on the exact hinge sum :math:`\sum_p \max(0, 1 - s_i + s_j)` over the
    pairs of ``lay`` (see :func:`grouped_primal_upper`): over disjoint sets of queries these
    combine by :func:`~qpsvm.verify.rigorous.upper_sum`."""
    hi, lo, err = enclosed_product(X.T, w, dot2=dot2)
    return hinge_upper(lay, hi + lo, err)


def hinge_upper(
    lay: QueryLayout, t: np.ndarray, err: np.ndarray, order: np.ndarray | None = None
) -> float:
    r"""An upper bound on the exact hinge sum over the pairs of ``lay`` when each exact score
    lies within ``err_i`` of ``t_i`` (:func:`grouped_primal_upper`). With ``order`` (the items
    sorted by ``t`` within queries, :func:`~qpsvm.verify.ranking_sweep.sorted_by_query`) every
    score is given the largest error ``max_i err_i``: the sweep's keys ``fl(t - err)`` and
    ``fl(t + err)``, rounded monotonically, are then both non-decreasing along ``order``, and
    the sweep needs no sort of its own (else it sorts by each key)."""
    if order is not None:
        err = float(np.max(err, initial=0.0))
    low = down(down(t) - err)
    high = up(up(t) + err)
    pref = up(1.0 - low)
    cnt, _, total, magnitude = pair_sums(lay, -pref, high, order is not None, order)
    cntf = cnt.astype(np.float64)
    terms = cntf * pref + total
    size = fsum(cntf * np.abs(pref) + magnitude) * (1.0 + gamma(cntf.size + 2))
    rounding = gamma(lay.max_query + lay.max_levels + 4) * size + cntf.size * TINY
    s = fsum(terms)
    return float(up(max(0.0, s) + up(2.0 * U * abs(s) + rounding)))


def grouped_hinge_value(
    lay: QueryLayout, scores: np.ndarray, order: np.ndarray | None = None
) -> float:
    r"""The hinge sum :math:`\sum_p \max(0, 1 - s_i + s_j)` over the pairs of ``lay`` from the
    item scores ``s`` in floating point, per preferred item ``cnt_i (1 - s_i) + sum_j s_j``
    (no bound on its rounding: the value :func:`grouped_hinge_upper` bounds, for progress
    reports and :func:`~qpsvm.verify.certificate.evaluation_allowance`); ``order`` is
    ``sorted_by_query(lay, scores)``, when the caller has it."""
    cnt, _, total, _ = pair_sums(lay, scores - 1.0, scores, monotone=True, order=order)
    return fsum(cnt * (1.0 - scores)) + fsum(total)


def grouped_expansion(X: Any, C: float, point: WindowDual, dot2: bool = True) -> tuple:
    r"""The expansion ``X^T coef`` of ``point`` enclosed (``hi, lo, err``): ``coef = C a_B +
    D_M^T alpha_M`` rounded, its rounding bounded and carried through ``|X|^T``. Over disjoint
    sets of queries these combine by :func:`~qpsvm.verify.rigorous.dd_add`. The product is
    Dot2, or the plain product if not ``dot2`` (:func:`~qpsvm.verify.rigorous.enclosed_product`)."""
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
    hi, lo, err = enclosed_product(X, coef, dot2=dot2, slack=coef_err)
    return hi, lo, err + X.shape[0] * TINY


def grouped_gain_lower(C: float, n_bound: int, alpha: np.ndarray) -> float:
    """A lower bound on ``C n_B + sum_M alpha_p``."""
    return float(down(float(down(C * float(n_bound))) + lower_sum(alpha)))


def grouped_dual_lower(
    X: Any, C: float, point: WindowDual, dot2: bool = True
) -> tuple[float, float, np.ndarray]:
    r"""A lower bound on ``D(alpha)`` at ``point`` (exactly feasible: ``alpha = C`` on ``B``,
    ``alpha_M`` in ``[0, C]``), with the expansion enclosed (:func:`grouped_expansion`).
    Returns the bound, ``D`` from the same sums without their error bounds
    (:func:`~qpsvm.verify.rigorous.dual_estimate`) and the rounded expansion."""
    hi, lo, err = grouped_expansion(X, C, point, dot2)
    zero = np.zeros(1)
    sums = DualSums(grouped_gain_lower(C, point.n_bound, point.alpha), (hi, lo, err), (zero,) * 3)
    return dual_lower_value(sums, None), dual_estimate(sums), hi + lo


def certify_grouped(
    f: RankingProblem,
    w: np.ndarray,
    tol: float = DEFAULT_TOL,
    point: WindowDual | None = None,
    windows: Sequence[float] = WINDOW_TAUS,
    near: np.ndarray | None = None,
) -> Certificate:
    """Certify ``w`` for a ranking SVM whose pairs come from relevance labels (unit pair
    weights), without forming the pairs (module docstring).

    The dual point ``point`` (when given), then those of the windows ``tau`` of ``windows``
    are tried in turn until one proves the gap (or its float estimate closes it). The scores
    and the expansion are first enclosed by the plain products, the items sorted once by
    score for every sweep (:func:`hinge_upper`); Dot2's enclosures
    (:func:`grouped_primal_upper`) are computed only when those do not prove the gap at
    ``tol``.

    Parameters
    ----------
    f : RankingSVM
        With ``f.query_layout`` set.
    w : ndarray of shape (n_features,)
    tol : float
        Relative tolerance of the test.
    point : WindowDual, optional
        A dual point of this problem from :func:`window_dual` (e.g. the solver's, whose
        ``w`` is the candidate): tried first. Its soundness rests on what :func:`window_dual`
        guarantees (``alpha = C`` on ``B``, ``alpha_M`` in ``[0, C]``, the three sets a
        partition of the pairs), as for the windows' own points.
    windows : sequence of float, default=WINDOW_TAUS
        The windows ``tau`` tried after ``point``.
    near : ndarray of intp, optional
        The items sorted within queries by nearby scores (e.g. those ``point`` was read off):
        the sort by ``w``'s scores starts from it
        (:func:`~qpsvm.verify.ranking_sweep.sorted_by_query`).
    """
    tol = check_tol(tol)
    X, C, lay = f.items, f.C, f.query_layout
    if point is None and near is None:
        fused = fused_certificate(X, C, lay, w, tol, windows, FUSED, GOOD_ENOUGH * tol)
        if fused is not None:
            return _fused_certificate(f, fused, tol)
    scores, _, err = enclosed_product(X.T, w, dot2=False)
    order = sorted_by_query(lay, scores, near)  # one sort for every sweep
    primal = primal_upper(upper_sum(w * w), C, hinge_upper(lay, scores, err, order))
    square = 0.5 * fsum(w * w)
    # the float objective, for the early stop and the rounding floor: from the first window
    # read off these scores (its sweep sums the hinge), else by a sweep of its own
    primal_float = math.nan
    if point is not None or not windows:
        primal_float = square + C * grouped_hinge_value(lay, scores, order)
    dual, dual_float, best, expansion = 0.0, 0.0, None, np.zeros_like(w)
    given = () if point is None else (point,)
    points = (window_dual(X, C, lay, scores, tau, start=w, order=order) for tau in windows)
    for point in itertools.chain(given, points):
        if point is None:
            break
        if math.isnan(primal_float):
            hinge = point.hinge
            if math.isnan(hinge):
                hinge = grouped_hinge_value(lay, scores, order)
            primal_float = square + C * hinge
        value, estimate, v = grouped_dual_lower(X, C, point, dot2=False)
        if value > dual:
            dual, dual_float, best, expansion = value, estimate, point, v
        if min(primal - dual, primal_float - estimate) <= GOOD_ENOUGH * tol * max(1.0, primal):
            break
    if math.isnan(primal_float):  # the first window was too wide
        primal_float = square + C * grouped_hinge_value(lay, scores, order)
    if relative(primal - dual, primal) > tol and best is not None:
        # the plain products' rounding may hide a gap that Dot2's enclosures prove
        primal = grouped_primal_upper(X, C, lay, w)
        dual, dual_float, expansion = grouped_dual_lower(X, C, best)
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
        rounding_floor=evaluation_allowance(primal, dual, primal_float, dual_float),
    )


def _fused_certificate(f: RankingProblem, fused: FusedResult, tol: float) -> Certificate:
    """The :class:`Certificate` of :func:`certify_grouped` from the compiled pass's bounds."""
    dual = fused.dual
    return Certificate(
        primal_objective=fused.primal,
        dual_objective=dual if math.isfinite(dual) else 0.0,
        primal_infeasibility=0.0,
        dual_infeasibility=0.0,
        complementarity=fused.complementarity,
        stationarity=fused.stationarity,
        tol=tol,
        formulation=type(f).__name__,
        rigorous=True,
        rounding_floor=evaluation_allowance(
            fused.primal, dual, fused.primal_float, fused.dual_float
        ),
    )


def certify_all_pairs(
    f: RankingProblem, w: np.ndarray, tol: float = DEFAULT_TOL
) -> tuple[np.ndarray, Certificate] | None:
    """Every pair as one window from ``w`` (:func:`window_dual` at ``tau = inf``) and the
    certificate of its point's ``w``, that point tried first (:func:`certify_grouped` with
    ``point``), in one compiled pass (:func:`~qpsvm.verify.ranking_fused.fused_all_pairs`):
    the point's ``w`` and its certificate, or ``None`` where that pass does not settle them."""
    done = fused_all_pairs(
        f.items, f.C, f.query_layout, w, tol, WINDOW_TAUS, FUSED, GOOD_ENOUGH * tol
    )
    if done is None:
        return None
    return done[0], _fused_certificate(f, done[1], tol)
