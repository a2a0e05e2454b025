r"""The ranking SVM from relevance labels by 1-slack cutting planes, finished exactly.

The ranking SVM over every pair ``(i, j)`` of a query with ``y_i > y_j`` has as many slacks as
pairs (``O(q^2)`` per query). Its 1-slack form (Joachims, "Training linear SVMs in linear
time", KDD 2006, Theorem 1) has the same optimum ``w*``:

.. math::

    \min_{w, \xi}\ \tfrac12\|w\|^2 + C m \xi
    \quad\text{s.t.}\quad w \cdot g_c \ge b_c - \xi \quad \forall c \in \{0, 1\}^m,\qquad
    g_c = \tfrac1m \sum_p c_p (x_i - x_j),\ b_c = \tfrac1m \sum_p c_p,

with ``m`` pairs. The most violated constraint at ``w`` selects the pairs with margin below 1,
and its ``g_c = X^T (cnt - cnt') / m`` and ``b_c`` come from one sort of the items
(:mod:`qpsvm.verify.ranking_sweep`): pairs are never formed. The QP over the planes found so
far is solved on the simplex of ``lambda / (C m)`` (with the zero plane for ``sum lambda < C
m``) by pairwise coordinate ascent from the previous point; its dual value is a lower bound on
the optimum and the objective at the best point an upper bound.

The planes are those of Franc and Sonnenburg's optimized cutting plane algorithm (OCA,
"Optimized cutting plane algorithm for large-scale risk minimization", JMLR 10, 2009): the
objective is minimised along the segment from the best point ``w_b`` towards the planes'
maximiser ``w_t``, whose slope ``w(k) . d - C X^T (cnt - cnt')(k) . d`` (``d = w_t - w_b``)
is one sweep at each ``k``; the line's best point becomes ``w_b``, and every point the
search evaluated adds its plane (its sweep already gave it). Plain cutting planes jump between
the planes' maximisers, which approach the optimum slowly at large ``C`` (measured at dlib's
``c = 100``, 8000 items, binary and graded relevance: 54 to 62 iterations, one sweep each, to
a relative gap of ``1e-3`` and 195 to 198 to ``1e-6``; with the line search ``1e-6`` took 19
to 29 iterations, 56 to 84 sweeps).

The cutting plane stops at a loose gap; the exact optimum is then reached on the pairs' sides:
pairs short of the margin by more than a window ``tau`` are fixed at ``alpha_p = C``, those
beyond it at 0, and the dual over the few pairs inside the window is solved exactly
(:func:`qpsvm.verify.ranking.window_dual`: smoothed Newton steps in the ``d`` features, then
the exact sets). If every pair's side was right, its point is the optimum, and the
certificate (:func:`qpsvm.verify.ranking.certify_grouped`) proves it from the data with the
window's own dual point (no second window read off the point's scores); otherwise a wider
window is tried, then the cutting plane resumes towards a tighter gap. Where the planes
approach the optimum too slowly (large ``C``) the pairs are formed and the working set on
them finishes (:data:`STALL_GAP`). Each sweep sorts the items from the order of a nearby
point (:func:`~qpsvm.verify.ranking_sweep.sorted_by_query`): along the line search and late
in the run the order changes little.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numba
import numpy as np

from qpsvm._jit import ENTRY
from qpsvm._numerics import charge, uncompiled
from qpsvm._validation import check_int, check_tol
from qpsvm.contract import METHODS, RankingProblem, check_method, load
from qpsvm.exceptions import InvalidInputError
from qpsvm.formulations.ranking import DIRECT_PAIRS
from qpsvm.solution import FormedOnRead, Solution
from qpsvm.verify.certificate import DEFAULT_TOL, Certificate, relative
from qpsvm.verify.ranking import (
    MAX_WINDOW,
    WINDOW_TAUS,
    CountsProduct,
    WindowDual,
    certify_all_pairs,
    certify_grouped_point,
    counts_products,
    level_product,
    pair_multipliers,
    window_dual,
)
from qpsvm.verify.ranking_sweep import level_difference, plane_counts, sorted_by_query

__all__ = ["solve_one_slack"]

logger = logging.getLogger("qpsvm")

#: The cutting plane's first target relative gap, divided by 10 after each failed finish.
START_GAP = 1e-4
#: The windows ``tau`` of the finish: pairs within it of the margin are solved exactly.
FINISH_TAUS = (1e-2, 1e-1, 3e-1)
#: The cutting plane's last target: below it the pairs are formed and the working set
#: finishes (the window of a tighter gap did not close: many pairs near the margin).
LAST_GAP = 1e-6
#: A relative gap still above :data:`STALL_GAP` after this many iterations means the planes
#: approach the optimum too slowly to finish (large ``C``), and the formed pairs' working set
#: takes over at once.
STALL_AFTER = 15
#: See :data:`STALL_AFTER` (measured with the line search, 8000 items: at dlib's ``c = 100``
#: a gap below ``1e-3`` after 15 iterations, at ``c = 1e4`` still above ``1e-2`` after 45,
#: where the formed pairs' working set takes about 0.5 s against seconds of planes).
STALL_GAP = 1e-2
#: Secant steps of the line search after its first point ``w_t``, each one sweep (measured,
#: 8000 items, CPU times: one step instead of two saves 2 of 7 sweeps at dlib's ``c = 1``,
#: 13% of the solve, and leaves ``c = 10`` to ``1e4`` within 4%: more iterations, as many
#: sweeps).
LINE_STEPS = 1
#: Default limit on cutting-plane iterations.
MAX_ITER = 300
#: The planes' QP stops when its gradient spread is at most this relative to its largest data
#: (round-off), after at most ``SIMPLEX_STEPS`` pairwise steps per plane plus
#: ``SIMPLEX_MIN_STEPS`` (warm started, it moves little between iterations).
SIMPLEX_TOL = 1e-13
SIMPLEX_STEPS = 200
SIMPLEX_MIN_STEPS = 1000
#: Pairwise steps the planes' QP may take in numpy (:func:`_simplex_qp_numpy`) in a process
#: before :func:`_simplex_qp` is compiled (:func:`~qpsvm._numerics.uncompiled`): its compile
#: (0.27-0.30 s CPU) at the equivalent's 8 us a step (up to 30 planes; one solve of the
#: 200 x 40 grid point takes 4052 steps with binary, 21711 with graded relevance).
SIMPLEX_NUMPY_STEPS = 2**15


@numba.njit(**ENTRY)
def _simplex_qp(Q, c, mu, tol, max_steps, grad):  # pragma: no cover - compiled
    """``max c.mu - 1/2 mu^T Q mu`` over the simplex, by pairwise steps from ``mu`` (in place):
    the coordinate of largest gradient gains from the support coordinate of smallest. ``grad``
    (as long as ``c``) is its scratch space, allocated by the caller: numba's allocation
    helpers would compile with it."""
    k = c.shape[0]
    # c - Q mu, by loops: numba's matrix product compiles in 0.4 s
    for t in range(k):
        total = 0.0
        for u in range(k):
            total += Q[t, u] * mu[u]
        grad[t] = c[t] - total
    for _ in range(max_steps):
        i = 0
        j = -1
        for t in range(k):
            if grad[t] > grad[i]:
                i = t
            if mu[t] > 0.0 and (j < 0 or grad[t] < grad[j]):
                j = t
        if j < 0 or grad[i] - grad[j] <= tol:
            break
        curvature = Q[i, i] + Q[j, j] - 2.0 * Q[i, j]
        step = mu[j]
        if curvature > 0.0:
            ratio = (grad[i] - grad[j]) / curvature
            if ratio < step:  # min(step, ratio) without compiling numba's ``min``
                step = ratio
        mu[i] += step
        mu[j] -= step
        for t in range(k):
            grad[t] -= step * (Q[t, i] - Q[t, j])


def _simplex_qp_numpy(
    Q: np.ndarray, c: np.ndarray, mu: np.ndarray, tol: float, max_steps: int, grad: np.ndarray
) -> int:
    """:func:`_simplex_qp` in numpy, each step's loops over the planes vectorised, with the same
    operations in the same order (the gradient's sums added left to right from ``0.0`` by
    ``np.add.accumulate``; ``argmax`` and ``argmin`` take the first extreme, as the strict
    comparisons do), so the same ``mu`` and ``grad`` to the bit on finite data. Returns the
    number of steps taken."""
    k = c.shape[0]
    terms = np.empty((k, k + 1))
    terms[:, 0] = 0.0
    np.multiply(Q, mu, out=terms[:, 1:])
    np.subtract(c, np.add.accumulate(terms, axis=1)[:, -1], out=grad)
    for taken in range(max_steps):
        support = np.flatnonzero(mu > 0.0)
        if support.size == 0:
            return taken
        i = int(np.argmax(grad))
        j = int(support[np.argmin(grad[support])])
        if grad[i] - grad[j] <= tol:
            return taken
        curvature = Q[i, i] + Q[j, j] - 2.0 * Q[i, j]
        step = mu[j]
        if curvature > 0.0:
            ratio = (grad[i] - grad[j]) / curvature
            if ratio < step:
                step = ratio
        mu[i] += step
        mu[j] -= step
        grad -= step * (Q[:, i] - Q[:, j])
    return max_steps


class _Planes:
    """The 1-slack working set: planes ``(g_c, b_c)`` with their Gram matrix, the zero plane
    first."""

    def __init__(self, d: int, scale: float) -> None:
        self.scale = scale  # C m: lambda = scale * mu
        self.G = np.zeros((1, d))
        self.b = np.zeros(1)
        self.mu = np.ones(1)

    def add(self, g: np.ndarray, b: float) -> None:
        self.G = np.vstack([self.G, g])
        self.b = np.append(self.b, b)
        self.mu = np.append(self.mu, 0.0)

    def solve(self) -> tuple[np.ndarray, float]:
        """The QP's maximiser ``w`` and its dual value (a lower bound on the optimum)."""
        s = self.scale
        Q = (s * s) * (self.G @ self.G.T)
        c = s * self.b
        tol = SIMPLEX_TOL * max(1.0, float(np.max(np.abs(c))), float(np.max(np.abs(Q))))
        steps = SIMPLEX_STEPS * self.b.size + SIMPLEX_MIN_STEPS
        if uncompiled(_simplex_qp, 0, SIMPLEX_NUMPY_STEPS):
            charge(_simplex_qp, _simplex_qp_numpy(Q, c, self.mu, tol, steps, np.empty(c.shape[0])))
        else:
            _simplex_qp(Q, c, self.mu, tol, steps, np.empty(c.shape[0]))
        w = s * (self.mu @ self.G)
        return w, float(c @ self.mu) - 0.5 * float(w @ w)


def hinge_sum(
    f: RankingProblem, scores: np.ndarray, order: np.ndarray
) -> tuple[float, np.ndarray, int]:
    """``sum_p max(0, 1 - s_i + s_j)`` in floating point, as ``n_A - (cnt - cnt') . s`` over
    the pairs ``A`` short of the margin (``sum_A (s_i - s_j)`` is ``sum_i (cnt_i - cnt'_i)
    s_i``), with the per-item ``coef = cnt - cnt'`` and ``n_A`` (one sweep,
    :func:`~qpsvm.verify.ranking_sweep.plane_counts`; ``order`` the items sorted by score
    within queries, :func:`~qpsvm.verify.ranking_sweep.sorted_by_query`)."""
    coef, count = plane_counts(f.query_layout, scores, order)
    return count - float(coef @ scores), coef, count


def _finish(
    f: RankingProblem, best: _Point, tol: float
) -> tuple[tuple[WindowDual, Certificate, WindowDual | None] | None, int]:
    """The pairs within ``tau`` of the margin at ``w = best.w`` solved exactly with every
    other pair fixed on its side at ``w`` (read off its scores and their order), for the
    windows :data:`FINISH_TAUS` in turn, until a window's point ``point.w`` is certified
    with its own dual point first (:func:`~qpsvm.verify.ranking.certify_grouped_point`);
    returns that point and certificate (``None`` if none passed, or the window outgrew
    :data:`~qpsvm.verify.ranking.MAX_WINDOW`), with the certificate's dual point, and the
    windows tried. The sides are never re-read from a window's point: that step flips
    thousands of pairs back and forth."""
    for tried, tau in enumerate(FINISH_TAUS, start=1):
        lay = f.query_layout
        point = window_dual(
            f.items, f.C, lay, best.scores, tau, start=best.w, order=best.order, counts=best.plane
        )
        if point is None:
            return None, tried
        cert, dual = certify_grouped_point(f, point, tol, (), best.order)
        if cert.passed:
            return (point, cert, dual), tried
    return None, len(FINISH_TAUS)


def solve_one_slack(
    f: RankingProblem, solver: str | None = None, tol: float = DEFAULT_TOL, max_iter: int = MAX_ITER
) -> Solution:
    """Solve a ranking SVM given by relevance labels exactly (module docstring).

    Parameters
    ----------
    f : RankingSVM
        Built from relevance labels ``y`` (and ``groups``) with unit pair weights.
    solver : None
        Not used (no CVXPY backend).
    tol : float, default=1e-9
        Relative gap the certificate must prove.
    max_iter : int, default=300
        Limit on cutting-plane iterations; past it (or below the gap :data:`LAST_GAP`, or
        above :data:`STALL_GAP` after :data:`STALL_AFTER` iterations) the pairs are formed
        and the working set solves them (logged at the INFO level: at large ``C`` this is the
        designed path, not a failure).

    Returns
    -------
    Solution
        ``w``, ``b = 0``; ``xi`` and ``alpha`` one per pair in the order of ``f.pairs``,
        formed on their first read (the solve never lists the pairs, :func:`_solution`).
        ``info`` holds the cutting-plane iterations, the finish rounds and the planes.

    Raises
    ------
    InvalidInputError
        ``f`` has explicit pairs or pair weights.
    UncertifiedSolutionError
        From the working set, if it cannot certify either.
    """
    check_method(f, "one_slack")
    tol = check_tol(tol)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    lay = f.query_layout
    if lay is None:
        raise InvalidInputError(
            "method='one_slack' sorts the pairs of relevance labels: build the RankingSVM with "
            "y=... (and groups=...) and no pair_weight, or use method='working_set' for "
            "explicit or weighted pairs."
        )
    if lay.n_pairs <= DIRECT_PAIRS:
        done = _all_pairs(f, np.zeros(f.n_features), tol)
        if done is not None:
            return done
    loop = _CuttingPlane(f, lay.n_pairs, _Planes(f.n_features, f.C * lay.n_pairs))
    target = START_GAP
    finish_rounds = 0
    while True:
        loop.advance(target, max_iter)
        if loop.gap() > STALL_GAP:
            return _on_formed_pairs(f, tol, loop)
        done, rounds = _finish(f, loop.best, tol)
        finish_rounds += rounds
        if done is not None:
            point, cert, dual = done
            planes = int(loop.planes.b.size - 1)
            return _solution(f, point.w, cert, _formed(dual), loop.it, finish_rounds, planes)
        if loop.it >= max_iter or target <= LAST_GAP:
            return _on_formed_pairs(f, tol, loop)
        logger.info("one_slack: finish at gap %.1e not certified; tightening", target)
        target /= 10.0


def _solution(
    f: RankingProblem,
    w: np.ndarray,
    cert: Certificate,
    dual: Callable[[], WindowDual | None],
    it: int,
    finish_rounds: int,
    planes: int,
) -> Solution:
    """The certified point ``w`` as a :class:`~qpsvm.Solution`.

    Its ``alpha`` (the certificate's dual point ``dual()``, one multiplier a pair,
    :func:`~qpsvm.verify.ranking.pair_multipliers`: a dual-feasible point whose gap to ``w``
    the certificate proved; ``dual`` returns it, or forms it where the compiled pass left it
    unformed) and ``xi`` (``f.slacks(w)``, from the data) are
    :class:`~qpsvm.solution.FormedOnRead`: the pairs are listed on their first read, never
    in the solve, and the dual point formed then."""
    return Solution(
        w=w,
        b=0.0,
        xi=FormedOnRead(lambda: f.slacks(w)),
        alpha=FormedOnRead(lambda: pair_multipliers(f, dual())),
        objective=float(cert.primal_objective),
        status="optimal",
        solver="one_slack",
        solve_time=0.0,
        n_iter=it,
        certificate=cert,
        info={"finish_rounds": finish_rounds, "planes": planes},
    )


def _formed(point: WindowDual | None) -> Callable[[], WindowDual | None]:
    """An already formed dual point ``point`` as the callable :func:`_solution` reads it
    from."""
    return lambda: point


def _all_pairs(f: RankingProblem, w: np.ndarray, tol: float, it: int = 0) -> Solution | None:
    """Every pair as one window (``tau = inf``: no pair fixed on a side) of
    :func:`~qpsvm.verify.ranking.window_dual`, from ``w``: the whole dual solved exactly in the
    ``d`` features. The solution if its point is certified; ``None`` if not, or if the pairs
    outnumber :data:`~qpsvm.verify.ranking.MAX_WINDOW` (``it``: the cutting-plane iterations
    that found ``w``)."""
    if f.query_layout.n_pairs > MAX_WINDOW:
        return None
    done = certify_all_pairs(f, w, tol)
    if done is not None:
        w_point, cert, sets, dual = done
        if not cert.passed:
            return None
        solution = _solution(f, w_point, cert, dual, it, 1, 0)
        solution.info["sets"] = sets
        return solution
    scores = np.asarray(f.items @ w).ravel()
    point = window_dual(f.items, f.C, f.query_layout, scores, math.inf, start=w)
    if point is None:
        return None
    cert, best = certify_grouped_point(f, point, tol, WINDOW_TAUS)
    return _solution(f, point.w, cert, _formed(best), it, 1, 0) if cert.passed else None


@dataclass
class _Point:
    """A point ``w`` with its scores ``X w`` (and the items sorted by them within queries),
    objective and plane: ``X^T coef / m`` and ``count / m`` (``coef = cnt - cnt'`` and
    ``count`` of the pairs short of the margin; ``plane`` the product ``X^T coef``, once
    computed, which the finish's window at this point reads its fixed part off)."""

    w: np.ndarray
    scores: np.ndarray
    order: np.ndarray
    primal: float
    coef: np.ndarray
    count: int
    plane: CountsProduct | None = None


@dataclass
class _CuttingPlane:
    """The 1-slack cutting plane's state (module docstring): the planes, the best point ``w_b``
    seen, the iterations and the planes' dual value (a lower bound on the optimum)."""

    f: RankingProblem
    #: Number of pairs ``m``.
    m: int
    planes: _Planes
    best: _Point = field(init=False)
    #: The plane of ``w = 0``'s product, with the columns' squared norms every later plane's
    #: product reuses.
    level: CountsProduct = field(init=False)
    dual: float = -math.inf
    it: int = 0

    def __post_init__(self) -> None:
        # w = 0: every pair is short of the margin, its plane read off the levels (no sweep),
        # and any order within the queries sorts the equal scores
        lay, C = self.f.query_layout, self.f.C
        coef = level_difference(lay)
        w = np.zeros(self.f.n_features)
        # the copy's own sums where it made them for this coef (the layout's own difference)
        sums = self.f.level_sums if coef is lay.difference else None
        self.level = level_product(self.f.items, coef, sums)
        self.planes.add(self.level.product / self.m, 1.0)
        scores = np.zeros(self.f.items.shape[0])
        self.best = _Point(w, scores, lay.order, C * float(self.m), coef, self.m, self.level)

    def point(
        self, w: np.ndarray, scores: np.ndarray, near: _Point | None = None, same: bool = False
    ) -> _Point:
        """The objective and plane's coefficients at ``w`` with scores ``X w`` (one sweep; the
        items sorted from the order of the point ``near``, when given, or in it if ``same``:
        ``scores`` are then in the order of ``near``'s)."""
        if same and near is not None:
            order = near.order
        else:
            # the scores of w = 0 are all equal: their order is no start
            start = None if near is None or not near.w.any() else near.order
            order = sorted_by_query(self.f.query_layout, scores, start)
        hinge, coef, count = hinge_sum(self.f, scores, order)
        return _Point(w, scores, order, 0.5 * float(w @ w) + self.f.C * hinge, coef, count)

    def add_planes(self, points: Sequence[_Point]) -> None:
        """The planes of ``points`` added to the planes, their gradients ``X^T coef / m`` by
        one product with ``X`` for all of them (one pass over the items, not one a point),
        each point's product kept with it."""
        products = counts_products(self.level, [p.coef for p in points])
        for p, product in zip(points, products, strict=True):
            p.plane = product
            self.planes.add(product.product / self.m, p.count / self.m)

    def gap(self) -> float:
        """The relative gap of the best point to the planes' dual value."""
        return relative(self.best.primal - self.dual, self.best.primal)

    def advance(self, target: float, max_iter: int) -> None:
        """Iterations until the gap is at most ``target``, ``max_iter`` is reached, or the gap
        is above :data:`STALL_GAP` after :data:`STALL_AFTER` iterations."""
        while True:
            w, self.dual = self.planes.solve()
            gap = self.gap()
            stalled = self.it >= STALL_AFTER and gap > STALL_GAP
            if gap <= target or stalled or self.it >= max_iter:
                return
            self.line_search(w)
            self.it += 1

    def line_search(self, w_t: np.ndarray) -> None:
        r"""The best point along ``w(k) = w_b + k d``, ``d = w_t - w_b``. The objective's slope
        :math:`\phi'(k) = w(k) \cdot d - C\, (\mathrm{cnt} - \mathrm{cnt}')(k) \cdot X d`
        (a subgradient, from the sweep at ``w(k)``) is non-decreasing; from ``k = 0`` (the
        best point's own sweep) and ``k = 1`` (``w_t``), :data:`LINE_STEPS` secant steps
        towards its root, each sweep's sort started from the order at the nearer end of
        the bracket. Every evaluated point adds its plane (after the search, all by one
        product with ``X``: the slopes need only ``coef . X d``); the lowest objective seen
        becomes the best point. The scores along the line are ``X w_b + k X d``: one product
        with ``X`` per iteration (any set of pairs gives a valid plane, and the objective of
        the best point only steers the search; the certificate recomputes everything)."""
        f, best = self.f, self.best
        X, C = f.items, f.C
        d = w_t - best.w
        sd = np.asarray(X @ d).ravel()
        wd, dd = float(best.w @ d), float(d @ d)

        def slope(p: _Point, k: float) -> float:
            return wd + k * dd - C * float(p.coef @ sd)

        p = self.point(w_t, best.scores + sd, best)
        ray = not best.w.any() and not best.scores.any()
        found = [p]
        lo, slope_lo, hi, slope_hi = 0.0, slope(best, 0.0), 1.0, slope(p, 1.0)
        at_lo, at_hi = best, p
        for _ in range(LINE_STEPS):
            if slope_lo >= 0.0 or slope_hi <= 0.0:  # the root is not inside (0, 1)
                break
            k = lo - slope_lo * (hi - lo) / (slope_hi - slope_lo)
            # the items sorted from the nearer end's order (not from w = 0's: no order); on
            # the line from w = 0 the scores fl(k X d), k > 0, are in the order of every
            # point's of k > 0 (rounding is monotone): no sort
            near = at_lo if k - lo <= hi - k and at_lo.w.any() else at_hi
            p = self.point(best.w + k * d, best.scores + k * sd, near, same=ray and k > 0.0)
            found.append(p)
            g = slope(p, k)
            if g < 0.0:
                lo, slope_lo, at_lo = k, g, p
            else:
                hi, slope_hi, at_hi = k, g, p
        self.add_planes(found)
        lowest = min(found, key=lambda q: q.primal)
        if lowest.primal < best.primal:
            self.best = lowest


def _on_formed_pairs(f: RankingProblem, tol: float, loop: _CuttingPlane) -> Solution:
    """The fallback: every pair as one window from the best point (:func:`_all_pairs`), else
    the pairs formed and solved by the working set (logged at the INFO level: the designed
    path at large ``C``, where the planes approach the optimum too slowly)."""
    done = _all_pairs(f, loop.best.w, tol, loop.it)
    if done is not None:
        return done
    it, gap = loop.it, loop.gap()
    logger.info(
        "one_slack: no certified finish after %d cutting-plane iterations (gap %.1e); "
        "solving on the formed pairs by the working set",
        it,
        gap,
    )
    solution = load(METHODS["working_set"].run)(f, tol=tol)
    solution.info["one_slack_iterations"] = it
    return solution
