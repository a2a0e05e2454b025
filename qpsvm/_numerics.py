r"""Accurate sums and dot products: error-free transformations (Ogita, Rump and Oishi 2005).

Floating point loses digits when large terms cancel: the linear SVM's ``w = sum_i a_i y_i x_i``
is ``|x| ~ 1e4`` times smaller than its terms on features scaled by ``1e4``, so a plain product
keeps about 8 of its 16 digits. Here every product and every sum is split into its rounded value
and its exact error,

.. math::

    a b = p + e,\quad p = \mathrm{fl}(a b) \ (\text{TwoProduct, Dekker's splitting});\qquad
    s + p = t + f,\quad t = \mathrm{fl}(s + p) \ (\text{TwoSum, Knuth}),

and the errors are summed on the side ("Dot2"): the result is as accurate as if computed in
twice the working precision, then rounded,

.. math::

    |\hat r - r| \le \varepsilon |r| + \gamma_{n}^2 \textstyle\sum_i |a_i b_i|,
    \qquad \varepsilon = 2^{-53},\ \gamma_n = n\varepsilon / (1 - n\varepsilon).

The compiled kernels cost about what a BLAS matrix-vector product costs (about 20 flops per
entry, vectorised over the columns, one pass over the data). Before a kernel is compiled (a cold
first call, :func:`qpsvm._compile_cache.compiled`), a small input is summed by the same
operations in the same order in numpy (:func:`uncompiled`), with the same result to the bit.

References
----------
T. Ogita, S. M. Rump, S. Oishi, "Accurate sum and dot product", SIAM J. Sci. Comput. 26 (2005).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from qpsvm._compile_cache import compiled
from qpsvm._jit import CALLEE, ENTRY

__all__ = [
    "TINY",
    "U",
    "charge",
    "chunk_rows",
    "csr_tdot2_abs",
    "down",
    "fsum",
    "fsum_dot",
    "gamma",
    "product_error",
    "rows_dot2",
    "running_sums",
    "sum_error",
    "sum_upper",
    "tdot",
    "tdot2",
    "two_product",
    "uncompiled",
    "up",
]

#: The unit roundoff of float64, ``u = 2^-53``.
U = 2.0**-53
#: Absolute error allowance per term for results that underflow (a few subnormal units).
TINY = 2.0**-1070

#: Dekker's splitting constant ``2^27 + 1``: ``a = hi + lo`` with 26-bit halves, so the product
#: of two halves is exact. Valid for ``|a| < 2^996`` (about 1e299); beyond, the split overflows
#: and :func:`tdot2` falls back to the plain product.
_SPLIT = 134217729.0


#: How many rows (elements of a sum) each kernel's numpy equivalent may loop over in a process
#: before the kernel is compiled: about the kernel's compile time (0.08 s for Sum2, 0.2 s for
#: Dot2 on CSR rows and the plain products with ``|M|^T |v|``) at the equivalents' cost (0.09 us
#: an element of Sum2's Python loop, 10-15 us a row of Dot2 and 1.3-1.7 us a row of
#: ``|M|^T |v|`` row by row, at 20-500 columns; CPU time measured at a load of 10 on 2 cores).
#: Renting until the rent paid equals the price costs at most twice the cheaper of always
#: renting and buying at once.
SUM2_ELEMENTS = 2**20
DOT2_ROWS = 2**14
ABS_ROWS = 2**17
#: ... and dense Dot2 and ``|M|^T |v|`` (0.16-0.19 s and 0.10 s of compile), whose equivalents
#: are vectorised over a chunk of rows and every column (:func:`_dense_tdot2_numpy`,
#: ``rigorous._abs_columns_numpy``): entries (rows times columns) at 20-23 ns an entry of a
#: row with ``v_i != 0`` for Dot2, 4.3 ns an entry of every row for ``|M|^T |v|`` (CPU time at
#: 40 columns, load 3 on 2 cores; the compiled loops take 2.6 and 0.7 ns).
DOT2_ENTRIES = 2**23
ABS_ENTRIES = 2**24
#: Entries of the chunk of rows those equivalents take at once (128 KB a temporary).
CHUNK_ENTRIES = 2**14
#: ... and Dot2 along CSR rows (:func:`rows_dot2`, 0.15-0.2 s of compile): its equivalent
#: costs about 30 ns a nonzero and 30 us a step (one a position along the longest row,
#: charged as ``DOT2_STEP`` nonzeros).
CSR_DOT2_ENTRIES = 2**23
DOT2_STEP = 1000
#: ... and every call is charged at least ``budget / UNCOMPILED_CALLS`` rows, so that a process
#: solving many small problems compiles too instead of paying the equivalents' fixed cost a
#: call (their Python and array allocations) for ever. Measured on small ranking, 20 queries x
#: 10 items, in a process solving only it, empty compile cache: 0.6-0.8 ms a call on the
#: uncompiled paths against 0.13 ms compiled, and about 20 s of compiles once its kernels go
#: (at 2^12 calls the compiles cost 18 s, 27000 calls' worth of what they save): at 2^15
#: calls the rent paid is about the price.
UNCOMPILED_CALLS = 2**15
_uncompiled_rows: dict[int, int] = {}


def uncompiled(kernel: Any, rows: int, budget: int) -> bool:
    """Whether to run ``kernel``'s numpy equivalent over ``rows`` rows: ``kernel`` is neither
    compiled nor in the disk cache (:func:`qpsvm._compile_cache.compiled`), and its
    equivalent's rows in this process stay within ``budget`` (past it, the kernel is compiled
    and cached for later calls and processes), each call charged at least
    ``budget // UNCOMPILED_CALLS`` rows."""
    if compiled(kernel):
        return False
    spent = _uncompiled_rows.get(id(kernel), 0) + max(rows, budget // UNCOMPILED_CALLS)
    if spent > budget:
        return False
    _uncompiled_rows[id(kernel)] = spent
    return True


def charge(kernel: Any, rows: int) -> None:
    """Add ``rows`` to what ``kernel``'s numpy equivalent has spent in this process (for an
    equivalent whose cost is known only once it has run: :func:`uncompiled` charged it 0)."""
    _uncompiled_rows[id(kernel)] = _uncompiled_rows.get(id(kernel), 0) + rows


def gamma(n: int) -> float:
    r""":math:`\gamma_n = nu / (1 - nu)`, the bound on ``n`` roundings (Higham, ASNA 3.1)."""
    return n * U / (1.0 - n * U)


#: Arrays at least this long are moved by :func:`_succ` rather than ``np.nextafter`` (measured:
#: nextafter costs about 30 ns an entry, _succ about 5 ns plus 5 us a call).
_SUCC_SIZE = 1024
#: ``phi = u (1 + 2u)`` and the smallest subnormal ``eta`` of :func:`_succ`.
_PHI = U * (1.0 + 2.0 * U)
_ETA = 2.0**-1074


def _succ(x: np.ndarray) -> np.ndarray:
    r"""A float at least the successor of each entry of ``x`` and at most two units above it:
    :math:`\mathrm{fl}(x + \mathrm{fl}(\mathrm{fl}(\varphi |x|) + \eta))` with
    :math:`\varphi = u(1 + 2u)`, :math:`\eta = 2^{-1074}` (Rump, Zimmermann, Boldo and
    Melquiond, "Computing predecessor and successor in rounding to nearest", BIT 49, 2009,
    Algorithm 2): the added term exceeds half the spacing above ``x`` (by rounding's
    monotonicity; in the subnormal range by ``eta`` itself), so the sum rounds to the successor
    or beyond. Four passes of arithmetic, where ``np.nextafter`` costs about 25 times one.
    ``+inf`` and ``nan`` stay; ``-inf`` goes to ``-max`` as ``np.nextafter`` takes it."""
    c = np.abs(x)
    c *= _PHI
    c += _ETA
    with np.errstate(over="ignore", invalid="ignore"):  # max + c is inf; -inf + inf is nan
        c += x
    if np.isnan(c).any():
        c[np.isneginf(x)] = -np.finfo(np.float64).max
    return c


def up(x: Any) -> Any:
    """A float above ``x`` that covers one rounding to nearest of an operation's result: the
    next float, or for float64 arrays of :data:`_SUCC_SIZE` entries or more at most two floats
    above (:func:`_succ`)."""
    if isinstance(x, float):  # Python's and numpy's float64 scalars: 0.1 us against 1.4 us
        return type(x)(math.nextafter(x, math.inf))
    if isinstance(x, np.ndarray) and x.dtype == np.float64 and x.size >= _SUCC_SIZE:
        return _succ(x)
    return np.nextafter(x, np.inf)


def down(x: Any) -> Any:
    """A float below ``x``: the negated :func:`up` of ``-x``."""
    if isinstance(x, float):
        return type(x)(math.nextafter(x, -math.inf))
    if isinstance(x, np.ndarray) and x.dtype == np.float64 and x.size >= _SUCC_SIZE:
        return -_succ(-x)
    return np.nextafter(x, -np.inf)


@numba.njit(**CALLEE)
def next_up(x):  # pragma: no cover - compiled
    """``np.nextafter(x, inf)`` of one float64 in compiled code, by its bits: a nonzero finite
    float's successor is the next integer of its bits away from zero above 0 and toward it
    below (two's complement: ``-max`` for ``-inf``); ``nan`` and ``+inf`` stay, a zero goes
    to the smallest subnormal. The same float, without libm's call (about 5-8 ns, ten to
    twenty-five times the arithmetic around it where a pass rounds each entry)."""
    if x != x or x == np.inf:
        return x
    if x == 0.0:
        return _ETA
    bits = np.float64(x).view(np.int64)
    return np.int64(bits + 1 if x > 0.0 else bits - 1).view(np.float64)


@numba.njit(**CALLEE)
def next_down(x):  # pragma: no cover - compiled
    """``np.nextafter(x, -inf)`` of one float64 in compiled code: the negated :func:`next_up`
    of ``-x``."""
    return -next_up(-x)


@numba.njit(**CALLEE, fastmath={"reassoc"})
def add_columns_squares(row, a, product, squares):  # pragma: no cover - compiled
    """``product += a row`` and ``squares += row * row``: one row's terms of ``M^T v`` and of
    the columns' squared norms ``(M * M)^T 1``, added row by row by the caller (each column's
    sum in the rows' order; ``reassoc`` only vectorises over the columns)."""
    for j in range(row.shape[0]):
        x = row[j]
        product[j] += x * a
        squares[j] += x * x


def sum_error(leaves: Any, magnitude: Any) -> Any:
    r"""A bound on :math:`|\hat s - s|` for every floating-point evaluation of a sum
    :math:`s = \sum_k t_k` of at most ``leaves`` terms, each an exact number or the product of
    two (rounded once), added in any order (any summation tree, fused multiply-adds included),
    when the computed ``magnitude`` is a floating-point evaluation of
    :math:`\sum_k |t_k|` (or of a larger sum of the same kind).

    Each term's path through the tree passes at most ``leaves`` roundings, so
    :math:`|\hat s - s| \le \gamma_N \sum_k |t_k|` (Higham, ASNA Lemma 3.1 and 3.3,
    ``N = leaves``); the computed magnitude is within :math:`\gamma_N` of its exact value, so
    :math:`\sum_k |t_k| \le \hat M / (1 - \gamma_N) \le \hat M (1 + 2\gamma_N)`; a product
    that underflows loses at most half a subnormal unit (:data:`TINY` covers it per term).
    Rounded up.
    """
    leaves = np.asarray(leaves, dtype=np.float64)
    g = leaves * U / (1.0 - leaves * U)
    return up(up(g * np.asarray(magnitude) * (1.0 + 2.0 * g) * (1.0 + 8.0 * U)) + leaves * TINY)


def sum_upper(a: Any) -> float:
    r"""An upper bound on the exact sum of floats ``a`` (signs mixed): Sum2 (:func:`fsum`) is
    within :math:`u |s| + \gamma_{n-1}^2 \sum_i |a_i|` of it (Ogita, Rump and Oishi 2005,
    Prop. 4.5), every operation of the bound rounded up."""
    a = np.ravel(np.asarray(a, dtype=np.float64))
    total = fsum(a)
    g2 = gamma(a.size) ** 2
    spread = float(np.sum(np.abs(a))) * (1.0 + 2.0 * gamma(a.size))
    err = 2.0 * (U + g2) * spread + U * abs(total) + a.size * TINY
    return float(up(total + float(up(err))))


@numba.njit(**ENTRY)
def _sum2(p):  # pragma: no cover - compiled
    """Ogita-Rump-Oishi Sum2: cascaded TwoSum, the errors summed on the side."""
    s = 0.0
    c = 0.0
    for i in range(p.shape[0]):
        t = s + p[i]
        z = t - s
        c += (s - (t - z)) + (p[i] - z)
        s = t
    return s, c


def _sum2_python(p: np.ndarray, s: float = 0.0, c: float = 0.0) -> tuple[float, float]:
    """:func:`_sum2` in Python floats (IEEE double, the same operations in the same order),
    continued from the state ``s, c`` of the terms before ``p``."""
    for x in p.tolist():
        t = s + x
        z = t - s
        c += (s - (t - z)) + (x - z)
        s = t
    return s, c


def fsum(a: Any, tail: Sequence[float] = ()) -> float:
    r"""``sum_i a_i`` as if computed in twice the working precision, then rounded (Sum2):
    :math:`|\hat s - s| \le \varepsilon |s| + \gamma_{n-1}^2 \sum_i |a_i|`, i.e. correctly
    rounded unless the terms cancel by more than ~16 digits. Infinite sums are returned as
    such (``nan`` if ``+inf`` and ``-inf`` meet). ``tail``: more terms after ``a``'s, the
    float of the sum with them appended to ``a`` (without the copy appending them)."""
    p = np.ascontiguousarray(np.ravel(a), dtype=np.float64)
    s, c = _sum2_python(p) if uncompiled(_sum2, p.size, SUM2_ELEMENTS) else _sum2(p)
    if len(tail):
        s, c = _sum2_python(np.asarray(tail, dtype=np.float64), s, c)
    return s + c if math.isfinite(s) else s


@numba.njit(**ENTRY)
def _sum2_dot(a, b):  # pragma: no cover - compiled
    """:func:`_sum2` of the rounded products ``a_i b_i``, formed in the loop (the same floats
    as Sum2 of ``np.multiply(a, b)``, without the product array)."""
    s = 0.0
    c = 0.0
    for i in range(a.shape[0]):
        p = a[i] * b[i]
        t = s + p
        z = t - s
        c += (s - (t - z)) + (p - z)
        s = t
    return s, c


def fsum_dot(a: np.ndarray, b: np.ndarray, tail: Sequence[float] = ()) -> float:
    """``a . b``: the rounded products summed by :func:`fsum`, then the terms ``tail`` (the
    float of the sum with them appended to the products).

    Exact up to one rounding when the products are exact (``b = +-1`` labels) or of one sign
    (squares, nonnegative weights); use :func:`tdot` where products of both signs cancel.
    Arrays of one shape are summed by a compiled loop that forms each product as it adds it
    (at 1e6 entries 1.5 ms against 2.5-4 ms for the product array and its Sum2; the same
    float).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or uncompiled(_sum2_dot, a.size, SUM2_ELEMENTS):
        return fsum(np.multiply(a, b), tail)
    s, c = _sum2_dot(np.ascontiguousarray(a.ravel()), np.ascontiguousarray(b.ravel()))
    if len(tail):
        s, c = _sum2_python(np.asarray(tail, dtype=np.float64), s, c)
    return s + c if math.isfinite(s) else s


@numba.njit(cache=True, inline="always")
def _split(a):  # pragma: no cover - compiled
    """Dekker's splitting ``a = hi + lo`` into 26-bit halves."""
    t = _SPLIT * a
    hi = t - (t - a)
    return hi, a - hi


@numba.njit(cache=True, inline="always")
def product_error(a, b, p):  # pragma: no cover - compiled
    """Dekker's TwoProduct in compiled code: ``e`` with ``a b = p + e`` exactly for
    ``p = fl(a b)``, where ``|a|, |b| < 2^996`` and no partial product underflows."""
    ah, al = _split(a)
    bh, bl = _split(b)
    return ((ah * bh - p) + ah * bl + al * bh) + al * bl


@numba.njit(cache=True, inline="always")
def _dot2_step(a, v_i, vh, vl, s, c, j):  # pragma: no cover - compiled
    """``s[j] + c[j] += a v_i``: TwoProduct ``a v_i = p + e`` (``v_i = vh + vl`` pre-split),
    TwoSum ``s[j] + p = u + f``; ``u`` replaces ``s[j]``, ``f + e`` joins ``c[j]``."""
    p = a * v_i
    ah, al = _split(a)
    e = ((ah * vh - p) + ah * vl + al * vh) + al * vl
    sj = s[j]
    u = sj + p
    z = u - sj
    c[j] += ((sj - (u - z)) + (p - z)) + e
    s[j] = u


@numba.njit(**ENTRY)
def _dense_tdot2(X, v, s, c):  # pragma: no cover - compiled
    for i in range(X.shape[0]):
        if v[i] != 0.0:
            vh, vl = _split(v[i])
            for j in range(X.shape[1]):
                _dot2_step(X[i, j], v[i], vh, vl, s, c, j)


@numba.njit(**ENTRY)
def _dense_tdot2_by_column(XT, v, s, c):  # pragma: no cover - compiled
    """:func:`_dense_tdot2` on ``X = XT.T`` one output entry at a time (``XT`` C-contiguous:
    ``X`` is a transposed row-major matrix, e.g. the scores ``x_i . w`` of every row): the same
    operations in the same order, with the accumulators in registers."""
    for j in range(XT.shape[0]):
        sj, cj = s[j], c[j]
        for i in range(XT.shape[1]):
            if v[i] != 0.0:
                p = XT[j, i] * v[i]
                ah, al = _split(XT[j, i])
                vh, vl = _split(v[i])
                e = ((ah * vh - p) + ah * vl + al * vh) + al * vl
                u = sj + p
                z = u - sj
                cj += ((sj - (u - z)) + (p - z)) + e
                sj = u
        s[j], c[j] = sj, cj


def _two_product_numpy(a: Any, b: Any) -> tuple[Any, Any]:
    """TwoProduct ``a b = p + e`` of :func:`_dot2_step` in numpy (``p`` rounded, ``e`` its
    error by Dekker's splitting), the same operations."""
    p = a * b
    ah, al = _split.py_func(a)
    bh, bl = _split.py_func(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _dot2_numpy(a: Any, b: Any, s: Any, c: Any) -> tuple[Any, Any, Any]:
    """:func:`_dot2_step` vectorised: ``s + c`` plus the products ``a b`` (TwoProduct, TwoSum,
    the errors joining ``c``), by the same operations; returns the new ``s``, ``c`` and the
    rounded products."""
    p, e = _two_product_numpy(a, b)
    u = s + p
    z = u - s
    return u, c + (((s - (u - z)) + (p - z)) + e), p


def chunk_rows(d: int) -> int:
    """Rows of a ``d``-column chunk of about :data:`CHUNK_ENTRIES` entries (at least one row)
    that the dense equivalents of Dot2 and ``|M|^T |v|`` take at once."""
    return max(1, CHUNK_ENTRIES // max(1, d))


def running_sums(start: np.ndarray, terms: np.ndarray) -> np.ndarray:
    """``out[0] = start``, ``out[t + 1] = out[t] + terms[t]`` (rows of ``terms`` of shape
    ``(m, d)``), each column added in order by ``np.add.accumulate``: the floats of a loop
    ``start[j] += terms[t, j]`` over ``t``."""
    out = np.empty((terms.shape[0] + 1, terms.shape[1]))
    out[0] = start
    out[1:] = terms
    return np.add.accumulate(out, axis=0, out=out)


def _dense_tdot2_numpy(X: np.ndarray, v: np.ndarray, s: np.ndarray, c: np.ndarray) -> None:
    """:func:`_dense_tdot2` in numpy over chunks of the rows with ``v_i != 0``: every
    TwoProduct of a chunk at once, the TwoSums' running sums ``s`` down each column
    (:func:`running_sums`), each error from the sum before it, and the running sums of the
    errors into ``c``: the same operations in the same order (no contraction into fused
    multiply-adds on either side), so the same ``s`` and ``c`` to the bit, non-finite ones
    included (which the compiled loop produces silently: the caller falls back)."""
    rows = np.flatnonzero(v)
    step = chunk_rows(X.shape[1])
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(0, rows.size, step):
            i = rows[k : k + step]
            p, e = _two_product_numpy(X[i].astype(np.float64, copy=False), v[i, None])
            sums = running_sums(s, p)
            before, after = sums[:-1], sums[1:]
            z = after - before
            s[:] = sums[-1]
            c[:] = running_sums(c, ((before - (after - z)) + (p - z)) + e)[-1]


def _csr_tdot2_numpy(X: sp.csr_matrix, v: np.ndarray, s: np.ndarray, c: np.ndarray) -> None:
    """:func:`_csr_tdot2` row by row in numpy, each row's steps vectorised over its nonzeros
    (distinct columns: ``X`` canonical), the same operations in the same order."""
    for i in np.flatnonzero(v):
        k = slice(X.indptr[i], X.indptr[i + 1])
        j = X.indices[k]
        s[j], c[j], _ = _dot2_numpy(X.data[k], v[i], s[j], c[j])


def _csr_rows_dot2_numpy(
    X: sp.csr_matrix, v: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_csr_rows_dot2` in numpy, vectorised over the rows: step ``t`` adds every row's
    ``t``-th nonzero, so each row's terms are added in its order by the same operations."""
    n = X.shape[0]
    s, c, magnitude = np.zeros(n), np.zeros(n), np.zeros(n)
    lengths = np.diff(X.indptr)
    for t in range(int(lengths.max()) if n else 0):
        rows = np.flatnonzero(lengths > t)
        k = X.indptr[rows] + t
        s[rows], c[rows], p = _dot2_numpy(X.data[k], v[X.indices[k]], s[rows], c[rows])
        magnitude[rows] += np.abs(p)
    return s, c, magnitude


@numba.njit(**ENTRY)
def _csr_tdot2(data, indices, indptr, v, s, c):  # pragma: no cover - compiled
    for i in range(indptr.shape[0] - 1):
        if v[i] != 0.0:
            vh, vl = _split(v[i])
            for k in range(np.uintp(indptr[i]), np.uintp(indptr[i + 1])):
                _dot2_step(data[k], v[i], vh, vl, s, c, np.uintp(indices[k]))


@numba.njit(**ENTRY)
def _csr_tdot2_abs(data, indices, indptr, v, s, c, m):  # pragma: no cover - compiled
    """:func:`_csr_tdot2` and ``m += |X|^T |v|`` in the same pass over the rows (the
    magnitudes added row by row in each row's order, as scipy's transposed product adds
    them; a row with ``v_i = 0`` adds only zeros)."""
    for i in range(indptr.shape[0] - 1):
        if v[i] != 0.0:
            vh, vl = _split(v[i])
            size = abs(v[i])
            for k in range(np.uintp(indptr[i]), np.uintp(indptr[i + 1])):
                j = np.uintp(indices[k])
                _dot2_step(data[k], v[i], vh, vl, s, c, j)
                m[j] += abs(data[k]) * size


def csr_tdot2_abs(X: sp.csr_matrix, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``X^T v`` of a canonical CSR matrix by Dot2 as an unevaluated sum ``hi + lo`` (the floats
    of :func:`tdot2`) and ``|X|^T |v|`` in floating point (for its error bound), in one pass
    over the nonzeros: at d = 1e6 (1e6 nonzeros) 16 ms against 17 ms and 7 ms for the two
    (the absolute values' copy of ``X`` and a second scattered pass). Before the kernel is
    compiled: :func:`_csr_tdot2_numpy` and scipy's product, the same floats."""
    v = np.ascontiguousarray(v, dtype=np.float64)
    s, c = np.zeros(X.shape[1]), np.zeros(X.shape[1])
    if uncompiled(_csr_tdot2_abs, X.shape[0], DOT2_ROWS):
        _csr_tdot2_numpy(X, v, s, c)
        return s, c, np.asarray(abs(X).T @ np.abs(v), dtype=np.float64).ravel()
    m = np.zeros(X.shape[1])
    _csr_tdot2_abs(X.data, X.indices, X.indptr, v, s, c, m)
    return s, c, m


@numba.njit(**ENTRY)
def _csr_rows_dot2(data, indices, indptr, v):  # pragma: no cover - compiled
    """Per row ``i``: Dot2 of ``x_i . v`` (as :func:`_dot2_step`, the accumulators in
    registers) and ``sum_j |x_ij v_j|`` in floating point."""
    n = indptr.shape[0] - 1
    s = np.zeros(n)
    c = np.zeros(n)
    magnitude = np.zeros(n)
    for i in range(n):
        si, ci, mi = 0.0, 0.0, 0.0
        for k in range(np.uintp(indptr[i]), np.uintp(indptr[i + 1])):
            a, b = data[k], v[np.uintp(indices[k])]
            p = a * b
            ah, al = _split(a)
            bh, bl = _split(b)
            e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
            u = si + p
            z = u - si
            ci += ((si - (u - z)) + (p - z)) + e
            si = u
            mi += abs(p)
        s[i], c[i], magnitude[i] = si, ci, mi
    return s, c, magnitude


def rows_dot2(X: sp.csr_matrix, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""``X v`` for a CSR matrix, one Ogita-Rump-Oishi Dot2 per row over its nonzeros, as an
    unevaluated sum ``hi + lo``, and the magnitudes ``sum_j |x_ij v_j|`` (floating point) for
    its error bound: the same operations as :func:`tdot2` on ``X^T`` (each output entry a
    Dot2 over its terms), read along the rows in one pass, without transposing ``X``."""
    v = np.ascontiguousarray(v, dtype=np.float64)
    steps = int(np.diff(X.indptr).max()) if X.shape[0] else 0
    if uncompiled(_csr_rows_dot2, X.nnz + DOT2_STEP * steps, CSR_DOT2_ENTRIES):
        return _csr_rows_dot2_numpy(X, v)
    return _csr_rows_dot2(X.data, X.indices, X.indptr, v)


def tdot2(
    X: Any,
    v: np.ndarray,
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""``start + X^T v`` in twice the working precision, as an unevaluated sum ``hi + lo``.

    Each column is an Ogita-Rump-Oishi Dot2 over the rows; ``start = (hi, lo)`` continues a
    previous sum (e.g. the fixed part of ``w`` plus a few more rows). ``hi + lo`` rounds the
    result once (:func:`tdot`). Another linear operator (anything with ``X.T @ v``, such as the
    ranking SVM's pair differences) is multiplied by its own product, rounded as it computes it.

    Parameters
    ----------
    X : ndarray, sparse matrix or linear operator of shape (n, d)
    v : ndarray of shape (n,)
    start : pair of ndarray of shape (d,), optional

    Returns
    -------
    hi, lo : ndarray of shape (d,)
    """
    d = X.shape[1]
    v = np.ascontiguousarray(v, dtype=np.float64)
    s = np.zeros(d) if start is None else start[0].copy()
    c = np.zeros(d) if start is None else start[1].copy()
    if sp.issparse(X):
        X = X if isinstance(X, sp.csr_matrix) else sp.csr_matrix(X)  # a csr_matrix's cached format
        if X.has_canonical_format and uncompiled(_csr_tdot2, X.shape[0], DOT2_ROWS):
            _csr_tdot2_numpy(X, v, s, c)
        else:
            _csr_tdot2(X.data, X.indices, X.indptr, v, s, c)
    elif isinstance(X, np.ndarray) and X.T.flags.c_contiguous and X.shape[1] > X.shape[0]:
        if uncompiled(_dense_tdot2_by_column, np.count_nonzero(v) * d, DOT2_ENTRIES):
            _dense_tdot2_numpy(X, v, s, c)
        else:
            _dense_tdot2_by_column(X.T, v, s, c)
    elif isinstance(X, np.ndarray):
        if uncompiled(_dense_tdot2, np.count_nonzero(v) * d, DOT2_ENTRIES):
            _dense_tdot2_numpy(X, v, s, c)
        else:
            _dense_tdot2(X, v, s, c)
    else:
        s, c = np.asarray(X.T @ v, dtype=np.float64).ravel() + s, c
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(c))):
        # Dekker's splitting overflowed (entries beyond ~1e299): the plain product
        s = np.asarray(X.T @ v).ravel() + (0.0 if start is None else start[0] + start[1])
        c = np.zeros(d)
    return s, c


def two_product(a: Any, b: Any) -> tuple[Any, Any]:
    """``a b = p + e`` exactly, ``p = fl(a b)`` (Dekker's TwoProduct); ``e`` is NaN where the
    splitting overflows (``|a|, |b|`` beyond ~1e299) and the error is unknown."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    p = a * b
    ah = _SPLIT * a - (_SPLIT * a - a)
    bh = _SPLIT * b - (_SPLIT * b - b)
    al, bl = a - ah, b - bh
    with np.errstate(invalid="ignore", over="ignore"):
        e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, np.where(np.isfinite(e), e, np.nan)


def scale2(a: float, hi: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a (hi + lo)`` as an unevaluated sum, with the error of ``a hi`` kept (TwoProduct by
    Dekker's splitting) after the pair is normalised (TwoSum), for a sum from :func:`tdot2`
    scaled by a number such as ``C``: exact to a few units of ``eps^2``."""
    # normalise the pair first (TwoSum): a sum from tdot2 may carry a large lo
    total = hi + lo
    z = total - hi
    hi, lo = total, (hi - (total - z)) + (lo - z)
    p = a * hi
    ah, al = _split(np.float64(a))
    hh, hl = _split(np.ascontiguousarray(hi, dtype=np.float64))
    err = ((ah * hh - p) + ah * hl + al * hh) + al * hl
    if not np.all(np.isfinite(err)):
        return p, a * lo
    return p, err + a * lo


def tdot(X: Any, v: np.ndarray) -> np.ndarray:
    """``X^T v`` as if computed in twice the working precision, then rounded (:func:`tdot2`)."""
    hi, lo = tdot2(X, v)
    return hi + lo
