r"""The grouped ranking certificate of a bare ``w`` in one compiled pass, for small problems.

:func:`~qpsvm.verify.ranking.certify_grouped` costs about a hundred numpy calls of a few
microseconds each; on a ranking problem of a few hundred pairs that is several times the fit of
a specialised solver. :func:`fused_certificate` runs the same steps in one compiled call:

1. the scores ``s = X w`` and their error bounds by the plain product
   (:func:`~qpsvm.verify.rigorous.enclosed_product`, ``dot2=False``), the items sorted by score
   within their queries;
2. the rigorous upper bound on the primal objective by the hinge sweep on the scores'
   enclosures (:func:`~qpsvm.verify.ranking.hinge_upper`,
   :func:`~qpsvm.verify.rigorous.primal_upper`);
3. for each window ``tau`` in turn, the sides of the pairs
   (:func:`~qpsvm.verify.ranking.window_sets`) and the window's multipliers from the start's
   own sets, else (in at most :data:`ACTIVE_FEATURES` features) those a primal active-set
   method in the ``d`` features ends at (:func:`_active_set`), else from a dual coordinate
   ascent's (the first steps of :func:`~qpsvm.verify.box_qp.box_qp`), then the rigorous lower
   bound on the dual value
   of that point (:func:`~qpsvm.verify.ranking.grouped_dual_lower`, ``dot2=False``), until
   the gap is closed as :func:`~qpsvm.verify.ranking.certify_grouped` closes it.

:func:`fused_all_pairs` is the 1-slack method's direct solve of a small problem in the same
call: every pair as one window from ``w`` (``tau = inf``), then the certificate of that
window's point, the point tried first.

Every rigorous step is the numpy one's operations in the same order (``nextafter`` for each
outward rounding, Sum2 for the compensated sums, the same compiled sweeps and products), so the
primal end is the same float, and for the same dual point so is the dual value's estimate. The
dual end leaves out the items whose expansion coefficient is exactly 0 with no rounding (no
pair term touches them), to which the numpy code gives subnormal weights whose products cost a
hundred cycles each: their terms are exactly zero, so the bound holds without them and is at
least as high. The one step that differs otherwise is the search for the window's
multipliers: where the numpy code fits them by two least-squares problems (LAPACK ``gelsy``),
this one solves the margin pairs' Gram system ``Z_Q Z_Q^T alpha_Q = 1 - Z_Q u`` by a Cholesky
factorisation with diagonal pivoting (dependent pairs dropped, their multipliers 0). That
affects only which dual point is evaluated, never the soundness: any multipliers in the box
``[0, C]``, with ``C`` on the pairs short of the window and 0 beyond it, are an exactly feasible
dual point, and the lower bound is a rigorous evaluation of it.

Where this path does not settle the certificate (a dense float64 ``X`` is needed, the sets must
give multipliers in the box that put every margin on its side, and the plain products' bounds
must prove the gap), it says so and the numpy code runs instead (the smoothed Newton steps of
the window's QP, Dot2's enclosures).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numba
import numpy as np

from qpsvm._jit import CALLEE, ENTRY
from qpsvm._numerics import _SUCC_SIZE, TINY, U, _sum2, next_down, next_up, uncompiled
from qpsvm.verify.ascent import compiled_coordinate_epochs
from qpsvm.verify.ranking_sweep import QueryLayout, _by_query, _resort, _sums, _window
from qpsvm.verify.rigorous import _columns_product, _rows_product

__all__ = [
    "FUSED_ITEMS",
    "FusedBounds",
    "FusedResult",
    "FusedSettings",
    "fused_all_pairs",
    "fused_certificate",
    "pass_scores",
    "rows_active_set",
    "rows_active_steps",
]

#: Items the numpy certificate may certify in a process before the compiled pass is compiled
#: (:func:`~qpsvm._numerics.uncompiled`): its compile time (13 s CPU with an empty cache, at a
#: load of 8 on 2 cores) at what it saves (0.24 ms a certificate of 200 items, about 1.2 us
#: an item). A cold first call never compiles it.
FUSED_ITEMS = 2**23

#: Results of the compiled pass, by position.
OK, FALLBACK = 0, 1
#: Which step of the window's box QP gave its sets (:func:`_window_qp`): the start's own, the
#: primal active-set method's, the dual coordinate ascent's; and their names.
OWN, ACTIVE, ASCENT = 0, 1, 2
SETS_FOUND_BY = ("start", "active_set", "ascent")
#: The primal active-set method (:func:`_active_set`) runs on windows in at most
#: ``ACTIVE_FEATURES`` features (measured, the window of every pair of 357 to 1503 pairs from
#: ``w = 0``, ``C`` 0.01 to 1, binary and graded relevance, CPU time against the coordinate
#: ascent's sets: 0.2 to 0.9 times at ``d = 5``; 0.5 to 2.2 times at ``d`` 8 to 12, 0.6 to 4.5
#: times at 15 and 20, where its steps, about ``4 d`` to ``8 d``, outgrow the ascent's epochs),
#: for at most ``ACTIVE_STEPS`` steps per feature plus ``ACTIVE_FIRST_STEPS`` (it took at most
#: ``7.6 d`` steps on those windows).
ACTIVE_FEATURES = 5
ACTIVE_STEPS = 10
ACTIVE_FIRST_STEPS = 10
#: Rows the box QPs may solve without the primal active-set method in a process before its
#: kernel (:func:`rows_active_set`) is compiled (:func:`~qpsvm._numerics.uncompiled`): its
#: compile time (8 s CPU with an empty cache, at a load of 4 on 2 cores) at what it saves
#: (about 7 us a row at 200 x 10, C = 1).
ACTIVE_ROWS = 2**20
#: Where no query has more items than this, the pass sorts each query's items by insertion
#: from the layout's order (:func:`_sorted`): at most ``(q - 1) / 2`` moves an item in a query
#: of ``q``, ``(q - 1) / 4`` expected from a random order, against a full sort's cost of about
#: 8 moves an item (:data:`~qpsvm.verify.ranking_sweep.RESORT_MOVES`).
INSERTION_QUERY = 16


@numba.njit(**CALLEE)
def _scratch(starts):  # pragma: no cover - compiled
    """:func:`qpsvm.verify.ranking_sweep._scratch` in compiled code: the buffers of
    :func:`~qpsvm.verify.ranking_sweep._sums` and :func:`~qpsvm.verify.ranking_sweep._window`
    (this module's kernels allocate anyway)."""
    most = 1
    for q in range(starts.shape[0] - 1):
        most = max(most, starts[q + 1] - starts[q] + 1)
    return np.empty((5, most), dtype=np.intp), np.empty((4, most))


@numba.njit(**CALLEE)
def _sorted(scores, lay_order, query, starts, max_query):  # pragma: no cover - compiled
    """The items grouped by query as ``lay_order`` is, each query's by non-decreasing score:
    by insertion from ``lay_order`` (:func:`~qpsvm.verify.ranking_sweep._resort`, stable) in
    queries of at most :data:`INSERTION_QUERY` items, else one sort and the counting regroup.
    The two orders differ only among equal scores, which no sweep tells apart."""
    if max_query <= INSERTION_QUERY:
        return _resort(lay_order, starts, scores, max_query * scores.shape[0])[0]
    return _by_query(np.argsort(scores), query, starts)


@numba.njit(**CALLEE)
def _gamma(n):  # pragma: no cover - compiled
    return n * U / (1.0 - n * U)


@numba.njit(**CALLEE)
def _fsum(a):  # pragma: no cover - compiled
    """:func:`qpsvm._numerics.fsum` (Sum2)."""
    s, c = _sum2(a)
    return s + c if math.isfinite(s) else s


@numba.njit(**CALLEE)
def _sum2_slack(n):  # pragma: no cover - compiled
    """:func:`qpsvm.verify.rigorous._sum2_slack`."""
    g = _gamma(max(n - 1, 0))
    g2 = g * g
    return next_up(4.0 * U if g2 <= U else 2.0 * (U + g2))


@numba.njit(**CALLEE)
def _upper_sum(a):  # pragma: no cover - compiled
    """:func:`qpsvm.verify.rigorous.upper_sum`."""
    return next_up(next_up(_fsum(a) * next_up(1.0 + _sum2_slack(a.size))) + a.size * TINY)


@numba.njit(**CALLEE)
def _lower_sum(a):  # pragma: no cover - compiled
    """:func:`qpsvm.verify.rigorous.lower_sum`."""
    low = next_down(_fsum(a) * next_down(1.0 - _sum2_slack(a.size)))
    return next_down(max(0.0, low - a.size * TINY))


@numba.njit(**CALLEE)
def _all_finite(a):  # pragma: no cover - compiled
    for x in a:
        if not math.isfinite(x):
            return False
    return True


@numba.njit(**CALLEE)
def _hinge_upper(starts, level, max_query, max_levels, t, err, order):  # pragma: no cover
    """:func:`qpsvm.verify.ranking.sorted_hinge_bounds`: the bound and the float value."""
    n = t.shape[0]
    e = 0.0
    largest = 0.0
    for i in range(n):
        e = max(e, err[i])
        largest = max(largest, abs(t[i]))
    g = next_up(e + next_up(U * largest))
    h = next_up(g / (1.0 - U))
    k = next_up(next_up(1.0 + g) / (1.0 - U))
    pref = np.empty(n)
    a = np.empty(n)
    high = np.empty(n)
    for i in range(n):
        high[i] = t[i] + h
        pref[i] = k - t[i]
        a[i] = -pref[i]
    cnt = np.zeros(n, dtype=np.int64)
    cnt_other = np.zeros(n, dtype=np.int64)
    total = np.zeros(n)
    magnitude = np.zeros(n)
    items, keys = _scratch(starts)
    _sums(starts, level, a, high, order, order, cnt, cnt_other, total, magnitude, items, keys)
    terms = np.empty(n)
    sizes = np.empty(n)
    parts = np.empty(n)
    for i in range(n):
        c = float(cnt[i])
        terms[i] = c * pref[i] + total[i]
        sizes[i] = c * abs(pref[i]) + magnitude[i]
        parts[i] = c * ((1.0 - h) - t[i])
    size = _fsum(sizes) * (1.0 + _gamma(n + 2))
    rounding = _gamma(max_query + max_levels + 4) * size + n * TINY
    s = _fsum(terms)
    return next_up(max(0.0, s) + next_up(2.0 * U * abs(s) + rounding)), _fsum(parts) + _fsum(total)


@numba.njit(**CALLEE)
def _margin_gaps(Z, w):  # pragma: no cover - compiled
    """``1 - Z w``."""
    g = np.empty(Z.shape[0])
    for p in range(Z.shape[0]):
        total = 0.0
        for k in range(Z.shape[1]):
            total += Z[p, k] * w[k]
        g[p] = 1.0 - total
    return g


@numba.njit(**CALLEE)
def _on_sides(Z, w, quad, linear, slack):  # pragma: no cover - compiled
    """:func:`qpsvm.verify.box_qp._on_sides`."""
    g = _margin_gaps(Z, w)
    worst = 0.0
    for p in range(g.shape[0]):
        wrong = abs(g[p]) if quad[p] else (-g[p] if linear[p] else g[p])
        worst = max(worst, wrong)
    return worst <= slack


@numba.njit(**CALLEE)
def _gram_row(ZQ, G, a):  # pragma: no cover - compiled
    """Row and column ``a`` of the Gram matrix ``G = Z_Q Z_Q^T`` from the rows ``0..a`` of
    ``Z_Q``: each entry summed from 0 over the features in order."""
    for b in range(a + 1):
        total = 0.0
        for k in range(ZQ.shape[1]):
            total += ZQ[a, k] * ZQ[b, k]
        G[a, b] = total
        G[b, a] = total


@numba.njit(**CALLEE)
def _gram_multipliers(ZQ, r):  # pragma: no cover - compiled
    r"""``alpha`` with ``Z_Q Z_Q^T alpha = r`` on a maximal set of independent rows of ``Z_Q``
    (:func:`_gram_solve` of their Gram matrix :func:`_gram_row`), and the rows' rank."""
    q = ZQ.shape[0]
    G = np.empty((q, q))
    for a in range(q):
        _gram_row(ZQ, G, a)
    return _gram_solve(G, q, r, np.empty((q, q)))


@numba.njit(**CALLEE)
def _gram_solve(G, q, r, L):  # pragma: no cover - compiled
    r"""``alpha`` with ``G alpha = r`` for the leading ``q x q`` block of a Gram matrix ``G``
    on a maximal set of independent rows (Cholesky with diagonal pivoting, the largest
    remaining diagonal entry first; a pivot below ``q eps`` times the largest diagonal entry
    ends it), 0 on the others: ``Z_Q^T alpha`` is then the least-norm solution of ``Z_Q delta
    = r`` wherever the dropped rows' equations are consistent with the kept ones. The factor
    is formed in ``L`` (``q x q`` at least) in pivoted order, its lower triangle only, rows and
    columns swapped in place as the pivots are chosen; returns ``alpha`` and the rank."""
    for a in range(q):
        for b in range(a + 1):
            L[a, b] = G[a, b]
    perm = np.arange(q)
    largest = 0.0
    for a in range(q):
        largest = max(largest, G[a, a])
    cutoff = q * 2.220446049250313e-16 * largest
    rank = 0
    column = np.empty(q)  # the pivot's column, contiguous for the update's rows
    for k in range(q):
        best, at = L[k, k], k
        for m in range(k + 1, q):
            if L[m, m] > best:
                best, at = L[m, m], m
        if not best > cutoff:
            break
        if at != k:  # rows and columns k and at swapped in the lower triangle
            perm[k], perm[at] = perm[at], perm[k]
            L[k, k], L[at, at] = L[at, at], L[k, k]
            for j in range(k):
                L[k, j], L[at, j] = L[at, j], L[k, j]
            for m in range(k + 1, at):
                L[m, k], L[at, m] = L[at, m], L[m, k]
            for m in range(at + 1, q):
                L[m, k], L[m, at] = L[m, at], L[m, k]
        root = math.sqrt(L[k, k])
        L[k, k] = root
        for m in range(k + 1, q):
            L[m, k] /= root
            column[m] = L[m, k]
        for m in range(k + 1, q):
            f = column[m]
            for m2 in range(k + 1, m + 1):
                L[m, m2] -= f * column[m2]
        rank += 1
    y = np.empty(rank)
    for m in range(rank):
        total = r[perm[m]]
        for k in range(m):
            total -= L[m, k] * y[k]
        y[m] = total / L[m, m]
    alpha = np.zeros(q)
    x = np.empty(rank)
    for m in range(rank - 1, -1, -1):
        total = y[m]
        for k in range(m + 1, rank):
            total -= L[k, m] * x[k]
        x[m] = total / L[m, m]
        alpha[perm[m]] = x[m]
    return alpha, rank


@numba.njit(**CALLEE)
def _expansion(Z, v0, alpha):  # pragma: no cover - compiled
    """``v_0 + sum_p alpha_p z_p`` over the rows ``z_p`` of ``Z`` with ``alpha_p != 0``."""
    w = v0.copy()
    for p in range(Z.shape[0]):
        if alpha[p] != 0.0:
            for c in range(Z.shape[1]):
                w[c] += Z[p, c] * alpha[p]
    return w


@numba.njit(**CALLEE)
def _sets_multipliers(Z, v0, cap, quad, linear, per_feature, slack):  # pragma: no cover
    """:func:`qpsvm.verify.box_qp._sets_limit`: the window's multipliers if ``quad`` are the
    pairs on the margin and ``linear`` those at ``cap``, their ``w``, and whether they are in
    the box and put every margin on its side within ``slack``."""
    k, d = Z.shape
    size = 0
    for p in range(k):
        size += quad[p]
    alpha = np.zeros(k)
    if size > per_feature * d:
        return alpha, v0, False
    u = v0.copy()
    for p in range(k):
        if linear[p]:
            alpha[p] = cap
            for c in range(d):
                u[c] += cap * Z[p, c]
    rows = np.flatnonzero(quad)
    ZQ = np.empty((size, d))
    for m in range(size):
        ZQ[m] = Z[rows[m]]
    aq, rank = _gram_multipliers(ZQ, _margin_gaps(ZQ, u))
    delta = np.zeros(d)
    for m in range(size):
        for c in range(d):
            delta[c] += aq[m] * ZQ[m, c]
    if not _on_sides(Z, u + delta, quad, linear, slack):
        return alpha, v0, False
    for m in range(size):
        a = aq[m]
        if rank == size:
            a = min(max(a, 0.0), cap)
        elif a < 0.0 or a > cap:
            return alpha, v0, False
        alpha[rows[m]] = a
    wq = _expansion(Z, v0, alpha)
    return alpha, wq, _on_sides(Z, wq, quad, linear, slack)


#: Crossings the line search of :func:`_active_set` sorts by insertion; above, it first
#: partitions them around pivots (quickselect: expected linear time, where a full sort of the
#: first steps' hundreds of crossings took most of the method's time).
SORTED_CROSSINGS = 16


@numba.njit(**CALLEE)
def _line_root(at, which, dz, slope, curve, cap):  # pragma: no cover - compiled
    """The exact line search of :func:`_active_set`: the root ``s`` in ``[0, 1]`` of the
    slope ``slope + s curve``, which jumps up by ``cap |dz_p|`` at each crossing ``s = at[m]``
    of the pair ``p = which[m]``. Reorders ``at`` and ``which`` in place so that the pairs
    crossed before the root come first; returns the root, how many pairs those are, and the
    pair whose crossing the root is (``-1`` for a root between crossings; it is not counted
    as crossed)."""
    lo, hi = 0, at.shape[0]
    while hi - lo > SORTED_CROSSINGS:  # partition around the middle entry's crossing
        pivot = at[(lo + hi) // 2]
        mid, below = lo, 0.0
        for m in range(lo, hi):
            if at[m] < pivot:
                at[m], at[mid] = at[mid], at[m]
                which[m], which[mid] = which[mid], which[m]
                below += cap * abs(dz[which[mid]])
                mid += 1
        if slope + below + pivot * curve >= 0.0:  # the root is below the pivot
            hi = mid
        elif mid == lo:  # no crossing below the pivot: the rest in order
            break
        else:  # every crossing below the pivot is crossed
            slope += below
            lo = mid
    for m in range(lo + 1, hi):  # insertion sort of what is left
        s, p = at[m], which[m]
        r = m
        while r > lo and at[r - 1] > s:
            at[r], which[r] = at[r - 1], which[r - 1]
            r -= 1
        at[r], which[r] = s, p
    for m in range(lo, hi):
        s = at[m]
        if slope + s * curve >= 0.0:  # the root before this crossing
            return min(1.0, max(0.0, -slope / curve)), m, -1
        slope += cap * abs(dz[which[m]])
        if slope + s * curve >= 0.0:  # the root at it: the pair joins the margin
            return s, m, which[m]
    return min(1.0, max(0.0, -slope / curve)), hi, -1


@numba.njit(**CALLEE)
def _add_pair(u, scale, columns, i, j):  # pragma: no cover - compiled
    """``u += scale (x_i - x_j)`` in place (``u += scale x_i`` for ``j < 0``), the items
    ``x_i`` the columns of ``columns``."""
    for c in range(u.shape[0]):
        u[c] += scale * (columns[c, i] - columns[c, j] if j >= 0 else columns[c, i])


@numba.njit(**CALLEE)
def _scores(columns, v, out):  # pragma: no cover - compiled
    """``out_i = x_i . v`` in place for the items ``x_i``, the columns of ``columns``: each
    sum from 0 over the features in order (the floats of a row's dot product), a feature at
    a time over all items (a vectorised loop: 0.40 -> 0.12 us for 200 items of 5 features)."""
    for i in range(out.shape[0]):
        out[i] = 0.0
    for c in range(columns.shape[0]):
        f = v[c]
        for i in range(out.shape[0]):
            out[i] += columns[c, i] * f


@numba.njit(**CALLEE)
def _active_set(X, window, v0, cap, w, max_steps):  # pragma: no cover - compiled
    r"""A primal active-set method for the window's box QP (rows ``z_p = x_i - x_j`` of the
    pairs ``(i, j)`` of ``window``) from ``w``: the pairs ``W`` held on the margin, the others
    on the side ``L`` (short of it, ``alpha_p = cap``) or ``N`` (beyond it, 0). Each step
    moves ``w`` towards the minimiser of the primal on the face, ``u + Z_W^T beta`` with
    ``u = v_0 + cap sum_L z_p`` and ``Z_W (u + Z_W^T beta) = 1`` (:func:`_gram_solve`),
    by an exact line search on the primal (:func:`_line_root`): its slope ``(w - u) . d +
    s ||d||^2`` along the step ``d`` jumps up by ``cap |z_p . d|`` where a pair's margin
    crosses 1 (the pair changes sides), and the step stops at the slope's root; a root at a
    crossing adds that pair to ``W``. At the face's minimiser (no crossing before it) a pair
    of ``W`` whose multiplier ``beta_p`` leaves ``[0, cap]`` leaves ``W`` (the largest excess
    first) for the side it points to; none: the optimum. Every step lowers the primal or
    changes ``W``; a degenerate vertex (``Z_W`` losing rank) or ``max_steps`` steps end it
    unsettled. A step costs ``O(n d + k)`` for ``k`` pairs over ``n`` items: the step's
    scores ``X d`` once, each pair's ``z_p . d`` their difference (``u`` is updated by the
    pairs that change sides). Returns the last ``w``, whether it is the optimum and there its
    multipliers: ``cap`` on ``L``, ``beta`` on ``W``, 0 on ``N`` (no re-reading of the sets off
    ``w``: ``w = u + Z_W^T beta`` is their expansion) and the sides (``1`` for ``L``, ``0``
    for ``W``, ``-1`` for ``N``); elsewhere no multipliers."""
    k = window.shape[0]
    n, d = X.shape
    # the items the window uses, in their own rows
    local = np.full(n, -1, dtype=np.intp)
    used = 0
    for p in range(k):
        for e in range(2):
            i = window[p, e]
            if local[i] < 0:
                local[i] = used
                used += 1
    items = np.empty((d, used))  # the items as columns: the steps' scores vectorise
    for c in range(d):
        for i in range(n):
            if local[i] >= 0:
                items[c, local[i]] = X[i, c]
    first = np.empty(k, dtype=np.intp)
    second = np.empty(k, dtype=np.intp)
    for p in range(k):
        first[p], second[p] = local[window[p, 0]], local[window[p, 1]]
    w = w.copy()
    score = np.empty(used)
    _scores(items, w, score)
    t = np.empty(k)
    side = np.empty(k, dtype=np.int8)
    coef = np.zeros(used)
    for p in range(k):
        t[p] = 1.0 - (score[first[p]] - score[second[p]])
        side[p] = 1 if t[p] > 0.0 else -1
        if side[p] == 1:
            coef[first[p]] += 1.0
            coef[second[p]] -= 1.0
    u = v0.copy()
    for i in range(used):
        if coef[i] != 0.0:
            _add_pair(u, cap * coef[i], items, i, -1)
    work = np.empty(d, dtype=np.intp)
    n_work = 0
    dz = np.empty(k)
    at = np.empty(k)
    which = np.empty(k, dtype=np.intp)
    ZW = np.empty((d, d))  # the rows of W, their Gram matrix kept as W changes
    G = np.empty((d, d))
    factor = np.empty((d, d))
    step = np.empty(d)
    beta = np.empty(0)  # no pair on the margin yet
    for _ in range(max_steps):
        for c in range(d):
            step[c] = u[c] - w[c]
        if n_work:
            beta, rank = _gram_solve(G, n_work, _margin_gaps(ZW[:n_work], u), factor)
            if rank < n_work:
                return w, False, side, np.empty(0)
            for m in range(n_work):
                for c in range(d):
                    step[c] += beta[m] * ZW[m, c]
        _scores(items, step, score)
        crossings = 0
        for p in range(k):
            change = score[first[p]] - score[second[p]]
            dz[p] = change
            # towards the margin by more than the room to it (a quotient below 1: a quotient
            # of at least 1 rounds to at least 1); 0 on the margin's pairs (side 0)
            toward = side[p] * change
            room = max(side[p] * t[p], 0.0)
            if room < toward:
                at[crossings] = room / toward
                which[crossings] = p
                crossings += 1
        if crossings == 0:  # the face's minimiser: its multipliers decide
            w += step
            t -= dz
            worst, leave = 0.0, -1
            for m in range(n_work):
                excess = max(-beta[m], beta[m] - cap)
                if excess > worst:
                    worst, leave = excess, m
            if leave < 0:
                alpha = np.zeros(k)
                for p in range(k):
                    if side[p] == 1:
                        alpha[p] = cap
                for m in range(n_work):
                    alpha[work[m]] = beta[m]
                return w, True, side, alpha
            p = work[leave]
            side[p] = -1 if beta[leave] < 0.0 else 1
            if side[p] == 1:
                _add_pair(u, cap, items, first[p], second[p])
            n_work -= 1
            work[leave] = work[n_work]  # the last pair of W takes its place, row and Gram
            if leave < n_work:
                for c in range(d):
                    ZW[leave, c] = ZW[n_work, c]
                for m in range(n_work):
                    G[leave, m] = G[n_work, m]
                    G[m, leave] = G[n_work, m]
                G[leave, leave] = G[n_work, n_work]
            continue
        slope, curve = 0.0, 0.0
        for c in range(d):
            slope += (w[c] - u[c]) * step[c]
            curve += step[c] * step[c]
        land, crossed, kink = _line_root(at[:crossings], which, dz, slope, curve, cap)
        for m in range(crossed):
            p = which[m]
            side[p] = -side[p]
            _add_pair(u, side[p] * cap, items, first[p], second[p])
        for c in range(d):
            w[c] += land * step[c]
        for p in range(k):
            t[p] -= land * dz[p]
        if kink >= 0:
            if n_work == d:
                return w, False, side, np.empty(0)
            if side[kink] == 1:
                _add_pair(u, -cap, items, first[kink], second[kink])
            side[kink] = 0
            work[n_work] = kink
            for c in range(d):
                ZW[n_work, c] = items[c, first[kink]] - items[c, second[kink]]
            _gram_row(ZW, G, n_work)
            n_work += 1
    return w, False, side, np.empty(0)


@numba.njit(**ENTRY)
def rows_active_set(Z, v0, cap, w, max_steps):  # pragma: no cover - compiled
    """:func:`_active_set` on the box QP of the rows ``z_p`` of ``Z`` themselves (a binary SVM's
    signed examples ``y_i x_i``): each row is the pair of its own item and one zero item, so
    that ``z_p = x_p - 0``. Returns the last ``w`` and whether it is the optimum."""
    k, d = Z.shape
    items = np.zeros((k + 1, d))
    items[:k] = Z
    window = np.empty((k, 2), dtype=np.intp)
    for p in range(k):
        window[p, 0] = p
        window[p, 1] = k
    w, settled, _, _ = _active_set(items, window, v0, cap, w, max_steps)
    return w, settled


def rows_active_steps(rows: int, d: int) -> int:
    """Steps :func:`rows_active_set` may take on a box QP of ``rows`` rows in ``d`` features:
    :data:`ACTIVE_STEPS` per feature plus :data:`ACTIVE_FIRST_STEPS`; none before its kernel
    is compiled (:data:`ACTIVE_ROWS`)."""
    if uncompiled(rows_active_set, rows, ACTIVE_ROWS):
        return 0
    return ACTIVE_STEPS * d + ACTIVE_FIRST_STEPS


@numba.njit(**CALLEE)
def _own_sets(Z, v0, cap, w, per_feature, slack):  # pragma: no cover - compiled
    """The window's multipliers from the sets of ``w`` (the pairs within ``slack`` of the
    margin on it, those short of it at ``cap``; :func:`_sets_multipliers`)."""
    k = Z.shape[0]
    t = _margin_gaps(Z, w)
    quad = np.empty(k, dtype=np.bool_)
    linear = np.empty(k, dtype=np.bool_)
    for p in range(k):
        quad[p] = abs(t[p]) <= slack
        linear[p] = t[p] > slack
    return _sets_multipliers(Z, v0, cap, quad, linear, per_feature, slack)


@numba.njit(**CALLEE)
def _window_qp(X, window, Z, v0, cap, w, per_feature, slack, ascent, active):  # pragma: no cover
    """The window's box QP as :func:`qpsvm.verify.box_qp.box_qp` begins it: the start's own
    sets (:func:`_own_sets`), then, for ``active > 0``, the multipliers the primal active-set
    method ends at from the start (:func:`_active_set`, at most ``active`` steps; kept where
    their expansion puts every margin on its side within ``slack``), then those of a dual
    coordinate ascent from ``alpha = 0`` (:func:`qpsvm.verify.ranking._ascent_sets`;
    ``ascent`` holds its rounds' epochs, tolerance, try threshold, epoch limits, the spread it
    must reach by the first and the shrinking's ``unshrink_every``). ``Z`` holds the rows
    ``x_i - x_j`` of the pairs of ``window``. Returns the multipliers, their ``w``, whether a
    step gave them and which (:data:`OWN`, :data:`ACTIVE`, :data:`ASCENT`)."""
    k = Z.shape[0]
    if active <= 0 or w.any():  # at w = 0 every pair is short: the active set's first step
        alpha, wq, ok = _own_sets(Z, v0, cap, w, per_feature, slack)
        if ok:
            return alpha, wq, ok, OWN
    if active > 0:
        _, settled, side, alpha = _active_set(X, window, v0, cap, w, active)
        if settled:  # its own multipliers, their expansion on every margin's side
            wq = _expansion(Z, v0, alpha)
            if _on_sides(Z, wq, side == 0, side == 1, slack):
                return alpha, wq, True, ACTIVE
    quad = np.empty(k, dtype=np.bool_)
    linear = np.empty(k, dtype=np.bool_)
    rounds, tol, try_below, first, most, on, unshrink = ascent
    seed = np.int64(0)
    u = np.zeros(k)
    v = np.zeros(v0.shape[0] + 1)
    v[:-1] = v0
    ones, zeros, box = np.ones(k), np.zeros(k), np.full(k, cap)
    empty = np.empty(0, dtype=np.int32)
    M = (Z, np.empty(0), empty, empty, k < 0, np.empty(0, dtype=np.int64))
    norms = np.empty(k)
    for p in range(k):
        norms[p] = Z[p] @ Z[p]
    done = 0
    while True:
        epochs, spread = compiled_coordinate_epochs(
            M, ones, ones, zeros, box, 0.0, norms, u, v, rounds, tol, seed, unshrink
        )
        done += epochs
        last = spread <= tol or done >= most or (done >= first and spread > on)
        if spread <= try_below or last:
            for p in range(k):
                quad[p] = 0.0 < u[p] < cap
                linear[p] = u[p] >= cap
            alpha, wq, ok = _sets_multipliers(Z, v0, cap, quad, linear, per_feature, slack)
            if ok or last:
                return alpha, wq, ok, ASCENT


@numba.njit(**CALLEE)
def _pair_differences(X, window, Z):  # pragma: no cover - compiled
    """``Z[p] = x_i - x_j`` for the pairs ``(i, j)`` of ``window``, each entry one rounding."""
    for p in range(window.shape[0]):
        i, j = window[p, 0], window[p, 1]
        for c in range(X.shape[1]):
            Z[p, c] = X[i, c] - X[j, c]


@numba.njit(**ENTRY)
def pair_differences(X, window, Z):  # pragma: no cover - compiled
    """:func:`_pair_differences` called from Python, into ``Z`` (allocated by the caller:
    numba's allocation helpers would compile with it): the same floats as ``X[window[:, 0]] -
    X[window[:, 1]]``, at about 15 ns a row of 40 features against 70 ns for numpy's two
    gathers and the difference (1191 pairs of a window of 8000 x 40, CPU time)."""
    _pair_differences(X, window, Z)


@numba.njit(**CALLEE)
def _window_point(
    X, C, starts, lay_order, level, scores, tau, order, limit, w, per_feature, slack, ascent, active
):  # pragma: no cover - compiled
    """:func:`qpsvm.verify.ranking.window_dual` at ``tau`` from ``w`` (:func:`_window_qp`):
    ``n_B``, ``a_B``, the window, its multipliers, their ``w``, whether the window fits in
    ``limit`` pairs, whether the sets gave its multipliers, and which step gave them
    (:data:`OWN` for an empty window)."""
    n, d = X.shape
    lo = np.empty(n)
    inner = np.empty(n)
    for i in range(n):
        lo[i] = scores[i] - (1.0 + tau)
        inner[i] = scores[i] - (1.0 - tau)
    out = np.empty((limit, 2), dtype=np.intp)
    cnt = np.zeros(n, dtype=np.int64)
    cnt_other = np.zeros(n, dtype=np.int64)
    total = np.zeros(n)
    scratch = _scratch(starts)
    counts = (cnt, cnt_other, total)
    cuts = np.empty((2, n), dtype=np.intp)
    found = _window(
        lay_order, starts, level, order, lo, inner, scores, True, limit, out, counts, scratch, cuts
    )
    coef = cnt - cnt_other
    if found > limit:
        return 0, coef, out[:0], np.zeros(0), w, False, False, OWN
    window = out[:found]
    n_bound = 0
    for i in range(n):
        n_bound += cnt[i]
    v0 = np.zeros(d)
    for i in range(n):
        if coef[i] != 0:
            a = float(coef[i])
            for c in range(d):
                v0[c] += X[i, c] * a
    for c in range(d):
        v0[c] *= C
    alpha = np.zeros(found)
    settled = True
    wq = v0
    how = OWN
    if found:
        Z = np.empty((found, d))
        _pair_differences(X, window, Z)
        alpha, wq, settled, how = _window_qp(
            X, window, Z, v0, C, w, per_feature, slack, ascent, active
        )
    return n_bound, coef, window, alpha, wq, True, settled, how


@numba.njit(**CALLEE)
def _dual_lower(X, C, n_bound, coef_bound, window, alpha):  # pragma: no cover - compiled
    """:func:`qpsvm.verify.ranking.grouped_dual_lower` with ``dot2=False``: the bound, the
    estimate and the rounded expansion."""
    n, d = X.shape
    coef = np.empty(n)
    size = np.empty(n)
    for i in range(n):
        coef[i] = C * float(coef_bound[i])
        size[i] = abs(coef[i])
    k = 0
    if alpha.size:
        uses = np.zeros(n, dtype=np.int64)
        for p in range(window.shape[0]):
            i, j = window[p, 0], window[p, 1]
            coef[i] += alpha[p]
            coef[j] -= alpha[p]
            size[i] += alpha[p]
            size[j] += alpha[p]
            uses[i] += 1
            uses[j] += 1
        k = uses.max()
    factor = 2.0 * _gamma(n)
    g = _gamma(k + 3)
    # the items whose coefficient is exactly 0 with no rounding (no pair term) add exactly
    # nothing: left out, with the subnormal weights the numpy code gives them (whose products
    # would cost a hundred cycles each); the rest in the same order
    rows = np.flatnonzero(size)
    weights = np.empty(rows.size)
    for m in range(rows.size):
        i = rows[m]
        weights[m] = next_up(next_up(0.5 * factor * abs(coef[i])) + next_up(g * size[i]))
    hi, magnitude = np.zeros(d), np.zeros(d)
    if d == 1:
        # X is F-contiguous too, and the numpy code takes the rows' product, a vectorised sum
        # whose lanes hold the items by position: every item, the left-out ones' weights 0
        # (their terms exact zeros), so that the float estimate is the numpy one's
        every = np.zeros(n)
        every[rows] = weights
        _rows_product(np.ascontiguousarray(X.T), coef, every, hi, magnitude)
    else:
        _columns_product(X[rows], coef[rows], weights, hi, magnitude)
    err = np.empty(d)
    for c in range(d):
        err[c] = 2.0 * magnitude[c] + n * TINY
    if not (_all_finite(hi) and _all_finite(err)):
        err[:] = np.inf
    gain = next_down(next_down(C * float(n_bound)) + _lower_sum(alpha))
    bound = np.empty(d)
    for c in range(d):
        b = next_up(abs(hi[c]) * (1.0 + 2.0 * U) + (err[c] + n * TINY))
        bound[c] = b * b
    value = next_down(gain - next_up(0.5 * _upper_sum(bound)))
    estimate = gain - 0.5 * _fsum(hi * hi)
    return value, estimate, hi


@numba.njit(**CALLEE)
def _bounds(problem, w, settings, given, point):  # pragma: no cover - compiled
    """The steps of :func:`fused_certificate` (``target`` is ``GOOD_ENOUGH tol``; the dual
    point ``point`` tried first if ``given``, read off the window ``tau = inf``): the status,
    the rigorous ends and their float estimates, the complementarity and stationarity of the
    best dual point, that point and the window ``tau`` it was read off (at ``w``'s scores).
    ``problem`` is ``(X, C, starts, order, level, query, max_query, max_levels)`` (the layout's
    arrays), ``settings`` ``(taus, limit, per_feature, slack, ascent, active, target)``."""
    X, C, starts, lay_order, level, query, max_query, max_levels = problem
    taus, limit, per_feature, slack, ascent, active, target = settings
    n, d = X.shape
    scores, magnitude = np.empty(n), np.empty(n)
    _rows_product(X, w, np.abs(w), scores, magnitude)
    factor = 2.0 * _gamma(d)
    err = np.empty(n)
    for i in range(n):
        err[i] = factor * magnitude[i] + d * TINY
    if not (_all_finite(scores) and _all_finite(err)):
        err[:] = np.inf
    order = _sorted(scores, lay_order, query, starts, max_query)
    ww = w * w
    hinge, hinge_float = _hinge_upper(starts, level, max_query, max_levels, scores, err, order)
    half = next_up(0.5 * _upper_sum(ww))
    primal = next_up(half + next_up(C * hinge * (1.0 + 2.0 * U)))
    primal_float = 0.5 * _fsum(ww) + C * hinge_float
    dual, dual_float, found = 0.0, 0.0, False
    expansion = np.zeros(d)
    best = point
    best_tau = np.inf
    status = OK
    if given:
        value, estimate, v = _dual_lower(X, C, point[0], point[1], point[2], point[3])
        if value > dual:
            dual, dual_float, expansion, found = value, estimate, v, True
        if min(primal - dual, primal_float - estimate) <= target * max(1.0, primal):
            taus = taus[:0]
    for tau in taus:
        n_bound, coef, window, alpha, _, fits, settled, _ = _window_point(
            *(X, C, starts, lay_order, level, scores, tau, order, limit, w),
            *(per_feature, slack, ascent, active),
        )
        if not fits:  # the window outgrew the limit
            break
        if not settled:
            status = FALLBACK
            break
        value, estimate, v = _dual_lower(X, C, n_bound, coef, window, alpha)
        if value > dual:
            dual, dual_float, expansion, found = value, estimate, v, True
            best = (n_bound, coef, window.copy(), alpha)
            best_tau = tau
        if min(primal - dual, primal_float - estimate) <= target * max(1.0, primal):
            break
    if not found:
        status = FALLBACK
    comp = 0.0
    window, alpha = best[2], best[3]
    for p in range(alpha.size):
        r = scores[window[p, 0]] - scores[window[p, 1]]
        xi = max(0.0, 1.0 - r)
        comp = max(comp, max(abs(alpha[p] * (r - 1.0 + xi)), (C - alpha[p]) * xi))
    diff = w - expansion
    stationarity = math.sqrt(_fsum(diff * diff))
    return status, primal, primal_float, dual, dual_float, comp, stationarity, best, best_tau


@numba.njit(**ENTRY)
def _certificate(problem, w, settings):  # pragma: no cover - compiled
    """:func:`_bounds` without a given dual point."""
    n = problem[0].shape[0]
    none = (0, np.zeros(n, dtype=np.int64), np.empty((0, 2), dtype=np.intp), np.zeros(0))
    return _bounds(problem, w, settings, False, none)


@numba.njit(**ENTRY)
def _solve_all_pairs(problem, w, settings):  # pragma: no cover - compiled
    """:func:`fused_all_pairs`: the window of every pair from ``w`` and the certificate of its
    point, given first (:func:`_bounds`); also that point's ``w``, whether the window's
    multipliers were found, which step found them (:func:`_window_qp`), and the certificate's
    dual point with its window ``tau`` (the given point's, ``inf``, unless a window read off
    the point's scores proved more)."""
    X, C, starts, lay_order, level, query, max_query, _ = problem
    _, limit, per_feature, slack, ascent, active, _ = settings
    n, d = X.shape
    scores = np.zeros(n)
    for i in range(n):
        for c in range(d):
            scores[i] += X[i, c] * w[c]
    order = _sorted(scores, lay_order, query, starts, max_query)
    n_bound, coef, window, alpha, wq, _, settled, how = _window_point(
        *(X, C, starts, lay_order, level, scores, np.inf, order, limit, w),
        *(per_feature, slack, ascent, active),
    )
    point = (n_bound, coef, window.copy(), alpha)  # the type _certificate gives _bounds
    if not settled:
        return wq, False, how, (FALLBACK, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0), point, np.inf
    status, primal, primal_float, dual, dual_float, comp, stationarity, best, tau = _bounds(
        problem, wq, settings, True, point
    )
    out = (status, primal, primal_float, dual, dual_float, comp, stationarity)
    return wq, True, how, out, best, tau


class FusedBounds(NamedTuple):
    """The compiled pass's certificate (:func:`fused_all_pairs`, :attr:`FusedResult.bounds`):
    the rigorous ends and their float estimates, the complementarity and stationarity of the
    best dual point."""

    primal: float
    primal_float: float
    dual: float
    dual_float: float
    complementarity: float
    stationarity: float


@dataclass(frozen=True)
class FusedResult:
    """What :func:`fused_certificate` found: its bounds and their best dual point (``n_B``,
    ``a_B``, the window and its multipliers, as :class:`~qpsvm.verify.ranking.WindowDual`
    holds them)."""

    bounds: FusedBounds
    n_bound: int
    bound_coef: np.ndarray
    window: np.ndarray
    alpha: np.ndarray


@dataclass(frozen=True)
class FusedSettings:
    """The constants of :mod:`qpsvm.verify.ranking` that the compiled pass follows: the
    largest window (:data:`~qpsvm.verify.ranking.MAX_WINDOW`), the most margin pairs per
    feature (:data:`~qpsvm.verify.box_qp.LIMIT_PAIRS`), the margin slack
    (:data:`~qpsvm.verify.box_qp.LIMIT_SLACK`) and the coordinate ascent's rounds, tolerance,
    try threshold, epoch limits, spread by the first limit
    (:data:`~qpsvm.verify.box_qp.ASCENT_ROUND` ... :data:`~qpsvm.verify.box_qp.ASCENT_ON`)
    and shrinking period."""

    limit: int
    per_feature: int
    slack: float
    ascent: tuple


def _applies(X: Any, kernel: Any) -> bool:
    """Whether the compiled pass ``kernel`` takes ``X`` (:func:`fused_certificate`)."""
    return (
        isinstance(X, np.ndarray)
        and X.ndim == 2
        and X.dtype == np.float64
        and X.flags.c_contiguous
        and max(X.shape) < _SUCC_SIZE
        and not uncompiled(kernel, X.shape[0], FUSED_ITEMS)
    )


def _arguments(
    X: np.ndarray,
    C: float,
    lay: QueryLayout,
    w: np.ndarray,
    taus: Sequence[float],
    settings: FusedSettings,
    target: float,
) -> tuple:
    """The compiled pass's arguments ``problem, w, settings`` (:func:`_bounds`)."""
    problem = (
        X,
        float(C),
        lay.starts,
        lay.order,
        lay.level,
        lay.query,
        lay.max_query,
        lay.max_levels,
    )
    limit = min(settings.limit, lay.n_pairs)
    taus = np.asarray(taus, dtype=np.float64)
    d = X.shape[1]
    active = ACTIVE_STEPS * d + ACTIVE_FIRST_STEPS if d <= ACTIVE_FEATURES else 0
    fixed = (taus, limit, settings.per_feature, settings.slack, settings.ascent, active, target)
    return problem, np.ascontiguousarray(w, dtype=np.float64), fixed


def _settled(out: tuple, tol: float) -> bool:
    """Whether the compiled pass's bounds ``out`` (:func:`_bounds`) are its own and prove the
    gap at ``tol``."""
    status, primal, _, dual = out[:4]
    return status == OK and (primal - dual) / max(1.0, abs(primal)) <= tol


def _result(out: tuple, tol: float) -> FusedResult | None:
    if not _settled(out, tol):
        return None
    best = out[7]
    return FusedResult(FusedBounds(*out[1:7]), int(best[0]), *best[1:])


def fused_certificate(
    X: Any,
    C: float,
    lay: QueryLayout,
    w: np.ndarray,
    tol: float,
    taus: Sequence[float],
    settings: FusedSettings,
    target: float,
) -> FusedResult | None:
    """The grouped certificate's bounds of ``w`` by the compiled pass (module docstring), or
    ``None`` where that pass does not apply or does not settle them: ``X`` not a dense
    C-contiguous float64 array, or with :data:`~qpsvm._numerics._SUCC_SIZE` rows or columns or
    more (the numpy code's outward rounding of such arrays is :func:`~qpsvm._numerics._succ`,
    not ``nextafter``), the kernel not compiled and its numpy equivalent's budget not spent
    (:func:`~qpsvm._numerics.uncompiled`, :data:`FUSED_ITEMS`), the sets not giving a
    window's multipliers, or a gap above ``tol`` (the numpy certificate retries with Dot2).
    ``taus`` are the windows tried, ``target`` the early stop (``GOOD_ENOUGH tol``) of
    :func:`~qpsvm.verify.ranking.certify_grouped`."""
    if not _applies(X, _certificate):
        return None
    return _result(_certificate(*_arguments(X, C, lay, w, taus, settings, target)), tol)


def fused_all_pairs(
    X: Any,
    C: float,
    lay: QueryLayout,
    w: np.ndarray,
    tol: float,
    taus: Sequence[float],
    settings: FusedSettings,
    target: float,
) -> tuple[np.ndarray, FusedBounds, str, tuple, float] | None:
    """Every pair as one window from ``w`` (:func:`~qpsvm.verify.ranking.window_dual` at
    ``tau = inf``) and the certificate of that window's point, tried first
    (:func:`~qpsvm.verify.ranking.certify_grouped` with ``point``), by the compiled pass: the
    point's ``w``, the bounds, which step found the window's sets (a name of
    :data:`SETS_FOUND_BY`), the bounds' dual point ``(n_B, a_B, window, alpha)`` and the
    window ``tau`` it was read off at the scores of the point's ``w`` (:func:`pass_scores`);
    or ``None`` as for :func:`fused_certificate` (and where none of the start's, the primal
    active-set method's and the coordinate ascent's sets give the window's multipliers)."""
    if not _applies(X, _solve_all_pairs):
        return None
    args = _arguments(X, C, lay, w, taus, settings, target)
    w_point, settled, how, out, best, tau = _solve_all_pairs(*args)
    if not (settled and _settled(out, tol)):
        return None
    return w_point, FusedBounds(*out[1:]), SETS_FOUND_BY[how], best, tau


def pass_scores(X: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The scores ``X w`` as the compiled pass computes them (:func:`_bounds`, the same
    floats): the sides of its windows' pairs are read off them."""
    scores, magnitude = np.empty(X.shape[0]), np.empty(X.shape[0])
    w = np.ascontiguousarray(w, dtype=np.float64)
    _rows_product(X, w, np.abs(w), scores, magnitude)
    return scores
