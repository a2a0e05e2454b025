"""The regularised intercept's data ``[X, B]`` built row by row on CSR equals the dense stack."""

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from qpsvm.formulations.pieces.intercepts import with_bias_column


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 12),
    d=st.integers(1, 12),
    density=st.floats(0.0, 1.0),
    scaling=st.floats(0.1, 10.0),
    seed=st.integers(0, 2**16),
    integer=st.booleans(),
)
def test_csr_bias_column_is_the_stacked_column(n, d, density, scaling, seed, integer):
    """Every entry of ``[X, B]`` is ``X``'s or ``B`` (exact copies), the rows stay sorted,
    empty rows included; a non-canonical ``X`` (duplicates) takes the general stack."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=rng)
    if integer:
        X = sp.csr_matrix((np.ceil(10 * X.data).astype(np.int64), X.indices, X.indptr), X.shape)
    expected = np.hstack([X.toarray().astype(np.float64), np.full((n, 1), scaling)])
    got = with_bias_column(X, scaling)
    assert sp.isspmatrix_csr(got) or got.format == "csr"
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got.toarray(), expected)
    assert got.has_canonical_format
    rows = [slice(X.indptr[i], X.indptr[i + 1]) for i in range(n)]
    duplicated = sp.csr_matrix(
        (
            np.concatenate([np.tile(X.data[r], 2) for r in rows]),
            np.concatenate([np.tile(X.indices[r], 2) for r in rows]),
            2 * X.indptr,
        ),
        shape=(n, d),
    )
    assert X.nnz == 0 or not duplicated.has_canonical_format
    np.testing.assert_array_equal(
        with_bias_column(duplicated, scaling).toarray(),
        np.hstack([2 * X.toarray().astype(np.float64), np.full((n, 1), scaling)]),
    )
