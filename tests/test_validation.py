"""Bad input to the binary formulations: a typed error that names the problem and the fix."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import qpsvm
from qpsvm._validation import check_vector

X = np.array([[0.0, 1.0], [1.0, 0.0], [3.0, 1.0], [4.0, 2.0]])
Y = np.array([0, 0, 1, 1])


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"X": [[np.nan, 1.0]] * 4}, ValueError, "NaN or inf"),
        ({"X": [[np.inf, 1.0]] * 4}, ValueError, "NaN or inf"),
        ({"X": [1.0, 2.0, 3.0, 4.0]}, ValueError, "reshape"),
        ({"X": np.zeros((4, 0))}, ValueError, "one feature"),
        ({"X": [["a", "b"]] * 4}, TypeError, "numeric"),
        ({"y": [0, 0, 1]}, ValueError, "3 labels but X has 4"),
        ({"y": [1, 1, 1, 1]}, ValueError, "only one class"),
        ({"y": [0, 1, 2, 2]}, ValueError, "MulticlassSVM"),
        ({"y": [0.0, np.nan, 1.0, 1.0]}, ValueError, "NaN"),
        ({"C": 0.0}, ValueError, "C must be finite and > 0"),
        ({"C": -1.0}, ValueError, "C must be finite and > 0"),
        ({"C": np.inf}, ValueError, "HardMargin"),
        ({"C": "1"}, TypeError, "C must be a positive real"),
        ({"sample_weight": [1, 1, -1, 1]}, ValueError, "non-negative"),
        ({"sample_weight": [0, 0, 0, 0]}, ValueError, "at least one weight"),
        ({"sample_weight": [1, 1]}, ValueError, r"expected shape \(4,\)"),
        ({"margin": [1, 1, 1]}, ValueError, r"margin must have one entry per sample"),
        ({"margin": [1, np.nan, 1, 1]}, ValueError, "NaN"),
    ],
)
def test_primal_rejects(kwargs, error, match):
    args = {"X": X, "y": Y, "C": 1.0, **kwargs}
    with pytest.raises(error, match=match) as info:
        qpsvm.SoftMarginPrimal(args.pop("X"), args.pop("y"), **args)
    assert isinstance(info.value, qpsvm.QPSVMError)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"kernel": "sigmoidal"}, ValueError, "unknown kernel"),
        ({"kernel": 3}, TypeError, "kernel must be one of"),
        ({"kernel": "rbf", "gamma": -1.0}, ValueError, "gamma"),
        ({"kernel": "poly", "degree": 0}, ValueError, "degree"),
        ({"kernel": "precomputed"}, ValueError, "square"),
    ],
)
def test_dual_rejects(kwargs, error, match):
    with pytest.raises(error, match=match):
        qpsvm.SoftMarginDual(X, Y, **kwargs)


def test_precomputed_must_be_psd():
    K = np.array([[1.0, 2.0], [2.0, 1.0]])  # eigenvalues 3 and -1
    with pytest.raises(ValueError, match="positive semidefinite"):
        qpsvm.SoftMarginDual(K, [0, 1], kernel="precomputed")
    with pytest.raises(ValueError, match="symmetric"):
        qpsvm.SoftMarginDual([[1.0, 0.5], [0.0, 1.0]], [0, 1], kernel="precomputed")


def test_callable_kernel_must_return_right_shape():
    f = qpsvm.SoftMarginDual(X, Y, kernel=lambda A, B: np.ones((2, 2)))
    with pytest.raises(ValueError, match="kernel callable must return"):
        f.solve()


def test_candidate_checks():
    f = qpsvm.SoftMarginPrimal(X, Y)
    with pytest.raises(ValueError, match=r"w must have shape \(2,\)"):
        f.certify(w=np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        f.objective(np.array([np.nan, 1.0]))
    with pytest.raises(ValueError, match="alpha must have one entry"):
        f.certify(alpha=np.ones(3))
    with pytest.raises(ValueError, match="nothing to certify"):
        f.certify()
    with pytest.raises(ValueError, match="fit_intercept=True"):
        qpsvm.SoftMarginPrimal(X, Y, fit_intercept=False).certify(w=np.ones(2), b=1.0)
    with pytest.raises(ValueError, match="tol"):
        f.certify(w=np.ones(2), tol=-1.0)
    with pytest.raises(ValueError, match="unknown method"):
        f.solve(method="magic")
    with pytest.raises(ValueError, match="unknown solver"):
        f.solve(solver="NOT_A_SOLVER")
    g = qpsvm.SoftMarginDual(X, Y, kernel="rbf")
    with pytest.raises(ValueError, match="no explicit w"):
        g.certify(w=np.ones(2))


def test_hard_margin_rejects_zero_margins():
    with pytest.raises(ValueError, match="margins"):
        qpsvm.HardMargin(X, Y, margin=np.zeros(4))


@pytest.fixture(params=["compiled", "numpy"])
def copy_path(request, monkeypatch):
    """``check_data`` by the fused compiled copy, or by numpy's copy and ``isfinite``."""
    from qpsvm import _validation

    numpy_path = request.param == "numpy"
    monkeypatch.setattr(_validation, "uncompiled", lambda kernel, rows, budget: numpy_path)
    return request.param


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_check_data_finds_every_nonfinite_entry(copy_path, order, bad):
    """A NaN or inf anywhere (first, last, inside, two of them) raises the same error, naming
    the first in row-major order, whichever path copies the array."""
    from qpsvm._validation import check_data

    rng = np.random.default_rng(0)
    for places in ([(0, 0)], [(6, 2)], [(3, 1)], [(5, 0), (2, 2)]):
        A = np.array(rng.normal(size=(7, 3)), order=order)
        for i, j in places:
            A[i, j] = bad
        first = min(places)
        with pytest.raises(qpsvm.InvalidInputError) as info:
            check_data(A)
        assert str(info.value) == (
            f"X contains NaN or inf (first at row {first[0]}, column {first[1]}); remove or "
            "impute those entries before fitting."
        )


@pytest.mark.parametrize("order", ["C", "F"])
def test_check_data_copies(copy_path, order):
    """The result is a float64 copy in the input's layout: changing the input afterwards (or the
    copy) changes nothing of the other, and a formulation keeps the data it was given."""
    from qpsvm._validation import check_data

    A = np.array(np.random.default_rng(1).normal(size=(6, 4)), order=order)
    kept = A.copy()
    B = check_data(A)
    assert B.dtype == np.float64 and not np.shares_memory(A, B)
    assert B.flags.f_contiguous == (order == "F") and np.array_equal(B, kept)
    A[2, 1] = 99.0
    assert np.array_equal(B, kept)
    f = qpsvm.SoftMarginPrimal(A, [0, 1, 0, 1, 0, 1])
    A[0, 0] = np.nan
    assert np.isfinite(f.X).all() and f.X[2, 1] == 99.0


@pytest.mark.parametrize("order", ["C", "F"])
def test_check_data_product_sums_what_it_copies(copy_path, order):
    """check_data_product copies as check_data does (a NaN raises its error) and, on the
    compiled path of a C-ordered array, sums ``X^T v`` and the columns' squared norms in the
    same pass: within ``gamma_n`` of the exact sums (rational arithmetic), the bound that any
    order of summation keeps."""
    from fractions import Fraction

    from qpsvm._numerics import gamma
    from qpsvm._validation import check_data_product

    rng = np.random.default_rng(2)
    A = np.array(rng.normal(size=(9, 4)) * 10.0 ** rng.integers(-3, 4, size=(9, 4)), order=order)
    v = rng.integers(-5, 6, 9).astype(float)
    B, sums = check_data_product(A, v)
    assert np.array_equal(B, A) and not np.shares_memory(A, B)
    assert (sums is not None) == (copy_path == "compiled" and order == "C")
    if sums is not None:
        g = Fraction(gamma(9))
        for j in range(4):
            col = [Fraction(x) for x in A[:, j]]
            exact = sum(x * Fraction(c) for x, c in zip(col, v, strict=True))
            size = sum(abs(x) * abs(Fraction(c)) for x, c in zip(col, v, strict=True))
            squares = sum(x * x for x in col)
            assert abs(Fraction(sums[0][j]) - exact) <= g * size
            assert abs(Fraction(sums[1][j]) - squares) <= g * squares
    A[4, 2] = np.nan
    with pytest.raises(qpsvm.InvalidInputError, match="first at row 4, column 2"):
        check_data_product(A, v)


def test_check_data_sparse_canonical_copy():
    """A sparse input comes back as a canonical CSR copy (rows sorted, duplicates summed: the
    same matrix), the input itself untouched, whether or not it had duplicates."""
    import scipy.sparse as sp

    from qpsvm._validation import check_data

    indptr = np.array([0, 3, 5, 6])
    for indices in ([2, 0, 1, 3, 1, 0], [2, 0, 2, 1, 1, 0]):  # unsorted; unsorted, duplicates
        data = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        A = sp.csr_matrix((data, np.array(indices), indptr), shape=(3, 4))
        dense = A.toarray()
        B = check_data(A)
        assert B.format == "csr" and B.has_canonical_format
        assert np.all(np.diff(B.indices[B.indptr[0] : B.indptr[1]]) > 0)
        assert np.array_equal(B.toarray(), dense)
        assert A.indices.tolist() == indices and not np.shares_memory(A.data, B.data)
        A.data[:] = np.nan
        assert np.array_equal(B.toarray(), dense)
    A = sp.csr_matrix(np.array([[0.0, 1.0], [np.inf, 0.0]]))
    with pytest.raises(qpsvm.InvalidInputError, match=r"first at row 1, column 0"):
        check_data(A)


def _no_format_check(*args):
    raise AssertionError("scipy checked the format again")


@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_check_data_sparse_paths_give_the_same_matrix(copy_path, index_type, monkeypatch):
    """The fused compiled copy (values and format checked in one pass) and scipy's copy, sort and
    checks give the same canonical matrix to the bit: canonical rows, unsorted rows (sorted by
    scipy after the copy), rows by decreasing column (reversed by the copy; scipy's order of
    ``diags(s) @ X``), both kinds in one matrix, duplicates (summed); a canonical input's copy
    and a reversed one's are known canonical without scipy's second pass; NaN or inf anywhere,
    and duplicates summing to inf, raise."""
    import scipy.sparse as sp
    import scipy.sparse._compressed as compressed

    from qpsvm._validation import check_data

    rng = np.random.default_rng(3)
    canonical = sp.random(30, 50, 0.2, format="csr", random_state=3)
    canonical.data = rng.standard_normal(canonical.nnz)
    shuffled = canonical.copy()
    for i in range(30):  # each row's entries in a random order
        row = slice(shuffled.indptr[i], shuffled.indptr[i + 1])
        order = rng.permutation(row.stop - row.start)
        shuffled.indices[row] = shuffled.indices[row][order]
        shuffled.data[row] = shuffled.data[row][order]
    shuffled.has_sorted_indices = False
    reversed_ = canonical.copy()  # each row by decreasing column, as diags(s) @ X leaves them
    mixed = canonical.copy()  # reversed rows, then rows in a random order
    for i in range(30):
        row = slice(canonical.indptr[i], canonical.indptr[i + 1])
        reversed_.indices[row] = canonical.indices[row][::-1]
        reversed_.data[row] = canonical.data[row][::-1]
        source = reversed_ if i < 15 else shuffled
        mixed.indices[row], mixed.data[row] = source.indices[row], source.data[row]
    reversed_.has_sorted_indices = mixed.has_sorted_indices = False
    end = canonical.indptr[1]
    assert end >= 5
    doubled = sp.csr_matrix(
        (
            np.r_[canonical.data[:end], canonical.data[:5], canonical.data[end:]],
            np.r_[canonical.indices[:end], canonical.indices[:5], canonical.indices[end:]],
            np.r_[canonical.indptr[:1], canonical.indptr[1:] + 5],
        ),
        shape=canonical.shape,
    )  # the first row's first five entries twice (again at its end)
    scaled = sp.csr_matrix(sp.diags(rng.random(30) + 0.5) @ canonical)  # scipy's order
    for A in (canonical, shuffled, reversed_, mixed, doubled, scaled):
        A.indices, A.indptr = A.indices.astype(index_type), A.indptr.astype(index_type)
    expected = canonical.copy()
    expected.data[:5] += canonical.data[:5]
    sorted_scaled = scaled.copy()
    sorted_scaled.sort_indices()
    for A, want in (
        (canonical, canonical),
        (shuffled, canonical),
        (reversed_, canonical),
        (mixed, canonical),
        (doubled, expected),
        (scaled, sorted_scaled),
    ):
        B = check_data(A)
        assert B.has_canonical_format
        for part in ("data", "indices", "indptr"):
            assert np.array_equal(getattr(B, part), getattr(want, part))
            assert not np.shares_memory(getattr(B, part), getattr(A, part))
    if copy_path == "compiled":
        monkeypatch.setattr(compressed, "csr_has_canonical_format", _no_format_check)
        assert check_data(canonical.copy()).has_canonical_format
        assert check_data(reversed_.copy()).has_canonical_format  # reversed, not sorted
        monkeypatch.undo()
    for A in (canonical, shuffled, reversed_, mixed):
        bad = A.copy()
        bad.data[17] = np.nan
        with pytest.raises(qpsvm.InvalidInputError, match="NaN or inf"):
            check_data(bad)
    overflow = doubled.copy()
    overflow.data[:5] = overflow.data[end : end + 5] = 1e308  # finite, their sums inf
    with pytest.raises(qpsvm.InvalidInputError, match="NaN or inf"):
        check_data(overflow)


@pytest.mark.parametrize("copy_path", ["compiled"], indirect=True)
def test_check_data_large_sparse_copy_on_fresh_pages(copy_path):
    """A CSR copy's arrays of at least ``HUGE_FROM`` bytes lie on mappings of their own, each
    aligned to 2 MiB (where the kernel can back them by huge pages), and give the same
    canonical matrix to the bit as scipy's copy: scipy's constructor keeps them (no copy of a
    view of a larger base); a smaller array is an ordinary allocation."""
    import scipy.sparse as sp

    from qpsvm._pages import HUGE_FROM, fresh_empty
    from qpsvm._validation import check_data

    rng = np.random.default_rng(5)
    nnz = HUGE_FROM // 8 + 1000  # the values just over the threshold
    A = sp.random(2000, 3000, nnz / 6e6, format="csr", random_state=5)
    A.data = rng.standard_normal(A.nnz)
    assert A.data.nbytes >= HUGE_FROM
    B = check_data(A)
    assert B.has_canonical_format and not np.shares_memory(A.data, B.data)
    assert not B.data.flags.owndata and B.data.ctypes.data % 2**21 == 0
    for a, b in ((A.data, B.data), (A.indices, B.indices), (A.indptr, B.indptr)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert np.array_equal(B.data.view(np.uint64), A.data.view(np.uint64))
    small = np.ones(HUGE_FROM // 8 - 1)
    assert fresh_empty(small).base is None and fresh_empty(small).shape == small.shape


@pytest.mark.parametrize(
    "values",
    [
        np.array([np.iinfo(np.int64).max, np.iinfo(np.int64).min, 0]),
        np.array([np.iinfo(np.uint64).max, 0, 1], dtype=np.uint64),
        np.array([True, False, True]),
        np.array([3, -1, 7], dtype=np.int8),
    ],
)
def test_check_vector_integer_copies_are_finite_without_the_test(values):
    # an integer or boolean array converts to finite floats (|v| <= 2^64, far below float64's
    # largest): check_vector skips its NaN/inf test there, and the copy is the conversion
    out = check_vector(values, values.shape[0], "v")
    assert out.dtype == np.float64 and np.all(np.isfinite(out))
    assert np.array_equal(out, values.astype(np.float64)) and out is not values


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("container", [list, np.array, lambda v: np.array(v, dtype=object)])
def test_check_vector_finds_nonfinite_entries_of_other_inputs(bad, container):
    with pytest.raises(qpsvm.InvalidInputError, match="v contains NaN or inf"):
        check_vector(container([1.0, bad, 2.0]), 3, "v")


@given(
    st.sampled_from([np.int8, np.int32, np.int64, np.uint8, np.uint64, np.bool_]),
    st.lists(st.integers(0, 2), min_size=1, max_size=30),
    st.booleans(),
)
@example(np.int8, [0, 1, 1], True)
@example(np.uint64, [1, 0], True)
@example(np.int64, [2, 1, 2], False)
def test_binary_labels_of_integers_are_the_sorted_unique_values(dtype, codes, extremes):
    # integer labels are mapped without a sort (their least and greatest values): the same
    # -1/+1 vector and classes as np.unique's sorted classes, and the same error otherwise
    from qpsvm._validation import check_binary_labels

    if dtype is np.bool_:
        values = [False, True, True]
    else:
        info = np.iinfo(dtype)
        values = [info.min, info.max, info.min // 2 + 1] if extremes else [0, 1, 2]
    y = np.array([values[c] for c in codes], dtype=dtype)
    classes, inverse = np.unique(y, return_inverse=True)
    if classes.size != 2:
        with pytest.raises(qpsvm.exceptions.InvalidInputError):
            check_binary_labels(y, y.size)
        return
    signs, got = check_binary_labels(y, y.size)
    assert np.array_equal(signs, np.where(inverse == 1, 1.0, -1.0))
    assert got.dtype == classes.dtype and np.array_equal(got, classes)
