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

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp

from qpsvm._numerics import gamma
from qpsvm.verify.rigorous import TINY, U, enclosed_product, up, upper_sum
from qpsvm.verify.rigorous_poly import PolyBound, poly_rows

__all__ = [
    "EXACT_PSD_SIZE",
    "GRAM_PROOF_SIZE",
    "ExactGram",
    "GramVerdict",
    "gram_verdict",
    "is_pd_cholesky",
    "is_psd_exact",
    "is_psd_integer",
    "psd_reason",
]

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
    return is_psd_integer(_integers(np.asarray(M, dtype=np.float64)))


def is_psd_integer(A: np.ndarray) -> bool:
    """Whether the symmetric integer matrix ``A`` (an object array of Python integers) is
    positive semidefinite, by the fraction-free symmetric elimination of the module."""
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
    from scipy.sparse.csgraph import connected_components  # on first use: 0.03-0.05 s import

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


@dataclass(frozen=True)
class ExactGram:
    r"""A precomputed Gram matrix as the certificate sees it: its values are the data, exact
    (no rounding to bound), with ``diagonal`` :math:`= \max_i K_{ii}`, which bounds every
    :math:`|K_{ij}|` once ``K`` is proven positive semidefinite."""

    diagonal: float


#: Largest training set whose poly Gram matrix (``coef0 < 0``) a certificate tries to prove
#: positive semidefinite: the ``n x n`` values with their bounds (0.05 s at n = 500) and a
#: Cholesky factor whose residual is enclosed column by column by Dot2, ``O(n^3)`` compensated
#: operations (measured on one loaded core: 1.9 s at n = 500, 7-12 s at n = 1000).
GRAM_PROOF_SIZE = 500


@dataclass(frozen=True)
class GramVerdict:
    """Whether a kernel's Gram matrix on the data is positive semidefinite.

    Attributes
    ----------
    psd : bool or None
        ``True`` proven semidefinite, ``False`` proven not, ``None`` undecided.
    reason : str
        What was proven, or why nothing was.
    """

    psd: bool | None
    reason: str


def _symmetric(M: np.ndarray) -> np.ndarray:
    """``M``'s upper triangle mirrored (the computed values of a symmetric kernel need not be
    symmetric: their inner products are summed in different orders)."""
    upper = np.triu(M)
    return upper + np.triu(M, 1).T


def gram_verdict(bound: PolyBound | ExactGram, X: Any) -> GramVerdict:
    r"""Whether the exact Gram matrix :math:`K_{ij} = (\gamma\, x_i\cdot x_j + c_0)^p` of the
    poly kernel on the rows of ``X`` is positive semidefinite, proven either way where it can
    be (the kernel need not be for :math:`c_0 < 0`; for :math:`c_0 \ge 0` it is, by Schur's
    product theorem).

    The certificate's own values :math:`\hat K` and their proven bounds ``E``
    (:func:`~qpsvm.verify.rigorous_poly.poly_rows`), both made symmetric from their upper
    triangles, give :math:`K = \hat K + \Delta` with :math:`|\Delta| \le E` entrywise, so
    :math:`\|\Delta\|_2 \le r = \max_i \sum_j E_{ij}` (a symmetric matrix's 2-norm is at most
    its largest absolute row sum).

    * **Semidefinite.** With :math:`S = \hat K - r I`, its diagonal rounded down, proven
      positive definite by a shifted Cholesky factor (:func:`is_pd_cholesky`, Rump, BIT 2006):
      :math:`K \succeq S + (rI + \Delta) \succeq S \succ 0`. It proves nothing for a singular
      ``K`` (more points than the feature space has dimensions, duplicated points).
    * **Not semidefinite.** With ``v`` an eigenvector of the smallest computed eigenvalue of
      :math:`\hat K`: :math:`v^T K v \le v\cdot(\hat K v) + |v|^T E |v|`, the product enclosed
      rigorously (Dot2 with its bound) and the sums evaluated in fractions; a negative upper
      bound proves :math:`v^T K v < 0`.

    A precomputed Gram matrix (``bound`` an :class:`ExactGram`, ``X`` the matrix) goes the same
    way with :math:`\hat K = K` and ``E = 0``: its values are the data, stated exactly, so it
    must be exactly symmetric (else nothing is proven); where the shifted Cholesky factor proves
    nothing (a singular ``K``) and ``n`` is at most :data:`EXACT_PSD_SIZE`, exact elimination
    decides it.

    Above :data:`GRAM_PROOF_SIZE` rows nothing is tried.
    """
    n = X.shape[0]
    exact = isinstance(bound, ExactGram)
    if not exact and bound.positive_semidefinite:
        return GramVerdict(True, "coef0 >= 0: the poly kernel is positive semidefinite")
    if n > GRAM_PROOF_SIZE:
        return GramVerdict(
            None, f"n = {n} rows, above the {GRAM_PROOF_SIZE} its Gram matrix is checked for"
        )
    if exact:
        K = np.asarray(X, dtype=np.float64)
        if not np.array_equal(K, K.T):
            return GramVerdict(None, "not exactly symmetric: pass (K + K.T) / 2")
        E = np.zeros_like(K)
    else:
        K, E = poly_rows(bound, X, np.arange(n))
        K, E = _symmetric(K), _symmetric(E)
    if not (np.all(np.isfinite(K)) and np.all(np.isfinite(E))):
        return GramVerdict(None, "its values or their bounds are not finite in float64")
    r = max((upper_sum(row) for row in E), default=0.0)
    S = K.copy()
    diagonal = np.nextafter(np.diag(K) - r, -np.inf)  # below the exact K_ii - r
    np.fill_diagonal(S, diagonal)
    if is_pd_cholesky(S):
        return GramVerdict(True, "proven positive definite (shifted Cholesky factor)")
    if exact and n <= EXACT_PSD_SIZE:
        if is_psd_exact(K):
            return GramVerdict(True, "proven positive semidefinite (exact elimination)")
        return GramVerdict(False, "proven not positive semidefinite (exact elimination)")
    _, vectors = np.linalg.eigh(K)
    v = vectors[:, 0]
    hi, lo, err = enclosed_product(K, v)
    a = np.abs(v)
    spread = up(up(E @ a) * (1.0 + 2.0 * gamma(n + 1)) + n * TINY)
    # v . (K^ v) within v . err, and v^T (K - K^) v within |v|^T E |v|
    exact = Fraction(0)
    for vi, h, low, ai, e, s in zip(v, hi, lo, a, err, spread, strict=True):
        exact += Fraction(vi) * (Fraction(h) + Fraction(low))
        exact += Fraction(ai) * (Fraction(e) + Fraction(s))
    if exact < 0:
        return GramVerdict(False, "proven not positive semidefinite: v^T K v < 0 for a vector v")
    return GramVerdict(
        None, "neither proven positive definite nor proven indefinite (singular or nearly)"
    )
