"""Kernels ``k(x, x')`` for the dual formulation, a cache of Gram matrix rows, and a factor of
the Gram matrix for CVXPY.

The dual's quadratic term is ``||sum_i a_i y_i phi(x_i)||^2 = (a*y)^T K (a*y)``. For the full
problem CVXPY receives it as ``sum_squares(L^T (a*y))`` with ``K = L L^T`` (or ``X^T (a*y)`` for
the linear kernel, where no ``n x n`` matrix is ever formed). At scale the ``n x n`` matrix is not
formed either: scores ``K (a*y)`` need the rows of the support vectors only, which a
:class:`KernelCache` computes on demand (compiled, :func:`kernel_row`) and keeps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from numbers import Real

import numba
import numpy as np
import scipy.linalg
import scipy.sparse as sp

from qpsvm._jit import CALLEE, ENTRY
from qpsvm._numerics import DOT2_ROWS, _dot2_step, _split, uncompiled
from qpsvm._rows import canonical_csr
from qpsvm.exceptions import InvalidInputError, InvalidTypeError

__all__ = [
    "KERNELS",
    "LINEAR",
    "ROW_GRAM",
    "ROW_LINEAR",
    "ROW_POLY",
    "ROW_RBF",
    "Kernel",
    "KernelCache",
    "cached_row",
    "canonical_csr",
    "check_precomputed",
    "exp_nonpositive",
    "gram_arrays",
    "gram_factor",
    "kernel_row",
    "make_kernel",
    "squared_norms",
]

KERNELS = ("linear", "rbf", "poly", "precomputed")
#: The kernels whose value depends on ``gamma``.
GAMMA_KERNELS = ("rbf", "poly")


def _dense(A: np.ndarray | sp.spmatrix) -> np.ndarray:
    return A.toarray() if sp.issparse(A) else np.asarray(A)


def squared_norms(A: np.ndarray | sp.spmatrix) -> np.ndarray:
    """``||a_i||^2`` of every row of ``A``."""
    if sp.issparse(A):
        return np.asarray(A.multiply(A).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", A, A)


@dataclass(frozen=True)
class Kernel:
    """A kernel function with its parameters.

    ``linear``: ``x.x'``; ``rbf``: ``exp(-gamma ||x - x'||^2)``; ``poly``:
    ``(gamma x.x' + coef0)^degree``; ``precomputed``: the data already are the Gram matrix
    (rows: samples, columns: training samples); a callable ``k(A, B)`` returns the matrix
    ``[k(a_i, b_j)]``.
    """

    name: str
    gamma: float = 1.0
    degree: int = 3
    coef0: float = 1.0
    function: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None

    def __call__(self, A: np.ndarray | sp.spmatrix, B: np.ndarray | sp.spmatrix) -> np.ndarray:
        """The matrix ``[k(a_i, b_j)]`` of shape ``(len(A), len(B))``."""
        if self.name == "linear":
            return _dense(A @ B.T)
        if self.name == "rbf":
            # -gamma sum_k (a_k - b_k)^2 by the compiled rows' own code, then exp in place
            K = np.empty((A.shape[0], B.shape[0]))
            gamma = float(self.gamma)
            if sp.issparse(A) or sp.issparse(B):
                a, b = (canonical_csr(M) for M in (A, B))
                buf, mark = np.zeros(b.shape[1]), np.full(b.shape[1], -1, dtype=np.int64)
                _sparse_distances(
                    a.data, a.indices, a.indptr, b.data, b.indices, b.indptr, buf, mark, gamma, K
                )
            else:
                symmetric = A is B  # a Gram matrix: the numpy sums fill its upper triangle
                A = np.ascontiguousarray(A, dtype=np.float64)
                BT = np.ascontiguousarray(np.asarray(B, dtype=np.float64).T)
                terms = _distance_terms(K.shape, BT.shape[0], symmetric)
                if uncompiled(_dense_distances, terms, DISTANCE_TERMS):
                    _dense_distances_numpy(A, BT, gamma, K, symmetric)
                else:
                    _dense_distances(A, BT, gamma, K)
            return _exp_in_place(K)
        if self.name == "poly":
            return (self.gamma * _dense(A @ B.T) + self.coef0) ** self.degree
        if self.name == "callable":
            K = np.asarray(self.function(A, B), dtype=np.float64)  # type: ignore[misc]
            if K.shape != (A.shape[0], B.shape[0]) or not np.all(np.isfinite(K)):
                raise InvalidInputError(
                    f"the kernel callable must return a finite array of shape "
                    f"({A.shape[0]}, {B.shape[0]}); got shape {K.shape}."
                )
            return K
        raise InvalidInputError("a precomputed kernel has no function; pass Gram matrices.")

    def gram(self, X: np.ndarray | sp.spmatrix) -> np.ndarray:
        """The training Gram matrix ``[k(x_i, x_j)]`` of the rows of ``X`` (``X`` itself for a
        precomputed kernel, whose data already are that matrix)."""
        return X if self.name == "precomputed" else self(X, X)


#: The linear kernel, one instance for every problem that has it (a frozen record: building
#: one a construction costs about as much as a small problem's other checks of ``C``).
LINEAR = Kernel("linear")


def _exp_in_place(K: np.ndarray) -> np.ndarray:
    """``exp(K)`` of a nonpositive array, in place, by the exponential whose error is proven
    (:func:`exp_nonpositive`; the rbf certificate relies on it), in chunks of :data:`_BLOCK`
    squared entries; by its numpy equivalent (:func:`_exp_nonpositive_numpy`) until the
    entries of a process would have paid for its compile (:data:`EXP_ENTRIES`)."""
    K = np.ascontiguousarray(K)
    flat = K.reshape(-1)
    if uncompiled(exp_nonpositive, flat.size, EXP_ENTRIES):
        _exp_nonpositive_numpy(flat)
        return K
    chunk = _BLOCK * _BLOCK
    bits = np.empty(min(chunk, flat.size), dtype=np.int64)
    scale = bits.view(np.float64)
    for start in range(0, flat.size, chunk):
        part = flat[start : start + chunk]
        exp_nonpositive(part, bits[: part.size], scale[: part.size])
    return K


# ------------------------------------------------------------------ compiled kernel rows
#: Kinds of the compiled rows (:func:`kernel_row`); ``ROW_GRAM``: rows of a formed Gram matrix.
ROW_LINEAR, ROW_RBF, ROW_POLY, ROW_GRAM = 0, 1, 2, 3
_ROW_KINDS = {"linear": ROW_LINEAR, "rbf": ROW_RBF, "poly": ROW_POLY}
#: ``ln 2 = _LN2_HI + _LN2_LO`` (fdlibm's split: ``_LN2_HI`` has 32 significant bits, so
#: ``k _LN2_HI`` is exact for the ``|k| <= 1076`` of :func:`exp_nonpositive`), and ``1 / ln 2``.
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_LOG2E = 1.4426950408889634
#: Dense rows are computed in blocks of this many entries (which stay in L1/L2).
_BLOCK = 1024
#: Terms ``(a_k - b_k)^2`` a process sums in numpy before :func:`_dense_distances` is
#: compiled (0.3-0.35 s, the numpy sums' cost of ~1e8 terms by blocks of rows, 2-3 ns a term;
#: a Gram matrix's upper triangle is about half its terms): the Gram matrices of the first two
#: rbf calls at 2000 x 20.
DISTANCE_TERMS = 10**8
#: Rows of a block of the numpy distances (:func:`_dense_distances_numpy`): each feature's pass
#: over the block stays in L2 (at 2000 x 20: 0.48 s for the whole matrix a feature at a time,
#: 0.09-0.12 s by blocks of 16-128 rows over the upper triangle).
_DISTANCE_ROWS = 64
#: :func:`exp_nonpositive`'s Taylor coefficients, degree 13 down to 0, as its source writes them.
_TAYLOR = (
    1.0 / 6227020800.0,
    1.0 / 479001600.0,
    1.0 / 39916800.0,
    1.0 / 3628800.0,
    1.0 / 362880.0,
    1.0 / 40320.0,
    1.0 / 5040.0,
    1.0 / 720.0,
    1.0 / 120.0,
    1.0 / 24.0,
    1.0 / 6.0,
    0.5,
    1.0,
    1.0,
)
#: Entries of a chunk of the numpy exponential (:func:`_exp_nonpositive_numpy`; its scratch
#: stays in L2): 12 ns an entry against 160 ns unchunked (2 million entries, one core).
_EXP_CHUNK = 2**14
#: Entries a process exponentiates in numpy before :func:`exp_nonpositive` is compiled: about
#: its compile (0.2 s, and numba's target context, 0.25-0.3 s, where it is the process's first)
#: at 12 ns an entry: a first Gram matrix of up to 4096 samples compiles no exponential.
EXP_ENTRIES = 2**24
#: The sparse rows' marks of a kernel without them (:func:`_sparse_row`).
_NO_MARK = np.empty(0, dtype=np.int64)
#: Products ``K v`` a :class:`KernelCache` remembers (most recent first).
REMEMBERED = 4
#: In a sweep (:func:`cached_row`), every this many computed rows one enters the cache as the
#: most recent, the others at the least recent end (measured, rbf n = 8000, gamma = 0.5,
#: C = 100, 3276 slots for 8000 free rows: 93933 rows computed, 92590 with none promoted,
#: 120805 least recently used).
PROMOTE = 32


@numba.njit(**ENTRY, fastmath={"contract"})
def exp_nonpositive(out, bits, scale):  # pragma: no cover - compiled
    r"""``out <- exp(out)`` in place for ``out <= 0``, in a loop the compiler vectorises (libm's
    ``exp`` is not: 4x slower on a kernel row).

    ``x = k \ln 2 + r`` with ``k = round(x / \ln 2)`` and ``|r| <= \ln 2 / 2`` (Cody-Waite);
    ``e^r`` is its Taylor polynomial of degree 13 (truncation below ``5e-18`` relative), and
    ``2^k = 2^h 2^h (2 \text{ if } k \text{ odd})`` with ``h = \lfloor k/2 \rfloor`` is built
    from exponent bits (written to ``bits``, an int64 buffer as long as ``out``, and read back
    as floats through ``scale``, the caller's float64 view of the same memory), so subnormal
    results are right too; ``x < -746`` gives 0. Within one ulp of the correctly rounded value.

    The view is the caller's and ``max(x, -746)`` is written as a comparison (Python's ``max``:
    the second only when strictly larger, so the same floats), so that compiling this function
    compiles none of numba's helpers (``ndarray.view`` 0.1 s, ``max`` 0.03 s of a cold rbf
    call).
    """
    for t in range(out.shape[0]):
        x = out[t]
        if -746.0 > x:
            x = -746.0
        k = np.floor(x * _LOG2E + 0.5)
        r = (x - k * _LN2_HI) - k * _LN2_LO
        p = 1.0 / 6227020800.0
        p = p * r + 1.0 / 479001600.0
        p = p * r + 1.0 / 39916800.0
        p = p * r + 1.0 / 3628800.0
        p = p * r + 1.0 / 362880.0
        p = p * r + 1.0 / 40320.0
        p = p * r + 1.0 / 5040.0
        p = p * r + 1.0 / 720.0
        p = p * r + 1.0 / 120.0
        p = p * r + 1.0 / 24.0
        p = p * r + 1.0 / 6.0
        p = p * r + 0.5
        p = p * r + 1.0
        p = p * r + 1.0
        h = np.floor(0.5 * k)
        bits[t] = (np.int64(h) + 1023) << 52
        out[t] = p * (1.0 + (k - 2.0 * h))
    for t in range(out.shape[0]):
        out[t] = out[t] * scale[t] * scale[t]


def _exp_nonpositive_numpy(out: np.ndarray) -> None:
    """:func:`exp_nonpositive` in numpy, chunk by chunk (:data:`_EXP_CHUNK` entries): its
    operations in its order, each rounded apart. These are its floats where the compiler fuses
    no multiply-add, within the same proven error (:func:`qpsvm.verify.rigorous.rbf_value_error`
    counts two roundings where a fused multiply-add rounds once), and one ulp apart from the
    compiled values where those fuse (about one value in ten), as the numpy distances
    (:func:`_dense_distances_numpy`) are."""
    size = max(1, min(_EXP_CHUNK, out.size))
    scratch = [np.empty(size) for _ in range(4)]
    for start in range(0, out.size, size):
        x = out[start : start + size]
        k, r, p, h = (a[: x.size] for a in scratch)
        np.maximum(x, -746.0, out=x)  # a zero keeps its sign, as the compiled comparison
        np.multiply(x, _LOG2E, out=k)
        k += 0.5
        np.floor(k, out=k)
        np.multiply(k, _LN2_HI, out=r)
        np.subtract(x, r, out=r)
        np.multiply(k, _LN2_LO, out=p)
        r -= p
        p.fill(_TAYLOR[0])
        for c in _TAYLOR[1:]:
            p *= r
            p += c
        np.multiply(k, 0.5, out=h)
        np.floor(h, out=h)
        bits = r.view(np.int64)  # r is spent: its memory holds the scale's exponent bits
        bits[:] = h
        bits += 1023
        bits <<= 52
        h *= 2.0
        k -= h
        k += 1.0
        p *= k
        p *= r
        p *= r
        x[:] = p


@numba.njit(**CALLEE, fastmath={"contract"}, inline="always")
def _dense_row(kind, x, XT, out):  # pragma: no cover - compiled
    """``out[t] = x . x_t`` (``ROW_RBF``: ``sum_k (x_k - x_tk)^2``, each term a square, so the
    sum of nonnegative terms is within ``gamma_{p+2}`` of itself in any order) for the columns
    ``x_t`` of ``XT`` (features by samples, contiguous: vectorised over ``t``). Inlined by
    numba into its two callers, each calling it once (no library of its own that each links
    and optimises again: see docs/performance.md)."""
    n = out.shape[0]
    for t0 in range(0, n, _BLOCK):
        # slices of a block: contiguous, in-range loops that the compiler vectorises
        block = out[t0 : t0 + _BLOCK]
        block[:] = 0.0
        for k in range(XT.shape[0]):
            c = x[k]
            xk = XT[k, t0 : t0 + _BLOCK]
            if kind == ROW_RBF:
                for t in range(block.shape[0]):
                    diff = xk[t] - c
                    block[t] += diff * diff
            else:
                for t in range(block.shape[0]):
                    block[t] += c * xk[t]


@numba.njit(**CALLEE, fastmath={"contract"})
def _sparse_row(kind, xdata, xindices, data, indices, indptr, buf, mark, out):  # pragma: no cover
    """:func:`_dense_row` for a sparse ``x`` (values ``xdata`` at ``xindices``) against the CSR
    rows ``(data, indices, indptr)``, each feature at most once a row (canonical format,
    :func:`canonical_csr`); ``buf`` (zeros, one per feature) is left as it was.

    ``ROW_RBF``: the terms ``(x_k - x_tk)^2`` over the nonzeros of ``x_t``, each marking its
    feature with ``t`` in ``mark`` (int64, one per feature), then ``x_k^2`` over the nonzeros
    of ``x`` left unmarked. Only row ``t`` writes ``t``, so ``mark[k] == t`` says that ``k`` is
    a nonzero of row ``t`` whatever earlier calls left there.
    """
    for p in range(xdata.shape[0]):
        buf[xindices[p]] = xdata[p]
    for t in range(out.shape[0]):
        acc = 0.0
        if kind == ROW_RBF:
            for p in range(indptr[t], indptr[t + 1]):
                k = indices[p]
                diff = data[p] - buf[k]
                acc += diff * diff
                mark[k] = t
            for p in range(xdata.shape[0]):
                if mark[xindices[p]] != t:
                    acc += xdata[p] * xdata[p]
        else:
            for p in range(indptr[t], indptr[t + 1]):
                acc += buf[indices[p]] * data[p]
        out[t] = acc
    for p in range(xdata.shape[0]):
        buf[xindices[p]] = 0.0


@numba.njit(**ENTRY, fastmath={"contract"})
def _dense_distances(A, XT, gamma, out):  # pragma: no cover - compiled
    """``out[r, t] = -gamma ||a_r - x_t||^2`` for the rows ``a_r`` of ``A`` against the columns
    ``x_t`` of ``XT``, each computed as :func:`kernel_row` computes it (:func:`_dense_row`)."""
    for r in range(out.shape[0]):
        row = out[r]
        _dense_row(ROW_RBF, A[r], XT, row)
        for t in range(row.shape[0]):
            row[t] = -gamma * row[t]


def _distance_terms(shape: tuple[int, int], d: int, symmetric: bool) -> int:
    """The terms ``(a_k - x_k)^2`` :func:`_dense_distances_numpy` sums for an ``out`` of
    ``shape`` over ``d`` features (about half of them for a Gram matrix, ``symmetric``)."""
    rows, cols = shape
    return (rows * (cols + _DISTANCE_ROWS) // 2 if symmetric else rows * cols) * d


def _dense_distances_numpy(
    A: np.ndarray, XT: np.ndarray, gamma: float, out: np.ndarray, symmetric: bool = False
) -> None:
    """:func:`_dense_distances` in numpy, by blocks of :data:`_DISTANCE_ROWS` rows, feature by
    feature (the same sum of nonnegative terms in the same order, each square rounded apart:
    within the same proven bound, equal to the compiled values but where those fuse a square
    into its addition). ``symmetric`` (``A`` the rows of ``XT``): the blocks cover the upper
    triangle and their transposes the lower, the same floats (``(a - b)^2 = (b - a)^2``)."""
    n = out.shape[1]
    scratch = np.empty(min(_DISTANCE_ROWS, out.shape[0]) * n)
    for i0 in range(0, out.shape[0], _DISTANCE_ROWS):
        i1 = min(i0 + _DISTANCE_ROWS, out.shape[0])
        first = i0 if symmetric else 0
        block = out[i0:i1, first:]
        diff = scratch[: block.size].reshape(block.shape)
        block[:] = 0.0
        for k in range(XT.shape[0]):
            np.subtract(XT[k, None, first:], A[i0:i1, k, None], out=diff)
            diff *= diff
            block += diff
        block *= -gamma
        if symmetric:
            out[i1:, i0:i1] = block[:, i1 - i0 :].T


@numba.njit(**ENTRY, fastmath={"contract"})
def _sparse_distances(
    adata, aindices, aindptr, data, indices, indptr, buf, mark, gamma, out
):  # pragma: no cover - compiled
    """:func:`_dense_distances` for the CSR rows ``(adata, aindices, aindptr)`` against the CSR
    rows ``(data, indices, indptr)`` (:func:`_sparse_row`; ``buf`` zeros and ``mark`` ``-1``, one
    per feature)."""
    for r in range(out.shape[0]):
        row = out[r]
        lo, hi = aindptr[r], aindptr[r + 1]
        _sparse_row(ROW_RBF, adata[lo:hi], aindices[lo:hi], data, indices, indptr, buf, mark, row)
        for t in range(row.shape[0]):
            row[t] = -gamma * row[t]


@numba.njit(**CALLEE, fastmath={"contract"})
def kernel_row(i, spec, out):  # pragma: no cover - compiled
    """``out[t] = k(x_i, x_t)`` for every training point ``t``.

    ``spec = (kind, XT, data, indices, indptr, sparse, mark, gamma, coef0, degree, buf,
    bits, scale)`` (:attr:`KernelCache.spec`): the dense data transposed and contiguous (so the
    products ``x_i . x_t`` are vectorised over ``t``) or the CSR arrays, the sparse rbf rows'
    marks (:func:`_sparse_row`), the kernel's parameters, and scratch buffers (features; int64
    of length ``n`` and its float64 view, :func:`exp_nonpositive`'s). The rbf value is
    ``exp(-gamma sum_k (x_ik - x_tk)^2)``: the squared distance summed term by term, never as
    ``||x_i||^2 + ||x_t||^2 - 2 x_i . x_t``, whose cancellation would cost an error of the size
    of the squared norms (:func:`qpsvm.verify.rigorous.rbf_pair_error` bounds it relative to
    the distance).
    """
    kind, XT, data, indices, indptr, sparse, mark, gamma, coef0, degree, buf, bits, scale = spec
    if sparse:
        lo, hi = indptr[i], indptr[i + 1]
        _sparse_row(kind, data[lo:hi], indices[lo:hi], data, indices, indptr, buf, mark, out)
    else:
        _dense_row(kind, XT[:, i], XT, out)
    if kind == ROW_RBF:
        for t in range(out.shape[0]):
            out[t] = -gamma * out[t]
        exp_nonpositive(out, bits, scale)
    elif kind == ROW_POLY:
        for t in range(out.shape[0]):
            out[t] = (gamma * out[t] + coef0) ** degree


@numba.njit(**CALLEE)
def cached_row(i, cache):  # pragma: no cover - compiled
    """Row ``i`` of the kernel matrix from ``cache = (rows, slot_of, owner, stamp, stats, spec)``
    (:attr:`KernelCache.arrays`, or :func:`gram_arrays`: then ``spec[1]`` is the Gram matrix).

    ``stats = (hits, misses, clock, last, sweep)``. A hit stamps the row's slot with the clock
    (most recent) and advances it; a miss computes the row (:func:`kernel_row`) into the first
    slot of smallest stamp other than ``last`` (the slot of the previous use, so that a step's
    first row survives the miss on its second): the empty ones in order, then the least recent.
    The computed row is stamped most recent (least recently used eviction) unless ``sweep`` is
    set (by the SMO loop, while its active variables outnumber the slots twice over): then only
    a row that fills an empty slot, and every :data:`PROMOTE`-th computed row, is; the others
    take the stamp of the row they replace, so they are the next to go unless used again
    (insertion at the least recent end, Qureshi et al. 2007). A sweep over more rows than the
    cache holds, as SMO's tail over a free set larger than the cache, then keeps the rows the
    cache has rather than evicting each just before its next use.
    """
    rows, slot_of, owner, stamp, stats, spec = cache
    if spec[0] == ROW_GRAM:
        return spec[1][i]
    slot = slot_of[i]
    clock = stats[2]
    if slot >= 0:
        stats[0] += 1
    else:
        last = stats[3]
        slot = 1 if last == 0 and stamp.shape[0] > 1 else 0
        for k in range(slot + 1, stamp.shape[0]):
            if k != last and stamp[k] < stamp[slot]:
                slot = k
        if owner[slot] >= 0:
            slot_of[owner[slot]] = -1
            if stats[4] and stats[1] % PROMOTE != 0:
                clock = stamp[slot]
        kernel_row(i, spec, rows[slot])
        owner[slot] = i
        slot_of[i] = slot
        stats[1] += 1
    stamp[slot] = clock
    stats[2] += 1
    stats[3] = slot
    return rows[slot]


@numba.njit(**ENTRY)
def _fill_rows(idx, slots, rows, spec):  # pragma: no cover - compiled
    """``rows[slots[k]] = K[idx[k], :]``."""
    for k in range(idx.shape[0]):
        kernel_row(idx[k], spec, rows[slots[k]])


@numba.njit(**ENTRY, fastmath={"contract"})
def _combine_rows(rows, slots, weights, out):  # pragma: no cover - compiled
    """``out += sum_k weights[k] rows[slots[k]]``, row after row (one pass over each row, in one
    thread: a threaded BLAS product stalls when the other cores are busy)."""
    for k in range(slots.shape[0]):
        row = rows[slots[k]]
        c = weights[k]
        for t in range(out.shape[0]):
            out[t] += c * row[t]


@numba.njit(**CALLEE)
def _product_row(rows, slots, idx, spec, scratch, k):  # pragma: no cover - compiled
    """Row ``idx[k]`` of a product: ``rows[slots[k]]`` where ``slots[k] >= 0``, else computed
    into ``scratch`` (:func:`kernel_row`, the same values)."""
    if slots[k] >= 0:
        return rows[slots[k]]
    kernel_row(idx[k], spec, scratch)
    return scratch


@numba.njit(**ENTRY, fastmath={"contract"})
def _combine_computed(rows, slots, idx, weights, spec, scratch, out):  # pragma: no cover
    """``out += sum_k weights[k] K[idx[k], :]``, row after row in increasing ``k``: the row is
    ``rows[slots[k]]`` where ``slots[k] >= 0``, else computed into ``scratch``
    (:func:`kernel_row`, the same values)."""
    for k in range(idx.shape[0]):
        row = _product_row(rows, slots, idx, spec, scratch, k)
        c = weights[k]
        for t in range(out.shape[0]):
            out[t] += c * row[t]


@numba.njit(**ENTRY)
def _enclosed_pass(rows, slots, idx, V, A, spec, scratch, s, c, m):  # pragma: no cover
    """For ``k`` in increasing order of the rows ``j = idx[k]`` (``rows[slots[k]]``, or computed
    into ``scratch`` where ``slots[k] < 0``): Dot2 ``s[p] + c[p] += V[p, k] K[j, :]`` (as
    :func:`qpsvm._numerics._dense_tdot2`, the same operations in the same order) and
    ``m[q] += A[q, k] K[j, :]`` in floating point, one read of each row for every sum."""
    for k in range(idx.shape[0]):
        row = _product_row(rows, slots, idx, spec, scratch, k)
        for p in range(V.shape[0]):
            v = V[p, k]
            if v != 0.0:
                vh, vl = _split(v)
                for t in range(row.shape[0]):
                    _dot2_step(row[t], v, vh, vl, s[p], c[p], t)
        for q in range(A.shape[0]):
            a = A[q, k]
            if a != 0.0:
                for t in range(row.shape[0]):
                    m[q, t] += a * row[t]


def _spec(
    kind: int,
    mat: np.ndarray,
    X: np.ndarray | sp.spmatrix | None = None,
    kernel: Kernel | None = None,
) -> tuple:
    """The ``spec`` tuple of :func:`kernel_row` (types fixed, unused entries empty); a sparse
    ``X`` in canonical format (:func:`canonical_csr`)."""
    n = mat.shape[0] if X is None else X.shape[0]
    mark = _NO_MARK
    if X is not None and sp.issparse(X):
        csr = canonical_csr(X)
        data, indices, indptr, sparse = csr.data, csr.indices, csr.indptr, True
        buf = np.zeros(csr.shape[1])
        if kind == ROW_RBF:
            mark = np.full(csr.shape[1], -1, dtype=np.int64)
    else:
        empty = np.empty(0, dtype=np.int32)
        data, indices, indptr, sparse, buf = np.empty(0), empty, empty, False, np.zeros(1)
    bits = np.empty(n, dtype=np.int64)
    return (
        kind,
        mat,
        data,
        indices,
        indptr,
        sparse,
        mark,
        0.0 if kernel is None else float(kernel.gamma),
        0.0 if kernel is None else float(kernel.coef0),
        0 if kernel is None else int(kernel.degree),
        buf,
        bits,
        bits.view(np.float64),
    )


def gram_arrays(K: np.ndarray) -> tuple:
    """The ``cache`` argument of :func:`cached_row` for a formed Gram matrix ``K`` (its rows are
    read in place; nothing is cached)."""
    n = K.shape[0]
    unused = np.empty(0, dtype=np.int64)
    stats = np.zeros(5, dtype=np.int64)
    return np.empty((0, n)), unused, unused, unused, stats, _spec(ROW_GRAM, K)


class KernelCache:
    r"""Rows ``K[i, :] = [k(x_i, x_t)]_t`` of the training Gram matrix, computed on demand and
    kept, least recently used first out, up to a memory budget (the SMO loop's rows enter at the
    least recent end while its active variables outnumber the slots twice over,
    :func:`cached_row`).

    ``K`` is symmetric, so row ``i`` is also column ``i``: a product ``K v`` needs the rows of the
    nonzero entries of ``v`` only (the support vectors, for ``v = alpha * y``), and a solver
    never forms the ``n x n`` matrix. The built-in kernels (linear, rbf, poly) compute rows with
    the compiled :func:`kernel_row`, whose exponential is within one ulp, so every row has the
    same value whoever asks for it; a callable kernel is called on blocks of rows. The arrays
    (:attr:`arrays`) are shared with the SMO loop
    (:func:`qpsvm.solvers._online_kernels.smo_loop`), which fills the same slots by the same
    rule (:func:`cached_row`), so the rows SMO computed serve the working set and the
    certificate afterwards.

    Parameters
    ----------
    kernel : Kernel
        Any kernel but ``"precomputed"`` (whose data already are the Gram matrix).
    X : ndarray or csr_matrix of shape (n_samples, n_features)
        Training data.
    size : float
        Memory budget in MB (``2**20`` bytes); at least two rows are kept.

    Attributes
    ----------
    rows : ndarray of shape (capacity, n_samples)
        The slots; slot ``s`` holds row ``owner[s]`` (``-1``: empty). Slots fill in order, so
        the used ones are the prefix ``rows[:filled]``.
    slot_of : ndarray of shape (n_samples,)
        Slot of each row (``-1``: not cached).
    owner, stamp : ndarray of shape (capacity,)
        Row held by each slot, and the clock of its last use (``-1``: never).
    stats : ndarray of shape (5,)
        Hits and misses (rows found, rows computed), the clock (time of the next use), the
        slot of the last use and the sweep flag of :func:`cached_row`.
    spec : tuple or None
        Data and parameters of :func:`kernel_row` (``None`` for a callable kernel).
    """

    def __init__(self, kernel: Kernel, X: np.ndarray | sp.spmatrix, size: float) -> None:
        if kernel.name == "precomputed":
            raise InvalidInputError("a precomputed kernel is its own Gram matrix; use its rows.")
        n = int(X.shape[0])
        self.kernel, self.X, self.size = kernel, X, float(size)
        self.capacity = int(min(n, max(2, self.size * 2**20 // (8 * n))))
        self.rows = np.empty((self.capacity, n))
        self.slot_of = np.full(n, -1, dtype=np.int64)
        self.owner = np.full(self.capacity, -1, dtype=np.int64)
        self.stamp = np.full(self.capacity, -1, dtype=np.int64)
        self.stats = np.zeros(5, dtype=np.int64)
        self.spec: tuple | None = None
        self._products: list[tuple[np.ndarray, np.ndarray]] = []
        if kernel.name in _ROW_KINDS:
            XT = np.empty((0, 0)) if sp.issparse(X) else np.ascontiguousarray(X.T)
            self.spec = _spec(_ROW_KINDS[kernel.name], XT, X, kernel)

    @property
    def arrays(self) -> tuple:
        """The ``cache`` argument of :func:`cached_row` (built-in kernels only)."""
        if self.spec is None:
            raise InvalidInputError("a callable kernel has no compiled rows; use the Gram matrix.")
        return self.rows, self.slot_of, self.owner, self.stamp, self.stats, self.spec

    @property
    def filled(self) -> int:
        """Number of slots in use (the prefix ``rows[:filled]``)."""
        return int(np.count_nonzero(self.owner >= 0))

    def slots(self, idx: np.ndarray) -> np.ndarray:
        """Slots holding the rows ``idx`` (distinct, at most :attr:`capacity`), computing the
        missing ones from the data in place of the least recently used rows not in ``idx``."""
        clock = self.stats[2]
        self.stats[2] += 1
        slots = self.slot_of[idx]
        hit = slots >= 0
        self.stamp[slots[hit]] = clock
        missing = idx[~hit]
        self.stats[:2] += (idx.size - missing.size, missing.size)
        if missing.size:
            # empty slots first (in order), then the oldest; this call's hits are the newest
            free = np.argsort(self.stamp, kind="stable")[: missing.size]
            old = self.owner[free]
            self.slot_of[old[old >= 0]] = -1
            if self.spec is None:
                self.rows[free] = self.kernel(self.X[missing], self.X)
            else:
                _fill_rows(missing.astype(np.int64), free, self.rows, self.spec)
            self.owner[free], self.slot_of[missing], self.stamp[free] = missing, free, clock
            slots[~hit] = free
        return slots

    def take(self, idx: np.ndarray) -> np.ndarray:
        """``K[idx, :]`` as a new array."""
        idx = np.asarray(idx, dtype=np.intp)
        unique, inverse = np.unique(idx, return_inverse=True)
        if unique.size <= self.capacity:
            # one gather (a masked assignment into the output copies the rows twice)
            return self.rows[self.slots(unique)[inverse]]
        out = np.empty((idx.size, self.rows.shape[1]))
        for start in range(0, unique.size, self.capacity):
            part = unique[start : start + self.capacity]
            at = (inverse >= start) & (inverse < start + part.size)
            out[at] = self.rows[self.slots(part)[inverse[at] - start]]
        return out

    def block(self, idx: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """``K[idx][:, cols]`` as a new array, gathered from the cached rows without copying
        them whole (the KKT equations on a free set need its block only)."""
        idx = np.asarray(idx, dtype=np.intp)
        cols = np.asarray(cols, dtype=np.intp)
        unique, inverse = np.unique(idx, return_inverse=True)
        if unique.size <= self.capacity:
            # one gather (the assignment into an output below copies the block twice)
            return self.rows[np.ix_(self.slots(unique)[inverse], cols)]
        out = np.empty((idx.size, cols.size))
        for start in range(0, unique.size, self.capacity):
            part = unique[start : start + self.capacity]
            at = np.flatnonzero((inverse >= start) & (inverse < start + part.size))
            slots = self.slots(part)[inverse[at] - start]
            out[at] = self.rows[np.ix_(slots, cols)]
        return out

    def _product_slots(self, nz: np.ndarray) -> np.ndarray:
        """Slots of the rows ``nz`` of a product (compiled rows only): the cached rows in place,
        the missing ones in the slots of rows outside the product, ``-1`` for the rest (computed
        into a scratch row): a product over more rows than the slots evicts none of its own."""
        slots = self.slot_of[nz]
        hit = slots >= 0
        missing = np.flatnonzero(~hit)
        kept = missing[: self.capacity - (nz.size - missing.size)]
        taken = np.concatenate([np.flatnonzero(hit), kept])
        slots[taken] = self.slots(nz[taken])
        slots[missing[kept.size :]] = -1
        self.stats[1] += missing.size - kept.size
        return slots

    def enclosed_products(
        self, V: np.ndarray, A: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        r"""``K V^T`` in twice the working precision and ``K A^T`` in floating point, over the
        rows ``j`` where a column of ``V`` or ``A`` is nonzero, in one read of each row.

        .. math::

            s_p + c_p = \sum_j V_{pj} K_{j,:} \ (\text{Dot2}), \qquad
            m_q = \sum_j A_{qj} K_{j,:},

        the rows in increasing ``j``: ``(s_p, c_p)`` are the floats of
        :func:`qpsvm._numerics.tdot2` over those rows in that order (the same operations), ``m_q``
        a recursive sum (within :math:`\gamma` of its exact value for nonnegative terms, as any
        order). The rows are read where they are cached and taken as :meth:`matvec` takes them
        (:meth:`_product_slots`: no row of the product evicted, the free rows a solver keeps
        stay), instead of gathered into blocks that evicted the rows outside each block.
        ``None`` without compiled rows or while the pass is not compiled
        (:func:`qpsvm._numerics.uncompiled`).
        """
        V = np.ascontiguousarray(V, dtype=np.float64)
        A = np.ascontiguousarray(A, dtype=np.float64)
        nz = np.flatnonzero(np.any(V != 0.0, axis=0) | np.any(A != 0.0, axis=0))
        if self.spec is None or uncompiled(_enclosed_pass, nz.size, DOT2_ROWS):
            return None
        n = self.rows.shape[1]
        s, c = np.zeros((V.shape[0], n)), np.zeros((V.shape[0], n))
        m = np.zeros((A.shape[0], n))
        slots = self._product_slots(nz)
        V, A = np.ascontiguousarray(V[:, nz]), np.ascontiguousarray(A[:, nz])
        _enclosed_pass(self.rows, slots, nz, V, A, self.spec, np.empty(n), s, c, m)
        return s, c, m

    def matvec(self, v: np.ndarray) -> np.ndarray:
        """``K v = sum_j v_j K[j, :]`` over the nonzero ``v_j`` only, in increasing ``j``.

        The cached rows are read in place; the missing ones take the slots of rows outside the
        product (least recent first) and, once none is left, are computed into a scratch row
        without being kept: a product over more rows than the slots evicts none of its own
        (least recently used eviction, chunk by chunk, kept none and computed every row of
        each product; measured, rbf n = 8000, 3276 slots: 0.42 s -> 0.21 s a product).

        The sum is a function of ``v`` and the data alone (every row is computed the same way),
        so the last :data:`REMEMBERED` products are kept: a solver, its full-data check and the
        certificate usually ask for the scores of the same candidate in turn.
        """
        v = np.asarray(v, dtype=np.float64)
        for k, (seen, product) in enumerate(self._products):
            if np.array_equal(seen, v):
                self._products.insert(0, self._products.pop(k))
                return product.copy()
        nz = np.flatnonzero(v)
        out = np.zeros(self.rows.shape[1])
        if self.spec is None:
            for start in range(0, nz.size, self.capacity):
                part = nz[start : start + self.capacity]
                _combine_rows(self.rows, self.slots(part), np.ascontiguousarray(v[part]), out)
        else:
            # the cached rows in place; the missing ones into the slots of rows outside the
            # product, the rest computed into a scratch row: a product over more rows than
            # the slots evicts none of its own (nor the rows a solver will ask for next)
            scratch = np.empty(self.rows.shape[1])
            _combine_computed(
                self.rows,
                self._product_slots(nz),
                nz,
                np.ascontiguousarray(v[nz]),
                self.spec,
                scratch,
                out,
            )
        self._products = [(v.copy(), out.copy()), *self._products[: REMEMBERED - 1]]
        return out


def make_kernel(
    kernel: str | Callable,
    X: np.ndarray | sp.spmatrix,
    gamma: float | str | None,
    degree: int,
    coef0: float,
) -> Kernel:
    """Resolve the ``kernel`` argument; ``gamma=None`` (or ``"scale"``) is scikit-learn's
    ``1 / (n_features * X.var())``, ``"auto"`` is ``1 / n_features``."""
    if callable(kernel):
        return Kernel("callable", function=kernel)
    if not isinstance(kernel, str):
        raise InvalidTypeError(
            f"kernel must be one of {KERNELS} or a callable k(A, B); got {type(kernel).__name__}."
        )
    if kernel not in KERNELS:
        raise InvalidInputError(
            f"unknown kernel {kernel!r}; choose one of {KERNELS} or a callable."
        )
    if not (gamma is None or (isinstance(gamma, str | Real) and not isinstance(gamma, bool))):
        raise InvalidTypeError(
            f"gamma must be a positive number, 'scale' or 'auto'; got {type(gamma).__name__}."
        )
    if not isinstance(degree, Real) or isinstance(degree, bool):
        raise InvalidTypeError(f"degree must be a positive integer; got {type(degree).__name__}.")
    if not isinstance(coef0, Real) or isinstance(coef0, bool):
        raise InvalidTypeError(f"coef0 must be a real number; got {type(coef0).__name__}.")
    if kernel not in GAMMA_KERNELS and gamma in (None, "scale", "auto"):
        # a linear or precomputed kernel has no gamma: its default is not worth a pass over X
        # (12 ms at 10000 x 1e6, 1e6 nonzeros, of a 170 ms certified solve)
        g = Kernel.gamma
    elif gamma is None or gamma == "scale":
        var = (X.multiply(X).mean() - X.mean() ** 2) if sp.issparse(X) else X.var()
        g = 1.0 / (X.shape[1] * var) if var > 0 else 1.0
    elif gamma == "auto":
        g = 1.0 / X.shape[1]
    else:
        if isinstance(gamma, str) or not np.isfinite(gamma) or gamma <= 0:
            raise InvalidInputError(f"gamma must be > 0, 'scale' or 'auto'; got {gamma!r}.")
        g = float(gamma)
    if kernel == "poly" and (int(degree) != degree or degree < 1):
        raise InvalidInputError(f"degree must be a positive integer; got {degree!r}.")
    if not np.isfinite(coef0):
        raise InvalidInputError(f"coef0 must be finite; got {coef0!r}.")
    return Kernel(kernel, gamma=g, degree=int(degree), coef0=float(coef0))


def check_precomputed(K: np.ndarray) -> np.ndarray:
    """Check a training Gram matrix: square, symmetric and positive semidefinite."""
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise InvalidInputError(
            f"a precomputed kernel must be the square n x n Gram matrix of the training data; "
            f"got shape {K.shape}."
        )
    scale = max(1.0, float(np.max(np.abs(K))))
    if not np.allclose(K, K.T, rtol=0, atol=1e-10 * scale):
        raise InvalidInputError("the precomputed kernel is not symmetric; pass (K + K.T) / 2.")
    lam_min = float(np.linalg.eigvalsh(K)[0])
    if lam_min < -1e-8 * scale * K.shape[0]:
        raise InvalidInputError(
            f"the precomputed kernel is not positive semidefinite (smallest eigenvalue "
            f"{lam_min:.3g}); a valid kernel gives a PSD Gram matrix. Add a ridge or fix the "
            "kernel."
        )
    return K


def gram_factor(K: np.ndarray, rtol: float = 1e-13) -> np.ndarray:
    """A factor ``L`` with ``L L^T = K``.

    A Cholesky factorisation when ``K`` is positive definite (10-20x faster than an
    eigendecomposition); otherwise (rank-deficient ``K``, e.g. duplicated points) a symmetric
    eigendecomposition with eigenvalues below ``rtol * max`` dropped, so the factor exists for
    every PSD matrix.
    """
    try:
        return scipy.linalg.cholesky(K, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        pass
    lam, V = scipy.linalg.eigh(K, driver="evd", check_finite=False)
    keep = lam > rtol * max(float(lam[-1]), 1e-300)
    return V[:, keep] * np.sqrt(lam[keep])
