r"""The box QP of a ranking window, and of the binary SVM's dual without coupling.

Over rows ``z_p`` (a ranking window's pair differences ``x_i - x_j``, or a binary SVM's signed
examples ``y_i x_i``), a fixed part ``v_0`` of the expansion and one upper bound ``cap``,

.. math::

    \max_{0 \le \alpha \le \mathrm{cap}}\ \sum_p \alpha_p - \tfrac12 \Big\|v_0 +
    \sum_p \alpha_p z_p\Big\|^2,

the dual of :math:`\min_w \tfrac12 \|w\|^2 - v_0 \cdot w + \mathrm{cap} \sum_p \max(0, 1 -
z_p \cdot w)`, with ``w = v_0 + Z^T \alpha`` at the optimum (stationarity). :func:`box_qp`
finds its exact sets (the pairs on the margin, at ``cap`` and at 0) by a primal active set in
the features, a dual coordinate ascent or Newton steps on a smoothed hinge, and solves their
equations. The ranking certificate's
window dual (:mod:`qpsvm.verify.ranking`) and the binary primal without the interior-point
solver (:mod:`qpsvm.solvers.direct`) both use it; neither trusts it: the certificate evaluates
the point it returns rigorously.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.linalg
from scipy.linalg.lapack import dpotrf as _potrf
from scipy.linalg.lapack import dpotrs as _potrs

from qpsvm._jit import CALLEE, ENTRY
from qpsvm._numerics import uncompiled
from qpsvm._rows import data_arrays, row_sq_norms
from qpsvm.verify.ascent import UNSHRINK_EVERY, coordinate_epochs, shrinking_epochs
from qpsvm.verify.projection import bounded_fit
from qpsvm.verify.ranking_fused import rows_active_set, rows_active_steps

__all__ = ["ASCENT_PAIRS", "box_qp"]

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
#: Sets of the ascent that are not the exact sets take at most this many primal-dual
#: active-set steps (:func:`_sets_try`) before the ascent goes on (measured, windows of 4354
#: and 6019 pairs in 46 features at dlib's ``c = 1``: its sets after 15 epochs miss by one or
#: two pairs, and the ascent took 5 to 20 more epochs and two to four more tries to find them).
SET_STEPS = 2
SET_MOVES = 4
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
    r"""The exact optimum of the box QP if the pieces of the smoothed optimum at width
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
    r"""The exact optimum of the box QP if ``quad`` are the pairs on the margin and
    ``linear`` those at ``alpha_p = cap`` (:func:`_piece_limit`), else ``None``
    (:func:`_sets_try`)."""
    return _sets_try(Z, v0, cap, quad, linear)[0]


def _sets_try(
    Z: np.ndarray, v0: np.ndarray, cap: float, quad: np.ndarray, linear: np.ndarray
) -> tuple[tuple[np.ndarray, np.ndarray] | None, tuple[np.ndarray, np.ndarray] | None]:
    r""":func:`_sets_limit`, and when the sets are wrong, the sets one primal-dual active-set
    step gives (Hintermüller, Ito and Kunisch, SIAM J. Optim. 13, 2003): from the fit on the
    given sets (``alpha_Q`` unclipped, margins ``g_p = 1 - z_p . w`` at ``w = u + delta``), a
    margin pair whose ``alpha_p`` left ``[0, cap]`` leaves for the side it crossed to, a pair at
    ``cap`` whose margin passed 1 and a pair at 0 whose margin fell short of it join the
    margin; ``None`` for them when the rows on the margin are dependent.

    When the margin's rows are independent, both fits of :func:`_piece_limit` come from one
    solve with their Gram matrix: ``alpha_Q = (Z_Q Z_Q^T)^{-1} (1 - Z_Q u)`` is the only fit of
    ``Z_Q^T alpha_Q = delta`` for the least-norm ``delta = Z_Q^T alpha_Q`` (Cholesky, whose
    pivots all above ``|Q| eps`` times the largest diagonal entry; else the rank-revealing
    least squares of :func:`_least_squares` for each fit). A Gram fit in the box is returned
    with the ``w = u + Z_Q^T alpha_Q`` whose margins were checked (no second product with
    ``Z``)."""
    size = int(np.count_nonzero(quad))
    if size > LIMIT_PAIRS * Z.shape[1]:
        return None, None
    u = v0 + cap * (linear.astype(np.float64) @ Z)
    side = np.where(linear, -1.0, 1.0)  # the sign of a margin's gap on its wrong side
    ZQ = Z[quad]
    r = 1.0 - ZQ @ u
    alpha_q = _gram_fit(ZQ, r) if size else np.zeros(0)
    if alpha_q is not None:
        w_fit = u + ZQ.T @ alpha_q
        g_fit = 1.0 - Z @ w_fit
        if not _on_sides(g_fit, quad, side):
            return None, _active_set_step(g_fit, quad, linear, alpha_q, cap)
        fit = alpha_q
        alpha_q = np.clip(alpha_q, 0.0, cap)  # the only fit: clipped, it is the box's
        if np.array_equal(alpha_q, fit):  # in the box: w_fit is its w, its margins checked
            alpha = np.where(linear, cap, 0.0)
            alpha[quad] = alpha_q
            return (alpha, w_fit), None
    else:
        delta = _least_squares(ZQ, r)[0]
        if not _on_sides(1.0 - Z @ (u + delta), quad, side):  # the fit is not needed
            return None, None
        alpha_q, rank = _least_squares(ZQ.T, delta)
        fit = None
        if rank == size:  # the only fit: clipped, it is the box's (or the sets are wrong)
            alpha_q = np.clip(alpha_q, 0.0, cap)
        elif np.any(alpha_q < 0.0) or np.any(alpha_q > cap):
            alpha_q = bounded_fit(ZQ.T, delta, np.zeros(size), np.full(size, cap))
    alpha = np.where(linear, cap, 0.0)
    alpha[quad] = alpha_q
    w = v0 + alpha @ Z
    if _on_sides(1.0 - Z @ w, quad, side):
        return (alpha, w), None
    return None, None if fit is None else _active_set_step(g_fit, quad, linear, fit, cap)


def _active_set_step(
    g: np.ndarray, quad: np.ndarray, linear: np.ndarray, alpha_q: np.ndarray, cap: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """The sets of one primal-dual active-set step (:func:`_sets_try`) from margins ``g`` and
    the margin pairs' unclipped multipliers ``alpha_q``; ``None`` if it moves more than
    :data:`SET_MOVES` pairs (far from the exact sets the steps wander)."""
    below = np.zeros_like(quad)
    above = np.zeros_like(quad)
    below[quad] = alpha_q < 0.0
    above[quad] = alpha_q > cap
    short = g > LIMIT_SLACK  # margin below 1: on the margin or at cap
    past = g < -LIMIT_SLACK  # margin above 1: on the margin or at 0
    to_quad = (linear & past) | (~quad & ~linear & short)
    moves = int(np.count_nonzero(below) + np.count_nonzero(above) + np.count_nonzero(to_quad))
    if moves > SET_MOVES:
        return None
    new_quad = (quad & ~below & ~above) | to_quad
    new_linear = (linear & ~past) | above
    return new_quad, new_linear


def _gram_fit(ZQ: np.ndarray, r: np.ndarray) -> np.ndarray | None:
    """``(Z_Q Z_Q^T)^{-1} r`` by Cholesky, or ``None`` when a pivot is at most ``q eps`` times
    the largest diagonal entry (the rows of ``Z_Q`` numerically dependent) or the
    factorisation fails. LAPACK's ``potrf`` and ``potrs`` called as
    :func:`scipy.linalg.cho_factor` and :func:`scipy.linalg.cho_solve` call them (the same
    floats), without their wrappers' checks (about 30 of 45 us a fit at 26 pairs)."""
    G = ZQ @ ZQ.T
    factor, info = _potrf(G, lower=1, clean=0)
    if info != 0:
        return None
    pivots = np.diagonal(factor) ** 2
    cutoff = G.shape[0] * np.finfo(np.float64).eps * float(np.max(np.diagonal(G)))
    if not float(np.min(pivots)) > cutoff:
        return None
    return _potrs(factor, r, lower=1)[0]


def _own_sets(
    Z: np.ndarray, v0: np.ndarray, cap: float, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_sets_limit` on the sets of a point whose margins' gaps are ``t = 1 - Z w``: the
    pairs within :data:`LIMIT_SLACK` of the margin on it, those short of it at ``cap``."""
    return _sets_limit(Z, v0, cap, np.abs(t) <= LIMIT_SLACK, t > LIMIT_SLACK)


def _least_squares(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int]:
    """The least-norm least-squares solution of ``A x = b`` and the numerical rank of ``A``
    (singular values below ``eps max(A.shape)`` times the largest are dropped, as
    :func:`numpy.linalg.lstsq` does), by a rank-revealing QR factorisation (LAPACK ``gelsy``:
    several times faster than the SVD at these sizes)."""
    cond = np.finfo(np.float64).eps * max(A.shape)
    x, _, rank, _ = scipy.linalg.lstsq(A, b, cond=cond, lapack_driver="gelsy", check_finite=False)
    return x, int(rank)


def _on_sides(g: np.ndarray, quad: np.ndarray, side: np.ndarray) -> bool:
    """Every margin on its side of 1 within :data:`LIMIT_SLACK` (``g_p = 1 - z_p . w``): on it
    for the pairs ``quad``, below it for those whose ``side`` is ``-1`` (at ``cap``), above it
    for the others (``side`` ``+1``)."""
    wrong = g * side
    if float(np.max(wrong, initial=0.0)) > LIMIT_SLACK:
        return False
    return float(np.max(np.abs(g[quad]), initial=0.0)) <= LIMIT_SLACK


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
    r"""The exact optimum of the box QP from the sets of a dual coordinate ascent
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
            sets = ((alpha > 0.0) & (alpha < cap), alpha >= cap)
            for _ in range(SET_STEPS + 1):
                exact, sets = _sets_try(Z, v0, cap, *sets)
                if exact is not None or sets is None:
                    break
            if exact is not None or last:
                return exact


def _active_sets(
    Z: np.ndarray, v0: np.ndarray, cap: float, w: np.ndarray, steps: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """The exact optimum of the box QP from the sets of at most ``steps`` steps of the primal
    active-set method from ``w`` (:func:`~qpsvm.verify.ranking_fused.rows_active_set`), where
    it settles (:func:`_own_sets` of its point); else ``None``."""
    w_active, settled = rows_active_set(Z, v0, cap, w, steps)
    return _own_sets(Z, v0, cap, 1.0 - Z @ w_active) if settled else None


def box_qp(
    Z: np.ndarray,
    v0: np.ndarray,
    cap: float,
    start: np.ndarray | None = None,
    active_steps: int = 0,
    rescue: bool = False,
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
    margin) are tried first when some margin is that close to 1, so that a start at the
    optimum (the certificate of an exact point) costs one least-squares fit; then, for
    ``active_steps > 0``, those of at most ``active_steps`` steps of a primal active-set
    method in the ``d`` features from the start
    (:func:`~qpsvm.verify.ranking_fused.rows_active_set`); then, once its kernel is compiled,
    those of a dual coordinate ascent (:func:`_ascent_sets`); then, with ``rescue``, those of
    the primal active set from the start
    (:func:`~qpsvm.verify.ranking_fused.rows_active_steps` steps at most, none before its
    kernel is compiled: the smoothed steps' cost is what pays its compile time; where
    ``cap`` is large the ascent is slow and the smoothed steps take about 20 Newton steps a
    width: measured, ranking windows of 258 to 1926 pairs in 40 and 46 features at dlib's
    ``c = 100``, 74 to 313 steps, 0.3 to 1 times the smoothed steps' time). Below
    :data:`LIMIT_BELOW` each width's pieces are tried as the exact sets
    (:func:`_piece_limit`); if none passes, the dual point of the last width
    :data:`SMOOTH_LAST` is returned (within ``cap mu / 4`` per pair of the optimum). Unlike an
    active-set method on the multipliers this does not cycle when pairs sharing items are
    dependent on the margin (graded relevance), nor when many pairs lie within ``1e-6`` of it.
    """
    w = (v0 if start is None else start).copy()
    t = 1.0 - Z @ w
    # the start's own sets: a start at the optimum returns at once; a start with no margin
    # on 1 (a cutting plane's point, not the optimum, where some pair is generically free)
    # skips the two products with Z that refute them
    if np.any(np.abs(t) <= LIMIT_SLACK):
        exact = _own_sets(Z, v0, cap, t)
        if exact is not None:
            return exact
    if active_steps > 0:
        exact = _active_sets(Z, v0, cap, w, active_steps)
        if exact is not None:
            return exact
    if not uncompiled(shrinking_epochs, Z.shape[0], ASCENT_PAIRS):
        exact = _ascent_sets(Z, v0, cap)
        if exact is not None:
            return exact
    steps = rows_active_steps(*Z.shape) if rescue else 0
    if steps > 0:
        exact = _active_sets(Z, v0, cap, w, steps)
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
