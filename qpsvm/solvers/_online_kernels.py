r"""Numba kernels of the online solvers: one subgradient epoch, and the SMO loop.

Subgradient epochs keep ``w = a v`` (a scalar times a vector), so the shrink
``w <- (1 - eta lambda) w`` and the projection onto a ball are O(1) and a sparse update costs
``O(nnz(x_i))``, as in Bottou's SGD and scikit-learn's ``SGDClassifier``. The running sum of the
iterates, for averaging, is kept as ``S = p + beta v``: adding ``delta`` to ``v`` subtracts
``beta delta`` from ``p`` and each step adds ``a`` to ``beta`` (Xu 2011, "Towards optimal one
pass large scale learning with averaged stochastic gradient descent").

The scalar state carried across epochs lives in a small float64 array indexed by the ``ST_*``
constants. Every kernel is compiled once per argument types and cached on disk.
"""

from __future__ import annotations

import numba
import numpy as np

from qpsvm._jit import CALLEE, ENTRY
from qpsvm._rows import _example_axpy, _example_dot, _row_axpy, _row_dot
from qpsvm.kernels import cached_row

__all__ = [
    "ST_A",
    "ST_B",
    "ST_BETA",
    "ST_BSUM",
    "ST_NORM2",
    "binary_epoch",
    "multiclass_epoch",
    "smo_loop",
]

#: Indices of the scalar state of a subgradient run.
ST_A, ST_B, ST_NORM2, ST_BETA, ST_BSUM = 0, 1, 2, 3, 4
#: ``a`` is folded into ``v`` when ``|a|`` falls below this (or reaches 0 at Pegasos' first step).
_RESCALE = 1e-9
#: libsvm's floor on the curvature of a working pair.
_TAU = 1e-12


@numba.njit(**CALLEE)
def _fold(v, avg, a, norm2, beta, average):  # pragma: no cover - compiled
    """Fold the scale into ``v`` (``v <- a v``, ``a <- 1``) keeping ``w = a v`` and the iterate
    sum ``S = p + beta v`` (``p <- p + beta v``, ``beta <- 0``); returns ``(a, norm2, beta)``."""
    if average and beta != 0.0:
        for j in range(v.shape[0]):
            avg[j] += beta * v[j]
    for j in range(v.shape[0]):
        v[j] *= a
    return 1.0, norm2 * a * a, 0.0


@numba.njit(**CALLEE)
def _scale(v, avg, a, norm2, beta, average, factor):  # pragma: no cover - compiled
    """``w <- factor w`` (``a <- factor a``), folded into ``v`` (:func:`_fold`) once ``a`` falls
    below :data:`_RESCALE`; returns ``(a, norm2, beta)``."""
    a *= factor
    if abs(a) < _RESCALE:
        return _fold(v, avg, a, norm2, beta, average)
    return a, norm2, beta


@numba.njit(**CALLEE)
def _project_ball(v, avg, a, norm2, beta, average, radius):  # pragma: no cover - compiled
    """``w = a v`` projected onto the ball of ``radius`` (``norm2 = ||v||^2``, tracked);
    returns ``(a, norm2, beta)``."""
    norm = abs(a) * np.sqrt(max(norm2, 0.0))
    if norm > radius:
        return _scale(v, avg, a, norm2, beta, average, radius / norm)
    return a, norm2, beta


@numba.njit(**ENTRY)
def binary_epoch(
    M, y, s, m, sqnorm, fit_intercept, order, etas, lam, batch, radius, v, avg, state, average
):  # pragma: no cover - compiled
    """One pass of (mini-batch) Pegasos over the examples ``order`` of ``M``.

    Step ``t`` (``eta = etas[t]``) on batch ``B``: the violators ``V = {i in B: y_i (w.z_i + b) <
    m_i}`` are found at the current point, then ``w <- (1 - eta lam) w + eta/|B| sum_V s_i y_i
    z_i``, ``b <- b + eta/|B| sum_V s_i y_i`` (with an intercept) and, when ``radius > 0``, ``w``
    is projected onto the ball of that radius (``sqnorm``: ``||z_i||^2``). ``w = a v``;
    ``state`` holds ``a, b, ||v||^2, beta, sum_t b_t`` and is updated, as are ``v`` and ``avg``
    (``p``).
    """
    a, b = state[ST_A], state[ST_B]
    norm2, beta, bsum = state[ST_NORM2], state[ST_BETA], state[ST_BSUM]
    track = radius > 0.0
    viol = np.empty(batch, dtype=np.int64)
    coef = np.empty(batch)
    for step in range(etas.shape[0]):
        k0 = step * batch
        k1 = min(k0 + batch, order.shape[0])
        nv = 0
        for q in range(k0, k1):
            i = order[q]
            if y[i] * (a * _example_dot(i, M, v) + b) < m[i]:
                viol[nv] = i
                coef[nv] = s[i] * y[i] / (k1 - k0)
                nv += 1
        eta = etas[step]
        a, norm2, beta = _scale(v, avg, a, norm2, beta, average, 1.0 - eta * lam)
        gb = 0.0
        for r in range(nv):
            i = viol[r]
            c = eta * coef[r] / a
            gb += coef[r]
            if track:
                norm2 += 2.0 * c * _example_dot(i, M, v) + c * c * sqnorm[i]
            _example_axpy(i, M, c, v)
            if average:
                _example_axpy(i, M, -c * beta, avg)
        if fit_intercept:
            b += eta * gb
        if track:
            a, norm2, beta = _project_ball(v, avg, a, norm2, beta, average, radius)
        if average:
            beta += a
            bsum += b
    state[ST_A], state[ST_B] = a, b
    state[ST_NORM2], state[ST_BETA], state[ST_BSUM] = norm2, beta, bsum


@numba.njit(**ENTRY)
def multiclass_epoch(
    M,
    y,
    s,
    sqnorm,
    n_classes,
    crammer_singer,
    order,
    etas,
    lam,
    batch,
    radius,
    v,
    avg,
    state,
    average,
):  # pragma: no cover - compiled
    """One pass of (mini-batch) Pegasos for the multiclass SVM, ``W = a V`` (``v``: ``V``
    flattened row by row, one row per class).

    At the current point, example ``i`` with scores ``S_c = w_c . x_i`` contributes the pairs
    ``(y_i, c)`` with ``1 - (S_{y_i} - S_c) > 0``: only the arg-max class ``c`` (smallest index on
    ties) for Crammer-Singer, every such class for Weston-Watkins. The step is ``W <- (1 - eta
    lam) W + eta/|B| sum s_i x_i (e_{y_i} - e_c)^T`` — the true class pulled towards ``x_i``, the
    violating class pushed away — then the optional projection onto ``||W||_F <= radius``.
    """
    d = v.shape[0] // n_classes
    V = v.reshape((n_classes, d))
    P = avg.reshape((n_classes, d)) if average else avg.reshape((1, avg.shape[0]))
    a = state[ST_A]
    norm2, beta = state[ST_NORM2], state[ST_BETA]
    track = radius > 0.0
    cap = batch * (n_classes - 1)
    rec_i = np.empty(cap, dtype=np.int64)
    rec_c = np.empty(cap, dtype=np.int64)
    rec_w = np.empty(cap)
    scores = np.empty(n_classes)
    for step in range(etas.shape[0]):
        k0 = step * batch
        k1 = min(k0 + batch, order.shape[0])
        nv = 0
        for q in range(k0, k1):
            i = order[q]
            yi = y[i]
            for c in range(n_classes):
                scores[c] = a * _row_dot(i, M, V[c])
            worst = -1
            for c in range(n_classes):
                if c == yi or 1.0 - (scores[yi] - scores[c]) <= 0.0:
                    continue
                if not crammer_singer:
                    rec_i[nv], rec_c[nv], rec_w[nv] = i, c, s[i] / (k1 - k0)
                    nv += 1
                elif worst < 0 or scores[c] > scores[worst]:
                    worst = c
            if worst >= 0:
                rec_i[nv], rec_c[nv], rec_w[nv] = i, worst, s[i] / (k1 - k0)
                nv += 1
        eta = etas[step]
        a, norm2, beta = _scale(v, avg, a, norm2, beta, average, 1.0 - eta * lam)
        for r in range(nv):
            i = rec_i[r]
            c = eta * rec_w[r] / a
            for row, sign in ((y[i], 1.0), (rec_c[r], -1.0)):
                if track:
                    norm2 += 2.0 * sign * c * _row_dot(i, M, V[row]) + c * c * sqnorm[i]
                _row_axpy(i, M, sign * c, V[row])
                if average:
                    _row_axpy(i, M, -sign * c * beta, P[row])
        if track:
            a, norm2, beta = _project_ball(v, avg, a, norm2, beta, average, radius)
        if average:
            beta += a
    state[ST_A], state[ST_NORM2], state[ST_BETA] = a, norm2, beta


# --------------------------------------------------------------------------------- SMO
@numba.njit(**CALLEE)
def _in_up(y, a, U):  # pragma: no cover - compiled
    """Whether a variable of label ``y`` at ``a`` in ``[0, U]`` is in ``I_up`` (``a < U`` for
    ``y > 0``, ``a > 0`` else), without a branch: the selection passes test it for each active
    variable, whose labels alternate unpredictably (measured, rbf n = 200: the SMO loop 5-7%
    faster than with the conditional expression)."""
    return ((y > 0.0) & (a < U)) | ((y <= 0.0) & (a > 0.0))


@numba.njit(**CALLEE)
def _in_low(y, a, U):  # pragma: no cover - compiled
    """Whether a variable of label ``y`` at ``a`` in ``[0, U]`` is in ``I_low`` (``a > 0`` for
    ``y > 0``, ``a < U`` else), without a branch (:func:`_in_up`)."""
    return ((y > 0.0) & (a > 0.0)) | ((y <= 0.0) & (a < U))


@numba.njit(**CALLEE)
def _pair_step(i, j, Ki, Kj, y, U, alpha, G, diag, act, n_act):  # pragma: no cover - compiled
    """libsvm's analytic update of ``(alpha_i, alpha_j)`` under ``y.alpha`` fixed, clipped to
    the box, followed by the gradient update ``G += Q_i da_i + Q_j da_j`` on the active
    variables ``act[:n_act]``; returns the next step's ``i`` and its ``-y_i G_i``
    (:func:`_select_i` at the new point), found in the same pass (measured: the tail of a run
    to a small gap, all rows cached, takes 10% less time than with a pass of its own)."""
    Ci, Cj = U[i], U[j]
    ai, aj = alpha[i], alpha[j]
    quad = diag[i] + diag[j] - 2.0 * Ki[j]
    if quad <= 0.0:
        quad = _TAU
    if y[i] != y[j]:
        delta = (-G[i] - G[j]) / quad
        diff = ai - aj
        alpha[i] = ai + delta
        alpha[j] = aj + delta
        if diff > 0.0:
            if alpha[j] < 0.0:
                alpha[j] = 0.0
                alpha[i] = diff
        elif alpha[i] < 0.0:
            alpha[i] = 0.0
            alpha[j] = -diff
        if diff > Ci - Cj:
            if alpha[i] > Ci:
                alpha[i] = Ci
                alpha[j] = Ci - diff
        elif alpha[j] > Cj:
            alpha[j] = Cj
            alpha[i] = Cj + diff
    else:
        delta = (G[i] - G[j]) / quad
        total = ai + aj
        alpha[i] = ai - delta
        alpha[j] = aj + delta
        if total > Ci:
            if alpha[i] > Ci:
                alpha[i] = Ci
                alpha[j] = total - Ci
        elif alpha[j] < 0.0:
            alpha[j] = 0.0
            alpha[i] = total
        if total > Cj:
            if alpha[j] > Cj:
                alpha[j] = Cj
                alpha[i] = total - Cj
        elif alpha[i] < 0.0:
            alpha[i] = 0.0
            alpha[j] = total
    di = (alpha[i] - ai) * y[i]
    dj = (alpha[j] - aj) * y[j]
    gmax = -np.inf
    nxt = -1
    for k in range(n_act):
        t = act[k]
        g = G[t] + y[t] * (Ki[t] * di + Kj[t] * dj)
        G[t] = g
        if _in_up(y[t], alpha[t], U[t]) & (-y[t] * g >= gmax):
            gmax = -y[t] * g
            nxt = t
    return nxt, gmax


@numba.njit(**CALLEE)
def _single_step(i, step, Ki, y, U, alpha, G, act, n_act):  # pragma: no cover - compiled
    """Without an intercept: ``alpha_i <- clip(alpha_i + step, 0, U_i)`` and the active
    gradient updated, ``G_t += y_t K_it y_i (alpha_i - old)``."""
    old = alpha[i]
    new = old + step
    alpha[i] = 0.0 if new <= 0.0 else (U[i] if new >= U[i] else new)
    di = (alpha[i] - old) * y[i]
    for k in range(n_act):
        t = act[k]
        G[t] += y[t] * Ki[t] * di


@numba.njit(**CALLEE)
def _select_i(y, U, alpha, G, act, n_act):  # pragma: no cover - compiled
    """``i = argmax_{t in I_up} -y_t G_t`` over the active variables, and that maximum
    (``-1, -inf`` if ``I_up`` is empty)."""
    gmax = -np.inf
    i = -1
    for k in range(n_act):
        t = act[k]
        if _in_up(y[t], alpha[t], U[t]) & (-y[t] * G[t] >= gmax):
            gmax = -y[t] * G[t]
            i = t
    return i, gmax


@numba.njit(**CALLEE)
def _select_j(i, gmax, Ki, y, U, alpha, G, diag, second_order, act, n_act):  # pragma: no cover
    """The partner ``j`` in ``I_low`` (maximal violation or second-order decrease) among the
    active variables, and the violation ``max_{I_up} -yG - min_{I_low} -yG``.

    The decrease ``b_t^2 / a_t`` (``b_t = gmax + y_t G_t > 0``, ``a_t`` the curvature) is
    compared as ``b_t^2 a_best >= b_best^2 a_t``: no division in the loop (early on most
    variables violate, and one division per variable was most of a step's time)."""
    gmax2 = -np.inf
    j = -1
    best_b2 = 0.0
    best_a = 1.0
    for k in range(n_act):
        t = act[k]
        if not _in_low(y[t], alpha[t], U[t]):
            continue
        ygt = y[t] * G[t]
        if ygt >= gmax2:
            gmax2 = ygt
            if not second_order:
                j = t
        b = gmax + ygt
        if second_order and b > 0.0:
            a = diag[i] + diag[t] - 2.0 * Ki[t]
            if a <= 0.0:
                a = _TAU
            if b * b * best_a >= best_b2 * a:
                best_b2 = b * b
                best_a = a
                j = t
    return j, gmax + gmax2


@numba.njit(**CALLEE)
def _select_single(U, alpha, G, diag, second_order, act, n_act):  # pragma: no cover - compiled
    """Without the balance constraint: the active coordinate to move, its step and the largest
    projected gradient."""
    violation = 0.0
    i = -1
    best = 0.0
    step = 0.0
    for k in range(n_act):
        t = act[k]
        g = G[t]
        if g < 0.0 and alpha[t] < U[t]:
            pg = -g
        elif g > 0.0 and alpha[t] > 0.0:
            pg = g
        else:
            continue
        violation = max(violation, pg)
        q = diag[t] if diag[t] > _TAU else _TAU
        dt = min(max(alpha[t] - g / q, 0.0), U[t]) - alpha[t]
        score = -(g * dt + 0.5 * diag[t] * dt * dt) if second_order else pg
        if score > best:
            best = score
            i = t
            step = dt
    return i, step, violation


@numba.njit(**CALLEE)
def _extremes(y, U, alpha, G, act, n_act, intercept):  # pragma: no cover - compiled
    """``(max_{I_up} -y G, max_{I_low} y G)`` over the active variables (libsvm's ``Gmax1``,
    ``Gmax2``); without an intercept the largest projected gradient, twice."""
    g1 = -np.inf
    g2 = -np.inf
    for k in range(n_act):
        t = act[k]
        if intercept:
            if (alpha[t] < U[t]) if y[t] > 0 else (alpha[t] > 0.0):
                g1 = max(g1, -y[t] * G[t])
            if (alpha[t] > 0.0) if y[t] > 0 else (alpha[t] < U[t]):
                g2 = max(g2, y[t] * G[t])
        else:
            if alpha[t] < U[t]:
                g1 = max(g1, -G[t])
            if alpha[t] > 0.0:
                g1 = max(g1, G[t])
    return (g1, g2) if intercept else (g1, g1)


@numba.njit(**CALLEE)
def _shrink(y, U, alpha, G, act, n_act, intercept, scratch):  # pragma: no cover - compiled
    """libsvm's shrinking: move to the end of ``act[:n_act]`` the variables at a bound whose
    gradient pushes them further into it by more than the current extremes (they are unlikely
    to move again); returns the new number of active variables. A stable partition, so the
    active variables keep their order (and the selection its ties)."""
    g1, g2 = _extremes(y, U, alpha, G, act, n_act, intercept)
    kept = 0
    dropped = 0
    for k in range(n_act):
        t = act[k]
        plus = y[t] > 0 or not intercept
        # at a bound, t is in I_up only or in I_low only; it is stuck when it cannot form a
        # violating pair: y G above max_{I_low} y G (I_up only), -y G above max_{I_up} -y G
        if alpha[t] >= U[t]:
            up_only = not plus
        elif alpha[t] <= 0.0:
            up_only = plus
        else:
            act[kept] = t
            kept += 1
            continue
        yg = y[t] * G[t] if intercept else G[t]
        if (yg > g2) if up_only else (-yg > g1):
            scratch[dropped] = t
            dropped += 1
        else:
            act[kept] = t
            kept += 1
    for k in range(dropped):
        act[kept + k] = scratch[k]
    return kept


@numba.njit(**CALLEE)
def _sample(i, units):  # pragma: no cover - compiled
    """The sample of unit ``i`` (``i`` itself when ``units`` is None: the units are the
    samples; a branch numba prunes when it compiles that specialisation)."""
    if units is None:
        return i
    return units[0][i]


@numba.njit(**CALLEE)
def _entry(R, t, units):  # pragma: no cover - compiled
    """``K_{s_i s_t} (+ B^2)`` of unit ``t`` from the kernel row ``R`` of a unit ``i``'s sample
    (``R[t]`` itself when ``units`` is None)."""
    if units is None:
        return R[t]
    return R[units[0][t]] + units[2]


@numba.njit(**CALLEE)
def _row_buffers(units):  # pragma: no cover - compiled
    """The two buffers the unit rows of a pair are gathered into (:func:`_unit_row`); empty
    when ``units`` is None (the rows are read in place)."""
    buffers = np.empty((2, 0)) if units is None else units[3]
    return buffers[0], buffers[1]


@numba.njit(**CALLEE)
def _unit_row(i, R, units, out, act, n_act):  # pragma: no cover - compiled
    """Row ``i`` of the units' matrix, ``y_i y_t Q_it = K_{s_i s_t} + B^2 + D_i [t = i]``, on
    the active units ``act[:n_act]``, from the kernel row ``R`` of ``i``'s sample: ``R`` itself
    when ``units`` is None (the units are the samples, no shift), else gathered into ``out``
    (libsvm's ``SVR_Q::get_Q``)."""
    if units is None:
        return R
    for k in range(n_act):
        t = act[k]
        out[t] = _entry(R, t, units)
    out[i] += units[1][i]
    return out


@numba.njit(**CALLEE)
def _bound_change(i, old, R, y, U, alpha, G_bar, units):  # pragma: no cover - compiled
    """Keep ``G_bar = sum_{j: alpha_j = U_j} U_j Q_j`` (the gradient of the variables at their
    upper bound, libsvm's ``G_bar``) when ``alpha_i`` moved from ``old``: a pass over ``Q_i``
    (from the kernel row ``R`` of ``i``'s sample) only if it reached or left its bound."""
    was, now = old >= U[i], alpha[i] >= U[i]
    if was != now:
        c = U[i] * y[i] if now else -U[i] * y[i]
        for t in range(G_bar.shape[0]):
            G_bar[t] += c * y[t] * _entry(R, t, units)
        if units is not None:
            G_bar[i] += c * y[i] * units[1][i]


@numba.njit(**CALLEE)
def _unshrink(cache, units, y, m, U, alpha, G, G_bar, act, n_act):  # pragma: no cover - compiled
    """Recompute the gradient of the shrunk variables, ``G_t = G_bar_t - m_t + y_t sum_j
    alpha_j y_j Q_jt`` over the free ``0 < alpha_j < U_j`` only (rows from the cache; a shrunk
    unit is at a bound, so no diagonal shift enters), and make every variable active again
    (in index order)."""
    n = y.shape[0]
    if n_act < n:
        for k in range(n_act, n):
            G[act[k]] = G_bar[act[k]] - m[act[k]]
        for j in range(n):
            if 0.0 < alpha[j] < U[j]:
                R = cached_row(_sample(j, units), cache)
                c = alpha[j] * y[j]
                for k in range(n_act, n):
                    t = act[k]
                    G[t] += y[t] * _entry(R, t, units) * c
    for t in range(n):
        act[t] = t
    return n


@numba.njit(**ENTRY)
def smo_loop(
    cache,
    units,
    y,
    m,
    U,
    diag,
    alpha,
    G,
    G_bar,
    tol,
    max_iter,
    second_order,
    intercept,
    shrinking,
    peek,
    peek_steps,
    paused,
):  # pragma: no cover - compiled
    """SMO on ``min 1/2 a^T Q a - m.a`` over ``0 <= a <= U`` (and ``y.a`` fixed with an
    intercept), ``Q_ij = y_i y_j K_ij``, over units as libsvm's ``Solver`` states all its
    formulations: ``units = (sample, shift, B2, buffers)`` make
    ``Q_ij = y_i y_j (K_{s_i s_j} + B^2) + D_i [i = j]`` (unit ``i`` of sample ``s_i``, e.g. one
    unit per side of SVR's tube; ``B^2`` of a regularised intercept; ``D`` the diagonal of a
    squared loss), its rows gathered into the two ``buffers`` (:func:`_unit_row`); ``units``
    None when the units are the samples and ``B = D = 0``: the rows are read in place, and numba
    compiles that specialisation without the units' branches; ``G`` holds the gradient
    ``Q a - m`` and ``G_bar`` the part ``sum_{j: a_j = U_j} U_j Q_j`` of it (zero at
    ``a = 0``); both are updated, so a later call continues from them (warm).

    With an intercept, the working pair is libsvm's (Fan, Chen and Lin 2005): ``i`` maximises
    ``-y_t G_t`` over ``I_up``, ``j`` minimises it over ``I_low`` (``second_order=False``) or
    maximises the second-order decrease ``b_ij^2 / (Q_ii + Q_jj - 2 y_i y_j Q_ij)`` (``diag``
    holds ``Q_ii``); the loop stops when
    ``max_{I_up} -yG - min_{I_low} -yG < tol``. Without one, a single coordinate moves (largest
    projected gradient, or largest exact decrease) until every projected gradient is below
    ``tol``. Rows of ``K`` come from ``cache`` (:func:`qpsvm.kernels.cached_row`: a formed
    Gram matrix, or a :class:`~qpsvm.kernels.KernelCache`'s slots, computed on a miss; row
    ``i`` survives the miss on ``j``: it is the last used).

    With ``shrinking``, every ``min(n, 1000)`` steps (and at the first step of a warm call)
    the variables that :func:`_shrink` finds stuck at a bound leave the selection and the
    gradient update, as in libsvm; the first time
    the violation falls below ``10 tol``, and whenever the active variables meet ``tol``, the
    full gradient is rebuilt (:func:`_unshrink`) and every variable is checked again: the loop
    stops only when all of them meet ``tol``.

    Returns ``(iterations, violation)``; ``cache[4]`` counts cache hits and misses. While the
    active variables outnumber the cache's slots twice over, rows computed enter it at the
    least recent end (:func:`qpsvm.kernels.cached_row`'s sweep).

    With ``peek > tol``, the loop pauses once the violation on its active variables falls
    below ``peek`` and it has taken at least ``peek_steps`` steps: it returns before the next
    step, its own state (the active variables in
    their order, their number, the shrinking counter and whether it has unshrunk) kept in
    ``paused`` (int64, ``n + 3``), whose first entry is then the number of active variables
    (else -1). A later call resumes from it, taking the steps the loop would have taken
    without the pause, to the float (the gradients of the shrunk variables are not rebuilt at
    a pause: ``alpha`` is exact there, ``G`` only on the active variables).
    """
    n = y.shape[0]
    rows_i, rows_j = _row_buffers(units)
    stats, slots = cache[4], cache[0].shape[0]
    act = paused[3:]
    scratch = np.empty(n, dtype=np.int64)
    period = min(n, 1000)
    if paused[0] >= 0:
        n_act, counter, unshrunk = paused[0], paused[1], paused[2] != 0
    else:
        act[:] = np.arange(n)
        n_act = n
        # a warm call (from a point near the optimum) shrinks at once: most are settled
        counter = 1 if np.any(alpha > 0.0) else period
        unshrunk = False
    paused[0] = -1
    it = 0
    violation = np.inf
    # the pair step returns the next i (selected = True) until the active set changes
    selected = False
    i, gmax = -1, -np.inf
    while it < max_iter:
        if violation < peek and it >= peek_steps:
            # resumed, the loop selects i anew: the i the last step's pass selected
            paused[0], paused[1], paused[2] = n_act, counter, 1 if unshrunk else 0
            stats[4] = 0
            return it, violation
        if shrinking:
            counter -= 1
            if counter == 0:
                counter = period
                selected = False
                if not unshrunk:
                    g1, g2 = _extremes(y, U, alpha, G, act, n_act, intercept)
                    if (g1 + g2 if intercept else g1) <= 10.0 * tol:
                        unshrunk = True
                        n_act = _unshrink(cache, units, y, m, U, alpha, G, G_bar, act, n_act)
                n_act = _shrink(y, U, alpha, G, act, n_act, intercept, scratch)
        # over twice as many active rows as slots: SMO sweeps over them (cached_row's sweep)
        stats[4] = n_act > 2 * slots
        for _ in range(2):
            if intercept:
                if not selected:
                    i, gmax = _select_i(y, U, alpha, G, act, n_act)
                selected = False
                j = -1
                violation = 0.0
                if i >= 0:
                    Ri = cached_row(_sample(i, units), cache)
                    Ki = _unit_row(i, Ri, units, rows_i, act, n_act)
                    j, violation = _select_j(
                        i, gmax, Ki, y, U, alpha, G, diag, second_order, act, n_act
                    )
                done = j < 0 or violation < tol
            else:
                i, step, violation = _select_single(U, alpha, G, diag, second_order, act, n_act)
                done = i < 0 or violation < tol
            if not done or n_act == n:
                break
            # optimal on the active variables: rebuild the gradient and select among them all
            n_act = _unshrink(cache, units, y, m, U, alpha, G, G_bar, act, n_act)
            counter = 1
        if done:
            break
        if intercept:
            Rj = cached_row(_sample(j, units), cache)  # i's row is the last used: it stays
            Kj = _unit_row(j, Rj, units, rows_j, act, n_act)
            old_i, old_j = alpha[i], alpha[j]
            i_next, gmax = _pair_step(i, j, Ki, Kj, y, U, alpha, G, diag, act, n_act)
            if shrinking:
                _bound_change(i, old_i, Ri, y, U, alpha, G_bar, units)
                _bound_change(j, old_j, Rj, y, U, alpha, G_bar, units)
            i, selected = i_next, True
        else:
            Ri = cached_row(_sample(i, units), cache)
            Ki = _unit_row(i, Ri, units, rows_i, act, n_act)
            old = alpha[i]
            _single_step(i, step, Ki, y, U, alpha, G, act, n_act)
            if shrinking:
                _bound_change(i, old, Ri, y, U, alpha, G_bar, units)
        it += 1
    if n_act < n:
        # stopped by max_iter: a gradient on every variable, and the violation of them all
        n_act = _unshrink(cache, units, y, m, U, alpha, G, G_bar, act, n_act)
        g1, g2 = _extremes(y, U, alpha, G, act, n_act, intercept)
        violation = g1 + g2 if intercept else g1
    stats[4] = 0
    return it, violation
