"""Rows of a linear SVM's data for the compiled kernels: dense, CSR, or pair differences.

The kernels (subgradient epochs, SMO, dual coordinate descent) take the data as one tuple
``M = (X, data, indices, indptr, sparse, pairs)`` (:func:`data_arrays`) and reach a row only
through :func:`_row_dot` and :func:`_row_axpy` (or :func:`_example_dot` and
:func:`_example_axpy`, which read example ``p = (a, b)`` of a ranking SVM as the difference
``x_a - x_b`` without forming it), so one compiled loop serves dense and sparse data, and a step
costs ``O(nnz(x_i))``. This module is a shared leaf: the solvers and the verifier use it.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

__all__ = ["data_arrays", "linear_data", "pair_sq_norms", "row_sq_norms"]


def data_arrays(X: np.ndarray | sp.csr_matrix, pairs: np.ndarray | None = None) -> tuple:
    """The matrix argument ``M = (X, data, indices, indptr, sparse, pairs)`` of the kernels.

    ``X`` dense, or ``sparse=True`` with the CSR arrays (``X`` empty); unused arrays are empty.
    With ``pairs`` (rows ``(i, j)``), example ``p`` is the difference ``x_i - x_j``.
    """
    pairs = np.empty((0, 2), dtype=np.int64) if pairs is None else np.asarray(pairs, np.int64)
    if sp.issparse(X):
        return np.empty((0, 0)), X.data, X.indices, X.indptr, True, pairs
    empty = np.empty(0, dtype=np.int32)
    return np.ascontiguousarray(X), np.empty(0), empty, empty, False, pairs


def row_sq_norms(X: np.ndarray | sp.csr_matrix) -> np.ndarray:
    """``||x_i||^2`` for every row."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X)


@numba.njit(cache=True, inline="always")
def _row_dot(i, M, v):  # pragma: no cover - compiled
    """``v . x_i`` for the row ``i`` of ``M``."""
    X, data, indices, indptr, sparse, _ = M
    dot = 0.0
    if sparse:
        for p in range(indptr[i], indptr[i + 1]):
            dot += v[indices[p]] * data[p]
    else:
        for j in range(v.shape[0]):
            dot += v[j] * X[i, j]
    return dot


@numba.njit(cache=True, inline="always")
def _row_axpy(i, M, c, v):  # pragma: no cover - compiled
    """``v <- v + c x_i``."""
    X, data, indices, indptr, sparse, _ = M
    if sparse:
        for p in range(indptr[i], indptr[i + 1]):
            v[indices[p]] += c * data[p]
    else:
        for j in range(v.shape[0]):
            v[j] += c * X[i, j]


@numba.njit(cache=True, inline="always")
def _example_dot(i, M, v):  # pragma: no cover - compiled
    """``v . z_i``: the row ``x_i``, or ``x_a - x_b`` for the pair ``i = (a, b)``."""
    pairs = M[5]
    if pairs.shape[0] > 0:
        return _row_dot(pairs[i, 0], M, v) - _row_dot(pairs[i, 1], M, v)
    return _row_dot(i, M, v)


@numba.njit(cache=True, inline="always")
def _example_axpy(i, M, c, v):  # pragma: no cover - compiled
    """``v <- v + c z_i``."""
    pairs = M[5]
    if pairs.shape[0] > 0:
        _row_axpy(pairs[i, 0], M, c, v)
        _row_axpy(pairs[i, 1], M, -c, v)
    else:
        _row_axpy(i, M, c, v)


@numba.njit(cache=True)
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


def linear_data(X: Any, n_features: int) -> tuple[tuple, np.ndarray]:
    """The matrix argument of the kernels (:func:`data_arrays`) for a linear binary SVM's rows,
    and their squared norms: the rows of ``X`` (dense or CSR), or the pair differences of a
    ranking SVM (``X`` a :class:`~qpsvm.formulations.ranking.PairDifferences`), never formed."""
    if isinstance(X, np.ndarray) or sp.issparse(X):
        return data_arrays(X), row_sq_norms(X)
    M = data_arrays(X.items, X.pairs)
    return M, pair_sq_norms(M, row_sq_norms(X.items), n_features)
