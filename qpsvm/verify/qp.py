r"""Certificates of a convex QP in standard form, for problems qpsvm did not write (an edited
``f.problem``, any CVXPY QP):

.. math::

    p^* = \min_x\ f(x) = \tfrac12 x^T P x + q^T x
    \quad\text{s.t.}\quad G x \le h,\ A x = b,\ lb \le x \le ub .

**Upper bound.** ``f(x)`` at a candidate ``x`` proven feasible: ``x`` is clipped into the box
(exact), inequality rows a candidate misses by rounding are repaired by raising a column that
only helps them (a slack: all its coefficients in ``G`` of one sign, no equality row, unbounded
in that direction), and every row is then checked with its rounding bounded
(:func:`qpsvm.verify.rigorous.enclosed_product`). Equality rows must hold exactly: a row that
defines an auxiliary variable (``a t + B_r u = b_r``, ``t`` in no other equality row, ``a`` a
power of two) gets ``t`` as the exact value it defines, enclosed, and the checks and ``f`` carry
that radius (:func:`_define_auxiliaries`, :func:`_perturbed`); a row of power-of-two
coefficients is balanced exactly on a grid (:func:`_balance_rows`); the others are checked in
rationals. Where one fails, ``f(x)`` is reported, with its measured infeasibility, but not
claimed as a bound.

**Lower bound.** For multipliers ``z >= 0`` and ``y`` and the residual of stationarity
``rho = P x + q + G^T z + A^T y``, convexity of ``f`` gives, for an optimal ``x*`` and
``d = x* - x``,

.. math::

    p^* \ge L(x^*, z, y) = L(x, z, y) + \rho^T d + \tfrac12 d^T P d
        \ge L(x, z, y) + \textstyle\sum_i \min_{d_i \in [lb_i - x_i,\ ub_i - x_i]} \rho_i d_i,

with :math:`L(x, z, y) = f(x) + z^T (G x - h) + y^T (A x - b)`. A coordinate with a bound on
the side its residual pushes towards absorbs that residual (the bound's multiplier); a coordinate
unbounded on that side (a free ``w_j``) would make the minimum ``-inf``. Such coordinates are
covered by curvature when ``P`` is diagonal on them (``P_ii > 0``, no coupling) and the upper
bound ``U`` is proven: ``f(x) - p^* >= 1/2 d^T P d`` for the feasible ``x``, so
:math:`\sum_{i \in F} |\rho_i d_i| \le a \sqrt{2 (U - p^*)}` with
:math:`a^2 = \sum_{i \in F} \rho_i^2 / P_{ii}`, and solving
:math:`p^* \ge L_1 - a \sqrt{2 (U - p^*)}` for ``p*`` gives
:math:`p^* \ge U - s^2`, :math:`s = (\sqrt2 a + \sqrt{2 a^2 + 4 (U - L_1)}) / 2`. A coordinate
with neither (a free intercept ``b``, which has no curvature) needs its residual
``q_j + sum_r G_rj z_r`` to be exactly zero: where the coefficients ``G_rj`` are powers of two
(``-y_i`` for the intercept), the multipliers on its rows are rounded down to a grid on which
their sum is exact and one of them is set to the balance, checked in rationals. Otherwise the
lower bound is unproven: its value is then computed with that residual taken as zero and marked
not rigorous, and bounding the variable (a box it does not reach) makes it rigorous. Convexity
itself is proven exactly for a symmetric ``P`` (:mod:`qpsvm.verify.psd`: Gershgorin per block,
else a shifted Cholesky factor with a rigorous residual bound, else exact elimination on blocks
of at most :data:`~qpsvm.verify.psd.EXACT_PSD_SIZE` variables); where it is not, the lower bound
is not claimed.

The multipliers are the certificate's own, not a solver's: a bounded least-squares fit of the
stationarity equations on the constraints (nearly) active at ``x``, for a few activity
thresholds, the best bound kept; multipliers on one-sided coordinates whose residual has the
wrong sign by rounding are then decreased on the rows that push it. Every sum and product is
enclosed as in :mod:`qpsvm.verify.rigorous` (Dot2 with its proven error, directed rounding).

This module sees only arrays; :func:`qpsvm.certify_problem` extracts them from a CVXPY problem.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp

from qpsvm._lazy import lazy_module
from qpsvm._numerics import two_product
from qpsvm.verify.certificate import DEFAULT_TOL, GOOD_ENOUGH, Certificate, relative
from qpsvm.verify.psd import psd_reason
from qpsvm.verify.rigorous import TINY, U, down, enclosed_product, gamma, up, upper_sum

optimize = lazy_module("scipy.optimize")

__all__ = ["QPCertificate", "certify_qp"]

#: Activity thresholds (relative to ``1 + |h_r|``) tried when fitting the multipliers.
_THRESHOLDS = (1e-9, 1e-7, 1e-5, 1e-3)
#: Quantiles of the multipliers on a flat coordinate's rows tried for the one that balances it
#: exactly (:func:`_balance_flat`): a middle one has room both ways.
_PICKS = (0.5, 0.75, 0.25)
#: Rounds of the primal and dual repairs.
_ROUNDS = 3
#: Violations (relative to ``1 + |h_r|``) the push inside repairs: a solver's inaccuracy (SCS
#: at its defaults misses rows by up to ~4e-5, measured), not a candidate that is infeasible.
_NEAR = 1e-3
#: Largest number of rows the dense repair step (:func:`_push_inside`) takes on.
_DENSE_ROWS = 3000
#: Slack, relative to ``1 + |h|``, below which :func:`_push_inside` counts a row as near (so
#: rows a solver left at its bound, within the solver's own accuracy, are moved inside too).
_NEAR_ROW = 1e-9
#: Largest number of nonzeros of ``A`` whose residual is checked exactly (in rationals).
_EXACT_NNZ = 200_000


@dataclass
class QPCertificate(Certificate):
    """A :class:`~qpsvm.verify.Certificate` of a QP that says which of its two claims is proven.

    ``lower <= p* <= upper`` encloses the optimal value of the problem (for a maximisation,
    ``lower`` comes from the candidate and ``upper`` from the multipliers). ``rigorous`` is
    ``lower_rigorous and upper_rigorous``; ``notes`` says why a claim is not proven.

    Attributes
    ----------
    lower_rigorous, upper_rigorous : bool
        Whether ``dual_objective <= p*``, respectively ``p* <= primal_objective``, holds in exact
        arithmetic for the QP the float64 data state.
    notes : tuple of str
        One sentence per claim that is not proven, and why.
    x : ndarray
        The point whose objective is the candidate's end of the enclosure (the candidate clipped
        into the box and repaired).
    inequality_multipliers, equality_multipliers : ndarray
        ``z >= 0`` for ``G x <= h`` and ``y`` for ``A x = b``.
    """

    lower_rigorous: bool = False
    upper_rigorous: bool = False
    notes: tuple[str, ...] = ()
    x: np.ndarray | None = field(default=None, repr=False)
    inequality_multipliers: np.ndarray | None = field(default=None, repr=False)
    equality_multipliers: np.ndarray | None = field(default=None, repr=False)

    def _rows(self) -> list[tuple[str, str]]:
        rows = super()._rows()
        rows.insert(1, ("rigorous (lower, upper)", f"{self.lower_rigorous}, {self.upper_rigorous}"))
        return rows + [("note", note) for note in self.notes]


# ----------------------------------------------------------------------------- enclosures
def _mid_rad(enc: tuple) -> tuple[np.ndarray, np.ndarray]:
    """``(hi, lo, err)`` as a midpoint and a radius: ``|exact - mid| <= rad``."""
    hi, lo, err = enc
    mid = hi + lo
    return mid, up((err + U * np.abs(mid)) * (1.0 + 4.0 * U))


def _dot(a: np.ndarray, enc: tuple) -> tuple[float, float]:
    """``a . v`` for an enclosed vector ``v`` as a float and a bound on its error."""
    mid, rad = _mid_rad(enc)
    hi, lo, err = enclosed_product(mid[:, None], a)
    value = float(hi[0] + lo[0])
    spread = upper_sum(up(np.abs(a) * rad)) if a.size else 0.0
    return value, float(up((float(err[0]) + U * abs(value) + spread) * (1.0 + 4.0 * U)))


def _add(*terms: tuple[float, float]) -> tuple[float, float]:
    """The sum of enclosed scalars ``(value, error)``."""
    value = math.fsum(t[0] for t in terms)
    err = upper_sum(np.array([t[1] for t in terms] + [U * abs(value)]))
    return value, err


def _lower(t: tuple[float, float]) -> float:
    return float(down(t[0] - t[1]))


def _upper(t: tuple[float, float]) -> float:
    return float(up(t[0] + t[1]))


# ----------------------------------------------------------------------------- the problem
@dataclass
class _QP:
    """The QP's arrays, with the structure the certificate needs precomputed."""

    P: sp.csr_matrix
    q: np.ndarray
    G: sp.csr_matrix | None
    h: np.ndarray
    A: sp.csr_matrix | None
    b: np.ndarray
    lb: np.ndarray
    ub: np.ndarray

    @classmethod
    def of(cls, form: Any) -> _QP:
        n = int(np.asarray(form.q).size)

        def mat(M: Any) -> sp.csr_matrix | None:
            return None if M is None or M.shape[0] == 0 else sp.csr_matrix(M, dtype=np.float64)

        G, A = mat(form.G), mat(form.A)
        return cls(
            P=sp.csr_matrix(form.P, dtype=np.float64),
            q=np.asarray(form.q, dtype=np.float64),
            G=G,
            h=np.zeros(0) if G is None else np.asarray(form.h, dtype=np.float64),
            A=A,
            b=np.zeros(0) if A is None else np.asarray(form.b, dtype=np.float64),
            lb=np.full(n, -np.inf) if form.lb is None else np.asarray(form.lb, dtype=np.float64),
            ub=np.full(n, np.inf) if form.ub is None else np.asarray(form.ub, dtype=np.float64),
        )

    @property
    def n(self) -> int:
        return self.q.size

    def objective(self, x: np.ndarray) -> tuple[float, float]:
        """``f(x)`` enclosed, and ``P x`` enclosed."""
        Px = enclosed_product(self.P.T, x)
        quad = _dot(x, Px)
        lin = _dot(x, (self.q, np.zeros(self.n), np.zeros(self.n)))
        return _add((0.5 * quad[0], 0.5 * quad[1] + TINY), lin), Px

    def inequality_residual(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``G x - h`` as midpoint and radius."""
        if self.G is None:
            return np.zeros(0), np.zeros(0)
        zero = np.zeros(self.h.size)
        return _mid_rad(enclosed_product(self.G.T, x, (-self.h, zero, zero)))

    def equality_residual(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``A x - b`` as midpoint and radius."""
        if self.A is None:
            return np.zeros(0), np.zeros(0)
        zero = np.zeros(self.b.size)
        return _mid_rad(enclosed_product(self.A.T, x, (-self.b, zero, zero)))

    def equalities_exact(self, x: np.ndarray, rows: np.ndarray | None = None) -> bool:
        """Whether ``A x = b`` holds exactly on ``rows`` (a mask; all rows by default): every
        product split without error, summed in rationals."""
        if self.A is None:
            return True
        A = self.A if rows is None else sp.csr_matrix(self.A.multiply(rows[:, None]))
        if A.nnz > _EXACT_NNZ:
            return False
        A = sp.coo_matrix(A)
        p, e = two_product(A.data, x[A.col])
        if not (np.all(np.isfinite(e)) and np.all((p == 0.0) | (np.abs(p) > 2.0**-960))):
            return False  # a product's error is unknown or may have underflowed
        total = [
            Fraction(0) if rows is not None and not rows[r] else -Fraction(float(v))
            for r, v in enumerate(self.b)
        ]
        for r, pv, ev in zip(A.row.tolist(), p.tolist(), e.tolist(), strict=True):
            total[r] += Fraction(pv) + Fraction(ev)
        return all(t == 0 for t in total)

    def convexity(self) -> str | None:
        """``None`` when ``P`` is proven positive semidefinite
        (:func:`~qpsvm.verify.psd.psd_reason`), else why not."""
        if (self.P != self.P.T).nnz:
            return "P is not symmetric"
        return psd_reason(self.P)

    def curvature(self) -> np.ndarray:
        """``P_ii`` where row ``i`` of ``P`` has no other entry, else 0."""
        out = np.zeros(self.n)
        counts = np.diff(self.P.indptr)
        diag = self.P.diagonal()
        single = (counts == 1) & (diag > 0)
        out[single] = diag[single]
        return out


# ----------------------------------------------------------------------------- the candidate
def _repair_primal(
    qp: _QP, x: np.ndarray, allowed: np.ndarray | None = None, radius: np.ndarray | None = None
) -> np.ndarray:
    """``x`` with inequality rows it cannot be proven to satisfy fixed, where a column (among
    ``allowed``, default all) only helps them: raised (all its ``G`` entries ``<= 0``, no ``A``
    entry, no upper bound) or lowered (the mirror case) by the row's violation over its
    coefficient, rounded up. The rows are checked for every point within ``radius`` of ``x``
    (:func:`_row_residual`)."""
    if qp.G is None:
        return x
    Gc = sp.csc_matrix(qp.G)
    in_eq = np.zeros(qp.n, dtype=bool) if qp.A is None else np.diff(sp.csc_matrix(qp.A).indptr) > 0
    col_min = np.asarray(Gc.min(axis=0).toarray()).ravel()
    col_max = np.asarray(Gc.max(axis=0).toarray()).ravel()
    allowed = np.ones(qp.n, dtype=bool) if allowed is None else allowed
    raise_ok = (col_max <= 0) & (col_min < 0) & ~in_eq & ~np.isfinite(qp.ub) & allowed
    lower_ok = (col_min >= 0) & (col_max > 0) & ~in_eq & ~np.isfinite(qp.lb) & allowed
    x = x.copy()
    for _ in range(_ROUNDS):
        mid, rad = _row_residual(qp, x, radius)
        violation = up(mid + rad)
        bad = np.flatnonzero(violation > 0)
        if bad.size == 0:
            break
        step = np.zeros(qp.n)
        R = sp.csr_matrix(qp.G)
        for r in bad:
            cols = R.indices[R.indptr[r] : R.indptr[r + 1]]
            vals = R.data[R.indptr[r] : R.indptr[r + 1]]
            ok = np.where(vals < 0, raise_ok[cols], lower_ok[cols]) & (vals != 0)
            if not ok.any():
                continue
            k = int(np.argmax(np.where(ok, np.abs(vals), -1.0)))
            amount = float(up(up(violation[r] / abs(vals[k])) * (1.0 + 8.0 * U) + TINY))
            j = cols[k]
            step[j] = max(step[j], amount) if vals[k] < 0 else min(step[j], -amount)
        if not step.any():
            break
        x = np.where(step > 0, up(x + step), np.where(step < 0, down(x + step), x))
    return x


def _row_residual(
    qp: _QP, x: np.ndarray, radius: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """``G x - h`` as midpoint and radius, for every point within ``radius`` of ``x``."""
    mid, rad = qp.inequality_residual(x)
    if radius is not None and radius.any() and qp.G is not None:
        rad = up(rad + up(abs(qp.G) @ radius * (1.0 + 2.0 * gamma(qp.n))))
    return mid, rad


def _push_inside(qp: _QP, x: np.ndarray) -> np.ndarray:
    r"""``x`` moved by the least-norm step ``d = G_S^T \lambda`` that puts the rows ``S`` it is
    near or beyond (slack below :data:`_NEAR_ROW` ``(1 + |h|)``) a few rounding errors inside,
    ``G_S d = -(violation + margin)``, over the coordinates off their bounds (so the box holds):
    the generic repair of a solver's point that misses rows by rounding or inaccuracy (at most
    :data:`_NEAR`), when no column only helps them. Tried for a few rounds; the caller
    checks the result."""
    if qp.G is None:
        return x
    for _ in range(_ROUNDS):
        mid, rad = qp.inequality_residual(x)
        if np.all(up(mid + rad) <= 0.0) or np.any(mid > _NEAR * (1.0 + np.abs(qp.h))):
            break  # feasible, or infeasible beyond a solver's inaccuracy: not this repair's job
        near = np.flatnonzero(mid + rad > -_NEAR_ROW * (1.0 + np.abs(qp.h)))
        free = np.flatnonzero((x > qp.lb) & (x < qp.ub))
        if free.size == 0 or near.size > _DENSE_ROWS:
            break
        GS = sp.csr_matrix(qp.G)[near][:, free].toarray()
        target = -(
            np.maximum(mid[near], 0.0) + 4.0 * rad[near] + 8.0 * U * (1.0 + np.abs(qp.h[near]))
        )
        lam = np.linalg.lstsq(GS @ GS.T, target, rcond=None)[0]
        step = GS.T @ lam
        x = x.copy()
        x[free] = np.clip(x[free] + step, qp.lb[free], qp.ub[free])
    return x


def _complete(qp: _QP, x: np.ndarray, known: np.ndarray) -> np.ndarray:
    """The entries of ``x`` not ``known`` (auxiliary variables of a canonicalisation) filled in:
    those in equality rows by least squares on those rows (``t = B x`` exactly solvable), the
    rest at 0, to be raised by :func:`_repair_primal` where inequalities need it (epigraphs)."""
    x = np.where(known, x, 0.0)
    unknown = np.flatnonzero(~known)
    if unknown.size == 0 or qp.A is None:
        return x
    A_unknown = sp.csc_matrix(qp.A)[:, unknown]
    rows = np.flatnonzero(np.diff(sp.csr_matrix(A_unknown).indptr) > 0)
    if rows.size == 0:
        return x
    cols = np.flatnonzero(np.diff(A_unknown.indptr) > 0)
    rhs = qp.b[rows] - sp.csr_matrix(qp.A)[rows] @ x
    B = A_unknown[rows][:, cols]
    from scipy.sparse.linalg import lsqr, spsolve  # on first use: 0.04-0.07 s of the import

    if B.shape[0] == B.shape[1]:
        try:
            t = spsolve(sp.csc_matrix(B), rhs)
        except RuntimeError:
            t = lsqr(B, rhs, atol=1e-15, btol=1e-15)[0]
    else:
        t = lsqr(B, rhs, atol=1e-15, btol=1e-15)[0]
    x[unknown[cols]] = np.where(np.isfinite(t), t, 0.0)
    return x


@dataclass
class _Defined:
    """A candidate whose auxiliary variables are the exact values their equality rows define:
    the point ``x + delta`` (``|delta| <= radius``, nonzero on the auxiliaries only) satisfies
    the ``rows`` exactly."""

    x: np.ndarray
    radius: np.ndarray
    rows: np.ndarray


def _defining_rows(qp: _QP) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The equality rows that define a variable: a mask of rows, and per row the column it
    defines (in no other equality row) and its coefficient (a power of two)."""
    m = 0 if qp.A is None else qp.A.shape[0]
    rows = np.zeros(m, dtype=bool)
    cols, coefs = np.zeros(m, dtype=np.intp), np.zeros(m)
    if qp.A is None:
        return rows, cols, coefs
    A = sp.csr_matrix(qp.A)
    once = np.diff(sp.csc_matrix(A).indptr) == 1
    for r in range(m):
        idx, vals = A.indices[A.indptr[r] : A.indptr[r + 1]], A.data[A.indptr[r] : A.indptr[r + 1]]
        ok = np.flatnonzero(once[idx] & (np.frexp(np.abs(vals))[0] == 0.5))
        if ok.size:
            rows[r], cols[r], coefs[r] = True, idx[ok[0]], vals[ok[0]]
    return rows, cols, coefs


def _define_auxiliaries(qp: _QP, x: np.ndarray) -> _Defined | None:
    r"""The auxiliary variables of ``x`` set from their equality rows (a canonicalisation's
    ``t = B u``): a row ``a t + B_r u = b_r`` whose column ``t`` is in no other equality row and
    whose ``a`` is a power of two defines :math:`t^* = (b_r - B_r u) / a` exactly for the
    candidate's ``u``; ``t`` is set to its enclosure's midpoint and the radius kept, so that
    the point proven feasible is ``(u, t*)``. ``None`` when no row defines a variable."""
    rows, cols, coefs = _defining_rows(qp)
    if not rows.any():
        return None
    A = sp.csr_matrix(qp.A)
    x = _balance_rows(qp, x, ~rows)
    aux, a = cols[rows], coefs[rows]
    x = x.copy()
    x[aux] = 0.0
    zero = np.zeros(qp.b.size)
    mid, rad = _mid_rad(enclosed_product(A.T, x, (-qp.b, zero, zero)))
    x[aux] = -mid[rows] / a
    radius = np.zeros(qp.n)
    radius[aux] = up(rad[rows] / np.abs(a) + TINY)
    return _Defined(x, radius, rows)


def _sum_grid(top: float, terms: int) -> float | None:
    """A power of two ``g`` such that a sum of ``terms`` multiples of ``g``, each at most
    ``top`` in magnitude, is exact in float64; ``None`` when ``g`` would be subnormal (values
    near underflow)."""
    grid = math.ldexp(1.0, math.frexp(top)[1] - 53 + math.ceil(math.log2(terms + 2)) + 2)
    return None if grid < 2.0**-1000 else grid


def _balance_rows(qp: _QP, x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    r"""``x`` with each of the equality ``rows`` whose coefficients are powers of two (an SVM's
    balance :math:`\sum_i y_i \alpha_i = 0`) made to hold exactly: its entries rounded towards
    zero to a grid :math:`2^e` on which the row's sum is exact, then the entry farthest inside
    its box set to the exact balance (if that is a float inside the box). Rows it cannot
    balance are left as they are (the caller checks them in rationals)."""
    A = sp.csr_matrix(qp.A)
    x = x.copy()
    for r in np.flatnonzero(rows):
        idx, vals = A.indices[A.indptr[r] : A.indptr[r + 1]], A.data[A.indptr[r] : A.indptr[r + 1]]
        if idx.size < 2 or np.any(np.frexp(np.abs(vals))[0] != 0.5):
            continue
        top = float(np.max(np.abs(vals * x[idx]), initial=abs(float(qp.b[r]))))
        if top == 0.0:
            continue
        grid = _sum_grid(top, idx.size)
        if grid is None:
            continue
        xr = np.trunc(x[idx] / grid) * grid
        room = np.minimum(xr - qp.lb[idx], qp.ub[idx] - xr)
        k = int(np.argmax(room))
        rest = Fraction(float(qp.b[r])) - sum(
            Fraction(float(v)) * Fraction(float(t))
            for j, (v, t) in enumerate(zip(vals, xr, strict=True))
            if j != k
        )
        target = rest / Fraction(float(vals[k]))
        if Fraction(float(target)) == target and qp.lb[idx[k]] <= float(target) <= qp.ub[idx[k]]:
            xr[k] = float(target)
            x[idx] = xr
    return x


def _perturbed(qp: _QP, x: np.ndarray, radius: np.ndarray, Px: tuple) -> float:
    r"""An upper bound on :math:`f(x + \delta) - f(x)` over :math:`|\delta| \le r`:
    :math:`|P x + q|^T r + 	frac12 r^T |P| r`."""
    hi, lo, err = Px
    grad = up(up(up(np.abs(hi) + np.abs(lo)) + np.abs(qp.q)) + err)
    linear = upper_sum(up(grad * radius))
    Pr = abs(qp.P) @ radius
    quad = upper_sum(up(radius * up(Pr * (1.0 + 2.0 * gamma(qp.n)))))
    return float(up(linear + 0.5 * quad))


def _violation(qp: _QP, x: np.ndarray) -> float:
    """An upper bound on the largest violation of a constraint (a bound, a row of ``G x <= h``
    or of ``A x = b``) by ``x``."""
    g_mid, g_rad = qp.inequality_residual(x)
    r_mid, r_rad = qp.equality_residual(x)
    box = np.maximum(up(qp.lb - x), up(x - qp.ub))
    return max(
        float(np.max(box, initial=0.0)),
        float(np.max(up(g_mid + g_rad), initial=0.0)),
        float(np.max(up(np.abs(r_mid) + r_rad), initial=0.0)),
        0.0,
    )


def _fit_multipliers(
    qp: _QP, x: np.ndarray, gradient: np.ndarray, threshold: float
) -> tuple[np.ndarray, np.ndarray]:
    """``z >= 0`` on the rows active at ``threshold`` and ``y``: a bounded least-squares fit of
    ``gradient + G^T z + A^T y - mu_lb + mu_ub = 0`` with ``mu >= 0`` on the active bounds."""
    blocks, lower, sizes = [], [], []
    active: np.ndarray = np.zeros(0, dtype=np.intp)
    if qp.G is not None:
        mid, _ = qp.inequality_residual(x)
        active = np.flatnonzero(-mid <= threshold * (1.0 + np.abs(qp.h)))
        blocks.append(qp.G[active].T)
        lower.append(np.zeros(active.size))
    if qp.A is not None:
        blocks.append(qp.A.T)
        lower.append(np.full(qp.b.size, -np.inf))
    with np.errstate(invalid="ignore"):
        at_lb = np.flatnonzero(np.isfinite(qp.lb) & (x - qp.lb <= threshold * (1.0 + abs(qp.lb))))
        at_ub = np.flatnonzero(np.isfinite(qp.ub) & (qp.ub - x <= threshold * (1.0 + abs(qp.ub))))
    eye = sp.identity(qp.n, format="csc")
    blocks += [-eye[:, at_lb], eye[:, at_ub]]
    lower += [np.zeros(at_lb.size), np.zeros(at_ub.size)]
    sizes = [b.shape[1] for b in blocks]
    M = sp.hstack(blocks, format="csc")
    z = np.zeros(qp.h.size)
    y = np.zeros(qp.b.size)
    if M.shape[1] == 0:
        return z, y
    lo = np.concatenate(lower)
    bounds = (lo, np.full(lo.size, np.inf))
    if M.shape[1] <= 2000 and qp.n <= 4000:
        fit = optimize.lsq_linear(M.toarray(), -gradient, bounds=bounds, method="bvls", tol=1e-15)
    else:
        fit = optimize.lsq_linear(M, -gradient, bounds=bounds, lsq_solver="lsmr", tol=1e-15)
    sol = np.asarray(fit.x)
    pos = 0
    if qp.G is not None:
        z[active] = np.maximum(sol[: sizes[0]], 0.0)
        pos = sizes[0]
    if qp.A is not None:
        y = sol[pos : pos + qp.b.size].copy()
    return z, y


def _residual(qp: _QP, Px: tuple, z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``rho = P x + q + G^T z + A^T y`` enclosed: lower and upper ends."""
    hi, lo, err = Px
    enc = (hi, lo + qp.q, up(err + U * np.abs(lo + qp.q) * 2.0))
    enc = enclosed_product(qp.G, z, enc) if qp.G is not None else enc
    enc = enclosed_product(qp.A, y, enc) if qp.A is not None else enc
    mid, rad = _mid_rad(enc)
    return down(mid - rad), up(mid + rad)


def _repair_dual(qp: _QP, Px: tuple, z: np.ndarray, y: np.ndarray, curv: np.ndarray) -> np.ndarray:
    """``z`` decreased on the rows that push a one-sided coordinate without curvature the wrong
    way (``rho_i < 0`` with only a lower bound, ``> 0`` with only an upper bound), by the
    residual over the coefficient, rounded up."""
    if qp.G is None:
        return z
    Gc = sp.csc_matrix(qp.G)
    z = z.copy()
    for _ in range(_ROUNDS):
        rlo, rhi = _residual(qp, Px, z, y)
        low_only = np.isfinite(qp.lb) & ~np.isfinite(qp.ub) & (curv == 0) & (rlo < 0)
        high_only = ~np.isfinite(qp.lb) & np.isfinite(qp.ub) & (curv == 0) & (rhi > 0)
        cols = np.flatnonzero(low_only | high_only)
        if cols.size == 0:
            break
        for j in cols:
            rows = Gc.indices[Gc.indptr[j] : Gc.indptr[j + 1]]
            vals = Gc.data[Gc.indptr[j] : Gc.indptr[j + 1]]
            push = (vals < 0) if low_only[j] else (vals > 0)
            push &= z[rows] > 0
            if not push.any():
                continue
            k = int(np.argmax(np.where(push, z[rows], -1.0)))
            need = -rlo[j] if low_only[j] else rhi[j]
            amount = float(up(up(need / abs(vals[k])) * (1.0 + 8.0 * U) + TINY))
            z[rows[k]] = max(0.0, float(down(z[rows[k]] - amount)))
    return z


def _names(mask: np.ndarray, labels: list[str] | None) -> str:
    """The coordinates of ``mask`` by name (the first few)."""
    index = np.flatnonzero(mask)
    names = [labels[i] if labels else f"x[{i}]" for i in index[:3]]
    more = f" and {index.size - 3} more" if index.size > 3 else ""
    return ", ".join(names) + more


def _flat_columns(qp: _QP) -> np.ndarray:
    """Free coordinates without curvature and in no equality row (an SVM's intercept): their
    residual of stationarity is ``q_j + sum_r G_rj z_r``, which nothing else absorbs."""
    in_eq = np.zeros(qp.n, dtype=bool) if qp.A is None else np.diff(sp.csc_matrix(qp.A).indptr) > 0
    empty = np.diff(sp.csc_matrix(qp.P).indptr) == 0
    return np.flatnonzero(~np.isfinite(qp.lb) & ~np.isfinite(qp.ub) & empty & ~in_eq)


def _exact_residual(qp: _QP, Gc: sp.csc_matrix, j: int, z: np.ndarray) -> Fraction:
    """``q_j + sum_r G_rj z_r`` in rationals."""
    rows = Gc.indices[Gc.indptr[j] : Gc.indptr[j + 1]]
    vals = Gc.data[Gc.indptr[j] : Gc.indptr[j + 1]]
    total = Fraction(float(qp.q[j]))
    for r, v in zip(rows.tolist(), vals.tolist(), strict=True):
        total += Fraction(v) * Fraction(float(z[r]))
    return total


def _exactly_stationary(qp: _QP, z: np.ndarray, y: np.ndarray, which: np.ndarray) -> np.ndarray:
    """Which of the columns ``which`` (a mask; columns of ``P`` that are empty) have
    ``q_j + sum_r G_rj z_r + sum_r A_rj y_r = 0`` exactly, in rationals."""
    out = np.zeros(qp.n, dtype=bool)
    Gc = sp.csc_matrix(qp.G) if qp.G is not None else sp.csc_matrix((0, qp.n))
    Ac = sp.csc_matrix(qp.A) if qp.A is not None else sp.csc_matrix((0, qp.n))
    for j in np.flatnonzero(which):
        total = _exact_residual(qp, Gc, j, z)
        for r, v in zip(
            Ac.indices[Ac.indptr[j] : Ac.indptr[j + 1]].tolist(),
            Ac.data[Ac.indptr[j] : Ac.indptr[j + 1]].tolist(),
            strict=True,
        ):
            total += Fraction(v) * Fraction(float(y[r]))
        out[j] = total == 0
    return out


def _balance_flat(qp: _QP, z: np.ndarray, flat: np.ndarray, pick: float) -> tuple:
    r"""``z`` with the residual of each flat coordinate made exactly zero where its rows'
    coefficients are powers of two: the multipliers on its rows rounded down to a grid
    :math:`2^e` on which their sum is exact, then the one at quantile ``pick`` of them set to
    the exact balance (if that is a nonnegative float). Returns ``z`` and the flat coordinates
    whose residual is proven zero (in rationals)."""
    balanced = np.zeros(qp.n, dtype=bool)
    if qp.G is None:
        balanced[flat] = qp.q[flat] == 0.0
        return z, balanced
    Gc = sp.csc_matrix(qp.G)
    z = z.copy()
    used = np.zeros(qp.h.size, dtype=bool)
    for j in flat:
        rows = Gc.indices[Gc.indptr[j] : Gc.indptr[j + 1]]
        vals = Gc.data[Gc.indptr[j] : Gc.indptr[j + 1]]
        mant = np.frexp(np.abs(vals))[0]
        if rows.size == 0 or np.any(mant != 0.5) or used[rows].any() or not np.any(z[rows] > 0):
            balanced[j] = _exact_residual(qp, Gc, j, z) == 0
            continue
        used[rows] = True
        grid = _sum_grid(float(np.max(z[rows] * np.abs(vals))), rows.size)
        if grid is None:  # multipliers near underflow: the grid would be subnormal
            balanced[j] = _exact_residual(qp, Gc, j, z) == 0
            continue
        zr = np.floor(z[rows] / grid) * grid
        positive = np.flatnonzero(zr > 0)
        if positive.size == 0:
            continue
        order = positive[np.argsort(zr[positive])]
        k = int(order[min(order.size - 1, int(pick * order.size))])
        zr[k] = 0.0
        z[rows] = zr
        rest = _exact_residual(qp, Gc, j, z)
        target = -rest / Fraction(float(vals[k]))
        if target >= 0 and Fraction(float(target)) == target:
            z[rows[k]] = float(target)
        balanced[j] = _exact_residual(qp, Gc, j, z) == 0
    return z, balanced


def _balance_defined(qp: _QP, z: np.ndarray, y: np.ndarray) -> tuple:
    r"""``(z, y)`` with the residual of each defined variable that is free and without curvature
    (a ranking SVM's scores ``s = X w``) made exactly zero: the multipliers of its inequality
    rows rounded down to one grid :math:`2^e` on which every such sum is exact, then its
    defining row's multiplier set to :math:`-(q_j + \sum_r G_{rj} z_r) / a` (exact, ``a`` a
    power of two, if that is a float). Returns ``z``, ``y`` and the variables whose residual is
    proven zero."""
    balanced = np.zeros(qp.n, dtype=bool)
    rows, cols, coefs = _defining_rows(qp)
    empty = np.diff(sp.csc_matrix(qp.P).indptr) == 0
    free = ~np.isfinite(qp.lb) & ~np.isfinite(qp.ub) & empty
    which = np.flatnonzero(rows)
    which = which[free[cols[which]]]
    if which.size == 0 or qp.G is None:
        return z, y, balanced
    Gc = sp.csc_matrix(qp.G)
    touched = np.unique(
        np.concatenate([Gc.indices[Gc.indptr[j] : Gc.indptr[j + 1]] for j in cols[which]])
    )
    z, y = z.copy(), y.copy()
    if touched.size:
        top = float(np.max(np.abs(qp.G[touched]).max(axis=1).toarray().ravel() * z[touched]))
        top = max(top, float(np.max(np.abs(qp.q[cols[which]]))))
        count = int(np.max(np.diff(Gc.indptr)[cols[which]]))
        if top > 0.0:
            grid = _sum_grid(top, count)
            if grid is None:
                return z, y, balanced
            z[touched] = np.floor(z[touched] / grid) * grid
    for r in which:
        target = -_exact_residual(qp, Gc, cols[r], z) / Fraction(float(coefs[r]))
        if Fraction(float(target)) == target:
            y[r] = float(target)
            balanced[cols[r]] = True
    return z, y, _exactly_stationary(qp, z, y, balanced)


@dataclass
class _Lower:
    value: float
    rigorous: bool
    note: str | None
    stationarity: float
    z: np.ndarray
    y: np.ndarray


def _lower_bound(
    qp: _QP,
    x: np.ndarray,
    Px: tuple,
    fx: tuple[float, float],
    upper: float | None,
    z: np.ndarray,
    y: np.ndarray,
    curv: np.ndarray,
    labels: list[str] | None,
    balanced: np.ndarray,
    radius: np.ndarray,
) -> _Lower:
    """The Lagrangian bound at ``(x, z, y)`` (module docstring); ``upper`` is a proven upper
    bound on ``p*`` or ``None``, attained at a feasible point within ``radius`` of ``x``
    (entrywise); the residual of the ``balanced`` coordinates is proven zero."""
    rlo, rhi = _residual(qp, Px, z, y)
    rlo, rhi = np.where(balanced, 0.0, rlo), np.where(balanced, 0.0, rhi)
    dlo, dhi = down(qp.lb - x), up(qp.ub - x)
    covered = (np.isfinite(dlo) | (rhi <= 0)) & (np.isfinite(dhi) | (rlo >= 0))
    with np.errstate(invalid="ignore"):
        corners = np.stack([rlo * dlo, rlo * dhi, rhi * dlo, rhi * dhi])
    corners = np.where(np.isfinite(corners), down(corners), 0.0)
    terms = np.minimum(corners.min(axis=0), 0.0)
    terms[~covered] = 0.0
    g = qp.inequality_residual(x)
    r = qp.equality_residual(x)
    lagrangian = _add(
        fx, _dot(z, (g[0], np.zeros_like(g[0]), g[1])), _dot(y, (r[0], 0 * r[0], r[1]))
    )
    low = float(down(_lower(lagrangian) - upper_sum(-terms)))
    free = ~covered
    spread = np.maximum(np.abs(rlo), np.abs(rhi))
    stationarity = float(np.max(spread[free], initial=0.0))
    if not free.any():
        return _Lower(low, True, None, 0.0, z, y)
    flat = free & (curv <= 0)
    if flat.any():
        note = (
            f"lower bound not proven: {_names(flat, labels)} unbounded on the side its "
            f"stationarity residual (up to {stationarity:.1e}) pushes, without curvature; "
            "a bound on the variable that the optimum does not reach would make it rigorous"
        )
        return _Lower(low, False, note, stationarity, z, y)
    if upper is None:
        note = (
            f"lower bound not proven: the residual of {_names(free, labels)} is covered by "
            "curvature only from a candidate proven feasible"
        )
        return _Lower(low, False, note, stationarity, z, y)
    # d = (x_opt - x_feasible) + (x_feasible - x): the second part costs |rho| radius
    low = float(down(low - upper_sum(up(spread[free] * radius[free]))))
    a2 = upper_sum(up(up(spread[free] ** 2) / curv[free]))
    c = max(0.0, float(up(upper - low)))
    root = math.sqrt(float(up(2.0 * a2 + 4.0 * c)))
    s = float(up((float(up(math.sqrt(2.0 * a2))) * (1.0 + 4.0 * U) + root) * (0.5 + 4.0 * U)))
    s = float(up(s * (1.0 + 4.0 * U)))
    return _Lower(float(down(upper - float(up(s * s)))), True, None, stationarity, z, y)


def certify_qp(
    form: Any,
    x: np.ndarray,
    tol: float = DEFAULT_TOL,
    name: str = "QP",
    known: np.ndarray | None = None,
    labels: list[str] | None = None,
) -> QPCertificate:
    r"""Certify a candidate ``x`` of the QP ``form`` (anything with ``P, q, G, h, A, b, lb, ub``,
    ``offset`` and ``sign``, e.g. :class:`qpsvm.standard_form.StandardForm`).

    The enclosure is of the problem's value ``sign * (p* + offset)`` (module docstring for
    ``p*``): for ``sign = +1``, ``upper`` is the candidate's objective and ``lower`` the
    multipliers' Lagrangian bound; for a maximisation (``sign = -1``) the two swap.

    Parameters
    ----------
    form : StandardForm or alike
    x : ndarray of shape (n,)
        The candidate (entries that are not finite are refused).
    tol : float
        Relative tolerance of ``passed``.
    name : str
        Shown as the certificate's ``formulation``.
    known : ndarray of bool, optional
        Which entries of ``x`` are given; the others (auxiliary variables) are completed from
        the equality rows and raised where inequalities need it.
    labels : list of str, optional
        A name per entry of ``x``, for the notes.

    Returns
    -------
    QPCertificate
    """
    qp = _QP.of(form)
    x = np.asarray(x, dtype=np.float64).ravel()
    if x.size != qp.n or not np.all(np.isfinite(x) | (known is not None and ~np.asarray(known))):
        raise ValueError(f"the candidate must be {qp.n} finite numbers.")
    notes: list[str] = []
    if known is not None:
        known = np.asarray(known, dtype=bool)
        x = _repair_primal(qp, _complete(qp, x, known), allowed=~known)
    # the candidate's own infeasibility (its auxiliary entries completed); the point certified
    # is then clipped into the box and repaired where rounding left a row unproven
    violation = _violation(qp, x)
    x = _repair_primal(qp, np.clip(x, qp.lb, qp.ub))
    if np.any(up(np.add(*qp.inequality_residual(x))) > 0.0):
        pushed = _push_inside(qp, x)
        x = pushed if _violation(qp, pushed) <= _violation(qp, x) else x
    # equality rows that define an auxiliary variable hold exactly at x + delta, |delta| <= radius
    radius, defining = np.zeros(qp.n), np.zeros(qp.b.size, dtype=bool)
    if not qp.equalities_exact(x):
        defined = _define_auxiliaries(qp, x)
        if defined is not None and qp.equalities_exact(defined.x, ~defined.rows):
            x, radius, defining = defined.x, defined.radius, defined.rows
            x = _repair_primal(qp, x, radius=radius)
    fx, Px = qp.objective(x)
    g_mid, g_rad = _row_residual(qp, x, radius)
    moved = radius > 0
    in_box = np.all(down(x - radius)[moved] >= qp.lb[moved]) and np.all(
        up(x + radius)[moved] <= qp.ub[moved]
    )
    proven_ineq = bool(np.all(up(g_mid + g_rad) <= 0.0) and in_box)
    proven_eq = qp.equalities_exact(x, ~defining) if proven_ineq else False
    feasible = proven_ineq and proven_eq
    if radius.any():
        fx = (fx[0], float(up(fx[1] + _perturbed(qp, x, radius, Px))))
    if not proven_ineq:
        repaired = float(np.max(up(g_mid + g_rad), initial=0.0))
        notes.append(f"candidate bound not proven: an inequality may be violated by {repaired:.1e}")
    elif not proven_eq:
        notes.append(
            f"candidate bound not proven: equality rows hold to {_violation(qp, x):.1e}, "
            "not exactly"
        )
    upper = _upper(fx) if feasible else None
    convex = qp.convexity()
    curv = qp.curvature()
    gradient = np.asarray(Px[0] + Px[1]) + qp.q
    best: _Lower | None = None
    flat = _flat_columns(qp)
    for threshold in _THRESHOLDS:
        z, y = _fit_multipliers(qp, x, gradient, threshold)
        z = _repair_dual(qp, Px, z, y, curv)
        z, yb, defined = _balance_defined(qp, z, y)
        for pick in _PICKS if flat.size else (0.0,):
            zb, balanced = _balance_flat(qp, z, flat, pick)
            if np.any(zb != z):  # the intercept's balance moved multipliers: check again
                defined = _exactly_stationary(qp, zb, yb, defined)
            balanced |= defined
            cand = _lower_bound(qp, x, Px, fx, upper, zb, yb, curv, labels, balanced, radius)
            if best is None or (cand.rigorous, cand.value) > (best.rigorous, best.value):
                best = cand
            if best.rigorous:
                break
        if relative(_upper(fx) - best.value, _upper(fx)) <= GOOD_ENOUGH * tol:
            break  # tight: a looser activity threshold cannot do better
    assert best is not None
    rigorous_lower = best.rigorous and convex is None
    if convex is not None:
        notes.append(f"multipliers' bound not proven: {convex}")
    elif best.note is not None:
        notes.append(best.note)
    complementarity = float(np.max(best.z * np.maximum(0.0, -g_mid), initial=0.0))
    lower, upper_value = best.value, _upper(fx) if feasible else float(fx[0])
    offset = float(form.offset)
    if form.sign > 0:
        lo, hi = float(down(lower + offset)), float(up(upper_value + offset))
        lo_ok, hi_ok = rigorous_lower, feasible
    else:
        lo, hi = float(down(-upper_value - offset)), float(up(-lower - offset))
        lo_ok, hi_ok = feasible, rigorous_lower
    return QPCertificate(
        primal_objective=hi,
        dual_objective=lo,
        primal_infeasibility=violation,
        dual_infeasibility=0.0,
        complementarity=complementarity,
        stationarity=best.stationarity,
        tol=tol,
        formulation=name,
        rigorous=lo_ok and hi_ok,
        strong_convexity=0.0,
        lower_rigorous=lo_ok,
        upper_rigorous=hi_ok,
        notes=tuple(notes),
        x=x,
        inequality_multipliers=best.z,
        equality_multipliers=best.y,
    )
