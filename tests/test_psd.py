"""Exact proofs of positive semidefiniteness (qpsvm.verify.psd), checked against exact rational
eigen-structure: a matrix is PSD iff every leading principal minor of its LDL^T in rationals is
nonnegative with zero rows where the pivot is zero, computed here independently in fractions."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import scipy.sparse as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st

from qpsvm.verify.psd import EXACT_PSD_SIZE, is_pd_cholesky, is_psd_exact, psd_reason
from qpsvm.verify.qp import _QP


def psd_in_fractions(M: np.ndarray) -> bool:
    """The reference: symmetric elimination in Fractions (pivot on any positive diagonal)."""
    A = [[Fraction(float(v)) for v in row] for row in M]
    while A:
        diag = [A[i][i] for i in range(len(A))]
        if min(diag) < 0:
            return False
        k = max(range(len(A)), key=lambda i: diag[i])
        if diag[k] == 0:
            return all(v == 0 for row in A for v in row)
        rest = [i for i in range(len(A)) if i != k]
        A = [[A[i][j] - A[i][k] * A[k][j] / A[k][k] for j in rest] for i in rest]
    return True


def _matrix(m: int, rank: int, seed: int, scale: float) -> np.ndarray:
    """``B^T B`` rounded to float64 (symmetrised exactly), ``B`` of ``rank`` rows; integer
    entries at ``scale=0`` so that the product is exact."""
    rng = np.random.default_rng(seed)
    if scale == 0.0:
        B = rng.integers(-3, 4, size=(rank, m)).astype(float)
    else:
        B = rng.normal(size=(rank, m)) * scale
    P = B.T @ B
    return np.triu(P) + np.triu(P, 1).T


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 7),
    st.integers(0, 7),
    st.integers(0, 2**31 - 1),
    st.sampled_from([0.0, 1e-3, 1.0, 1e3]),
)
@example(2, 1, 0, 0.0).via("an exactly singular PSD matrix of integers")
@example(5, 3, 1, 1.0).via("a rank-deficient B^T B in float64, usually not exactly PSD")
def test_exact_test_agrees_with_fractions(m, rank, seed, scale):
    M = _matrix(m, rank, seed, scale)
    assert is_psd_exact(M) == psd_in_fractions(M)
    if is_pd_cholesky(M):  # the floating-point proof never claims a matrix that is not PSD
        assert psd_in_fractions(M)


def test_definite_blocks_are_proven_in_floating_point_at_any_size():
    rng = np.random.default_rng(0)
    B = rng.normal(size=(300, 200))
    P = B.T @ B
    P = np.triu(P) + np.triu(P, 1).T
    assert is_pd_cholesky(P)
    assert psd_reason(sp.csr_matrix(P)) is None


def test_a_matrix_cvxpy_would_accept_is_refused_when_it_is_not_exactly_psd():
    eps = 2.0**-52
    M = np.array([[1.0, 1.0 + eps], [1.0 + eps, 1.0]])  # eigenvalue -eps
    assert not is_psd_exact(M) and not is_pd_cholesky(M)
    assert "not positive semidefinite" in psd_reason(sp.csr_matrix(M))
    assert psd_reason(sp.csr_matrix(np.array([[1.0, 1.0], [1.0, 1.0]]))) is None


def test_blocks_are_decided_separately():
    """A diagonal block, a dominant block and a singular coupled block of integers."""
    singular = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 0.0]])
    P = sp.block_diag([np.diag([0.0, 3.0]), np.array([[2.0, 1.0], [1.0, 2.0]]), singular])
    assert psd_reason(P) is None
    bad = sp.block_diag([np.eye(2), np.array([[1.0, 2.0], [2.0, 1.0]])])
    assert "not positive semidefinite" in psd_reason(bad)
    assert "negative diagonal" in psd_reason(sp.diags([1.0, -1.0]))


def test_large_singular_blocks_are_not_claimed():
    m = EXACT_PSD_SIZE + 1
    P = np.ones((m, m))  # PSD, rank one: no shifted Cholesky proof, too large for elimination
    assert "above the" in psd_reason(sp.csr_matrix(P))


def test_asymmetric_p_is_named():
    P = sp.csr_matrix(np.array([[1.0, 0.5], [0.0, 1.0]]))
    qp = _QP(P, np.zeros(2), None, np.zeros(0), None, np.zeros(0), -np.ones(2), np.ones(2))
    assert qp.convexity() == "P is not symmetric"
