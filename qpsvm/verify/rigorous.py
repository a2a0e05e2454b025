r"""Rigorous enclosures of the optimum: ``lower <= P* <= upper`` under floating-point rounding.

Every float64 number of the data and of a candidate is a rational; the problem those rationals
state has an exact optimum ``P*``. Here

- ``upper`` bounds the exact primal objective ``P(w, b)`` of a candidate from above (``inf``
  when a hard constraint cannot be proven to hold): a valid upper bound on ``P*``;
- ``lower`` bounds the exact dual objective ``D(alpha)`` of an exactly feasible dual point from
  below: a valid lower bound on ``P*`` by weak duality.

How rounding is bounded. Margins ``x_i . w + b`` and expansions ``sum_i alpha_i y_i x_i`` are
computed in twice the working precision by error-free transformations
(:func:`qpsvm._numerics.tdot2`, Ogita, Rump & Oishi's Dot2), as an unevaluated sum
``hi + lo`` within :math:`4\gamma_{2N}^2 \sum |a_i b_i|` of the exact value (``N`` terms,
:math:`\gamma_N = Nu/(1-Nu)`, :math:`u = 2^{-53}`); every later operation (a few additions, the
slack ``max(0, m - margin)``, a square) adds at most ``2u`` of its result, which is added to the
bound; sums of nonnegative terms are compensated (Sum2, :func:`qpsvm._numerics.fsum`) and
scaled by :math:`1 \pm 2(u + \gamma_{N-1}^2)`, their proven relative error; and each last
operation is rounded outward by one ulp (``nextafter``). Underflow adds an absolute
:data:`TINY` per term. So ``lower`` and ``upper`` hold for the exact problem whatever the
rounding, and cost a few passes over the data.

The dual point is made exactly feasible: multipliers are clipped to ``[0, c_i]`` with ``c_i``
at most the exact ``C s_i`` (one ulp below the rounded product unless it is exact); a
Crammer-Singer row whose sum may exceed its cap is scaled down. The balance
``sum_i alpha_i y_i = 0`` of the free intercept cannot be made exact in floating point; its
residual is bounded instead: for an optimal ``b*``, the problem with ``b`` fixed at ``b*`` has
the same optimum and the dual without balance constraint, so

.. math::

    P^* \ge D(\alpha) - |b^*|\,\Big|\sum_i \alpha_i y_i\Big|,\qquad
    |b^*| \le B = \max_i m_i + \sqrt{2U}\,\max_i \|x_i\|

for any upper bound ``U`` on ``P*`` (some optimal ``b*`` makes a margin tight, and
:math:`\|w^*\|^2 \le 2P^*`) (Neumaier & Shcherbina, Math. Program. 2004, bound a residual the
same way).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache, reduce
from typing import Any, NamedTuple, Protocol

import numba
import numpy as np
import scipy.sparse as sp

from qpsvm._jit import CALLEE, ENTRY
from qpsvm._numerics import (
    _ETA,
    _PHI,
    _SUCC_SIZE,
    ABS_ENTRIES,
    ABS_ROWS,
    TINY,
    U,
    chunk_rows,
    csr_tdot2_abs,
    down,
    fsum,
    fsum_dot,
    gamma,
    next_up,
    rows_dot2,
    running_sums,
    sum_error,
    sum_upper,
    tdot2,
    two_product,
    uncompiled,
    up,
)
from qpsvm._rows import row_sq_norms

__all__ = [
    "TINY",
    "DualSums",
    "RbfError",
    "TouchedEnclosure",
    "balanced_lower",
    "binary_dual_lower",
    "binary_dual_sums",
    "binary_feasible",
    "binary_primal_upper",
    "binary_trivial_upper",
    "centred_norm_upper",
    "centred_sums",
    "combine_dual_sums",
    "complement_bounds",
    "conjugate_upper",
    "distance_lower",
    "dot_upper",
    "dual_estimate",
    "dual_lower_value",
    "enclosed_product",
    "inf_norm_upper",
    "intercept_bound",
    "intercept_bound_from",
    "kernel_dual_lower",
    "kernel_primal_upper",
    "multiclass_dual_lower",
    "multiclass_dual_sums",
    "multiclass_feasible",
    "multiclass_hinge_upper",
    "multiclass_intercept_spread",
    "multiclass_primal_upper",
    "multiclass_slack_upper",
    "penalty_upper",
    "primal_upper",
    "rbf_pair_error",
    "rbf_score_error",
    "rbf_value_error",
    "row_norm_upper",
    "row_norms_upper",
    "scale_to_feasible",
    "score_ends",
    "shortfall",
    "slack_cost",
    "squared_multiclass_dual_lower",
    "squared_multiclass_primal_upper",
    "sum2_upper",
    "upper_row_sums",
    "upper_sum",
    "weight_norm_bound",
    "worse_end_sum",
]

#: Magnitude below which Dekker's splitting in Dot2 cannot overflow (:mod:`qpsvm._numerics`).
SPLIT_LIMIT = 2.0**996


class BinaryRows(Protocol):
    """What the binary enclosures read off their first argument: a binary problem
    (:class:`~qpsvm.contract.BinaryProblem`) or a block of its rows
    (:class:`qpsvm.dask.blocks.RowBlock`)."""

    X: Any
    y: np.ndarray
    margin: np.ndarray
    sample_weight: np.ndarray
    C: float
    fit_intercept: bool


class MulticlassRows(Protocol):
    """What the multiclass enclosures read off their first argument: a multiclass problem
    (:class:`~qpsvm.contract.MulticlassProblem`) or a block of its rows
    (:class:`qpsvm.dask.class_blocks.ClassBlock`)."""

    X: Any
    y: np.ndarray
    sample_weight: np.ndarray
    C: float
    crammer_singer: bool
    n_classes: int
    n_features: int
    mask: np.ndarray


def _sum2_slack(n: int) -> float:
    r"""``2 (u + gamma_{n-1}^2)``, rounded up: Sum2 (:func:`qpsvm._numerics.fsum`) returns
    ``r`` with :math:`|r - s| \le u |s| + \gamma_{n-1}^2 \sum_i |a_i|` (Ogita, Rump and Oishi
    2005, Prop. 4.5, underflow included), so for nonnegative terms
    :math:`s \le r / (1 - u - \gamma_{n-1}^2) \le r (1 + 2(u + \gamma_{n-1}^2))` and
    :math:`s \ge r (1 - 2(u + \gamma_{n-1}^2))`: a relative error that does not grow with
    ``n`` (``4u`` up to ``n ~ 1e8``), which is what lets sums over ``1e8`` rows certify
    ``1e-9``."""
    g2 = gamma(max(n - 1, 0)) ** 2
    return float(up(4.0 * U if g2 <= U else 2.0 * (U + g2)))


def upper_sum(a: np.ndarray, total: float | None = None) -> float:
    """An upper bound on the exact sum of nonnegative floats ``a`` (:func:`_sum2_slack`);
    ``total`` their Sum2 (:func:`~qpsvm._numerics.fsum`) when the caller has it."""
    a = np.ravel(a)
    return sum2_upper(fsum(a) if total is None else total, a.size)


def sum2_upper(total: float, n: int) -> float:
    """An upper bound on the exact sum of ``n`` nonnegative floats whose Sum2 is ``total``
    (:func:`_sum2_slack`, :data:`TINY` a term for underflow)."""
    return float(up(up(total * up(1.0 + _sum2_slack(n))) + n * TINY))


def upper_row_sums(a: np.ndarray) -> np.ndarray:
    """Upper bounds on the exact sums of the rows of a nonnegative 2-d ``a``, one per row: each
    row summed in floating point (any order) plus :func:`~qpsvm._numerics.sum_error` of its
    ``k`` terms, rounded up. One vectorised pass: the rows are short (a multiclass example's
    ``k`` classes), where Sum2 per row (:func:`upper_sum`) costs a Python call each."""
    total = a.sum(axis=1)
    return up(total + sum_error(a.shape[1], total))


def lower_sum(a: np.ndarray, total: float | None = None) -> float:
    """A lower bound on the exact sum of nonnegative floats ``a`` (:func:`_sum2_slack`);
    ``total`` their Sum2 (:func:`~qpsvm._numerics.fsum`) when the caller has it."""
    a = np.ravel(a)
    low = down((fsum(a) if total is None else total) * down(1.0 - _sum2_slack(a.size)))
    return float(down(max(0.0, low - a.size * TINY)))


@numba.njit(**ENTRY)
def _abs_rows(R, v, out):  # pragma: no cover - compiled
    """``out = |R| |v|`` for a C-contiguous ``R``, one output entry at a time (no copy of
    ``|R|``). The outputs of this module's kernels are allocated by their callers: numba's
    allocation helpers would compile with each kernel (about 0.1 s of a cold call)."""
    for j in range(R.shape[0]):
        total = 0.0
        for i in range(R.shape[1]):
            total += abs(R[j, i]) * abs(v[i])
        out[j] = total


@numba.njit(**ENTRY)
def _abs_columns(M, v, out):  # pragma: no cover - compiled
    """``out += |M|^T |v|`` for a C-contiguous ``M``, row by row (no copy of ``|M|``)."""
    for i in range(M.shape[0]):
        a = abs(v[i])
        for j in range(M.shape[1]):
            out[j] += abs(M[i, j]) * a


def _abs_columns_numpy(M: np.ndarray, v: np.ndarray) -> np.ndarray:
    """:func:`_abs_columns` (or :func:`_abs_rows` of ``M.T``) in numpy over chunks of the rows
    of ``M``, each chunk's products at once and their running sums down each column
    (:func:`~qpsvm._numerics.running_sums`): the same products added in the same order, so
    the same result to the bit (``nan`` where an infinite entry meets ``v_i = 0``, as there)."""
    out = np.zeros(M.shape[1])
    size = np.abs(v)
    step = chunk_rows(M.shape[1])
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(0, M.shape[0], step):
            out = running_sums(out, np.abs(M[k : k + step]) * size[k : k + step, None])[-1]
    return out


def _abs_product(M: Any, v: np.ndarray) -> np.ndarray:
    """``|M|^T |v|`` in floating point (an estimate; callers scale it by 2). A dense float64
    ``M`` is read in its memory order without forming ``|M|`` (a copy the size of the data);
    before the compiled loop is (a cold first call), a small ``M`` row by row in numpy."""
    v = np.ascontiguousarray(v, dtype=np.float64).ravel()
    if isinstance(M, np.matrix):
        M = np.asarray(M)  # its rows are 1 x d matrices, which the numpy equivalent cannot add
    if isinstance(M, np.ndarray) and M.dtype == np.float64 and M.ndim == 2:
        if M.flags.c_contiguous:
            if uncompiled(_abs_columns, M.size, ABS_ENTRIES):
                return _abs_columns_numpy(M, v)
            out = np.zeros(M.shape[1])
            _abs_columns(M, v, out)
            return out
        if M.flags.f_contiguous:
            if uncompiled(_abs_rows, M.size, ABS_ENTRIES):
                return _abs_columns_numpy(M, v)
            out = np.empty(M.shape[1])
            _abs_rows(M.T, v, out)
            return out
    A = abs(M) if sp.issparse(M) else np.abs(M)
    return np.asarray(A.T @ np.abs(v)).ravel()


@numba.njit(**ENTRY, fastmath={"reassoc"})
def _rows_product(R, v, u, hi, magnitude):  # pragma: no cover - compiled
    """``hi = R v`` and ``magnitude = |R| u`` of a C-contiguous ``R`` in one pass, each row's
    sums in any order (``reassoc``: vectorised; the plain product's bound holds for every
    order)."""
    for j in range(R.shape[0]):
        total = 0.0
        size = 0.0
        for i in range(R.shape[1]):
            x = R[j, i]
            total += x * v[i]
            size += abs(x) * u[i]
        hi[j] = total
        magnitude[j] = size


@numba.njit(**ENTRY, fastmath={"reassoc"})
def _columns_product(M, v, u, hi, magnitude):  # pragma: no cover - compiled
    """``hi += M^T v`` and ``magnitude += |M|^T u`` of a C-contiguous ``M`` in one pass, row
    by row."""
    for i in range(M.shape[0]):
        a = v[i]
        b = u[i]
        for j in range(M.shape[1]):
            x = M[i, j]
            hi[j] += x * a
            magnitude[j] += abs(x) * b


def _plain_product(M: Any, v: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``M^T v`` in plain floating point and ``|M|^T u`` (:func:`_abs_product`): one compiled
    pass over a dense float64 ``M`` for both (:func:`_rows_product`, :func:`_columns_product`),
    else a product and :func:`_abs_product`."""
    v = np.asarray(v, dtype=np.float64)
    if isinstance(M, np.ndarray) and M.dtype == np.float64 and M.ndim == 2 and v.ndim == 1:
        u = np.ascontiguousarray(u, dtype=np.float64)
        hi, magnitude = np.zeros(M.shape[1]), np.zeros(M.shape[1])
        if M.flags.f_contiguous and not uncompiled(_rows_product, M.shape[1], ABS_ROWS):
            _rows_product(M.T, v, u, hi, magnitude)
            return hi, magnitude
        if M.flags.c_contiguous and not uncompiled(_columns_product, M.shape[0], ABS_ROWS):
            _columns_product(M, v, u, hi, magnitude)
            return hi, magnitude
    hi = np.asarray(M.T @ v, dtype=np.float64).ravel()
    return hi, _abs_product(M, u)


def _max_abs(a: np.ndarray) -> float:
    """``max |a|`` (0 for an empty array) without forming ``|a|``."""
    if a.size == 0:
        return 0.0
    return float(max(a.max(), -a.min()))


def _dot2_applies(M: Any, v: np.ndarray, start: tuple | None) -> bool:
    """Whether :func:`~qpsvm._numerics.tdot2` computes ``M^T v`` by Dot2: ``M`` an array or a
    sparse matrix (another operator multiplies by its own product) and every entry below
    ``2^996`` in magnitude (beyond, Dekker's splitting overflows and ``tdot2`` falls back to the
    plain product)."""
    if not (isinstance(M, np.ndarray) or sp.issparse(M)):
        return False
    entries = [M.data if sp.issparse(M) else M, v] + ([] if start is None else list(start[:2]))
    return all(_max_abs(np.asarray(a)) < SPLIT_LIMIT for a in entries)


def _canonical_csr(M: Any) -> bool:
    """Whether ``M`` is a CSR matrix of float64 with sorted, distinct column indices."""
    return sp.issparse(M) and M.format == "csr" and M.dtype == np.float64 and M.has_canonical_format


def enclosed_product(
    M: Any,
    v: np.ndarray,
    start: tuple | None = None,
    dot2: bool = True,
    slack: np.ndarray | float | None = None,
    parts: tuple | None = None,
) -> tuple:
    r"""``M^T v`` (plus ``start = (hi, lo, err)``) as ``hi + lo`` with a bound ``err``:
    :math:`|hi + lo - (M^T v + start)| \le err`.

    Dot2 over ``N`` terms (the ``n`` products and the start's two parts) is within
    :math:`4\gamma_{2N}^2 \sum |terms|` (Ogita, Rump and Oishi 2005, Theorem 4.4, for the
    unevaluated ``hi + lo``), plus :math:`\gamma_{2N} |lo_{start}|`: the start's low part
    begins the plain sum of the TwoSum errors, whose roundings are first order in it. The
    plain product (:func:`_dot2_applies` false) is within :math:`\gamma_N \sum |terms|` in
    any order of summation. The magnitudes are computed in floating point, so every factor is
    doubled; the start's own error is added rounded up. ``dot2=False`` asks for the plain
    product (``lo = 0``, no ``start``): one BLAS call, with a bound about ``1 / (4 n u)`` times
    wider than Dot2's, for callers that retry with Dot2 when it is too wide to prove a gap.

    ``slack`` (no ``start``) bounds the error of ``v`` itself, :math:`|v' - v| \le slack`:
    the bound then holds for :math:`M^T v'` too. With the bound above read as
    :math:`c\,|M|^T|v|` (``c`` half the doubled factor), both terms are one product
    :math:`|M|^T u` with :math:`u = c|v| + slack` rounded up (0 where ``v_i`` and its slack are
    0: that term is exactly 0), doubled for its own rounding: one pass over ``M`` for both.
    A float ``slack`` is relative, :math:`|v' - v| \le slack\,|v|`: its term
    :math:`slack\,|M|^T|v|` joins the product's own, the factor ``c`` grown by ``slack``
    (no weights: the bound's product is :math:`|M|^T|v|`, as without a slack).

    ``parts``: ``(hi, lo, m)`` of :func:`~qpsvm._numerics.csr_tdot2_abs` of these ``M`` (a
    canonical CSR matrix) and ``v``, computed already (a solver's expansion of the same
    multipliers): the same floats, without the pass.
    """
    n = M.shape[0] + (0 if start is None else 2)
    if not dot2 and start is not None:
        raise ValueError("the plain product takes no start")
    if slack is not None and start is not None:
        raise ValueError("a slack on v takes no start")
    dot2 = dot2 and _dot2_applies(M, v, start)
    factor = 8.0 * gamma(2 * n) ** 2 if dot2 else 2.0 * gamma(n)
    if isinstance(slack, float):
        factor, slack = up(factor + 2.0 * slack), None
    weights = None  # with a slack, the bound is one product |M|^T weights
    if slack is not None:
        v = np.asarray(v, dtype=np.float64)
        weights = up(up(0.5 * factor * np.abs(v)) + slack)
        # an exact 0 (v_i = 0 with no slack) adds exactly nothing: weight 0, not the subnormal
        # that rounding 0 outward gives, whose products cost about a hundred cycles each
        weights[(slack == 0.0) & (v == 0.0)] = 0.0
    magnitude = None
    if not dot2 and start is None:  # the product and its bound's magnitudes in one pass
        hi, magnitude = _plain_product(M, v, np.abs(v) if weights is None else weights)
        lo = np.zeros_like(hi)
    elif dot2 and start is None and sp.issparse(M) and M.format == "csc":
        # M^T is a CSR matrix (the scores X w of CSR rows): one pass along its rows
        hi, lo, magnitude = rows_dot2(M.T, v)
    elif dot2 and weights is None and start is None and _canonical_csr(M):
        # the expansion sum_i v_i x_i of CSR rows: Dot2 and the magnitudes in one pass
        hi, lo, magnitude = csr_tdot2_abs(M, v) if parts is None else parts
    else:
        hi, lo = tdot2(M, v, None if start is None else start[:2])
    if weights is not None and (not dot2 or magnitude is None):
        if magnitude is None:
            magnitude = _abs_product(M, weights)
        err = 2.0 * magnitude + n * TINY
    else:
        if magnitude is None:
            magnitude = _abs_product(M, v)
        if start is not None:
            magnitude = magnitude + np.abs(start[0]) + np.abs(start[1])
        err = factor * magnitude + n * TINY
        if slack is not None:
            err = err + 2.0 * _abs_product(M, slack)
    if start is not None:
        err = up(err + 2.0 * gamma(2 * n) * np.abs(start[1]) + start[2])
    if not (np.all(np.isfinite(hi)) and np.all(np.isfinite(lo)) and np.all(np.isfinite(err))):
        return hi, lo, np.full(hi.shape, np.inf)
    return hi, lo, err


def dd_sub(a: tuple, b: tuple) -> tuple:
    """``(a_hi + a_lo) - (b_hi + b_lo)`` as ``hi + lo`` with its error bound (TwoSum on the
    high parts, the rest rounded once)."""
    s = a[0] - b[0]
    z = s - a[0]
    t = (a[0] - (s - z)) + (-b[0] - z)
    lo = t + a[1] - b[1]
    err = a[2] + b[2] + 4.0 * U * (np.abs(t) + np.abs(a[1]) + np.abs(b[1])) + 2 * TINY
    return s, lo, err


def dd_add(a: tuple, b: tuple) -> tuple:
    """``(a_hi + a_lo) + (b_hi + b_lo)`` as ``hi + lo`` with its error bound (:func:`dd_sub`):
    how enclosures of the sums over row blocks are added up."""
    return dd_sub(a, (-b[0], -b[1], b[2]))


def shortfall(m: np.ndarray, y: np.ndarray, margin: tuple, b: float = 0.0) -> tuple:
    r"""``r = m - y (hi + lo + b)``, the amount by which each margin falls short, as a float
    ``r`` and a bound ``e`` with :math:`|r_{exact} - r| \le e`."""
    hi, lo, err = margin
    s = hi + b
    z = s - hi
    e1 = (hi - (s - z)) + (b - z)  # hi + b = s + e1 exactly (TwoSum)
    head = m - y * s
    tail = e1 + lo
    r = head - y * tail
    e = err + 2.0 * U * (np.abs(head) + np.abs(tail) + np.abs(r)) + 3 * TINY
    return r, up(e)


def norm2_upper(hi: np.ndarray, lo: np.ndarray, err: np.ndarray) -> float:
    """An upper bound on ``||v||^2`` for a vector enclosed by ``hi + lo`` within ``err``."""
    return expansion_norms(hi, lo, err)[0]


#: Entries :func:`expansion_norms` passes to its numpy equivalent in a process before
#: :func:`_expansion_squares` is compiled (about 0.1 s of compile; the equivalent's dozen
#: passes cost about 10-20 ns an entry, CPU time measured at d = 1e6).
NORM_ELEMENTS = 2**23


@numba.njit(**ENTRY)
def _expansion_squares(hi, lo, err):  # pragma: no cover - compiled
    """:func:`expansion_norms` in one pass (arrays of at least ``_SUCC_SIZE`` entries): per
    entry ``v = hi + lo``, ``b = |v| (1 + 2u) + err`` moved up as
    :func:`qpsvm._numerics._succ` does, and Sum2 (as :func:`qpsvm._numerics._sum2`) of ``b b``
    and of ``v v``: the same operations in the same order as the numpy evaluation, so the
    same floats."""
    grow = 1.0 + 2.0 * 2.0**-53
    phi = 2.0**-53 * (1.0 + 2.0 * 2.0**-53)
    eta = 2.0**-1074
    # below it |v| and the bound c < 2^-599 square to below half the least subnormal
    tiny = 2.0**-600
    sb, cb, sv, cv = 0.0, 0.0, 0.0, 0.0
    for j in range(hi.shape[0]):
        v = hi[j] + lo[j]
        e = err[j]
        if abs(v) < tiny and e < tiny:
            # both squares round to an exact 0, which Sum2 adds exactly: skipped, since the
            # subnormal errors (n TINY) of the features no row touches would take the
            # processor's slow path (most features of text-like data: 25 ms against 2 ms
            # at d = 1e6, 40% of them touched)
            continue
        x = abs(v) * grow + e
        c = abs(x) * phi
        c += eta
        c += x
        p = c * c
        t = sb + p
        z = t - sb
        cb += (sb - (t - z)) + (p - z)
        sb = t
        p = v * v
        t = sv + p
        z = t - sv
        cv += (sv - (t - z)) + (p - z)
        sv = t
    return sb, cb, sv, cv


def expansion_norms(
    hi: np.ndarray, lo: np.ndarray, err: np.ndarray, size: int | None = None
) -> tuple[float, float]:
    r"""For a vector ``v`` enclosed by ``hi + lo`` within ``err``: an upper bound on the exact
    :math:`\|v\|^2` (each entry's magnitude bounded, ``up(|hi + lo| (1 + 2u) + err)``, its
    square summed by :func:`upper_sum`) and the estimate :math:`\|hi + lo\|^2` (Sum2, as
    :func:`~qpsvm._numerics.fsum`). One compiled pass from ``_SUCC_SIZE`` entries on (at
    d = 1e6, a dozen numpy passes of about 1.5 ms each otherwise); the same floats.

    ``size`` (at least ``hi.size``): ``v`` has that many entries, the others exact zeros with
    no error (the entries of an expansion over the columns its rows touch, :class:`DualSums`).
    Their squares are exact zeros, which Sum2 adds exactly, so both sums are those of the
    given entries; the upper bound takes its slack for ``size`` terms, which makes it the
    float of the whole vector's enclosure (whose other entries, ``0`` within a subnormal
    error, square to exact zeros as well) and a bound all the same, the slack growing with
    the count."""
    n = hi.size if size is None else size
    if hi.size < _SUCC_SIZE or uncompiled(_expansion_squares, hi.size, NORM_ELEMENTS):
        v = hi + lo
        bound = up(np.abs(v) * (1.0 + 2.0 * U) + err)
        return sum2_upper(fsum(bound * bound), n), fsum(v * v)
    sb, cb, sv, cv = _expansion_squares(
        np.ascontiguousarray(hi), np.ascontiguousarray(lo), np.ascontiguousarray(err)
    )
    upper = sum2_upper(sb + cb if math.isfinite(sb) else sb, n)
    return upper, float(sv + cv if math.isfinite(sv) else sv)


# ----------------------------------------------------------------------------- penalties
def complement_bounds(r: float) -> tuple[float, float]:
    """Floats ``lo <= 1 - r <= hi`` for the exact ``1 - r``: the rounded difference, and one
    ulp on the side it may have rounded to unless it is exact (then ``1 - fl(1 - r) = r``, by
    Sterbenz's lemma, since ``fl(1 - r) >= 1/2`` whenever it rounds)."""
    s = 1.0 - r
    if 1.0 - s == r:
        return s, s
    return float(down(s)), float(up(s))


def penalty_upper(penalty: Any, w: np.ndarray, extra: float = 0.0) -> float:
    r"""An upper bound on the exact penalty ``R((w, e))`` of float weights ``w`` (any shape) and
    one more coordinate ``|e| <= extra`` (a regularised intercept's; 0 otherwise): L2
    :math:`\tfrac12\|\cdot\|^2`, L1 :math:`\|\cdot\|_1` or the elastic net
    :math:`r\|\cdot\|_1 + \tfrac{1-r}2\|\cdot\|^2` (``penalty``: a piece of
    :mod:`qpsvm.formulations.pieces.penalties`, by its ``name`` and ``l1_ratio``)."""
    w = np.ravel(w)
    # Sum2 of the squares formed in its loop (the float of upper_sum(w * w), without the array)
    squares = sum2_upper(fsum_dot(w, w), w.size)
    square = float(up(0.5 * float(up(squares + up(extra * extra)))))
    if penalty.name == "l2":
        return square
    linear = float(up(upper_sum(np.abs(w)) + extra))
    if penalty.name == "l1":
        return linear
    r = penalty.l1_ratio
    return float(up(up(r * linear) + up(complement_bounds(r)[1] * square)))


def inf_norm_upper(enclosure: tuple, extra: float = 0.0) -> float:
    """An upper bound on ``max(||v||_inf, extra)`` for ``v`` enclosed (``hi + lo`` within
    ``err``)."""
    hi, lo, err = enclosure
    top = float(np.max(up(np.abs(hi + lo) * (1.0 + 2.0 * U) + err), initial=0.0))
    return max(top, extra)


def conjugate_upper(penalty: Any, enclosure: tuple, extra: float = 0.0) -> tuple[float, float]:
    r"""An upper bound on the exact conjugate ``R^*((v, e))`` for ``v`` enclosed and ``|e| <=
    extra``, and ``1.0``; or ``(inf, t)`` with ``t < 1`` a factor that brings the multipliers
    (hence ``v``) into the L1 penalty's domain :math:`\|v\|_\infty \le 1` (it cannot be proven
    there yet). L2: :math:`\tfrac12\|v\|^2`; L1: 0 once the domain is proven; elastic net:
    :math:`\sum_j \max(0, |v_j| - r)^2 / (2(1 - r))` with ``|v_j|`` bounded above and the exact
    ``1 - r`` below (:func:`complement_bounds`)."""
    if penalty.name == "l2":
        if isinstance(enclosure, TouchedEnclosure):
            # the untouched entries (0 within n TINY < 2^-600) square to exact zeros, which
            # Sum2 adds exactly: expansion_norms of the touched ones at the whole size is the
            # whole enclosure's float
            norm = expansion_norms(*enclosure[:3], size=enclosure.size)[0]
        else:
            norm = norm2_upper(*enclosure)
        return float(up(0.5 * float(up(norm + up(extra * extra))))), 1.0
    if isinstance(enclosure, TouchedEnclosure):
        enclosure = enclosure.whole()
    if penalty.name == "l1":
        top = inf_norm_upper(enclosure, extra)
        if top <= 1.0:
            return 0.0, 1.0
        return math.inf, float(down(down(1.0 / top) * (1.0 - 4.0 * U)))
    r = penalty.l1_ratio
    hi, lo, err = enclosure
    top = np.append(np.ravel(up(np.abs(hi + lo) * (1.0 + 2.0 * U) + err)), extra)
    soft = np.maximum(0.0, up(top - r))
    low = complement_bounds(r)[0]
    return float(up(upper_sum(up(soft * soft)) / float(down(2.0 * low)))), 1.0


def weight_norm_bound(penalty: Any, upper: float) -> float:
    r"""An upper bound on :math:`\|w^*\|` from an upper bound ``U`` on ``P^* \ge R(w^*)``:
    :math:`\sqrt{2U}` (L2), ``U`` (L1), :math:`\min(\sqrt{2U/(1 - r)}, U / r)` (elastic net)."""
    if not math.isfinite(upper):
        return math.inf
    if penalty.name == "l2":
        return float(up(math.sqrt(2.0 * upper)))
    if penalty.name == "l1":
        return upper
    r = penalty.l1_ratio
    ridge = float(up(math.sqrt(float(up(2.0 * upper / complement_bounds(r)[0])))))
    return min(ridge, float(up(upper / r)))


def _sqrt_up(x: float) -> float:
    return float(up(math.sqrt(x))) if math.isfinite(x) else math.inf


def row_norms_upper(X: Any, sq: np.ndarray | None = None) -> np.ndarray:
    r"""Upper bounds on every ``||x_i||`` (the computed squares' sum within
    :math:`\gamma_{d+2}` of itself in any order of summation, its square root rounded up).
    The squares are summed by :func:`qpsvm._rows.row_sq_norms`: along the rows of a canonical
    CSR matrix without forming ``X * X``, the same floats (10000 x 1e6, 100 nonzeros a row:
    1.3 ms against 3.2 ms); ``sq``: those sums of ``X``'s rows where the caller has them."""
    sq = np.asarray(row_sq_norms(X) if sq is None else sq, dtype=np.float64).ravel()
    return up(np.sqrt(up(sq * (1.0 + 2.0 * gamma(X.shape[1] + 2)))))


def row_norm_upper(X: Any, sq: np.ndarray | None = None) -> float:
    """An upper bound on ``max_i ||x_i||`` (``sq`` as for :func:`row_norms_upper`)."""
    return float(np.max(row_norms_upper(X, sq), initial=0.0))


def distance_lower(a: np.ndarray, b: np.ndarray) -> float:
    r"""A lower bound on the exact :math:`\|a - b\|` of two float arrays.

    Each difference and each square is rounded once, so the exact :math:`d_i^2` is at least the
    computed square over :math:`(1 + u)^3`, less :data:`TINY` where it underflows (the
    differences are first scaled by a power of two, exactly, so no square overflows); the sum
    is bounded below by :func:`lower_sum` and every later operation rounded down (scaling back
    too: it rounds in the subnormal range).
    """
    d = np.ravel(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))
    top = float(np.max(np.abs(d), initial=0.0))
    if top == 0.0 or not math.isfinite(top):
        return 0.0 if top == 0.0 else float(np.finfo(np.float64).max)
    scale = math.ldexp(1.0, math.frexp(top)[1])
    d = d / scale
    total = down(down(lower_sum(d * d) * (1.0 - 3.0 * U)) - d.size * TINY)
    # the product with the scale may round (into the subnormals): round it down
    return float(down(down(math.sqrt(total)) * scale)) if total > 0 else 0.0


def intercept_bound(
    margin: np.ndarray, X: Any, upper: float, feature_norm: float | None = None
) -> float:
    r"""``B >= |b*|`` for some optimal intercept: ``max_i m_i + sqrt(2 U) max_i ||phi(x_i)||``
    (``feature_norm``: a bound on ``max_i ||phi(x_i)||``, default the rows' norm,
    :func:`row_norm_upper`)."""
    norm = row_norm_upper(X) if feature_norm is None else feature_norm
    return intercept_bound_from(float(np.max(margin)), norm, upper)


def intercept_bound_from(max_margin: float, max_row_norm: float, upper: float) -> float:
    r""":func:`intercept_bound` from ``max_i m_i`` and an upper bound on ``max_i ||x_i||``
    (maxima over row blocks combine by ``max``)."""
    if not math.isfinite(upper):
        return math.inf
    return float(up(max_margin + up(_sqrt_up(2.0 * upper) * max_row_norm)))


def _capped(C: float, weight: np.ndarray) -> np.ndarray:
    """Caps ``c_i <= C s_i`` exactly: the rounded product, one ulp lower when it rounded up
    (the rounding error is exact by Dekker's TwoProduct, :func:`qpsvm._numerics.two_product`)."""
    cap, err = two_product(C, weight)
    return np.where(err >= 0.0, cap, np.maximum(0.0, down(cap)))


def primal_upper(norm2: float, C: float, cost: float, worst: float = -math.inf) -> float:
    r"""An upper bound on ``1/2 ||w||^2 + C sum_i s_i xi_i`` from upper bounds ``norm2`` on
    ``||w||^2`` and ``cost`` on the sum of the rounded products ``fl(s_i xi_i)`` (their rounding
    and the product by ``C`` are covered by :math:`1 + 2u`); for the hard margin
    (``C = inf``) ``1/2 ||w||^2`` when the largest shortfall ``worst`` is proven ``<= 0``, else
    ``inf``."""
    half = float(up(0.5 * norm2))
    if not math.isfinite(C):
        return half if worst <= 0.0 else math.inf
    return float(up(half + float(up(C * cost * (1.0 + 2.0 * U)))))


def slack_cost(r: np.ndarray, e: np.ndarray, weight: np.ndarray) -> tuple[float, float]:
    r"""From shortfalls ``r`` within ``e`` of the exact ones (:func:`shortfall`): an upper bound
    on the sum of the rounded products ``fl(s_i max(0, r_i^{exact}))`` and on the largest exact
    shortfall. Over row blocks the first combines by :func:`upper_sum`, the second by ``max``."""
    short = up(r + e)
    worst = float(np.max(short, initial=-np.inf))
    return upper_sum(weight * np.maximum(0.0, short)), worst


def binary_margins(f: BinaryRows, w: np.ndarray, pairs: Any = None) -> tuple:
    """Scores ``x_i . w`` enclosed (``hi, lo, err``): rows of the data, or with
    ``pairs = (items, index pairs)`` the exact differences of item scores (ranking SVM)."""
    if pairs is None:
        return enclosed_product(f.X.T, w)
    items, index = pairs
    hi, lo, err = enclosed_product(items.T, w)
    i, j = index[:, 0], index[:, 1]
    return dd_sub((hi[i], lo[i], err[i]), (hi[j], lo[j], err[j]))


def binary_primal_upper(
    f: BinaryRows,
    w: np.ndarray,
    b: float,
    pairs: Any = None,
    norm2: float | None = None,
    margins: tuple | None = None,
) -> tuple[float, float]:
    r"""An upper bound on the exact ``P(w, b) = 1/2 ||w||^2 + C sum_i s_i max(0, m_i - y_i
    (x_i.w + b))``, one on the largest exact shortfall ``max_i (m_i - y_i(x_i.w + b))``, and
    ``P`` itself from the same enclosed margins without their error bounds (an estimate, for
    :func:`~qpsvm.verify.certificate.evaluation_allowance`).

    For the hard margin (``C = inf``) the upper bound is ``inf`` unless every margin is proven
    to hold (shortfall bound ``<= 0``). ``norm2``: the Sum2 of ``w * w``
    (:func:`~qpsvm._numerics.fsum_dot`) when the caller has it (a pass over the features);
    ``margins``: :func:`binary_margins` of ``w`` when the caller has them (a pass over the rows).
    """
    if margins is None:
        margins = binary_margins(f, w, pairs)
    r, e = shortfall(f.margin, f.y, margins, b)
    cost, worst = slack_cost(r, e, f.sample_weight)
    total = fsum_dot(w, w) if norm2 is None else norm2
    estimate = 0.5 * total
    if math.isfinite(f.C):
        estimate += f.C * fsum(f.sample_weight * np.maximum(0.0, r))
    return primal_upper(sum2_upper(total, w.size), f.C, cost, worst), worst, estimate


def scale_to_feasible(
    f: BinaryRows, w: np.ndarray, b: float, pairs: Any = None, rounds: int = 4
) -> tuple[np.ndarray, float]:
    r"""``(t w, t b)`` with the least float ``t >= 1`` found that makes every hard margin
    ``y_i (x_i.w + b) >= m_i`` hold provably (:func:`binary_primal_upper`).

    An exact hard-margin optimum has points exactly on their margins, so its float64 rounding
    violates about half of them by an ulp; scaling by ``t = max_i m_i / margin_i`` (margins
    bounded from below) restores them at a relative cost ``t^2 - 1`` of a few ulps in ``P``.
    Returns the input unchanged when it is feasible or cannot be made so by scaling (a margin
    ``m_i = 0`` violated, or a point on the wrong side).
    """
    for _ in range(rounds):
        r, e = shortfall(f.margin, f.y, binary_margins(f, w, pairs), b)
        short = up(r + e)
        if float(np.max(short, initial=-np.inf)) <= 0.0:
            return w, b
        achieved = down(f.margin - short)  # a lower bound on each exact margin
        need = short > 0.0
        if np.any(achieved[need] <= 0.0):
            return w, b
        t = float(up(np.max(f.margin[need] / achieved[need]) * (1.0 + 4.0 * U)))
        w, b = w * t, b * t
    return w, b


def binary_trivial_upper(f: BinaryRows) -> float:
    """An upper bound on ``P*`` from the feasible point ``w = 0, b = 0`` of a soft margin:
    ``C sum_i s_i m_i`` (``inf`` for the hard margin)."""
    if not math.isfinite(f.C):
        return math.inf
    return float(up(f.C * upper_sum(f.sample_weight * f.margin) * (1.0 + 2.0 * U)))


def binary_expansion(f: BinaryRows, coef: np.ndarray, pairs: Any = None) -> tuple:
    """``sum_i coef_i x_i`` enclosed (``hi, lo, err``), for exact pair differences too; over
    the rows ``f.X`` themselves with the solver's expansion of the same ``coef`` where the
    formulation kept one (``kept_expansion``: the same floats, without the pass)."""
    if pairs is None:
        kept = getattr(f, "kept_expansion", None)
        return enclosed_product(f.X, coef, parts=None if kept is None else kept(f.X, coef))
    items, index = pairs
    first = enclosed_product(items[index[:, 0]], coef)
    return enclosed_product(items[index[:, 1]], -coef, start=first)


class TouchedEnclosure(NamedTuple):
    """:func:`binary_expansion`'s enclosure of canonical CSR rows kept over the columns
    ``touched`` they touch (``hi``, ``lo``, ``err`` there) in a vector of ``size`` entries;
    an untouched column's Dot2 has no term, so its ``hi = lo = 0`` and its ``err`` is
    ``rest`` (``n TINY``, or ``inf`` where the enclosure is not finite), what the whole
    product gives it."""

    hi: np.ndarray
    lo: np.ndarray
    err: np.ndarray
    touched: np.ndarray
    size: int
    rest: float

    def estimate(self, extra: int = 0) -> np.ndarray:
        """``hi + lo`` over every column (exact zeros at the untouched ones): the floats of
        the whole enclosure's ``hi + lo``; then ``extra`` more entries (zeros) for the caller
        to fill, rather than a copy appending them."""
        v = np.zeros(self.size + extra)
        v[self.touched] = self.hi + self.lo
        return v

    def whole(self) -> tuple:
        """``(hi, lo, err)`` spread over every column: the whole product's enclosure to the
        bit."""
        out = np.zeros(self.size), np.zeros(self.size), np.full(self.size, self.rest)
        for whole, part in zip(out, (self.hi, self.lo, self.err), strict=True):
            whole[self.touched] = part
        return out


def touched_expansion(f: Any, coef: np.ndarray) -> TouchedEnclosure | None:
    """:func:`binary_expansion` of canonical CSR rows (no pairs) over the columns they touch
    (the formulation's cached ``touched_columns``, and the solver's expansion of the same
    coefficients where it kept one, ``kept_expansion``), kept restricted
    (:class:`TouchedEnclosure`, whose :meth:`~TouchedEnclosure.whole` is the whole product's
    ``hi``, ``lo`` and ``err`` to the bit). ``None`` where the formulation has no restriction
    (dense rows, most columns touched)."""
    columns = getattr(f, "touched_columns", None)
    restricted = None if columns is None else columns()
    if restricted is None:
        return None
    M, touched = restricted
    hi, lo, err = enclosed_product(M, coef, parts=f.kept_expansion(M, coef))
    rest = M.shape[0] * TINY if np.all(np.isfinite(err)) else math.inf
    return TouchedEnclosure(hi, lo, err, touched, f.X.shape[1], rest)


def binary_feasible(f: BinaryRows, alpha: np.ndarray) -> np.ndarray:
    """``alpha`` clipped into the exact box ``[0, C s_i]`` (:func:`_capped`)."""
    a = np.maximum(np.asarray(alpha, dtype=np.float64), 0.0)
    if math.isfinite(f.C):
        a = np.minimum(a, _capped(f.C, f.sample_weight))
    return a


@dataclass
class DualSums:
    r"""The sums over the samples (or a row block of them) that the dual bound is made of, at an
    exactly feasible ``alpha``.

    Attributes
    ----------
    gain : float
        A lower bound on :math:`\sum_i m_i \alpha_i`.
    expansion : tuple
        :math:`\sum_i \alpha_i y_i x_i` enclosed (``hi, lo, err``, :func:`enclosed_product`).
    balance : tuple
        :math:`\sum_i \alpha_i y_i` enclosed likewise (arrays of shape ``(1,)``).
    columns : ndarray or None
        The features ``expansion`` holds, increasing (``None``: all of them); with ``size`` the
        number of features. Every other entry is an exact 0 with no error: the features no
        row touches (:func:`qpsvm._rows.touched_columns`), where every row holds a 0.
    """

    gain: float
    expansion: tuple
    balance: tuple
    columns: np.ndarray | None = None
    size: int | None = None
    _norms: tuple[float, float] | None = field(default=None, repr=False, compare=False)

    def norms(self) -> tuple[float, float]:
        """:func:`expansion_norms` of the expansion (computed once)."""
        if self._norms is None:
            self._norms = expansion_norms(*self.expansion, size=self.size)
        return self._norms

    def vector(self) -> np.ndarray:
        """The expansion rounded to floats (``hi + lo``) over all the features."""
        hi, lo, _ = self.expansion
        if self.columns is None:
            return hi + lo
        v = np.zeros(self.size)
        v[self.columns] = hi + lo
        return v

    def rounds_to(self, w: np.ndarray) -> bool:
        """Whether ``w`` equals :meth:`vector` (a solver's ``w``, the rounded expansion of its
        multipliers), without forming it: over ``columns``, ``w`` there equal to ``hi + lo``
        and as many nonzeros in all of ``w`` as there (zeros elsewhere); in one compiled pass
        (:func:`_rounds_to`) once that pays for its compile."""
        hi, lo, _ = self.expansion
        if self.columns is None:
            return np.array_equal(w, hi + lo)
        if w.shape != (self.size,):
            return False
        # a strided w (a caller's view) would compile another specialisation
        if not w.flags.c_contiguous or uncompiled(_rounds_to, w.size, ROUNDS_ELEMENTS):
            v = hi + lo
            return np.array_equal(w[self.columns], v) and np.count_nonzero(w) == np.count_nonzero(v)
        return _rounds_to(w, self.columns, np.ascontiguousarray(hi), np.ascontiguousarray(lo))


#: Entries of ``w`` :meth:`DualSums.rounds_to` passes to its numpy equivalent in a process
#: before :func:`_rounds_to` is compiled: its compile (0.13 s CPU at a load of 4, 0.3 s as a
#: process's first numba compile) at what it saves, about 1.2 ns an entry of ``w`` (at d = 1e6,
#: 400825 columns touched: the equivalent's gather, sum, comparison and two counts 2.13 ms,
#: the compiled pass 0.89 ms).
ROUNDS_ELEMENTS = 2**26


@numba.njit(**ENTRY)
def _rounds_to(w, columns, hi, lo):  # pragma: no cover - compiled
    """Whether ``w[columns] == hi + lo`` entry by entry (NaN equal to nothing) and ``w`` has
    as many nonzeros as ``hi + lo``: :meth:`DualSums.rounds_to`'s test, without the gathered
    copy and the sum's array."""
    nonzero = 0
    for k in range(columns.shape[0]):
        v = hi[k] + lo[k]
        if w[columns[k]] != v:
            return False
        nonzero += v != 0.0
    for j in range(w.shape[0]):
        nonzero -= w[j] != 0.0
    return nonzero == 0


def binary_dual_sums(
    f: BinaryRows,
    a: np.ndarray,
    pairs: Any = None,
    restricted: tuple | None = None,
    kept: Any = None,
) -> DualSums:
    """:class:`DualSums` of an exactly feasible ``a`` over the samples of ``f`` (a problem or a
    row block with ``X``, ``y``, ``margin``). ``restricted``: ``f.X``'s rows over the columns
    they touch and those columns (:func:`qpsvm._rows.touched_columns`, no ``pairs``), the
    expansion then taken over them alone: the same floats at those columns (each a Dot2 over
    the same products in the same order, the error bound's magnitudes and row count the
    same), exact zeros elsewhere, a third to a half of the passes' cost at d = 1e6. ``kept``:
    a formulation's :meth:`~qpsvm.formulations.kernel_rows.KernelRows.kept_expansion`, whose
    Dot2 parts and magnitudes of the restricted product (a solver's, of the same multipliers
    over the same rows) the enclosure reuses."""
    if restricted is None:
        expansion, columns, size = binary_expansion(f, a * f.y, pairs), None, None
    else:
        (R, columns), size = restricted, f.X.shape[1]
        c = a * f.y
        expansion = enclosed_product(R, c, parts=None if kept is None else kept(R, c))
    return DualSums(
        gain=lower_sum(f.margin * a),  # margins and multipliers are nonnegative
        expansion=expansion,
        balance=enclosed_product(a[:, None], f.y),
        columns=columns,
        size=size,
    )


def combine_dual_sums(parts: list[DualSums]) -> DualSums:
    """The :class:`DualSums` of all samples from those of disjoint row blocks."""
    return DualSums(
        gain=lower_sum(np.array([p.gain for p in parts])),
        expansion=reduce(dd_add, [p.expansion for p in parts]),
        balance=reduce(dd_add, [p.balance for p in parts]),
    )


def dual_estimate(sums: DualSums, bound: float | None = None) -> float:
    r"""``gain - 1/2 ||expansion||^2 - B |balance|`` from :class:`DualSums` without their
    error bounds: the value :func:`dual_lower_value` bounds, as float64 evaluates it at best
    (an estimate, for :func:`~qpsvm.verify.certificate.evaluation_allowance`; the balance
    term with its computed value, so an off-balance point is no rounding)."""
    value = float(sums.gain - 0.5 * sums.norms()[1])
    if bound is not None and math.isfinite(bound):
        value -= bound * abs(float(sums.balance[0][0] + sums.balance[1][0]))
    return value


def dual_lower_value(sums: DualSums, bound: float | None) -> float:
    r"""The lower bound on ``P*`` of :func:`binary_dual_lower` from its :class:`DualSums`:
    ``gain - 1/2 ||expansion||^2 - B |balance|``, the balance term only with a free intercept
    (``bound = B`` of :func:`intercept_bound`; ``None`` without an intercept)."""
    norm2 = sums.norms()[0]
    value = float(down(sums.gain - float(up(0.5 * norm2))))
    if bound is not None:
        hi, lo, err = sums.balance
        off = float(up(abs(float(hi[0] + lo[0])) * (1.0 + 2.0 * U) + float(err[0])))
        if off > 0.0:
            value = float(down(value - float(up(bound * off)))) if bound < math.inf else -math.inf
    return value


def centred_sums(sums: DualSums, centre: np.ndarray) -> DualSums:
    r"""The :class:`DualSums` of the same multipliers for the features ``x_i - c``: the
    expansion :math:`\sum_i \alpha_i y_i (x_i - c) = v - s c` enclosed, with ``s`` the
    balance (itself enclosed: its rounding and the product's are carried into the bound)."""
    hi_s, lo_s, err_s = sums.balance
    s = float(hi_s[0] + lo_s[0])
    off = float(up(float(err_s[0]) + 2.0 * U * abs(s)))  # |s - s_exact|
    product = s * centre
    err = up(np.abs(centre) * off + 2.0 * U * np.abs(product) + TINY)
    shift = (product, np.zeros_like(product), err)
    return DualSums(sums.gain, dd_sub(sums.expansion, shift), sums.balance)


def centred_norm_upper(X: np.ndarray, centre: np.ndarray) -> float:
    r"""An upper bound on :math:`\max_i \|x_i - c\|` for dense ``X``: each difference is
    rounded once, :math:`fl(x - c) = (x - c)(1 + \delta)`, so the exact norm is at most the
    rounded one over :math:`1 - u` (:func:`row_norm_upper` bounds the latter), in blocks of
    rows."""
    step = max(1, 2**22 // max(1, X.shape[1]))
    top = 0.0
    for start in range(0, X.shape[0], step):
        top = max(top, row_norm_upper(X[start : start + step] - centre))
    return float(up(top * (1.0 + 2.0 * U)))


def binary_dual_lower(
    f: BinaryRows, alpha: np.ndarray, upper: float, pairs: Any = None, sums: DualSums | None = None
) -> tuple[float, np.ndarray, float]:
    r"""A lower bound on ``P*`` from ``alpha`` (clipped into the exact box), that point, and
    its ``D`` estimated (:func:`dual_estimate`); ``sums`` the :class:`DualSums` of that
    clipped point when the caller has them (:func:`binary_dual_sums` of
    :func:`binary_feasible` of ``alpha``, the same ``pairs``).

    .. math::

        D(\alpha) - B |\textstyle\sum_i \alpha_i y_i| = \sum_i m_i\alpha_i
        - \tfrac12\|\textstyle\sum_i \alpha_i y_i x_i\|^2 - B|\sum_i \alpha_i y_i|,

    with the balance term only with a free intercept (``B`` from :func:`intercept_bound` with
    ``upper``, a rigorous upper bound on ``P*``).

    Centred features. For any ``c`` the Lagrangian reads the same in ``x_i - c`` with the
    intercept ``b' = b + w.c``, so the bound holds with the expansion over ``x_i - c``
    (:func:`centred_sums`) and ``B`` over :math:`\max_i \|x_i - c\|`
    (:func:`centred_norm_upper`). With ``c`` the features' mean (dense data) the balance
    term no longer grows with a shift of the features: on features shifted by ``1e5`` it
    fell from ``4e-9`` to ``1e-13`` of ``P`` (``B`` from ``6e8`` to ``1e4``).
    """
    a = binary_feasible(f, alpha)
    if sums is None:
        sums = binary_dual_sums(f, a, pairs)
    if not f.fit_intercept:
        return dual_lower_value(sums, None), a, dual_estimate(sums)
    norm = None
    if pairs is None and isinstance(f.X, np.ndarray) and f.X.size:
        centre = np.mean(f.X, axis=0)
        centred = centred_sums(sums, centre)
        if np.all(np.isfinite(centred.expansion[2])):
            sums, norm = centred, centred_norm_upper(f.X, centre)
    norms = getattr(f, "row_sq_norms", None)
    if norm is None and norms is not None and pairs is None:
        # the squares the formulation keeps (the solver's ascent summed them): the same floats
        norm = row_norm_upper(f.X, norms())
    bound = intercept_bound(f.margin, f.X, upper, norm)
    return dual_lower_value(sums, bound), a, dual_estimate(sums, bound)


# ----------------------------------------------------------------------------- multiclass
def multiclass_scores(f: MulticlassRows, W: np.ndarray) -> list[tuple]:
    """Scores ``S[:, c] = X w_c`` enclosed, one ``(hi, lo, err)`` per class."""
    XT = f.X.T
    return [enclosed_product(XT, W[c]) for c in range(f.n_classes)]


def multiclass_slack_upper(f: MulticlassRows, W: np.ndarray) -> np.ndarray:
    r"""Upper bounds on the exact slacks of ``W``: ``xi_i = max_c max(0, 1 - (w_{y_i} -
    w_c).x_i)`` (Crammer-Singer) or their sum over ``c`` (Weston-Watkins), one per example (of
    the problem or a row block with ``X``, ``y``, ``n_classes``, ``crammer_singer``)."""
    return _multiclass_slacks(f, W)[0]


def _multiclass_slacks(f: MulticlassRows, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`multiclass_slack_upper` and the slacks from the same enclosed scores without
    their error bounds (estimates)."""
    worst, middle = multiclass_hinge_upper(f, W)
    if f.crammer_singer:
        return worst.max(axis=1), middle.max(axis=1)
    return upper_row_sums(worst), middle.sum(axis=1)


def multiclass_hinge_upper(f: MulticlassRows, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Upper bounds on the exact hinge terms ``max(0, 1 - (w_{y_i} - w_c).x_i)``, shape
    ``(n, k)`` (0 at ``c = y_i``), and the terms from the same enclosed scores without their
    error bounds (estimates)."""
    S = multiclass_scores(f, W)
    n = f.X.shape[0]
    rows = np.arange(n)
    own = tuple(np.stack([s[t] for s in S], axis=1)[rows, f.y] for t in range(3))
    worst = np.zeros((n, f.n_classes))
    middle = np.zeros((n, f.n_classes))
    for c in range(f.n_classes):
        r, e = shortfall(np.ones(n), np.ones(n), dd_sub(own, S[c]))
        worst[:, c] = np.where(f.y == c, 0.0, np.maximum(0.0, up(r + e)))
        middle[:, c] = np.where(f.y == c, 0.0, np.maximum(0.0, r))
    return worst, middle


def _penalised(W: np.ndarray, free_intercept: bool) -> np.ndarray:
    """The columns of ``W`` the penalty acts on: all but free intercepts' (the last)."""
    return W[:, :-1] if free_intercept else W


def _regulariser(P: np.ndarray, penalty: Any) -> tuple[float, float]:
    """An upper bound on the exact penalty of the float weights ``P`` and its estimate (L2
    when ``penalty`` is ``None``; :func:`penalty_upper`)."""
    if penalty is None:
        return float(up(0.5 * upper_sum(P * P))), 0.5 * fsum(P * P)
    return penalty_upper(penalty, P), float(penalty.value(np.ravel(P)))


def multiclass_primal_upper(
    f: MulticlassRows, W: np.ndarray, free_intercept: bool = False, penalty: Any = None
) -> tuple[float, float]:
    r"""An upper bound on the exact ``P(W) = R(W) + C sum_i s_i xi_i`` with
    ``xi_i = max_c max(0, 1 - (w_{y_i} - w_c).x_i)`` (Crammer-Singer) or the sum over ``c``
    (Weston-Watkins), from :func:`multiclass_slack_upper`, and ``P`` estimated from the same
    enclosed scores without their error bounds. ``R`` is ``penalty`` (a piece of
    :mod:`qpsvm.formulations.pieces.penalties`; ``None``: :math:`\tfrac12\|W\|_F^2`);
    ``free_intercept``: the last column of ``W`` (free intercepts on ``X``'s constant column)
    is not penalised."""
    slack, middle = _multiclass_slacks(f, W)
    return _primal_from_slacks(f, _penalised(W, free_intercept), slack, middle, penalty)


def _primal_from_slacks(
    f: MulticlassRows, P: np.ndarray, terms: np.ndarray, middle: np.ndarray, penalty: Any
) -> tuple[float, float]:
    """The upper bound ``R(P) + C sum_i s_i terms_i`` (each rounded product and the sum covered)
    and its estimate from ``middle``."""
    reg, reg_estimate = _regulariser(P, penalty)
    cost = float(up(f.C * upper_sum(f.sample_weight * terms) * (1.0 + 2.0 * U)))
    return float(up(reg + cost)), reg_estimate + f.C * fsum(f.sample_weight * middle)


def multiclass_feasible(f: MulticlassRows, alpha: np.ndarray) -> np.ndarray:
    """``alpha`` made exactly dual feasible: ``>= 0``, 0 at ``y_i``, each entry
    (Weston-Watkins) or each row's exact sum (Crammer-Singer) within ``C s_i``."""
    a = np.where(f.mask, np.maximum(np.asarray(alpha, dtype=np.float64), 0.0), 0.0)
    cap = _capped(f.C, f.sample_weight)
    if not f.crammer_singer:
        return np.minimum(a, cap[:, None])
    total = upper_row_sums(a)
    over = total > cap
    if np.any(over):
        # scale the rows down, rounding the factor down and checking again
        a[over] *= down(down(cap[over] / total[over]) * (1.0 - 4.0 * gamma(f.n_classes)))[:, None]
        a[over] = np.maximum(a[over], 0.0)
        a[upper_row_sums(a) > cap] = 0.0
    return a


def multiclass_expansion(f: MulticlassRows, a: np.ndarray) -> list[tuple]:
    r"""``W = A^T X`` enclosed per class: :math:`w_c = \sum_{i,c'} \alpha_{ic'}([y_i = c] -
    [c' = c]) x_i`, every coefficient exact, by one Dot2 pass per class over its nonzero terms
    only: :math:`\alpha_{ic'} x_i` for the examples of class ``c`` and :math:`-\alpha_{ic} x_i`
    for the others (most multipliers are 0 near an optimum; :math:`\alpha_{iy_i} = 0`)."""
    out = []
    for c in range(f.n_classes):
        own, other = np.nonzero(np.where((f.y == c)[:, None], a, 0.0))
        against = np.flatnonzero(np.where(f.y == c, 0.0, a[:, c]))
        rows = np.concatenate([own, against])
        if rows.size:
            coef = np.concatenate([a[own, other], -a[against, c]])
            out.append(enclosed_product(f.X[rows], coef))
        else:
            z = np.zeros(f.n_features)
            out.append((z, z.copy(), z.copy()))
    return out


def multiclass_dual_sums(f: MulticlassRows, a: np.ndarray) -> DualSums:
    r""":class:`DualSums` of an exactly feasible ``a`` (:func:`multiclass_feasible`) over the
    examples of ``f`` (a problem or a row block): ``gain`` bounds :math:`\sum_{ic} \alpha_{ic}`
    from below, ``expansion`` encloses ``A^T X`` as a ``(k, d)`` array; no balance (zero)."""
    hi, lo, err = (np.stack(parts) for parts in zip(*multiclass_expansion(f, a), strict=True))
    zero = np.zeros(1)
    return DualSums(gain=lower_sum(a), expansion=(hi, lo, err), balance=(zero, zero, zero))


def multiclass_dual_lower(
    f: MulticlassRows,
    alpha: np.ndarray,
    spread: float | None = None,
    penalty: Any = None,
) -> tuple[float, np.ndarray, float]:
    r"""A lower bound on ``P*``: ``D(alpha) = sum alpha - R^*(A^T X)`` at ``alpha`` made
    exactly feasible (:func:`multiclass_feasible`; scaled into the L1 penalty's domain), that
    point and its ``D`` estimated. ``R^*`` is ``penalty``'s conjugate
    (:func:`conjugate_upper`; ``None``: :math:`\tfrac12\|\cdot\|_F^2`); with free intercepts
    (``spread`` from :func:`multiclass_intercept_spread`) over the penalised columns, less the
    balance residual's effect (:func:`balanced_lower`)."""
    return _shrunk_lower(f, multiclass_feasible(f, alpha), spread, penalty, None)


def _shrunk_lower(
    f: MulticlassRows, a: np.ndarray, spread: float | None, penalty: Any, quadratic: Any
) -> tuple[float, np.ndarray, float]:
    """:func:`balanced_lower` of ``a``, scaled down (which keeps it feasible) until the L1
    penalty's domain is proven; ``quadratic(a)`` gives the squared hinge's upper bound on
    its quadratic terms and their estimate (``None``: the hinge, none)."""
    for _ in range(8):
        sums = multiclass_dual_sums(f, a)
        quad, quad_estimate = (0.0, 0.0) if quadratic is None else quadratic(a)
        sums.gain = float(down(sums.gain - quad))
        value, estimate, shrink = balanced_lower(sums, spread, penalty)
        if shrink == 1.0:
            return value, a, estimate + quad - quad_estimate
        a = a * shrink
    return -math.inf, a, -math.inf


def multiclass_intercept_spread(f: MulticlassRows, upper: float, penalty: Any = None) -> float:
    r"""An upper bound on :math:`\max_c b^*_c - \min_c b^*_c` for some optimal free intercepts
    (the problem on ``X`` whose last column is the constant 1, its weights unpenalised):
    ``(k - 1) (1 + 2 M max_i ||x_i||)`` with ``M >= ||W*||_F`` from any upper bound ``U`` on
    ``P*`` (:func:`weight_norm_bound`: ``sqrt(2U)`` for the L2 penalty, ``penalty=None``).

    Proof. Let ``G = 1 + 2 M max_i ||x_i||``. Suppose the sorted ``b*`` have a gap ``g > G``
    between the classes above, ``T``, and below, ``L``. Every score ``w_c.x_i + b_c`` of a
    class in ``T`` then exceeds every one of a class in ``L`` by more than 1. An example of a
    class in ``T`` meets its constraints against ``L`` with margin ``> 1``: their multipliers
    are 0. An example of a class in ``L`` with weight ``s_i > 0`` violates its constraints
    against ``T``, so its multipliers there are positive (the hinge's ``C s_i`` in total on its
    largest violation, which lies in ``T``, or ``2 C s_i xi`` for the squared hinge). Summing
    the balance ``sum_i A_ic = 0`` over ``c in T`` leaves ``-sum_{y_i in L} sum_{c in T}
    alpha_ic = 0``: a contradiction. If no example of ``L`` has a positive weight, raising
    ``b*`` on ``L`` until ``g = G`` changes no term of ``P``, so it stays optimal. Either way
    some optimal ``b*`` has every gap ``<= G``, and ``k - 1`` gaps.
    """
    norm = weight_norm_bound(penalty, upper) if penalty is not None else math.inf
    if penalty is None and math.isfinite(upper):
        norm = float(up(_sqrt_up(2.0 * upper)))
    if not math.isfinite(norm):
        return math.inf
    gap = float(up(1.0 + up(2.0 * float(up(norm * row_norm_upper(f.X))))))
    return float(up((f.n_classes - 1) * gap))


def balanced_lower(
    sums: DualSums, spread: float | None, penalty: Any = None
) -> tuple[float, float, float]:
    r"""The lower bound ``gain - R^*(v)`` on ``P*`` from :class:`DualSums`, its estimate, and
    ``1.0``; or ``(-inf, -inf, t)`` when ``v`` is not proven in the L1 penalty's domain (scale
    the multipliers by ``t``, :func:`conjugate_upper`).

    With free intercepts (``spread`` not ``None``) the expansion's last column is the balance
    ``r_c = sum_i A_ic`` (the constant column 1 of ``X``), not penalised. With ``b`` fixed at
    an optimal ``b*`` the problem keeps its optimum and its dual loses the balance, so
    :math:`P^* \ge D(\alpha) - \sum_c b^*_c r_c`. The ``r_c`` of an exact ``alpha`` sum to 0
    exactly, so any common shift ``t`` may be subtracted from ``b*``: with ``t`` the middle of
    its range, :math:`|\sum_c (b^*_c - t) r_c| \le \tfrac12\,\mathrm{spread}\,\|r\|_1`
    (``spread`` from :func:`multiclass_intercept_spread`; ``||r||_1`` bounded above from its
    enclosure).
    """
    hi, lo, err = sums.expansion
    rest = None
    if spread is not None:
        rest = (hi[:, -1] + lo[:, -1], err[:, -1])
        hi, lo, err = hi[:, :-1], lo[:, :-1], err[:, :-1]
    if penalty is None:
        conjugate, shrink = float(up(0.5 * norm2_upper(hi, lo, err))), 1.0
    else:
        conjugate, shrink = conjugate_upper(penalty, (hi, lo, err))
    if shrink != 1.0:
        return -math.inf, -math.inf, shrink
    value = float(down(sums.gain - conjugate))
    v = np.asarray(hi + lo)
    estimate = sums.gain - (
        0.5 * fsum(v * v) if penalty is None else float(penalty.conjugate(np.ravel(v)))
    )
    if rest is not None:
        off = upper_sum(up(np.abs(rest[0]) * (1.0 + 2.0 * U) + rest[1]))
        if off > 0.0:
            half = float(up(0.5 * spread))
            value = float(down(value - float(up(half * off)))) if half < math.inf else -math.inf
        if math.isfinite(spread):
            estimate -= 0.5 * spread * float(np.sum(np.abs(rest[0])))
    return value, estimate, 1.0


def squared_multiclass_primal_upper(
    f: MulticlassRows, W: np.ndarray, free_intercept: bool = False, penalty: Any = None
) -> tuple[float, float]:
    r"""An upper bound on the exact ``P(W) = R(W) + C sum_i s_i loss_i`` of the squared hinge:
    ``loss_i = xi_i^2`` with ``xi_i = max_c max(0, 1 - (w_{y_i} - w_c).x_i)`` (Crammer-Singer)
    or ``sum_c xi_ic^2`` (Weston-Watkins), from :func:`multiclass_hinge_upper` (each square
    rounded up), and its estimate (``free_intercept`` and ``penalty`` as in
    :func:`multiclass_primal_upper`)."""
    worst, middle = multiclass_hinge_upper(f, W)
    if f.crammer_singer:
        top = worst.max(axis=1)
        terms, estimate = up(top * top), middle.max(axis=1) ** 2
    else:
        terms = upper_row_sums(up(worst * worst))
        estimate = (middle * middle).sum(axis=1)
    return _primal_from_slacks(f, _penalised(W, free_intercept), terms, estimate, penalty)


def squared_multiclass_dual_lower(
    f: MulticlassRows,
    alpha: np.ndarray,
    spread: float | None = None,
    penalty: Any = None,
) -> tuple[float, np.ndarray, float]:
    r"""A lower bound on ``P*`` of the squared hinge from ``alpha`` made exactly feasible
    (``>= 0``, 0 at ``y_i`` and on examples of weight 0; no cap): ``D(alpha) = sum alpha -
    sum_i (sum_c alpha_ic)^2 / (4 C s_i) - R^*(A^T X)`` (Crammer-Singer) or with
    ``sum_c alpha_ic^2 / (4 C s_i)`` (Weston-Watkins), the quadratic terms bounded above with
    ``C s_i`` bounded below (:func:`_capped`); the point; and ``D`` estimated (``spread`` and
    ``penalty`` as in :func:`multiclass_dual_lower`)."""
    a = np.where(f.mask, np.maximum(np.asarray(alpha, dtype=np.float64), 0.0), 0.0)
    cap = _capped(f.C, f.sample_weight)
    live = cap > 0.0
    a[~live] = 0.0

    def quadratic(a: np.ndarray) -> tuple[float, float]:
        if f.crammer_singer:
            total = upper_row_sums(a[live])
            quad = up(up(total * total) / (4.0 * cap[live]))
        else:
            quad = up(up(a[live] * a[live]) / (4.0 * cap[live][:, None]))
        return upper_sum(quad), float(fsum(np.ravel(quad)))

    return _shrunk_lower(f, a, spread, penalty, quadratic)


# ----------------------------------------------------------------------------- rbf kernels
#: ``|r| <= ln(2) / 2`` (plus the rounding of ``x / ln 2``) after the exponential's reduction.
_REDUCED = 0.3466
#: A float above ``ln 2`` (``0.693147180559945309...``; checked in exact arithmetic by the tests).
_LN2_UP = 0.6931471805599454
#: A float above ``1/e = 0.367879441171442321...`` (likewise), the largest value of ``-k ln k``.
_INV_E_UP = 0.36787944117144234
#: The float of ``1/e``, where ``-k ln k`` turns.
_INV_E = 1.0 / math.e
#: The largest float, where ``down`` takes ``-inf``.
_FLOAT_MAX = float(np.finfo(np.float64).max)
#: Largest exact argument ``gamma ||x_i - x_j||^2`` of a value the exponential does not flush
#: to (nearly) 0: it clamps its argument at ``-746``, and ``e^{-747}`` is below ``2^{-1073}``.
_ARG_MAX = 747.0


def _rbf_rounding(X: Any) -> tuple[int, np.ndarray]:
    r"""The number ``p`` of terms in a squared distance :math:`\sum_k (x_{ik} - x_{jk})^2` as
    :func:`qpsvm.kernels.kernel_row` sums it (the features; for sparse rows the union of two
    rows' nonzeros, at most twice the most in a row) and upper bounds on the exact
    :math:`\|x_i\|^2` (each computed one within :math:`\gamma_{p+2}` of itself)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        p = 2 * int(np.max(np.diff(X.indptr), initial=0))
        sq = np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
    else:
        p = X.shape[1]
        sq = np.einsum("ij,ij->i", X, X)
    return p, up(sq * (1.0 + 2.0 * gamma(p + 2)))


#: Degree of the compiled exponential's Taylor polynomial (:func:`qpsvm.kernels.exp_nonpositive`).
_DEGREE = 13


def _horner_roundings(k: int) -> int:
    """Roundings the term of degree ``k`` of :func:`qpsvm.kernels.exp_nonpositive`'s polynomial
    passes (see :func:`_exp_error`)."""
    exact = k <= 2  # 1/0!, 1/1!, 1/2! are floats; 1/k! for k >= 3 is rounded
    if k == _DEGREE:
        return 2 * k + 1
    return 2 * k + 1 + (0 if exact else 1)


@cache  # a constant of the compiled exponential: evaluated once
def _exp_error() -> float:
    r""":math:`|\eta|`, the relative error of the compiled exponential on a correctly reduced
    argument (see :func:`rbf_value_error`).

    :func:`qpsvm.kernels.exp_nonpositive` evaluates :math:`p(r) = \sum_{k=0}^{13} c_k r^k`,
    :math:`c_k = 1/k!`, by Horner's rule from the coefficients :math:`\hat c_k` as floats.
    Horner's rule gives :math:`\hat p = \sum_k \hat c_k r^k (1 + \theta_{n_k})` (Higham, ASNA
    (5.3)): the coefficient of degree ``k < 13`` passes one addition, then a multiplication
    and an addition per lower degree (``2k + 1`` roundings), ``c_13`` a multiplication and an
    addition per degree (26); a fused multiply-add rounds once where it replaces two. The
    coefficients :math:`c_0 = c_1 = 1` and :math:`c_2 = 1/2` are floats, the others rounded
    once (:math:`|\hat c_k - c_k| \le u c_k`), so :math:`n_k = 2k + 1` for ``k <= 2``,
    ``2k + 2`` for ``3 <= k < 13`` and 27 for ``k = 13``, and
    :math:`|\hat p - p| \le \sum_k \gamma_{n_k} |r|^k / k!`. Against
    :math:`e^r \ge e^{-a}` (:math:`|r| \le a =` ``_REDUCED``) and the truncation
    :math:`\sum_{k > 13} |r|^k/k! \le a^{14} e^a / 14! < 10^{-17} < u\,e^{-a}`,

    .. math::

        |\eta| \le e^{a} \sum_{k=0}^{13} \gamma_{n_k} \frac{a^k}{k!} + u
        \approx 3.4u + u,

    every operation rounded up. The terms of the coefficients of degree ``k`` weigh
    :math:`a^k/k!`, so the roundings of the high degrees, which Higham's uniform bound
    :math:`\gamma_{28} \sum_k |c_k| |r|^k` counts 28 times, hardly count (that bound is
    ``57u``)."""
    total, power = 0.0, 1.0
    for k in range(_DEGREE + 1):
        # a^k and k! (exact below 2^53) each step rounded to nearest, then moved up
        term = float(up(power / math.factorial(k)))
        total = float(up(total + float(up(float(up(gamma(_horner_roundings(k)))) * term))))
        power = float(up(power * _REDUCED))
    return float(up(float(up(total * float(up(math.exp(_REDUCED) * (1.0 + 4.0 * U))))) + U))


def rbf_value_error(gamma_: float, X: Any) -> float:
    r"""``rho`` with :math:`|\hat K_{ij} - K_{ij}| \le \rho K_{ij} + 2^{-1073}` for every rbf
    value qpsvm computes, :math:`K_{ij} = e^{-t_{ij}}`, :math:`t_{ij} = \gamma \|x_i - x_j\|^2`
    (the compiled rows, :func:`qpsvm.kernels.kernel_row`, and
    :meth:`qpsvm.kernels.Kernel.__call__`, which share their code, or its numpy form before it
    is compiled, each operation rounded apart).

    Both sum ``d = sum_k (x_ik - x_jk)^2`` term by term (``p`` terms, :func:`_rbf_rounding`):
    each term is a difference and a square, three roundings at most, and every term is
    nonnegative, so in any order, with or without fused multiply-adds,
    :math:`|\hat d - d| \le \gamma_{p+2}\, d` (Higham, ASNA Lemma 3.1: each term carries at
    most ``p + 2`` factors :math:`1 + \delta`). Then ``x = fl(-gamma d)``:
    :math:`|\hat x + t| \le \gamma |\hat d - d| + u \gamma \hat d \le a\, t` with
    :math:`a = \gamma_{p+2} + u (1 + \gamma_{p+2})`: an error relative to the argument, whatever
    the size of the rows (the form :math:`\|x_i\|^2 + \|x_j\|^2 - 2 x_i \cdot x_j` would be
    wrong by :math:`\gamma_p` of the squared norms). The exponential
    (:func:`qpsvm.kernels.exp_nonpositive`) reduces ``x = k ln2 + r`` with ``k = round(x / ln
    2)``, ``|k| <= 1076``, ``k ln2_hi`` exact (32 significant bits) and :math:`|r| \le 0.3466`;
    ``r = (x - k ln2_hi) - k ln2_lo`` rounds at most three times, each within ``u`` of a
    result below ``0.3467`` or of :math:`|k\,\mathrm{ln2\_lo}| < 2.1 \cdot 10^{-7}`, and the
    split misses :math:`\ln 2` by below :math:`10^{-25}` per unit of ``k``, so ``r`` is within
    ``u`` of :math:`x - k \ln 2`; it evaluates Taylor's polynomial of degree 13 by Horner's rule
    (:func:`_exp_error`, truncation below ``1e-17``) and scales by ``2^k`` exactly (down to
    subnormal results: the absolute ``2^{-1073}``; an argument below ``-746`` is clamped there,
    and every pair with :math:`t > 747` has both values below ``2^{-1073}``). So
    :math:`\hat K = K e^{\delta} (1 + \eta)` with :math:`|\delta| \le a t + u` and
    :math:`|\eta|` of :func:`_exp_error`; with :math:`\bar t = \min(747, 4 \gamma R^2)`
    (``R`` the largest row norm, :math:`\|x_i - x_j\| \le 2R`),
    :math:`\bar\delta = a \bar t + u` and :math:`\rho = (1 + |\eta|) e^{\bar\delta} - 1`.
    :func:`rbf_pair_error` bounds each pair by its own distance.
    """
    return _rbf_global(gamma_, *_rbf_rounding(X))[0]


def _argument_slope(p: int) -> float:
    r""":math:`a = \gamma_{p+2} + u(1 + \gamma_{p+2})`, rounded up: the argument's error per
    unit of itself (:func:`rbf_value_error`)."""
    g_p = gamma(p + 2)
    return float(up((g_p + U * (1.0 + g_p)) * (1.0 + 4.0 * U)))


def _rbf_global(gamma_: float, p: int, sq: np.ndarray) -> tuple[float, float]:
    """``rho`` of :func:`rbf_value_error` and its bound :math:`\\bar\\delta` on ``|delta|``,
    from the squared row norms bounded above."""
    R2 = float(up(np.max(sq, initial=0.0)))
    t_max = min(_ARG_MAX, float(up(4.0 * gamma_ * R2 * (1.0 + 4.0 * U))))
    delta = float(up(_argument_slope(p) * t_max * (1.0 + 2.0 * U) + U))
    eta = _exp_error()
    return float(up((1.0 + eta) * math.expm1(delta) + eta) * (1.0 + 4.0 * U)), delta


@dataclass(frozen=True)
class RbfError:
    r"""Proven bounds on the error of every computed rbf value, per pair of rows:

    .. math::

        |\hat K_{ij} - K_{ij}| \le \min(\rho,\ \beta + \sigma t_{ij}) K_{ij} + 2^{-1073},
        \qquad t_{ij} = \gamma \|x_i - x_j\|^2 \le 2\gamma (q_i + q_j),\quad
        q_i \ge \|x_i\|^2

    (:func:`rbf_pair_error`): the exponential's own error :math:`\beta` and the argument's,
    relative to the argument. Near pairs, which carry most of a score, get a bound near
    :math:`\beta`, several times below the global ``rho`` of the largest distance, and a common
    offset of the features changes nothing.

    Attributes
    ----------
    rho : float
        The global bound (:func:`rbf_value_error`).
    base, distance_slope : float
        :math:`\beta` and :math:`\sigma`.
    slope : float
        :math:`2\gamma\sigma`, the slope per unit of :math:`q_i + q_j`.
    sqnorm : numpy.ndarray
        :math:`q_i`, upper bounds on the exact squared row norms.
    """

    rho: float
    base: float
    distance_slope: float
    slope: float
    sqnorm: np.ndarray


def rbf_pair_error(gamma_: float, X: Any) -> RbfError:
    r"""The per-pair bound :class:`RbfError` on the rbf values of the rows of ``X``.

    With the notation of :func:`rbf_value_error`, for the pair ``(i, j)``:
    :math:`|\delta_{ij}| \le a t_{ij} + u \le \bar\delta`. Since :math:`(e^s - 1)/s` grows with
    ``s``, :math:`e^{|\delta_{ij}|} - 1 \le |\delta_{ij}|\, c` with
    :math:`c = (e^{\bar\delta} - 1)/\bar\delta`, and :math:`\rho_{ij} = \eta + (1 + \eta)
    (e^{|\delta_{ij}|} - 1)` is affine in :math:`t_{ij}`: :math:`\beta = \eta + (1 + \eta) c u`
    and :math:`\sigma = (1 + \eta) c a`, every operation rounded up. Then
    :math:`t_{ij} \le \gamma (\|x_i\| + \|x_j\|)^2 \le 2 \gamma (q_i + q_j)` gives the slope per
    unit of :math:`q_i + q_j`.
    """
    p, sq = _rbf_rounding(X)
    rho, delta = _rbf_global(gamma_, p, sq)
    eta = _exp_error()
    growth = float(up(up(math.expm1(delta) / delta) * (1.0 + 4.0 * U)))
    scale = float(up((1.0 + eta) * growth * (1.0 + 2.0 * U)))
    base = float(up((eta + scale * U) * (1.0 + 2.0 * U)))
    sigma = float(up(scale * _argument_slope(p) * (1.0 + 2.0 * U)))
    slope = float(up(2.0 * gamma_ * sigma * (1.0 + 2.0 * U)))
    return RbfError(rho=rho, base=base, distance_slope=sigma, slope=slope, sqnorm=sq)


def _neg_log_upper(k: np.ndarray) -> np.ndarray:
    r"""Upper bounds on :math:`-\ln k` for floats ``0 < k <= 1``, without a logarithm whose
    error is unproven: :math:`k = m 2^e` with :math:`m \in [1, 2)` (exact), and
    :math:`\ln m = 2\,\mathrm{artanh}\, s \ge 2s + 2s^3/3` with :math:`s = (m - 1)/(m + 1)
    \in [0, 1/3)`, so :math:`-\ln k \le -e \ln 2 - 2s(1 + s^2/3)` (too large by below
    ``0.002``), ``s`` and the subtrahend rounded down, the rest up."""
    frac, exp = np.frexp(k)
    m, e = 2.0 * frac, exp - 1.0  # exact
    s = down(down(m - 1.0) / up(m + 1.0))
    sub = down(down(2.0 * s) * down(1.0 + down(down(s * s) / 3.0)))
    return np.maximum(up(up(-e * _LN2_UP) - sub), 0.0)


def _entropy_upper(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    r"""Upper bounds on :math:`\max_{k \in [lo, hi]} -k \ln k` for ``0 <= lo <= hi <= 1``:
    the function rises to :math:`1/e` at :math:`k = 1/e` and falls after, so the maximum is at
    the end nearer :math:`1/e`, or :math:`1/e` inside, and never above :math:`1/e`."""
    k = np.where(hi <= _INV_E, hi, np.where(lo >= _INV_E, lo, 0.5))
    at = np.where(k > 0.0, up(k * _neg_log_upper(np.where(k > 0.0, k, 1.0))), 0.0)
    inside = (lo < _INV_E) & (hi > _INV_E)
    return np.minimum(np.where(inside, _INV_E_UP, at), _INV_E_UP)


def rbf_score_error(
    bound: RbfError,
    alpha: np.ndarray,
    magnitude: np.ndarray,
    weighted: np.ndarray,
    scores: np.ndarray,
) -> np.ndarray:
    r"""``e`` with :math:`|\hat g_i - g_i| \le e_i` for scores ``g = K (alpha y)`` summed in
    twice the working precision (Dot2, :func:`qpsvm._numerics.tdot2`) over the ``m`` nonzero
    ``alpha_j`` from rbf values within ``bound`` (:class:`RbfError`), with ``magnitude`` the
    computed :math:`\hat M = \hat K |\alpha|` and ``weighted`` the computed
    :math:`\hat N = \hat K (|\alpha| q)`:

    .. math::

        e_i = u |\hat g_i| + \frac{\gamma_m^2 \hat M_i + \min\big(\rho \hat M_i,\
        \beta \hat M_i + \sigma \min(2\gamma(q_i \hat M_i + \hat N_i),\ J_i)\big)}
        {(1 - \rho)(1 - \gamma_m)} + 2 \cdot 2^{-1073} \|\alpha\|_1

    (Dot2's bound :math:`u |g| + \gamma_m^2 \sum_j |\alpha_j \hat K_{ij}|`, Ogita, Rump and
    Oishi 2005; the sums of nonnegative terms ``M`` and ``N`` within :math:`\gamma_m` of their
    computed values, each exact value at most :math:`\rho_{ij} K_{ij} + 2^{-1073}` from the
    rounded one, :math:`K_{ij} \le (\hat K_{ij} + 2^{-1073}) / (1 - \rho)`). The pairs'
    :math:`\sum_j |\alpha_j| \rho_{ij} K_{ij} \le \beta M_i + \sigma S_i`,
    :math:`S_i = \sum_j |\alpha_j| K_{ij} t_{ij}`, is bounded two ways: by
    :math:`t_{ij} \le 2\gamma(q_i + q_j)`, and, since :math:`K_{ij} t_{ij} = \varphi(K_{ij})`
    with :math:`\varphi(k) = -k \ln k` concave, by Jensen's inequality
    :math:`S_i \le W \varphi(M_i / W)` (:math:`W = \|\alpha\|_1`), with ``M_i / W`` enclosed
    from :math:`\hat M_i` and :math:`\varphi`'s largest value over the enclosure bounded above
    (:func:`_entropy_upper`): at most :math:`W/e` whatever the data's offset, and near
    :math:`\sum_j |\alpha_j| K_{ij} t_{ij}` where the values seen from ``i`` are alike.
    A plain sum's :math:`\gamma_m` would put the floor of the gap above ``1e-9`` at ``C = 100``
    (measured, n = 2000), and so would the global ``rho`` alone. Evaluated entry by entry in
    one compiled pass (:func:`_rbf_error_pass`, the same floats as the numpy equivalent below
    it, which a cold process's first calls take: :data:`RBF_ERROR_ELEMENTS`)."""
    m = int(np.count_nonzero(alpha))
    g_m = gamma(m + 1)
    rho = bound.rho
    shrink = float(up(1.0 / ((1.0 - rho) * (1.0 - g_m)) * (1.0 + 4.0 * U)))
    a = np.abs(alpha)
    W = fsum(a)
    W_hi = upper_sum(a, W)
    W_lo = lower_sum(a, W)
    tail = float(up(W_hi * 2.0**-1072))
    if not uncompiled(_rbf_error_pass, magnitude.size, RBF_ERROR_ELEMENTS):
        sizes = np.array([g_m, rho, shrink, tail, W_hi, W_lo])
        slopes = np.array([bound.base, bound.distance_slope, bound.slope])
        out = np.empty(magnitude.size)
        arrays = [np.ascontiguousarray(x) for x in (bound.sqnorm, magnitude, weighted, scores)]
        _rbf_error_pass(sizes, slopes, *arrays, magnitude.size >= _SUCC_SIZE, out)
        return out
    norms = up((bound.slope * bound.sqnorm) * magnitude + bound.slope * weighted)
    if W_lo > 0.0:
        # M_i exact within [M^ (1 - g_m) - tail, M^ shrink + tail] / W (W exact in [W_lo, W_hi])
        low = np.maximum(down(down(down(magnitude * (1.0 - g_m)) - tail) / (1.0 + rho)), 0.0)
        high = up(up(magnitude * shrink) + tail)
        ratio_lo = np.minimum(down(low / W_hi), 1.0)
        ratio_hi = np.minimum(up(high / W_lo), 1.0)
        spread = up(bound.distance_slope * up(W_hi * _entropy_upper(ratio_lo, ratio_hi)))
        norms = np.minimum(norms, spread)
    pair = up(bound.base * magnitude + norms)
    values = np.minimum(rho * magnitude, up(pair * (1.0 + 8.0 * U)))
    total = (g_m * g_m * magnitude + values) * shrink
    return up((U * np.abs(scores) + total) * (1.0 + 4.0 * U) + tail)


#: Entries :func:`rbf_score_error` passes to its numpy equivalent in a process before
#: :func:`_rbf_error_pass` is compiled: its compile (0.56 s CPU after numba's first, load 2.5)
#: at what it saves (the equivalent's some 40 numpy calls over the ``n`` scores, 0.115 ms a
#: call at n = 200 against the pass's 0.035 ms with its Python: 0.4 us an entry there).
RBF_ERROR_ELEMENTS = 2**21


@numba.njit(**CALLEE)
def _up1(x, big):  # pragma: no cover - compiled
    """:func:`~qpsvm._numerics.up` of one entry of an array, ``big`` when the array has
    ``_SUCC_SIZE`` entries or more (then ``_succ``'s operations, in its order)."""
    if not big:
        return next_up(x)
    c = abs(x) * _PHI
    c += _ETA
    c += x
    if c != c and x == -np.inf:
        return -_FLOAT_MAX
    return c


@numba.njit(**CALLEE)
def _down1(x, big):  # pragma: no cover - compiled
    """:func:`~qpsvm._numerics.down` of one entry: the negated :func:`_up1` of ``-x``."""
    return -_up1(-x, big)


@numba.njit(**CALLEE)
def _min1(a, b):  # pragma: no cover - compiled
    """``np.minimum`` of two floats (a ``nan`` wins)."""
    if a != a or b != b:
        return a + b
    return a if a <= b else b


@numba.njit(**ENTRY)
def _rbf_error_pass(
    sizes, slopes, sqnorm, magnitude, weighted, scores, big, out
):  # pragma: no cover - compiled
    """:func:`rbf_score_error`'s arrays in one pass, entry by entry: the same operations in
    the same order as its numpy equivalent (and as :func:`_entropy_upper` and
    :func:`_neg_log_upper`), so the same floats; ``sizes`` holds ``g_m, rho, shrink, tail,
    W_hi, W_lo`` and ``slopes`` the bound's ``beta, sigma`` and slope."""
    g_m, rho, shrink, tail, W_hi, W_lo = sizes[0], sizes[1], sizes[2], sizes[3], sizes[4], sizes[5]
    base, distance_slope, slope = slopes[0], slopes[1], slopes[2]
    for i in range(magnitude.shape[0]):
        mag = magnitude[i]
        norms = _up1((slope * sqnorm[i]) * mag + slope * weighted[i], big)
        if W_lo > 0.0:
            low = _down1(_down1(_down1(mag * (1.0 - g_m), big) - tail, big) / (1.0 + rho), big)
            if low < 0.0:  # np.maximum(low, 0.0): a nan stays
                low = 0.0
            high = _up1(_up1(mag * shrink, big) + tail, big)
            lo = _min1(_down1(low / W_hi, big), 1.0)
            hi = _min1(_up1(high / W_lo, big), 1.0)
            if hi <= _INV_E:
                k = hi
            elif lo >= _INV_E:
                k = lo
            else:
                k = 0.5
            at = 0.0
            if k > 0.0:
                frac, exp = math.frexp(k)
                m, e = 2.0 * frac, exp - 1.0
                s = _down1(_down1(m - 1.0, big) / _up1(m + 1.0, big), big)
                sub = _down1(
                    _down1(2.0 * s, big) * _down1(1.0 + _down1(_down1(s * s, big) / 3.0, big), big),
                    big,
                )
                neg_log = _up1(_up1(-e * _LN2_UP, big) - sub, big)
                if neg_log < 0.0:
                    neg_log = 0.0
                at = _up1(k * neg_log, big)
            entropy = _INV_E_UP if lo < _INV_E and hi > _INV_E else at
            entropy = _min1(entropy, _INV_E_UP)
            spread = _up1(distance_slope * _up1(W_hi * entropy, big), big)
            norms = _min1(norms, spread)
        pair = _up1(base * mag + norms, big)
        values = _min1(rho * mag, _up1(pair * (1.0 + 8.0 * U), big))
        total = (g_m * g_m * mag + values) * shrink
        out[i] = _up1((U * abs(scores[i]) + total) * (1.0 + 4.0 * U) + tail, big)


def dot_upper(a: np.ndarray, b: np.ndarray) -> float:
    """An upper bound on the exact ``a . b`` of floats (signs mixed): the rounded products,
    each within ``u`` of itself, summed by Sum2 (``sum_upper``, whose
    ``2u`` per term covers the products' rounding)."""
    return sum_upper(np.multiply(a, b))


def score_ends(scores: np.ndarray, err: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""The ends of each score's interval :math:`[\hat g_i - e_i, \hat g_i + e_i]`, rounded
    outward: the exact score lies between them."""
    return down(scores - err), up(scores + err)


def worse_end_sum(
    v: np.ndarray, ends: tuple[np.ndarray, np.ndarray], costs: list[np.ndarray]
) -> float:
    r"""An upper bound on :math:`\sum_i \max_{t \in \{t^-_i, t^+_i\}} \big(\tfrac12 v_i t
    + c_i(t)\big)` from the ends ``t^-, t^+`` of the scores' intervals (:func:`score_ends`) and
    upper bounds ``costs`` on each :math:`c_i` there: :math:`\tfrac12 v_i t` (the product of
    two floats) and its sum with the cost rounded upward, the larger end of each term summed
    by Sum2 with its signed error bound (:func:`~qpsvm._numerics.sum_upper`: a term is
    negative where :math:`v_i t < 0`).

    For terms :math:`\varphi_i(t) = \tfrac12 v_i t + c_i(t)` convex in the score ``t`` (a
    convex loss of an affine function of it), the largest value over an interval is at one
    of its ends, so this bounds the largest :math:`\sum_i \varphi_i(g_i)` over scores within
    their intervals: each score's error is paid once, with its term's slope on the worse side
    (:func:`kernel_primal_upper`,
    :func:`~qpsvm.verify.rigorous_composed.composed_kernel_primal_upper`)."""
    terms = [up(up(0.5 * up(v * t)) + c) for t, c in zip(ends, costs, strict=True)]
    return sum_upper(np.maximum(terms[0], terms[1]))


def kernel_primal_upper(
    f: BinaryRows, alpha: np.ndarray, b: float, scores: np.ndarray, err: np.ndarray
) -> float:
    r"""An upper bound on the exact :math:`P = \tfrac12 (\alpha y)^T K (\alpha y) + C \sum_i s_i
    \max(0, m_i - y_i(g_i + b))` with :math:`g = K(\alpha y)`, from scores within ``err``.

    With :math:`v = \alpha y`, :math:`v^T K v = v \cdot g` exactly, so ``P`` is a sum of terms
    each of one exact score,

    .. math::

        P = \sum_i \varphi_i(g_i), \qquad \varphi_i(t) = \tfrac12 v_i t
        + C s_i \max(0, m_i - y_i (t + b)),

    and each :math:`\varphi_i` is convex, so its largest value over the interval
    :math:`[\hat g_i - e_i, \hat g_i + e_i] \ni g_i` (its ends rounded outward) is at one of the
    ends (:func:`worse_end_sum`). Each end's value is bounded above by rounding every
    operation upward (the result to nearest, then the next float up,
    :func:`~qpsvm._numerics.up`), each operand an upper bound where the operation grows with
    it: the shortfall :math:`m_i - y_i(t + b)` enclosed (:func:`shortfall`, labels
    :math:`\pm 1`) and moved to its upper end, its positive part times an upper bound on
    :math:`C s_i`, plus :math:`\tfrac12 v_i t`.

    The score's error enters once, with the term's slope on each side: a free sample on its
    margin costs :math:`\max(\tfrac12\alpha_i, C s_i - \tfrac12\alpha_i)\, e_i` and one at its
    bound :math:`\tfrac12 C s_i e_i`, where bounding :math:`v^T K v` and the slacks apart costs
    :math:`(\tfrac12\alpha_i + C s_i)\, e_i` on both (measured: the rbf floor at n = 8000,
    gamma = 0.005, C = 100 drops from 1.22e-9 to 0.70e-9 of ``P``). For the hard margin
    (``C = inf``) the bound holds where every shortfall is proven at most 0, else it is ``inf``.
    With a finite ``C`` the terms are one compiled pass (:func:`_primal_terms`, the same floats
    as the numpy equivalent below it, which a cold process's first calls take:
    :data:`PRIMAL_TERMS_ELEMENTS`).
    """
    finite = math.isfinite(f.C)
    if finite and not uncompiled(_primal_terms, scores.size, PRIMAL_TERMS_ELEMENTS):
        data = (scores, err, f.margin, f.y, alpha, f.sample_weight)
        terms = np.empty(scores.size)
        _primal_terms(
            *(np.ascontiguousarray(x, dtype=np.float64) for x in data),
            float(f.C),
            float(b),
            scores.size >= _SUCC_SIZE,
            terms,
        )
        return sum_upper(terms)
    zero = np.zeros_like(scores)
    weight = up(f.C * f.sample_weight) if finite else zero
    ends = score_ends(scores, err)
    shorts = [up(np.add(*shortfall(f.margin, f.y, (t, zero, zero), b))) for t in ends]
    costs = [up(weight * np.maximum(0.0, short)) for short in shorts]
    bound = worse_end_sum(alpha * f.y, ends, costs)
    worst = max(float(np.max(short, initial=-math.inf)) for short in shorts)
    return bound if finite or worst <= 0.0 else math.inf


#: Scores :func:`kernel_primal_upper` passes to its numpy equivalent in a process before
#: :func:`_primal_terms` is compiled: its compile (0.46 s CPU after numba's first, load 1.5)
#: at what it saves (the equivalent's some 30 numpy calls over the ``n`` scores: 0.12 ms a
#: call at n = 200 against the pass's 0.04 ms with its Python, 0.4 us an entry there).
PRIMAL_TERMS_ELEMENTS = 2**21


@numba.njit(**CALLEE)
def _max1(a, b):  # pragma: no cover - compiled
    """``np.maximum`` of two floats (a ``nan`` wins)."""
    if a != a or b != b:
        return a + b
    return a if a >= b else b


@numba.njit(**CALLEE)
def _end_term(t, m, y, v, weight, b, big):  # pragma: no cover - compiled
    """:func:`worse_end_sum`'s term at the score's end ``t``: :func:`shortfall` of the margin
    ``m`` at ``t + b`` moved to its upper end, its positive part times ``weight``, plus
    ``v t / 2``, each operation rounded up as :func:`kernel_primal_upper` rounds it."""
    s = t + b
    z = s - t
    e1 = (t - (s - z)) + (b - z)
    head = m - y * s
    tail = e1 + 0.0
    r = head - y * tail
    e = 0.0 + 2.0 * U * (abs(head) + abs(tail) + abs(r)) + 3 * TINY
    short = _up1(r + _up1(e, big), big)
    cost = _up1(weight * _max1(0.0, short), big)
    return _up1(_up1(0.5 * _up1(v * t, big), big) + cost, big)


@numba.njit(**ENTRY)
def _primal_terms(
    scores, err, margin, y, alpha, sample_weight, C, b, big, out
):  # pragma: no cover - compiled
    """:func:`kernel_primal_upper`'s terms (finite ``C``) in one pass: each score's interval
    (:func:`score_ends`), the larger of its ends' terms (:func:`_end_term`); the same
    operations in the same order as the numpy equivalent, so the same floats."""
    for i in range(scores.shape[0]):
        v = alpha[i] * y[i]
        weight = _up1(C * sample_weight[i], big)
        low = _down1(scores[i] - err[i], big)
        high = _up1(scores[i] + err[i], big)
        out[i] = _max1(
            _end_term(low, margin[i], y[i], v, weight, b, big),
            _end_term(high, margin[i], y[i], v, weight, b, big),
        )


def kernel_dual_lower(
    f: BinaryRows,
    alpha: np.ndarray,
    scores: np.ndarray,
    err: np.ndarray,
    upper: float,
    diagonal: float = 1.0,
) -> tuple[float, np.ndarray]:
    r"""A lower bound on ``P*`` from ``alpha`` with scores ``g = K (alpha y)`` within ``err`` of
    a positive semidefinite kernel with :math:`\max_i K_{ii} \le` ``diagonal`` (1 for rbf):
    ``alpha`` is clipped into the exact box (:func:`binary_feasible`; a clipped entry moves
    each score by at most its change times ``diagonal``, since
    :math:`|K_{ij}| \le \sqrt{K_{ii} K_{jj}}`), and

    .. math::

        D = \sum_i m_i \alpha_i - \tfrac12 (\alpha y)^T K (\alpha y)
          - B \Big|\sum_i \alpha_i y_i\Big|,

    with ``B`` for features :math:`\|\phi(x)\| \le \sqrt{\text{diagonal}}`
    (:func:`intercept_bound`, ``upper`` a rigorous upper bound on ``P*``)."""
    a = binary_feasible(f, alpha)
    moved = upper_sum(np.abs(a - alpha)) if np.any(a != alpha) else 0.0
    err = err + float(up(moved * diagonal))
    gain = lower_sum(f.margin * a)
    quad = float(up(dot_upper(a * f.y, scores) + upper_sum(a * err)))
    value = float(down(gain - float(up(0.5 * max(quad, 0.0)))))
    if f.fit_intercept:
        balance = fsum(a * f.y)
        off = float(up(abs(balance) * (1.0 + 2.0 * U) + 8.0 * gamma(a.size) ** 2 * fsum(a)))
        if off > 0.0:
            bound = intercept_bound(f.margin, f.X, upper, feature_norm=_sqrt_up(diagonal))
            value = float(down(value - float(up(bound * off)))) if bound < math.inf else -math.inf
    return value, a
