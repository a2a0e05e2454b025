r"""Exact proofs that a symmetric float64 matrix is positive semidefinite.

A float64 matrix is a matrix of dyadic rationals: scaled by one power of two, its entries are
integers, and :math:`P \succeq 0` is decided exactly on them. Symmetric elimination with a
positive diagonal pivot :math:`p` keeps semidefiniteness both ways,

.. math::

    \begin{pmatrix} p & a^T \\ a & B \end{pmatrix} \succeq 0
    \iff B - \frac{a a^T}{p} \succeq 0 \qquad (p > 0),

and when no diagonal entry of what remains is positive, it is semidefinite exactly when it is
zero (a semidefinite matrix with a zero diagonal entry has a zero row and column). The
elimination is fraction-free (Bareiss): step ``t`` replaces the remaining block by
:math:`(p A - a a^T) / p_{t-1}`, an exact integer division whose result is a minor of the
matrix (Bareiss, "Sylvester's identity and multistep integer-preserving Gaussian elimination",
Math. Comp. 1968), a positive multiple of the Schur complement, so the entries grow like the
minors, not exponentially. Choosing the pivot among the diagonal (symmetric pivoting) keeps the
identity, since it is elimination on a symmetrically permuted matrix.

A sparse ``P`` is decided block by block (the connected components of its pattern): blocks that
are diagonally dominant with a nonnegative diagonal are semidefinite by Gershgorin's theorem;
others are proven definite in floating point with a rigorous residual bound
(:func:`is_pd_cholesky`, ``O(m^3)`` flops), and only what that cannot prove (singular or
ill-conditioned blocks) goes to the exact elimination.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from qpsvm.verify.rigorous import TINY, U, enclosed_product, up, upper_sum

__all__ = ["EXACT_PSD_SIZE", "is_pd_cholesky", "is_psd_exact", "psd_reason"]

#: Largest block decided by exact elimination when the shifted Cholesky proof fails (a singular
#: or ill-conditioned block): about ``m^3 / 3`` big-integer operations, near a second at this size
#: (measured on a dense singular block).
EXACT_PSD_SIZE = 60


def _integers(M: np.ndarray) -> np.ndarray:
    """``M`` times the smallest power of two that makes every entry an integer (an object
    array of Python integers)."""
    ratios = [float(v).as_integer_ratio() for v in M.ravel()]
    scale = max(d for _, d in ratios)
    return np.array([n * (scale // d) for n, d in ratios], dtype=object).reshape(M.shape)


def is_psd_exact(M: np.ndarray) -> bool:
    """Whether the symmetric matrix ``M`` (float64, finite) is positive semidefinite, decided in
    exact integer arithmetic."""
    A = _integers(np.asarray(M, dtype=np.float64))
    previous = 1
    while A.shape[0]:
        diag = np.array([A[i, i] for i in range(A.shape[0])], dtype=object)
        if any(v < 0 for v in diag):
            return False
        k = max(range(len(diag)), key=lambda i: diag[i])
        pivot = diag[k]
        if pivot == 0:
            return all(v == 0 for v in A.ravel())
        rest = [i for i in range(A.shape[0]) if i != k]
        a = A[rest, k]
        A = (pivot * A[np.ix_(rest, rest)] - np.outer(a, a)) // previous
        previous = pivot
    return True


def is_pd_cholesky(S: np.ndarray) -> bool:
    r"""Whether the float Cholesky factor of a shifted ``S`` proves ``S`` positive definite.

    With :math:`R^T R \approx S - cI` computed in floating point and the residual
    :math:`F = R^T R - (S - cI)` enclosed rigorously (Dot2 with its proven error,
    :func:`~qpsvm.verify.rigorous.enclosed_product`), :math:`S = R^T R + cI - F \succeq
    (c - \|F\|_2) I` and :math:`\|F\|_2 \le \max_i \sum_j |F_{ij}|`; so ``S`` is
    positive definite when that bound, rounded up, is below the shift ``c`` (the idea of Rump,
    "Verification of positive definiteness", BIT 2006). It fails (returns False, proving
    nothing) for singular or ill-conditioned ``S``.
    """
    m = S.shape[0]
    c = float(up(4.0 * (m + 2) ** 2 * U * float(np.max(np.diag(S)))))
    try:
        R = np.linalg.cholesky(S - c * np.eye(m)).T
    except np.linalg.LinAlgError:
        return False
    row_sums = np.zeros(m)
    for j in range(m):
        lo = np.zeros(m)
        lo[j] = c
        hi, low, err = enclosed_product(R, R[:, j], (-S[:, j], lo, np.zeros(m)))
        # one rounding of hi + low: |exact| <= |fl(hi + low)| / (1 - U) <= |fl| (1 + 2U)
        entry = up(up(np.abs(hi + low) * (1.0 + 2.0 * U)) + TINY)
        row_sums = up(row_sums + up(entry + err))
    return bool(np.all(np.isfinite(row_sums)) and float(np.max(row_sums)) < c)


def psd_reason(P: sp.spmatrix) -> str | None:
    """``None`` when the symmetric ``P`` is proven positive semidefinite (block by block:
    Gershgorin, else exact elimination), else why not."""
    P = sp.csr_matrix(P)
    diag = P.diagonal()
    if np.any(diag < 0):
        return "P has a negative diagonal entry: the problem is not convex"
    off = sp.csr_matrix(abs(P - sp.diags(diag)))
    off.eliminate_zeros()
    n_blocks, labels = connected_components(off, directed=False)
    for block in range(n_blocks):
        rows = np.flatnonzero(labels == block)
        if rows.size == 1 or all(
            upper_sum(off.data[off.indptr[i] : off.indptr[i + 1]]) <= diag[i] for i in rows
        ):
            continue
        block_P = P[rows][:, rows].toarray()
        if is_pd_cholesky(block_P):
            continue
        if rows.size > EXACT_PSD_SIZE:
            return (
                f"P has a block of {rows.size} coupled variables that is neither diagonally "
                "dominant nor proven definite by a shifted Cholesky factor, above the "
                f"{EXACT_PSD_SIZE} an exact proof of semidefiniteness is tried for (CVXPY "
                "checked it in floating point)"
            )
        if not is_psd_exact(block_P):
            return "P is not positive semidefinite (exact elimination): the problem is not convex"
    return None
