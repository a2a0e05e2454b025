r"""The exact optimum of an SVM with grouped slacks, by support sets and rational KKT equations.

Every linear SVM of qpsvm is an instance of one quadratic program over rows ``a_k`` grouped by
the slack they share:

.. math::

    \min_{w, b, \xi}\ \tfrac12\|w\|^2 + \sum_g c_g \xi_g
    \quad\text{s.t.}\quad a_k\cdot w + y_k b \ge m_k - \xi_{g(k)},\ \xi_g \ge 0,

with the intercept ``b`` only when the rows carry labels ``y_k = +-1`` (binary with
``fit_intercept``), ``c_g = inf`` for a hard constraint (no slack). Binary and ranking SVMs
have one row per group (``a_k = y_k x_k``, or a pair difference), Weston-Watkins one row per
``(i, c)``, Crammer-Singer one group per example. Its dual is

.. math::

    D(\alpha) = \sum_k m_k \alpha_k - \tfrac12\Big\|\sum_k \alpha_k a_k\Big\|^2,\quad
    \alpha \ge 0,\ \sum_{k \in g} \alpha_k \le c_g,\ \sum_k y_k \alpha_k = 0 \text{ (with b)}.

Given the active rows (tight constraints) and the saturated groups (``sum alpha = c_g``, where
``xi_g`` may be positive), the KKT conditions are linear equations, solved here in rational
arithmetic (:mod:`qpsvm.exact.rational`) in the space of the free multipliers: a saturated
group with one active row fixes that multiplier at ``c_g``, so its size is the number of rows on
the margin (``<= d + 1`` in general position), not ``n``. Every KKT condition is then checked
exactly over all rows; indices that violate one are moved (a primal-dual active-set step) until
all hold. The result is the exact optimum of the problem the float64 data state.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from qpsvm.exact.rational import ZERO, solve_rational, to_float
from qpsvm.exceptions import SolverError

__all__ = ["ExactOptimum", "GroupedQP", "solve_grouped"]

logger = logging.getLogger("qpsvm")

#: Rounds in which every violated condition moves its index at once; afterwards only the
#: largest violation moves per round (which cannot cycle as easily).
BULK_ROUNDS = 8


@dataclass
class GroupedQP:
    """The data of the grouped-slack QP, as exact rationals.

    Attributes
    ----------
    A : ndarray of Fraction, shape (n_rows, dim)
        Rows ``a_k``.
    m : ndarray of Fraction, shape (n_rows,)
        Margins ``m_k``.
    group : ndarray of int, shape (n_rows,)
        The slack group of each row.
    cap : list of Fraction or None
        ``c_g`` per group (``None``: a hard constraint without slack).
    label : ndarray of int or None
        ``y_k`` (``+-1``) of each row when ``b`` is free, else ``None``.
    """

    A: np.ndarray
    m: np.ndarray
    group: np.ndarray
    cap: list[Fraction | None]
    label: np.ndarray | None = None

    @property
    def n_rows(self) -> int:
        return int(self.A.shape[0])

    @property
    def n_groups(self) -> int:
        return len(self.cap)

    def objective(self, w: np.ndarray, b: Fraction = ZERO) -> Fraction:
        """The exact primal objective of any point ``(w, b)`` (rationals, or floats read
        exactly): ``1/2 ||w||^2 + sum_g c_g max(0, max_{k in g} m_k - a_k.w - y_k b)``, ``inf``
        (a float) when a hard constraint fails."""
        w = np.asarray([Fraction(v) for v in np.ravel(w)], dtype=object)
        b = Fraction(b)
        margins = self.A.dot(w) + (self.label * b if self.label is not None else 0)
        short = self.m - margins
        xi = [ZERO] * self.n_groups
        for k, g in enumerate(self.group):
            if short[k] > xi[g]:
                xi[g] = short[k]
        total = _dot(w, w) / 2
        for g, c in enumerate(self.cap):
            if c is None and xi[g] > 0:
                return float("inf")
            if c is not None:
                total += c * xi[g]
        return total


@dataclass
class ExactOptimum:
    r"""The exact rational optimum of a :class:`GroupedQP` (and of the formulation it states).

    Attributes
    ----------
    w : ndarray of Fraction
        ``w* = sum_k alpha_k a_k`` (unique: the objective is strongly convex in ``w``).
    b : Fraction
        An optimal intercept (0 without one; it need not be unique).
    alpha : ndarray of Fraction
        Optimal multipliers, one per row (not unique in general).
    xi : ndarray of Fraction
        Optimal slacks, one per group.
    objective : Fraction
        ``P* = D* = 1/2 ||w*||^2 + sum_g c_g xi_g``.
    iterations : int
        Support-set rounds it took.
    """

    w: np.ndarray
    b: Fraction
    alpha: np.ndarray
    xi: np.ndarray
    objective: Fraction
    iterations: int

    @property
    def w_float(self) -> np.ndarray:
        """``w*`` rounded to float64."""
        return to_float(self.w)

    @property
    def alpha_float(self) -> np.ndarray:
        """``alpha*`` rounded to float64."""
        return to_float(self.alpha)


@dataclass
class _Point:
    """The solution of the KKT equations on one choice of sets."""

    alpha: np.ndarray
    w: np.ndarray
    b: Fraction
    xi: np.ndarray
    margins: np.ndarray
    moves: list[tuple[float, str, int]]


class _Sets:
    """Active rows and saturated groups, with the derived free / fixed rows."""

    def __init__(self, qp: GroupedQP, active: np.ndarray, saturated: np.ndarray) -> None:
        self.qp = qp
        #: rows of groups with ``c_g = 0``: their multipliers are 0 and their slack costs nothing
        self.dead = np.array([c is not None and c == 0 for c in qp.cap])[qp.group]
        self.active = active & ~self.dead
        self.saturated = saturated.copy()

    def derived(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Fixed rows (alone and active in a saturated group: ``alpha = c_g``), free rows, and
        the saturated groups with several active rows (their ``xi_g`` is an unknown)."""
        qp = self.qp
        counts = np.bincount(qp.group[self.active], minlength=qp.n_groups)
        self.saturated &= counts > 0
        lone = self.saturated & (counts == 1)
        fixed = self.active & lone[qp.group]
        free = self.active & ~fixed
        multi = np.flatnonzero(self.saturated & (counts > 1))
        return np.flatnonzero(fixed), np.flatnonzero(free), multi


def _dot(a: np.ndarray, b: np.ndarray) -> Fraction:
    return sum((x * y for x, y in zip(a, b, strict=True)), ZERO)


def _solve_sets(qp: GroupedQP, sets: _Sets) -> tuple[_Point, np.ndarray, np.ndarray]:
    """The KKT equations on ``sets`` solved exactly (unknowns: ``b``, the ``xi_g`` of saturated
    groups with several active rows, the free multipliers)."""
    fixed, free, multi = sets.derived()
    caps = np.array([qp.cap[g] for g in qp.group[fixed]], dtype=object)
    alpha = np.array([ZERO] * qp.n_rows, dtype=object)
    alpha[fixed] = caps
    v0 = qp.A[fixed].T.dot(caps) if fixed.size else np.array([ZERO] * qp.A.shape[1], dtype=object)
    intercept = qp.label is not None
    n_b = 1 if intercept else 0
    slot = {g: n_b + i for i, g in enumerate(multi)}
    offset = n_b + multi.size
    size = offset + free.size
    AF = qp.A[free]
    G = AF.dot(AF.T) if free.size else np.zeros((0, 0), dtype=object)
    rhs_v = qp.m[free] - (AF.dot(v0) if free.size else np.zeros(0, dtype=object))
    M: list[list[Fraction]] = []
    r: list[Fraction] = []
    for i, k in enumerate(free):
        row = [ZERO] * size
        if intercept:
            row[0] = Fraction(int(qp.label[k]))
        g = int(qp.group[k])
        if g in slot:
            row[slot[g]] = Fraction(1)
        row[offset:] = list(G[i])
        M.append(row)
        r.append(rhs_v[i])
    if intercept:
        M.append([ZERO] * offset + [Fraction(int(qp.label[k])) for k in free])
        r.append(-sum((Fraction(int(qp.label[k])) * qp.cap[qp.group[k]] for k in fixed), ZERO))
    for g in multi:
        M.append([ZERO] * offset + [Fraction(int(qp.group[k] == g)) for k in free])
        r.append(qp.cap[g])
    solution = solve_rational(M, r) if M else None
    x = solution.x if solution is not None else np.array([], dtype=object)
    alpha[free] = x[offset:]
    w = v0 + (AF.T.dot(x[offset:]) if free.size else 0)
    scores = qp.A.dot(w)
    b, end = ZERO, None
    if intercept:
        if solution is not None and 0 in solution.pivots:
            b = x[0]
        else:
            b, end = _free_intercept(qp, fixed, sets.dead, scores)
    margins = scores + (qp.label * b if intercept else 0)
    xi = np.array([ZERO] * qp.n_groups, dtype=object)
    for g in multi:
        xi[g] = x[slot[g]]
    for k in fixed:
        xi[qp.group[k]] = qp.m[k] - margins[k]
    # equations no solution satisfies: a free row leaves the active set, a group its saturation,
    # an unbalanced intercept makes the row at the end of its interval active
    moves: list[tuple[float, str, int]] = []
    for i in [] if solution is None else solution.inconsistent:
        if i < free.size:
            moves.append((np.inf, "drop", int(free[i])))
        elif intercept and i == free.size:
            if end is None:
                raise SolverError("the exact KKT equations leave the intercept unbounded.")
            moves.append((np.inf, "add", end))
        else:
            moves.append((np.inf, "unsaturate", int(multi[i - free.size - n_b])))
    return _Point(alpha, w, b, xi, margins, moves), fixed, free


def _free_intercept(
    qp: GroupedQP, fixed: np.ndarray, dead: np.ndarray, scores: np.ndarray
) -> tuple[Fraction, int | None]:
    """``b`` when no free multiplier determines it, and the row that bounds it there.

    ``b`` stays inside the interval its constraints leave (rows of unsaturated groups need
    ``y_k b >= m_k - a_k.w``, fixed rows ``<=``): at the end the objective's slope
    ``-b sum_fixed y_k c_k`` points to, else at the midpoint.
    """
    is_fixed = np.zeros(qp.n_rows, dtype=bool)
    is_fixed[fixed] = True
    lo, hi, lo_row, hi_row = None, None, None, None
    for k in np.flatnonzero(~dead):
        y = int(qp.label[k])
        bound = (qp.m[k] - scores[k]) * y
        # y b >= m - s  <=>  b >= bound (y = 1) or b <= bound (y = -1); reversed for fixed rows
        if (y == 1) != bool(is_fixed[k]):
            if lo is None or bound > lo:
                lo, lo_row = bound, int(k)
        elif hi is None or bound < hi:
            hi, hi_row = bound, int(k)
    slope = -sum((int(qp.label[k]) * qp.cap[qp.group[k]] for k in fixed), ZERO)
    if slope < 0 and hi is not None:
        return hi, hi_row
    if slope > 0 and lo is not None:
        return lo, lo_row
    if lo is not None and hi is not None:
        return (lo + hi) / 2, None
    return (lo if lo is not None else hi if hi is not None else ZERO), None


def _violations(
    qp: GroupedQP, sets: _Sets, point: _Point, free: np.ndarray
) -> list[tuple[float, str, int]]:
    """Every KKT condition that fails at ``point``, as ``(size, kind, index)``."""
    out = list(point.moves)
    for k in free:
        if point.alpha[k] < 0:
            out.append((-float(point.alpha[k]), "drop", int(k)))
    sums = np.array([ZERO] * qp.n_groups, dtype=object)
    np.add.at(sums, qp.group, point.alpha)
    for g in range(qp.n_groups):
        cap = qp.cap[g]
        if sets.saturated[g]:
            if point.xi[g] < 0:
                out.append((-float(point.xi[g]), "unsaturate", g))
        elif cap is not None and sums[g] > cap:
            out.append((float(sums[g] - cap), "saturate", g))
    need = qp.m - point.xi[qp.group]
    for k in np.flatnonzero(~sets.active & ~sets.dead):
        if point.margins[k] < need[k]:
            out.append((float(need[k] - point.margins[k]), "add", int(k)))
    return out


def _apply(sets: _Sets, moves: list[tuple[float, str, int]]) -> None:
    for _, kind, index in moves:
        if kind == "drop":
            sets.active[index] = False
        elif kind == "add":
            sets.active[index] = True
        elif kind == "saturate":
            sets.saturated[index] = True
        else:
            sets.saturated[index] = False


def solve_grouped(
    qp: GroupedQP,
    active: np.ndarray,
    saturated: np.ndarray,
    max_rounds: int | None = None,
) -> ExactOptimum:
    """The exact optimum of ``qp``, starting from guessed sets (e.g. read off a float solution).

    Parameters
    ----------
    qp : GroupedQP
    active : ndarray of bool, shape (n_rows,)
        Rows guessed tight.
    saturated : ndarray of bool, shape (n_groups,)
        Groups guessed at their cap (``xi_g > 0`` possible).
    max_rounds : int, optional
        Most support-set rounds (default ``50 + 2 n_rows``).

    Raises
    ------
    SolverError
        When the sets do not settle within ``max_rounds``.
    """
    sets = _Sets(qp, active, saturated)
    limit = 50 + 2 * qp.n_rows if max_rounds is None else max_rounds
    seen: set[bytes] = set()
    rng = np.random.default_rng(0)
    for rounds in range(1, limit + 1):
        point, _, free = _solve_sets(qp, sets)
        moves = _violations(qp, sets, point, free)
        if not moves:
            return _optimum(qp, point, sets.dead, rounds)
        logger.debug("exact KKT round %d: %d violated conditions", rounds, len(moves))
        state = sets.active.tobytes() + sets.saturated.tobytes()
        if state in seen:
            # a cycle: one violated condition, chosen at random, breaks it
            moves = [moves[int(rng.integers(len(moves)))]]
        elif rounds > BULK_ROUNDS:
            moves = [max(moves)]
        seen.add(state)
        _apply(sets, moves)
    raise SolverError(
        f"the exact KKT solve did not settle its support sets in {limit} rounds; "
        "start it from a more accurate float solution."
    )


def _optimum(qp: GroupedQP, point: _Point, dead: np.ndarray, rounds: int) -> ExactOptimum:
    """The optimum with slacks of zero-cost groups filled in, and ``P = D`` checked exactly."""
    xi = point.xi.copy()
    shortfall = qp.m - point.margins
    for k in np.flatnonzero(dead):
        g = qp.group[k]
        if shortfall[k] > xi[g]:
            xi[g] = shortfall[k]
    norm2 = _dot(point.w, point.w)
    cost = sum((qp.cap[g] * xi[g] for g in range(qp.n_groups) if qp.cap[g] is not None), ZERO)
    primal = norm2 / 2 + cost
    dual = _dot(qp.m, point.alpha) - norm2 / 2
    if primal != dual:
        raise SolverError(f"exact KKT point with P - D = {float(primal - dual):.3e} != 0.")
    return ExactOptimum(
        w=point.w, b=point.b, alpha=point.alpha, xi=xi, objective=primal, iterations=rounds
    )
