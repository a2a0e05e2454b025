r"""Lemke's complementary pivoting in exact integer arithmetic, with the lexicographic rule.

The linear complementarity problem :math:`\mathrm{LCP}(q, M)` asks for

.. math::

    w = q + M z,\qquad w \ge 0,\ z \ge 0,\ w^\top z = 0.

Lemke's method (Cottle, Pang & Stone, *The Linear Complementarity Problem*, 1992, §4.4) adds an
artificial variable :math:`z_0` with covering vector :math:`d = \mathbf 1`, starts from the
almost complementary basis where :math:`z_0` enters, and pivots the complement of each leaving
variable in until :math:`z_0` leaves. With the lexicographic minimum-ratio test (ties broken by
the rows of :math:`B^{-1}`) no basis repeats, so it stops after finitely many pivots on every
problem, degenerate or not. For a positive semidefinite ``M`` (copositive-plus) it stops either
at a solution or on a secondary ray, which proves the LCP infeasible.

Arithmetic is exact and fraction-free: each row of :math:`[I \mid -M \mid -d \mid q]` is scaled
to integers (the scale moves into its :math:`w` variable), and Edmonds' integer pivoting keeps
the tableau as :math:`\det(B)\,B^{-1}[\dots]`, every division exact (the same device as
Bareiss elimination). Entries stay the size of subdeterminants of the data; no gcd is ever
taken. With python-flint installed (``pip install qpsvm[exact]``) the tableau is a
``flint.fmpz_mat`` and each pivot runs in C; otherwise a numpy array of Python integers.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

try:  # optional: C-speed integer matrices
    import flint
except ImportError:  # pragma: no cover - exercised where python-flint is absent
    flint = None

__all__ = ["LCPInfeasibleError", "LemkeResult", "solve_lcp"]


class LCPInfeasibleError(Exception):
    """Lemke's method ended on a secondary ray: for a copositive-plus ``M`` the LCP has no
    feasible point."""


@dataclass
class LemkeResult:
    """A solution of :math:`\\mathrm{LCP}(q, M)`.

    Attributes
    ----------
    z : list of Fraction
        The solution ``z`` (``w = q + M z`` follows).
    pivots : int
        Pivots it took (0 when ``q >= 0``).
    """

    z: list[Fraction]
    pivots: int


class _NumpyTableau:
    """An integer tableau as a numpy array of Python integers."""

    def __init__(self, rows: list[list[int]]) -> None:
        self.T = np.array(rows, dtype=object)

    def column(self, j: int) -> list[int]:
        return list(self.T[:, j])

    def row(self, i: int, stop: int) -> list[int]:
        return list(self.T[i, :stop])

    def entry(self, i: int, j: int) -> int:
        return self.T[i, j]

    def pivot(self, r: int, c: int, det: int) -> int:
        T = self.T
        keep = T[r].copy()
        p = keep[c]
        T[...] = (T * p - np.multiply.outer(T[:, c], keep)) // det
        T[r] = keep
        if p < 0:
            T[...] = -T
        return abs(p)


class _FlintTableau:
    """An integer tableau as a ``flint.fmpz_mat`` (each pivot in C)."""

    def __init__(self, rows: list[list[int]]) -> None:
        self.T = flint.fmpz_mat(rows)
        self.cols = len(rows[0])

    def column(self, j: int) -> list[int]:
        T = self.T
        return [int(T[i, j]) for i in range(T.nrows())]

    def row(self, i: int, stop: int) -> list[int]:
        T = self.T
        return [int(T[i, j]) for j in range(stop)]

    def entry(self, i: int, j: int) -> int:
        return int(self.T[i, j])

    def pivot(self, r: int, c: int, det: int) -> int:
        T = self.T
        n = T.nrows()
        keep = [T[r, j] for j in range(self.cols)]
        p = keep[c]
        col = flint.fmpz_mat(n, 1, [T[i, c] for i in range(n)])
        T = (T * p - col * flint.fmpz_mat(1, self.cols, keep)) / det
        for j in range(self.cols):
            T[r, j] = keep[j]
        self.T = -T if p < 0 else T
        return abs(int(p))


def _tableau(rows: list[list[int]]):
    return _FlintTableau(rows) if flint is not None else _NumpyTableau(rows)


def _integer_rows(
    M: Sequence[Sequence[Fraction]], q: Sequence[Fraction]
) -> tuple[list[list[int]], int]:
    """Rows ``L_i [e_i | -M_i | -1 | s q_i]`` and ``s``: every variable scaled by ``s`` (which
    clears the denominators of ``q``), then row ``i`` by ``L_i`` (which clears those of ``M_i``)
    with ``w_i`` rescaled so its column stays ``e_i``. Only the last column carries ``s``: the
    other entries keep the size of ``M``'s own."""
    n = len(q)
    q = [Fraction(v) for v in q]
    s = math.lcm(1, *(v.denominator for v in q))
    rows = []
    for i in range(n):
        entries = [Fraction(v) for v in M[i]]
        scale = math.lcm(1, *(v.denominator for v in entries))
        row = [0] * n
        row[i] = 1
        row += [-int(v * scale) for v in entries]
        row += [-scale, int(q[i] * s * scale)]
        rows.append(row)
    return rows, s


def _lexmin(tab, candidates: list[int], col: list[int], rhs: int, n: int, sign: int) -> int:
    """The row of ``candidates`` whose ``[x_B, B^{-1}]`` row divided by ``sign * col`` is
    lexicographically least (all divisors positive); ratios are compared by cross products."""
    best = candidates[0]
    for i in candidates[1:]:
        a, b = sign * col[i], sign * col[best]
        diff = tab.entry(i, rhs) * b - tab.entry(best, rhs) * a
        j = 0
        while diff == 0 and j < n:
            diff = tab.entry(i, j) * b - tab.entry(best, j) * a
            j += 1
        if diff < 0:
            best = i
    return best


def _solve_square(rows: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction] | None:
    """The solution of a square rational system (``None`` when singular): flint's solver, or
    fraction-free Gauss-Jordan elimination on the integer tableau."""
    k = len(rhs)
    if flint is not None:
        try:
            A = flint.fmpq_mat([[flint.fmpq(v.numerator, v.denominator) for v in r] for r in rows])
            b = flint.fmpq_mat(k, 1, [flint.fmpq(v.numerator, v.denominator) for v in rhs])
            x = A.solve(b)
        except ZeroDivisionError:
            return None
        return [Fraction(int(x[i, 0].p), int(x[i, 0].q)) for i in range(k)]
    table = []
    for row, value in zip(rows, rhs, strict=True):
        scale = math.lcm(1, *(v.denominator for v in [*row, value]))
        table.append([int(v * scale) for v in [*row, value]])
    tab = _NumpyTableau(table)
    det, used, where = 1, set(), []
    for c in range(k):
        r = next((i for i in range(k) if i not in used and tab.entry(i, c) != 0), None)
        if r is None:
            return None
        det = tab.pivot(r, c, det)
        used.add(r)
        where.append(r)
    return [Fraction(tab.entry(where[c], k), det) for c in range(k)]


def _crash(
    M: Sequence[Sequence[Fraction]], q: Sequence[Fraction], basis: Sequence[int]
) -> list[Fraction] | None:
    """The complementary point of ``basis`` (``z_B`` solves ``(q + M z)_B = 0``, ``z_N = 0``)
    when it solves the LCP, else ``None``: one linear solve instead of Lemke's pivots when a
    float solution guessed the basis."""
    n = len(q)
    B = sorted(set(basis))
    zB = _solve_square([[Fraction(M[i][j]) for j in B] for i in B], [-Fraction(q[i]) for i in B])
    if zB is None or any(v < 0 for v in zB):
        return None
    z = [Fraction(0)] * n
    for j, v in zip(B, zB, strict=True):
        z[j] = v
    inside = set(B)
    for i in range(n):
        if i not in inside and Fraction(q[i]) + sum(M[i][j] * z[j] for j in B) < 0:
            return None
    return z


def solve_lcp(
    M: Sequence[Sequence[Fraction]],
    q: Sequence[Fraction],
    starts: Sequence[Sequence[int]] = (),
) -> LemkeResult:
    r"""Solve :math:`\mathrm{LCP}(q, M)` exactly by Lemke's method with the lexicographic rule.

    Parameters
    ----------
    M : sequence of sequences of Fraction (or int), shape (n, n)
        The matrix; Lemke's method is complete for copositive-plus ``M`` (e.g. positive
        semidefinite, not necessarily symmetric).
    q : sequence of Fraction (or int), shape (n,)
    starts : sequence of sequences of int, optional
        Guessed bases (the indices of ``z`` that are positive), tried first in turn: the first
        whose complementary point solves the LCP is returned after one linear solve (pivots 0).

    Returns
    -------
    LemkeResult

    Raises
    ------
    LCPInfeasibleError
        On a secondary ray (for copositive-plus ``M``: no ``z >= 0`` with ``q + M z >= 0``).
    """
    n = len(q)
    if all(Fraction(v) >= 0 for v in q):
        return LemkeResult([Fraction(0)] * n, 0)
    for basis in starts:
        z = _crash(M, q, basis)
        if z is not None:
            return LemkeResult(z, 0)
    rows, s = _integer_rows(M, q)
    tab = _tableau(rows)
    artificial, rhs = 2 * n, 2 * n + 1
    # variables: w_0..w_{n-1}, z_0..z_{n-1} at n..2n-1, the artificial z0 at 2n
    basis = list(range(n))
    det = 1
    entering = artificial
    col = tab.column(entering)
    row = _lexmin(tab, list(range(n)), col, rhs, n, -1)
    for pivots in itertools.count(1):
        leaving = basis[row]
        det = tab.pivot(row, entering, det)
        basis[row] = entering
        if leaving == artificial:
            z = [Fraction(0)] * n
            for i, var in enumerate(basis):
                if n <= var < 2 * n:
                    z[var - n] = Fraction(tab.entry(i, rhs), det * s)
            return LemkeResult(z, pivots)
        entering = leaving + n if leaving < n else leaving - n
        col = tab.column(entering)
        candidates = [i for i in range(n) if col[i] > 0]
        if not candidates:
            raise LCPInfeasibleError(
                "Lemke's method ended on a secondary ray: the complementarity problem has no "
                "feasible point."
            )
        row = _lexmin(tab, candidates, col, rhs, n, 1)
