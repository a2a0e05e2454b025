r"""The exact optimum of an SVM with grouped slacks: Lemke's method on the support sets.

Every linear SVM of qpsvm is an instance of one quadratic program over rows ``a_k`` grouped by
the slack they share:

.. math::

    \min_{w, b, \xi}\ \tfrac12\|w\|^2 + \sum_g c_g \xi_g
    \quad\text{s.t.}\quad a_k\cdot w + y_k \cdot b \ge m_k - \xi_{g(k)},\ \xi_g \ge 0,

with free, unpenalised intercepts ``b`` only when the rows carry their coefficients ``y_k``
(binary with ``fit_intercept``: one intercept, ``y_k = +-1``; multiclass with free per-class
intercepts: ``b_{y_i} - b_c`` on row ``(i, c)``, the last class's ``b`` fixed at 0, since a
common shift of all of them changes no margin), ``c_g = inf`` for a hard constraint (no
slack). Binary and ranking SVMs
have one row per group (``a_k = y_k x_k``, or a pair difference), Weston-Watkins one row per
``(i, c)``, Crammer-Singer one group per example. A kernel SVM is one too, with rows
``a_k = y_k phi(x_k)`` in its feature space: everything below uses the rows only through their
inner products, so its exact Gram matrix suffices (:class:`~qpsvm.exact.rational.GramRows`).
Its dual is

.. math::

    D(\alpha) = \sum_k m_k \alpha_k - \tfrac12\Big\|\sum_k \alpha_k a_k\Big\|^2,\quad
    \alpha \ge 0,\ \sum_{k \in g} \alpha_k \le c_g,\ \sum_k \alpha_k y_k = 0 \text{ (with b)}.

Its KKT conditions are a linear complementarity problem with a positive semidefinite matrix
(the multipliers ``alpha`` against the margins' excess ``mu_k = a_k.w + y_k b - m_k + xi_g``,
the slacks ``xi_g`` against the caps' room, the intercept split in two signs against the
balance), solved exactly by Lemke's method with the lexicographic rule
(:mod:`qpsvm.exact.lemke`), which is finite on degenerate problems too (ties, duplicated
points, more points on the margin than dimensions). A float solution sizes the
complementarity problem and guesses its basis: rows it puts clearly off the margin are fixed at
``alpha_k = 0``, rows alone in a group whose slack is clearly positive at ``alpha_k = c_g``;
the rest are the unknowns, and their guessed basis (every unknown multiplier positive) is tried
first, one exact linear solve, before Lemke's pivots. Every KKT condition is then checked
exactly over all rows; fixed rows that violate one become unknowns and the problem is solved
again, so the rounds are at most the number of rows, and the last one is the exact optimum of
the problem the float64 data state.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from qpsvm.exact.lemke import LCPInfeasibleError, solve_lcp
from qpsvm.exact.rational import ZERO, ClassRows, GramRows, IntegerRows, exact_dot, to_float
from qpsvm.exceptions import InfeasibleProblemError, SolverError

#: The rows of any grouped QP: explicit, multiclass by structure, or a kernel's by its Gram.
Rows = IntegerRows | ClassRows | GramRows

__all__ = ["ExactOptimum", "GroupedQP", "solve_grouped"]

logger = logging.getLogger("qpsvm")


@dataclass
class GroupedQP:
    """The data of the grouped-slack QP, as exact rationals.

    Attributes
    ----------
    rows : IntegerRows, ClassRows or GramRows
        Rows ``a_k``, exact (integers over a common denominator; the multiclass rows by their
        structure; a kernel's rows ``y_k phi(x_k)`` by their Gram matrix, a point ``w`` then
        by its coefficients over the rows).
    m : ndarray of Fraction, shape (n_rows,)
        Margins ``m_k``.
    group : ndarray of int, shape (n_rows,)
        The slack group of each row.
    cap : list of Fraction or None
        ``c_g`` per group (``None``: a hard constraint without slack).
    label : ndarray of int or None
        The intercepts' coefficients ``y_k`` of each row when there are free intercepts, else
        ``None``: shape ``(n_rows,)`` for one intercept (``+-1``), ``(n_rows, p)`` for ``p``.
    """

    rows: Rows
    m: np.ndarray
    group: np.ndarray
    cap: list[Fraction | None]
    label: np.ndarray | None = None

    @property
    def n_rows(self) -> int:
        return int(self.rows.shape[0])

    @property
    def n_groups(self) -> int:
        return len(self.cap)

    @property
    def n_intercepts(self) -> int:
        """Number ``p`` of free intercepts (0 without)."""
        if self.label is None:
            return 0
        return 1 if np.ndim(self.label) == 1 else int(np.shape(self.label)[1])

    def coefficient(self, k: int, j: int) -> int:
        """Coefficient of intercept ``j`` in row ``k``'s margin."""
        return int(self.label[k] if np.ndim(self.label) == 1 else self.label[k, j])

    def intercept_terms(self, b: Fraction | np.ndarray) -> np.ndarray | int:
        """``y_k . b`` of every row, exactly (0 without intercepts)."""
        if self.label is None:
            return 0
        if np.ndim(self.label) == 1:
            return self.label * Fraction(b)
        return np.asarray(self.label).astype(object) @ np.asarray(b, dtype=object)

    def objective(self, w: np.ndarray, b: Fraction | np.ndarray = ZERO) -> Fraction:
        """The exact primal objective of any point ``(w, b)`` (rationals, or floats read
        exactly): ``1/2 ||w||^2 + sum_g c_g max(0, max_{k in g} m_k - a_k.w - y_k . b)``, ``inf``
        (a float) when a hard constraint fails. For :class:`GramRows` ``w`` is the point's
        coefficient vector over the rows, ``w = sum_k w_k a_k``."""
        w = np.asarray([Fraction(v) for v in np.ravel(w)], dtype=object)
        if self.n_intercepts > 1:
            b = np.asarray([Fraction(v) for v in np.ravel(b)], dtype=object)
        else:
            b = Fraction(b)
        margins = self.rows.apply(w) + self.intercept_terms(b)
        short = self.m - margins
        xi = [ZERO] * self.n_groups
        for k, g in enumerate(self.group):
            if short[k] > xi[g]:
                xi[g] = short[k]
        total = self.rows.norm2(w) / 2
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
    w : ndarray of Fraction or None
        ``w* = sum_k alpha_k a_k`` (unique: the objective is strongly convex in ``w``), where
        it is explicit; ``None`` for a kernel, whose ``w*`` lives in the feature space and is
        ``sum_k alpha_k y_k phi(x_k)`` (it is unique there, ``alpha*`` need not be).
    b : Fraction or ndarray of Fraction
        An optimal intercept (0 without one; it need not be unique), or the optimal intercepts
        of a problem with several.
    alpha : ndarray of Fraction
        Optimal multipliers, one per row (not unique in general).
    xi : ndarray of Fraction
        Optimal slacks, one per group.
    objective : Fraction
        ``P* = D* = 1/2 ||w*||^2 + sum_g c_g xi_g``.
    iterations : int
        Lemke pivots it took, over all rounds.
    """

    w: np.ndarray | None
    b: Fraction | np.ndarray
    alpha: np.ndarray
    xi: np.ndarray
    objective: Fraction
    iterations: int

    @property
    def w_float(self) -> np.ndarray | None:
        """``w*`` rounded to float64 (``None`` for a kernel)."""
        return None if self.w is None else to_float(self.w)

    @property
    def alpha_float(self) -> np.ndarray:
        """``alpha*`` rounded to float64."""
        return to_float(self.alpha)


@dataclass
class _Round:
    """One reduced problem: the free rows and the rows fixed at their group's cap."""

    free: np.ndarray
    capped: np.ndarray


class _Reduced:
    """The complementarity problem on the free rows, the others fixed (at 0 or at ``c_g``)."""

    def __init__(self, qp: GroupedQP, rows: Rows, sets: _Round, dead: np.ndarray) -> None:
        self.qp, self.rows, self.sets, self.dead = qp, rows, sets, dead
        free = np.flatnonzero(sets.free)
        self.free = free
        self.capped = np.flatnonzero(sets.capped)
        groups = sorted({int(g) for g in qp.group[free] if qp.cap[g] is not None})
        self.groups = groups
        self.intercept = qp.label is not None
        self.n_intercepts = qp.n_intercepts

    def alpha_fixed(self) -> np.ndarray:
        alpha = np.array([ZERO] * self.qp.n_rows, dtype=object)
        for k in self.capped:
            alpha[k] = self.qp.cap[self.qp.group[k]]
        return alpha

    def starts(self, saturated: np.ndarray) -> list[list[int]]:
        """Guessed bases of :meth:`lcp`: every free multiplier positive, the slack of each
        group guessed saturated, and the intercepts all of one sign or all of the other."""
        nf, nh = self.free.size, len(self.groups)
        base = list(range(nf)) + [nf + j for j, g in enumerate(self.groups) if saturated[g]]
        if not self.intercept:
            return [base]
        signs = range(nf + nh, nf + nh + 2 * self.n_intercepts)
        return [[*base, *signs[1::2]], [*base, *signs[0::2]]]

    def lcp(self, alpha: np.ndarray) -> tuple[list[list[Fraction]], list[Fraction]]:
        r"""``M`` and ``q`` over ``z = (alpha_F, xi_H, lambda_+, lambda_-)`` (one intercept;
        with ``p`` of them, one pair ``lambda_{j+}, lambda_{j-}`` per intercept, the columns
        ``y_F`` of each):

        .. math::

            M = \begin{pmatrix} G_{FF} & E^\top & -y_F & y_F \\ -E & 0 & 0 & 0 \\
            y_F^\top & 0 & 0 & 0 \\ -y_F^\top & 0 & 0 & 0 \end{pmatrix},\quad
            q = \begin{pmatrix} A_F v - m_F \\ c_H \\ y \cdot \alpha_X \\
            -y \cdot \alpha_X \end{pmatrix},

        ``v = sum_{k fixed} alpha_k a_k``, ``E`` the rows' group incidence; ``b = lambda_- -
        lambda_+``. ``M + M^T = diag(2 G_FF, 0)`` is positive semidefinite.
        """
        qp, free, groups = self.qp, self.free, self.groups
        nf, nh = free.size, len(groups)
        size = nf + nh + 2 * self.n_intercepts
        M = [[ZERO] * size for _ in range(size)]
        v = self.rows.combine(self.capped, alpha[self.capped])
        q = list(self.rows.apply(v, free) - qp.m[free])
        G = self.rows.gram(free)
        slot = {g: nf + j for j, g in enumerate(groups)}
        for i, k in enumerate(free):
            M[i][:nf] = list(G[i])
            g = int(qp.group[k])
            if g in slot:
                M[i][slot[g]] = Fraction(1)
                M[slot[g]][i] = Fraction(-1)
        q += [qp.cap[g] for g in groups]
        for j in range(self.n_intercepts):
            y = [Fraction(qp.coefficient(k, j)) for k in free]
            plus, minus = nf + nh + 2 * j, nf + nh + 2 * j + 1
            balance = sum((qp.coefficient(k, j) * alpha[k] for k in self.capped), ZERO)
            for i in range(nf):
                M[i][plus], M[i][minus] = -y[i], y[i]
                M[plus][i], M[minus][i] = y[i], -y[i]
            q += [balance, -balance]
        return M, q


def _first_round(qp: GroupedQP, active: np.ndarray, saturated: np.ndarray, dead: np.ndarray):
    """Free rows and capped rows read off guessed sets: an active row alone in a saturated group
    is capped, every other active row free."""
    active = active & ~dead
    counts = np.bincount(qp.group[active], minlength=qp.n_groups)
    lone = saturated & (counts == 1) & np.array([c is not None for c in qp.cap])
    capped = active & lone[qp.group]
    return _Round(free=active & ~capped, capped=capped)


def _kkt_point(qp: GroupedQP, rows: Rows, reduced: _Reduced, z: list[Fraction]):
    """``alpha, w, b, xi`` and the margins from the reduced problem's solution ``z``."""
    free, groups = reduced.free, reduced.groups
    alpha = reduced.alpha_fixed()
    nf, nh = free.size, len(groups)
    alpha[free] = z[:nf]
    b: Fraction | np.ndarray = ZERO
    if reduced.intercept:
        base = nf + nh
        pairs = [z[base + 2 * j + 1] - z[base + 2 * j] for j in range(reduced.n_intercepts)]
        b = pairs[0] if np.ndim(qp.label) == 1 else np.asarray(pairs, dtype=object)
    support = np.flatnonzero(alpha != 0)
    w = rows.combine(support, alpha[support])
    margins = rows.apply(w) + qp.intercept_terms(b)
    xi = np.array([ZERO] * qp.n_groups, dtype=object)
    for j, g in enumerate(groups):
        xi[g] = z[nf + j]
    for k in reduced.capped:
        xi[qp.group[k]] = qp.m[k] - margins[k]
    return alpha, w, b, xi, margins


def _violated(
    qp: GroupedQP, sets: _Round, dead: np.ndarray, xi: np.ndarray, margins: np.ndarray
) -> np.ndarray:
    """Fixed rows whose KKT condition fails: a row at 0 below its margin ``m_k - xi_g``, a
    capped row whose slack ``xi_g`` is negative."""
    fixed_zero = ~sets.free & ~sets.capped & ~dead
    below = np.array([margins[k] < qp.m[k] - xi[qp.group[k]] for k in range(qp.n_rows)])
    negative = np.array([xi[qp.group[k]] < 0 for k in range(qp.n_rows)])
    return (fixed_zero & below) | (sets.capped & negative)


def solve_grouped(qp: GroupedQP, active: np.ndarray, saturated: np.ndarray) -> ExactOptimum:
    """The exact optimum of ``qp``, starting from guessed sets (e.g. read off a float solution).

    Parameters
    ----------
    qp : GroupedQP
    active : ndarray of bool, shape (n_rows,)
        Rows guessed tight (the unknowns of the first round).
    saturated : ndarray of bool, shape (n_groups,)
        Groups guessed at their cap (``xi_g > 0``): their lone active row is fixed at the cap.

    Raises
    ------
    InfeasibleProblemError
        When the problem has no feasible point (a hard constraint set that cannot hold).
    SolverError
        When the exact optimum fails its final duality check (a defect, never expected).
    """
    rows = qp.rows
    dead = np.array([c is not None and c == 0 for c in qp.cap])[qp.group]
    saturated = np.asarray(saturated, dtype=bool)
    sets = _first_round(qp, np.asarray(active, dtype=bool), saturated, dead)
    pivots = 0
    for _ in range(qp.n_rows + 2):
        reduced = _Reduced(qp, rows, sets, dead)
        M, q = reduced.lcp(reduced.alpha_fixed())
        try:
            result = solve_lcp(M, q, reduced.starts(saturated))
        except LCPInfeasibleError as exc:
            # the fixed multipliers leave no feasible dual point: free them all
            if not (sets.capped.any() or (~sets.free & ~dead).any()):
                raise InfeasibleProblemError(
                    "the problem has no feasible point (its dual is unbounded)."
                ) from exc
            sets = _Round(free=~dead, capped=np.zeros_like(dead))
            continue
        pivots += result.pivots
        alpha, w, b, xi, margins = _kkt_point(qp, rows, reduced, result.z)
        bad = _violated(qp, sets, dead, xi, margins)
        if not bad.any():
            return _optimum(qp, alpha, w, b, xi, margins, dead, pivots)
        logger.debug("exact KKT: %d fixed rows violate their condition", int(bad.sum()))
        # a violated group gives up its capped row too: its cap is shared again
        touched = np.zeros(qp.n_groups, dtype=bool)
        touched[qp.group[bad]] = True
        moved = sets.capped & touched[qp.group]
        sets = _Round(free=sets.free | bad | moved, capped=sets.capped & ~moved)
    raise SolverError("the exact KKT solve did not settle (a defect: rounds are bounded).")


def _optimum(
    qp: GroupedQP,
    alpha: np.ndarray,
    w: np.ndarray,
    b: Fraction | np.ndarray,
    xi: np.ndarray,
    margins: np.ndarray,
    dead: np.ndarray,
    pivots: int,
) -> ExactOptimum:
    """The optimum with slacks of zero-cost groups filled in, and ``P = D`` checked exactly."""
    xi = xi.copy()
    shortfall = qp.m - margins
    for k in np.flatnonzero(dead):
        g = qp.group[k]
        if shortfall[k] > xi[g]:
            xi[g] = shortfall[k]
    norm2 = qp.rows.norm2(w)
    cost = sum((qp.cap[g] * xi[g] for g in range(qp.n_groups) if qp.cap[g] is not None), ZERO)
    primal = norm2 / 2 + cost
    dual = exact_dot(qp.m, alpha) - norm2 / 2
    if primal != dual:
        raise SolverError(f"exact KKT point with P - D = {float(primal - dual):.3e} != 0.")
    return ExactOptimum(w=w, b=b, alpha=alpha, xi=xi, objective=primal, iterations=pivots)
