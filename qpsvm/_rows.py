"""Rows of a linear SVM's data for the compiled kernels: dense, CSR, or pair differences.

The kernels (subgradient epochs, SMO, dual coordinate descent) take the data as one tuple
``M = (X, data, indices, indptr, sparse, pairs)`` (:func:`data_arrays`) and reach a row only
through :func:`_row_dot` and :func:`_row_axpy` (or :func:`_example_dot` and
:func:`_example_axpy`, which read example ``p = (a, b)`` of a ranking SVM as the difference
``x_a - x_b`` without forming it), so one loop, written once, serves dense and sparse data, and
a step costs ``O(nnz(x_i))``. The accessors are chosen by the types of ``M``'s arrays when a
kernel is compiled (a two-dimensional ``X`` for dense rows, a two-dimensional ``pairs`` for pair
differences), so each kind of data gets its own machine code: a loop that tests a run-time flag
for every row runs about three times slower on sparse rows (measured: CSR rows of 20 nonzeros,
dual coordinate descent). CSR positions and column indices are read as unsigned
integers (``np.uintp``), here, in the compiled Dot2 sums and in the free-set finish: numba
then drops the test for a negative index (Python's wraparound) from every access, which cost
40% of an epoch of dual coordinate descent (41 epochs at 2000 x 20000, 20 nonzeros a row:
2.9 ms against 1.7 ms, CPU time, best of 20), with the same operations in the same order, so
the same results to the bit.
This module is a shared leaf: the solvers and the verifier use it.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import scipy.sparse as sp
from numba.extending import overload

from qpsvm._jit import ENTRY, OVERLOAD
from qpsvm._numerics import uncompiled

__all__ = [
    "canonical_csr",
    "clustered_columns",
    "data_arrays",
    "linear_data",
    "pair_sq_norms",
    "ranked_indices",
    "row_products",
    "row_sq_norms",
    "touched_columns",
    "used_columns",
]

#: :func:`touched_columns` restricts a matrix to the columns its rows touch once at most this
#: share of them is touched (the rest are exact zeros in every expansion): at 10000 x 1e6,
#: 100 nonzeros a row, 40% touched, an epoch of dual coordinate ascent took 0.8-0.87 times
#: its time over every column and a pass of its objectives 0.5 times (the rows' scattered
#: reads and writes land in a vector 0.4 times as long, the squared norm sums 0.4 times the
#: entries), for a restriction of 6-9 ms (CPU time, load 1.3-3 on 2 cores).
TOUCHED_SHARE = 0.75
#: Nonzeros :func:`touched_columns` passes to its numpy equivalent in a process before the
#: kernel is compiled (0.2-0.57 s of compile, CPU time at a load of 1-3; the equivalent costs
#: 10-16 ns a nonzero at 10000 x 1e6).
TOUCHED_ENTRIES = 2**24


#: :func:`clustered_columns` renumbers the columns of rows over more than this many columns
#: (``w`` then outgrows a core's cache: 8 bytes a column) ...
CLUSTERED_FROM = 2**15
#: ... and passes this many nonzeros in a process through the ascent in the rank order before
#: its kernel is compiled (the same floats either way).
CLUSTERED_ENTRIES = 2**24
#: :func:`row_products` forms ``B^T`` densely where the columns are at most this many times
#: the rows of the system the products belong to: CSR rows of 10-20 nonzeros (text-like,
#: benchmarks/regimes/sparse.py) at 0.5-8 columns a row, the Gram of the rows 1.1-4.4 times
#: and a border of 10 rows 2.6-4.6 times faster than scipy's sparse product (CPU time, load
#: 3-4), at 12.5 and 25 columns a row 4 and 10 times slower.
DENSE_TRANSPOSE_COLUMNS = 8


def data_arrays(X: np.ndarray | sp.csr_matrix, pairs: np.ndarray | None = None) -> tuple:
    """The matrix argument ``M = (X, data, indices, indptr, sparse, pairs)`` of the kernels.

    ``X`` dense (two-dimensional), or ``sparse=True`` with the CSR arrays (``X`` an empty vector:
    the kernels are compiled for one kind or the other); unused arrays are empty.
    With ``pairs`` (rows ``(i, j)``), example ``p`` is the difference ``x_i - x_j``; without,
    ``pairs`` is an empty vector.
    """
    if pairs is None:
        pairs = np.empty(0, dtype=np.int64)
    else:
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if sp.issparse(X):
        return np.empty(0), X.data, X.indices, X.indptr, True, pairs
    empty = np.empty(0, dtype=np.int32)
    return np.ascontiguousarray(X), np.empty(0), empty, empty, False, pairs


def canonical_csr(M: np.ndarray | sp.spmatrix, owned: bool = False) -> sp.csr_matrix:
    """``M`` as a float64 CSR matrix in canonical format (each row's indices sorted, duplicates
    summed): ``M`` itself where it already is one (its format checked once, then cached on it),
    else a matrix over ``M``'s arrays or, where those need sorting or summing, a copy, so the
    caller's matrix is never changed; with ``owned`` (``M`` a CSR copy of the caller's own)
    sorted in place. The rows are sorted and duplicates summed only where some remain (scipy's
    ``sum_duplicates`` sums after every sort, a pass that writes every entry). The compiled
    sparse rows need each feature at most once a row: a duplicate would be a second term
    (``kernels._sparse_row``) where the data state one value, their sum."""
    csr = M if isinstance(M, sp.csr_matrix) else sp.csr_matrix(M)
    if csr.dtype != np.float64:
        csr = csr.astype(np.float64)
    if not csr.has_canonical_format:
        csr = csr if owned else csr.copy()
        csr.sort_indices()
        # a new matrix over the sorted arrays asks afresh whether duplicates remain
        csr = sp.csr_matrix((csr.data, csr.indices, csr.indptr), shape=csr.shape, copy=False)
        csr.sum_duplicates()
    return csr


def row_sq_norms(X: np.ndarray | sp.csr_matrix) -> np.ndarray:
    """``||x_i||^2`` for every row. A CSR matrix in canonical format (sorted, no duplicates)
    without explicit zeros has its squares reduced along each row by ``np.add.reduceat``, as
    the sparse product's row sums do (the same result to the bit), without forming ``X * X``
    (0.02 ms against 0.76 ms at 2000 x 20000, 20 nonzeros a row)."""
    if sp.issparse(X) and X.format == "csr" and X.has_canonical_format and X.data.all():
        out = np.zeros(X.shape[0])
        rows = np.flatnonzero(np.diff(X.indptr))
        if rows.size:
            out[rows] = np.add.reduceat(X.data * X.data, X.indptr[rows])
        return out
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X)


def _row_dot(i, M, v):  # pragma: no cover - compiled (typed by the overload below)
    """``v . x_i`` for the row ``i`` of ``M``."""


def _row_axpy(i, M, c, v):  # pragma: no cover - compiled (typed by the overload below)
    """``v <- v + c x_i``."""


# chosen by the type of ``M[0]`` (two-dimensional: dense rows), see the module docstring
@overload(_row_dot, jit_options=OVERLOAD)
def _row_dot_typed(i, M, v):  # pragma: no cover - compiled
    if M[0].ndim == 2:

        def dense(i, M, v):
            X = M[0]
            dot = 0.0
            for j in range(v.shape[0]):
                dot += v[j] * X[i, j]
            return dot

        return dense

    def sparse(i, M, v):
        data, indices, indptr = M[1], M[2], M[3]
        dot = 0.0
        for p in range(np.uintp(indptr[i]), np.uintp(indptr[i + 1])):
            dot += v[np.uintp(indices[p])] * data[p]
        return dot

    return sparse


@overload(_row_axpy, jit_options=OVERLOAD)
def _row_axpy_typed(i, M, c, v):  # pragma: no cover - compiled
    if M[0].ndim == 2:

        def dense(i, M, c, v):
            X = M[0]
            for j in range(v.shape[0]):
                v[j] += c * X[i, j]

        return dense

    def sparse(i, M, c, v):
        data, indices, indptr = M[1], M[2], M[3]
        for p in range(np.uintp(indptr[i]), np.uintp(indptr[i + 1])):
            v[np.uintp(indices[p])] += c * data[p]

    return sparse


def _example_dot(i, M, v):  # pragma: no cover - compiled (typed by the overload below)
    """``v . z_i``: the row ``x_i``, or ``x_a - x_b`` for the pair ``i = (a, b)``."""


def _example_axpy(i, M, c, v):  # pragma: no cover - compiled (typed by the overload below)
    """``v <- v + c z_i``."""


# chosen by the type of ``M[5]`` (two-dimensional: pairs), like the row accessors
@overload(_example_dot, jit_options=OVERLOAD)
def _example_dot_typed(i, M, v):  # pragma: no cover - compiled
    if M[5].ndim == 2:
        return lambda i, M, v: _row_dot(M[5][i, 0], M, v) - _row_dot(M[5][i, 1], M, v)
    return _row_dot_typed(i, M, v)  # the row's own code: no call level compiled apart


@overload(_example_axpy, jit_options=OVERLOAD)
def _example_axpy_typed(i, M, c, v):  # pragma: no cover - compiled
    if M[5].ndim == 2:

        def pair(i, M, c, v):
            _row_axpy(M[5][i, 0], M, c, v)
            _row_axpy(M[5][i, 1], M, -c, v)

        return pair
    return _row_axpy_typed(i, M, c, v)


@numba.njit(**ENTRY)
def pair_sq_norms(M, sqnorm, n_features):  # pragma: no cover - compiled
    """``||x_a - x_b||^2 = ||x_a||^2 + ||x_b||^2 - 2 x_a.x_b`` for every pair ``(a, b)`` of ``M``
    (``sqnorm``: the rows' squared norms), in ``O(nnz)`` a pair."""
    pairs = M[5]
    buf = np.zeros(n_features)
    out = np.empty(pairs.shape[0])
    for p in range(pairs.shape[0]):
        a, b = pairs[p, 0], pairs[p, 1]
        _row_axpy(a, M, 1.0, buf)
        cross = _row_dot(b, M, buf)
        _row_axpy(a, M, -1.0, buf)  # x + (-1) x == 0 exactly: buf is zero again
        out[p] = max(sqnorm[a] + sqnorm[b] - 2.0 * cross, 0.0)
    return out


@numba.njit(**ENTRY)
def _touched_columns(indices, d, most):  # pragma: no cover - compiled
    """The columns among ``0..d-1`` that ``indices`` name, in increasing order, and each index
    renumbered by its column's rank among them (in ``indices``' integer type); where more than
    ``most`` columns are touched, no renumbering (empty: the rows are not restricted, and the
    pass writing every index is saved). The ranks are counted without a branch
    (``touched[count] = j`` always, ``count`` advanced by the mark): at 10000 x 1e6, 40% of the
    columns touched, the branch was mispredicted often enough to cost 4.7-4.9 ms against 2.9-3.1
    ms (CPU, best of 30)."""
    mark = np.zeros(d, dtype=np.uint8)  # a byte a column: the scattered writes stay cached
    for k in range(indices.shape[0]):
        mark[np.uintp(indices[k])] = 1
    rank = np.empty(d, dtype=indices.dtype)
    touched = np.empty(d, dtype=np.int64)
    count = 0
    for j in range(d):
        rank[j] = count
        touched[count] = j  # overwritten by the next column unless this one is marked
        count += mark[j]
    if count > most:
        return indices[:0].copy(), touched[:count].copy()
    renumbered = np.empty_like(indices)
    for k in range(indices.shape[0]):
        renumbered[k] = rank[np.uintp(indices[k])]
    return renumbered, touched[:count].copy()


def row_products(A: Any, B: Any, rows: int) -> np.ndarray:
    r"""``A B^T``, the inner products of the rows of ``A`` and ``B`` (CSR over the same
    columns, or dense), as a dense array; ``rows`` the size of the system they belong to.

    On CSR rows with at most :data:`DENSE_TRANSPOSE_COLUMNS` times ``rows`` columns, ``A``
    times ``B^T`` formed densely (scipy's CSR loop over a dense block) instead of the sparse
    product: both add, for each entry ``(i, j)``, the products ``a_ik b_jk`` in the order of
    ``A``'s row ``i`` from 0, the dense block's zeros adding exact zeros, so the same floats
    (zeros' signs included: a zero sum is ``+0`` either way)."""
    if sp.issparse(A) and A.shape[1] <= DENSE_TRANSPOSE_COLUMNS * rows:
        return np.asarray(A @ B.T.toarray())
    K = A @ B.T
    return K.toarray() if sp.issparse(K) else np.asarray(K)


def used_columns(X: sp.csr_matrix) -> np.ndarray:
    """Whether each column of the CSR rows ``X`` holds a stored entry: a mask over the columns,
    ``O(nnz + d)`` (``np.unique`` of the indices sorts them: 0.4 ms at 803 rows of 20 nonzeros
    over 20000 columns)."""
    used = np.zeros(X.shape[1], dtype=bool)
    used[X.indices] = True
    return used


def ranked_indices(X: sp.csr_matrix, used: np.ndarray) -> np.ndarray:
    """The column indices of ``X`` renumbered by their column's rank among the ``used`` ones
    (:func:`used_columns`), as int64."""
    return (np.cumsum(used, dtype=np.int64) - 1)[X.indices]


def touched_columns(X: sp.csr_matrix) -> tuple[sp.csr_matrix, np.ndarray] | None:
    """``X`` restricted to the columns its rows touch (``X[:, touched]``, the rows' entries in
    their order, columns renumbered) and those columns ``touched``, increasing; ``None`` when
    more than :data:`TOUCHED_SHARE` of the columns are touched. A column no row touches is 0
    in every sum of rows, so ``X^T u`` is the restricted product's entries at ``touched`` and
    exact zeros elsewhere, and ``X w`` depends on ``w[touched]`` only, by the same operations
    in the same order. Before the kernel is compiled, numpy computes the same integers."""
    d = X.shape[1]
    if uncompiled(_touched_columns, X.nnz, TOUCHED_ENTRIES):
        used = used_columns(X)
        touched = np.flatnonzero(used)
        if touched.size > TOUCHED_SHARE * d:
            return None
        renumbered = ranked_indices(X, used).astype(X.indices.dtype)
    else:
        renumbered, touched = _touched_columns(X.indices, d, TOUCHED_SHARE * d)
        if touched.size > TOUCHED_SHARE * d:
            return None
    shape = (X.shape[0], touched.size)
    restricted = sp.csr_matrix((X.data, renumbered, X.indptr), shape=shape, copy=False)
    if X.has_canonical_format:
        # ranks increase with the columns: sorted, distinct rows stay so (no second O(nnz) check)
        restricted.has_canonical_format = True
    return restricted, touched


@numba.njit(**ENTRY)
def _first_appearance(indices, width):  # pragma: no cover - compiled
    """``indices`` (columns among ``0..width-1``) renumbered by the order in which the columns
    first appear in them, and the columns in that order (``order[new] = old``, as int64)."""
    rank = np.full(width, -1, dtype=np.int64)
    order = np.empty(width, dtype=np.int64)
    renumbered = np.empty_like(indices)
    count = 0
    for k in range(indices.shape[0]):
        j = np.uintp(indices[k])
        r = rank[j]
        if r < 0:
            r = count
            rank[j] = r
            order[r] = j
            count += 1
        renumbered[k] = r
    return renumbered, order[:count].copy()


def clustered_columns(X: sp.csr_matrix) -> tuple[sp.csr_matrix, np.ndarray] | None:
    """``X`` with its columns renumbered by their first appearance along the rows (each row's
    entries in their stored order) and the columns in that order, ``order`` (``Y[:, k] = X[:,
    order[k]]``); ``None`` before the kernel is compiled (:data:`CLUSTERED_ENTRIES`) or when
    ``X`` has at most :data:`CLUSTERED_FROM` columns. A row's columns that no earlier row
    touches (most of a text-like row's: its rare terms) are then adjacent, so the scattered
    reads and writes of ``x_i . w`` and ``w += delta x_i`` land on a few cache lines rather
    than one each; each row's products are summed in the same order as in ``X``, so every
    ``x_i . w`` is the same float at ``w[order]``. The rows are no longer sorted by column: for
    the epochs of the dual coordinate ascent only."""
    width = X.shape[1]
    if width <= CLUSTERED_FROM or uncompiled(_first_appearance, X.nnz, CLUSTERED_ENTRIES):
        return None
    renumbered, order = _first_appearance(X.indices, width)
    Y = sp.csr_matrix((X.data, renumbered, X.indptr), shape=(X.shape[0], order.size), copy=False)
    Y.has_sorted_indices = False
    return Y, order


def linear_data(X: Any, n_features: int) -> tuple[tuple, np.ndarray]:
    """The matrix argument of the kernels (:func:`data_arrays`) for a linear binary SVM's rows,
    and their squared norms: the rows of ``X`` (dense or CSR), or the pair differences of a
    ranking SVM (``X`` a :class:`~qpsvm.formulations.ranking.PairDifferences`), never formed."""
    if isinstance(X, np.ndarray) or sp.issparse(X):
        return data_arrays(X), row_sq_norms(X)
    M = data_arrays(X.items, X.pairs)
    return M, pair_sq_norms(M, row_sq_norms(X.items), n_features)
