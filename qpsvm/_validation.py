"""Input checks shared by every entry point; each error names the argument and the fix."""

from __future__ import annotations

import math
import sys
from collections.abc import Hashable
from numbers import Integral, Real
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from qpsvm._jit import ENTRY
from qpsvm._numerics import add_columns_squares, uncompiled
from qpsvm._pages import fresh_empty
from qpsvm._rows import canonical_csr
from qpsvm.exceptions import InvalidInputError, InvalidTypeError

__all__ = [
    "check_binary_labels",
    "check_data",
    "check_data_product",
    "check_flag",
    "check_int",
    "check_multiclass_labels",
    "check_number",
    "check_positive",
    "check_random_state",
    "check_sample_weight",
    "check_tol",
    "check_vector",
]

DataMatrix = np.ndarray | sp.csr_matrix


#: How many entries :func:`_copy_finite`'s numpy equivalent (a copy, then ``isfinite`` over
#: it) may copy in a process before the kernel is compiled: its compile (0.08 s CPU, 0.35 s as
#: a process's first numba compile) at what the fused pass saves, the separate finite check
#: (about 0.37 ns an entry: 8000 x 40 0.31 -> 0.19 ms); the same budget for CSR values and
#: :func:`_copy_csr_finite`.
COPY_ELEMENTS = 2**28


@numba.njit(**ENTRY)
def _copy_finite(src, dst):  # pragma: no cover - compiled
    """``dst[:] = src`` and whether every entry is finite, in one pass: ``x - x`` is exactly 0
    for a finite ``x`` and NaN for an infinite or NaN one."""
    finite = True
    for i in range(src.shape[0]):
        x = src[i]
        dst[i] = x
        finite &= x - x == 0.0
    return finite


@numba.njit(**ENTRY)
def _copy_finite_columns(src, dst, v, product, squares):  # pragma: no cover - compiled
    """:func:`_copy_finite` of a C-contiguous 2-D ``src``, row by row, with ``product +=
    src^T v`` and ``squares += (src * src)^T 1`` (the columns' squared norms) added from each
    row while it is in cache (:func:`~qpsvm._numerics.add_columns_squares`)."""
    finite = True
    for i in range(src.shape[0]):
        finite &= _copy_finite(src[i], dst[i])
        add_columns_squares(src[i], v[i], product, squares)
    return finite


@numba.njit(**ENTRY)
def _copy_csr_finite(data, indices, indptr, out_data, out_indices):  # pragma: no cover - compiled
    """``out_data, out_indices`` the rows of ``data, indices`` with each row whose indices
    decrease strictly (to one at least 0) written reversed, whether every value is finite (as
    :func:`_copy_finite`), and whether every copied row's indices increase strictly from 0
    (sorted, no duplicates: the canonical format), in one pass over the values. A row sorted
    by decreasing column, as scipy's sparse products leave ``diags(s) @ X`` of sorted rows (the
    product lists each row's columns in the reverse of their first appearance), has one sorted
    order, its reverse: the entries scipy's sort of the copy moves them to, with no sort."""
    finite = True
    canonical = True
    for i in range(indptr.shape[0] - 1):
        start, stop = np.uintp(indptr[i]), np.uintp(indptr[i + 1])
        up, down = True, stop - start > 1
        for p in range(start + 1, stop):
            up &= indices[p] > indices[p - 1]
            down &= indices[p] < indices[p - 1]
        if down and indices[stop - 1] >= 0:
            q = start + stop - 1
            for p in range(start, stop):
                x = data[p]
                out_data[q - p] = x
                finite &= x - x == 0.0
                out_indices[q - p] = indices[p]
            continue
        canonical &= up and (stop == start or indices[start] >= 0)
        for p in range(start, stop):
            x = data[p]
            out_data[p] = x
            finite &= x - x == 0.0
            out_indices[p] = indices[p]
    return finite, canonical


def _fused_copy(X: Any) -> bool:
    """Whether :func:`_copy_finite` takes ``X``: a writeable, aligned, native float64 2-D array
    contiguous in C or Fortran order (its one compiled signature), whose copy by
    ``np.empty_like`` keeps the layout ``np.array(X, copy=True)`` gives."""
    return (
        type(X) is np.ndarray
        and X.dtype == np.float64
        and X.ndim == 2
        and X.flags.aligned
        and X.flags.writeable
        and (X.flags.c_contiguous or X.flags.f_contiguous)
    )


def _canonical_copy(X: Any, name: str) -> tuple[sp.csr_matrix, bool | None]:
    """A float64 CSR copy of the sparse ``X`` in canonical format (sorted indices, no duplicate
    entries; :func:`~qpsvm._rows.canonical_csr` on the copy, in place) and whether its values
    are finite (``None``: not yet checked).

    A float64 CSR ``X`` is copied by :func:`_copy_csr_finite` once that pays for its compile,
    which checks the values and the format on the way: canonical rows need no second pass
    (scipy's format check, then ``isfinite``: at 10000 x 1e6, 100 nonzeros a row, 1.6 ms to
    0.87 ms), and so are rows sorted by decreasing column, reversed on the way; the others
    are sorted in place by scipy (its sort beats numba's per row: copy and sort 3.6 ms
    against 9-10 ms there). Sorting only permutes the values, so they
    stay finite unless duplicates were summed (fewer entries), whose sums are checked again."""
    if (
        sp.issparse(X)
        and X.format == "csr"
        and X.dtype == np.float64
        and X.indices.dtype == X.indptr.dtype
        and X.data.shape[0] == X.indices.shape[0] == X.nnz
        and not uncompiled(_copy_csr_finite, X.nnz, COPY_ELEMENTS)
    ):
        data, indices = fresh_empty(X.data), fresh_empty(X.indices)
        finite, canonical = _copy_csr_finite(X.data, X.indices, X.indptr, data, indices)
        copied = sp.csr_matrix((data, indices, X.indptr.copy()), shape=X.shape, copy=False)
        if canonical:
            copied.has_canonical_format = True
            return copied, finite
        return canonical_csr(copied, owned=True), finite if copied.nnz == X.nnz else None
    try:
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise InvalidTypeError(
            f"{name} must be a numeric matrix; could not convert it: {exc}"
        ) from None
    return canonical_csr(X, owned=True), None


def check_data(X: Any, name: str = "X", min_samples: int = 1) -> DataMatrix:
    """Return ``X`` as a float64 2-D array (or CSR matrix in canonical format), copied, after
    checking it is finite.

    The copy is the caller's guarantee that changing their array later does not change the
    problem. A C- or Fortran-contiguous float64 array is copied and checked in one compiled pass
    (:func:`_copy_finite`) once that pays for its compile (:func:`qpsvm._numerics.uncompiled`),
    and so are a float64 CSR matrix's values and format (:func:`_canonical_copy`).

    Raises
    ------
    InvalidTypeError
        If ``X`` cannot be read as a numeric matrix.
    InvalidInputError
        If it is not 2-D, is empty, or holds NaN or inf.
    """
    finite = None
    if sp.issparse(X):
        X, finite = _canonical_copy(X, name)
        values = X.data
    elif _fused_copy(X) and not uncompiled(_copy_finite, X.size, COPY_ELEMENTS):
        values = np.empty_like(X)
        finite = _copy_finite(X.ravel(order="K"), values.ravel(order="K"))
        X = values
    else:
        try:
            X = np.array(X, dtype=np.float64, copy=True)
        except (TypeError, ValueError) as exc:
            raise InvalidTypeError(
                f"{name} must be a numeric array of shape (n_samples, n_features); "
                f"could not convert it to float64: {exc}"
            ) from None
        if X.ndim != 2:
            hint = " Use X.reshape(-1, 1) for a single feature." if X.ndim == 1 else ""
            raise InvalidInputError(
                f"{name} must be 2-D with shape (n_samples, n_features); got {X.ndim}-D "
                f"shape {X.shape}.{hint}"
            )
        values = X
    if X.shape[0] < min_samples or X.shape[1] < 1:
        raise InvalidInputError(
            f"{name} has shape {X.shape}; it needs at least {min_samples} sample(s) "
            "and one feature."
        )
    if finite is None:
        finite = bool(np.all(np.isfinite(values)))
    if not finite:
        bad = np.argwhere(~np.isfinite(X.toarray() if sp.issparse(X) else X))[0]
        raise InvalidInputError(
            f"{name} contains NaN or inf (first at row {bad[0]}, column {bad[1]}); remove or "
            "impute those entries before fitting."
        )
    return X


def check_data_product(
    X: Any, v: np.ndarray | None
) -> tuple[DataMatrix, tuple[np.ndarray, np.ndarray] | None]:
    """:func:`check_data` of ``X`` and, for a C-contiguous float64 array of ``len(v)`` rows
    (once its compiled pass pays for its compile, :func:`qpsvm._numerics.uncompiled`), ``X^T
    v`` and the columns' squared norms ``sum_i x_ij^2`` in plain floating point (any order),
    computed by the copy's own pass (:func:`_copy_finite_columns`); ``None`` for them
    otherwise (and for ``v = None``). The copy and its checks are :func:`check_data`'s (the
    same errors)."""
    if (
        v is not None
        and _fused_copy(X)
        and X.flags.c_contiguous
        and X.shape[0] == v.shape[0]
        and X.size > 0
        and not uncompiled(_copy_finite_columns, X.size, COPY_ELEMENTS)
    ):
        values = np.empty_like(X)
        product, squares = np.zeros(X.shape[1]), np.zeros(X.shape[1])
        v = np.ascontiguousarray(v, dtype=np.float64)
        if _copy_finite_columns(X, values, v, product, squares):
            return values, (product, squares)
    return check_data(X), None


def check_vector(v: Any, n: int, name: str, *, nonnegative: bool = False) -> np.ndarray:
    """Return a finite float64 copy of a length-``n`` vector (``None`` is not accepted here).

    An integer or boolean array's copy is finite by construction (its largest magnitude,
    ``2^64``, is far below float64's), so only other inputs are tested for NaN and inf."""
    try:
        arr = np.array(v, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise InvalidTypeError(f"{name} must be numeric; could not convert it: {exc}") from None
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.ndim != 1 or arr.shape[0] != n:
        raise InvalidInputError(
            f"{name} must have one entry per sample: expected shape ({n},), got {arr.shape}."
        )
    exact = isinstance(v, np.ndarray) and v.dtype.kind in "biu"
    if not exact and not np.isfinite(arr).all():
        raise InvalidInputError(f"{name} contains NaN or inf; every entry must be finite.")
    if nonnegative and np.any(arr < 0):
        i = int(np.argmax(arr < 0))
        raise InvalidInputError(
            f"{name} must be non-negative; entry {i} is {arr[i]!r}. Drop the sample instead of "
            "giving it a negative weight."
        )
    return arr


def check_sample_weight(sample_weight: Any, n: int, name: str = "sample_weight") -> np.ndarray:
    """Per-sample slack weights ``s_i >= 0`` (default 1); at least one must be positive."""
    if sample_weight is None:
        return np.ones(n)
    s = check_vector(sample_weight, n, name, nonnegative=True)
    if not np.any(s > 0):
        raise InvalidInputError(f"{name} is zero everywhere; at least one weight must be > 0.")
    return s


def check_positive(value: Any, name: str) -> float:
    """A finite, strictly positive scalar such as ``C``."""
    if type(value) is not float and (
        isinstance(value, bool) or not isinstance(value, Real | np.floating | np.integer)
    ):
        raise InvalidTypeError(
            f"{name} must be a positive real number, got {type(value).__name__}."
        )
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise InvalidInputError(
            f"{name} must be finite and > 0, got {v!r}. (A larger {name} penalises slack more; "
            "for a hard margin use HardMargin.)"
        )
    return v


def _check_label_vector(y: Any, n: int, name: str) -> np.ndarray:
    try:
        arr = np.asarray(y)
    except ValueError as exc:
        raise InvalidInputError(f"{name} must be a 1-D sequence of labels: {exc}") from None
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise InvalidInputError(
            f"{name} must be 1-D with one label per sample; got shape {arr.shape}."
        )
    if arr.shape[0] != n:
        raise InvalidInputError(
            f"{name} has {arr.shape[0]} labels but X has {n} samples; they must match."
        )
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{name} contains NaN or inf; every label must be a finite value.")
    if arr.dtype.kind == "O" and not all(isinstance(v, Hashable) for v in arr):
        raise InvalidTypeError(f"{name} labels must be hashable values.")
    return arr


def check_binary_labels(y: Any, n: int, name: str = "y") -> tuple[np.ndarray, np.ndarray]:
    """Map two label values to ``-1/+1``: ``classes[1]`` (the larger, as sorted) becomes ``+1``.

    This is scikit-learn's convention, so ``decision_function > 0`` predicts ``classes[1]`` in
    both libraries. Returns the float64 ``+-1`` vector and the sorted classes.
    """
    arr = _check_label_vector(y, n, name)
    if arr.dtype.kind in "biu" and arr.size:
        # integer labels: two values are their least and greatest, the sorted classes (three
        # passes, no sort: 0.23 against 1.0 ms at 50000 labels)
        lo, hi = arr.min(), arr.max()
        upper = arr == hi
        if lo != hi and np.all(upper | (arr == lo)):
            return np.where(upper, 1.0, -1.0), np.array([lo, hi], dtype=arr.dtype)
    classes, inverse = np.unique(arr, return_inverse=True)
    if classes.shape[0] != 2:
        what = "only one class" if classes.shape[0] == 1 else f"{classes.shape[0]} classes"
        raise InvalidInputError(
            f"{name} has {what} ({classes[:5].tolist()}); a binary SVM needs exactly two. "
            "Use MulticlassSVM for more than two classes."
        )
    return np.where(inverse == 1, 1.0, -1.0), classes


def check_multiclass_labels(y: Any, n: int, name: str = "y") -> tuple[np.ndarray, np.ndarray]:
    """Map any hashable labels to ``0..k-1`` (sorted order); at least two classes."""
    arr = _check_label_vector(y, n, name)
    try:
        classes, inverse = np.unique(arr, return_inverse=True)
    except TypeError as exc:
        raise InvalidTypeError(f"{name} labels must be mutually comparable: {exc}") from None
    if classes.shape[0] < 2:
        raise InvalidInputError(
            f"{name} has only one class ({classes.tolist()}); a classifier needs at least two."
        )
    return inverse.astype(np.intp), classes


def check_random_state(random_state: Any, name: str = "random_state") -> np.random.Generator:
    """A :class:`numpy.random.Generator` from ``None``, an int seed or a Generator."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or (
        isinstance(random_state, int | np.integer) and not isinstance(random_state, bool)
    ):
        try:
            return np.random.default_rng(random_state)
        except ValueError as exc:
            raise InvalidInputError(f"{name} must be a non-negative int seed: {exc}") from None
    raise InvalidTypeError(
        f"{name} must be None, an int seed or a numpy Generator; got {type(random_state).__name__}."
    )


def check_int(value: Any, name: str, minimum: int = 1, owner: str | None = None) -> int:
    """``value`` as an ``int >= minimum``; booleans and floats are rejected.

    ``owner`` (e.g. a class name) opens the message when the argument belongs to one.
    """
    prefix = f"{owner}: " if owner else ""
    # an int itself is Integral and no bool: no ABC's instance check (a Python call) for it
    if type(value) is not int and (isinstance(value, bool) or not isinstance(value, Integral)):
        raise InvalidTypeError(
            f"{prefix}{name} must be an integer >= {minimum}, got {type(value).__name__} {value!r}."
        )
    if value < minimum:
        raise InvalidInputError(f"{prefix}{name} must be >= {minimum}, got {int(value)}.")
    return int(value)


def check_number(value: Any, name: str, upper: float = math.inf) -> float:
    """A real number in the open interval ``(0, upper)`` (finite), as a float."""
    if (
        # a float itself is Real and no bool: no ABC's instance check (a Python call) for it
        (type(value) is not float and (isinstance(value, bool) or not isinstance(value, Real)))
        or not 0 < value < upper
        or not math.isfinite(value)
    ):
        where = "a finite number > 0" if upper == math.inf else f"a number in (0, {upper:g})"
        raise InvalidInputError(f"{name} must be {where}; got {value!r}.")
    return float(value)


def check_tol(tol: Any) -> float:
    """A certificate tolerance: a relative gap, a finite number > 0."""
    return check_number(tol, "tol")


def check_flag(value: Any, name: str) -> bool:
    """``True`` or ``False`` (numpy's booleans too), as a ``bool``."""
    if not isinstance(value, bool | np.bool_):
        raise InvalidTypeError(f"{name} must be True or False; got {value!r}.")
    return bool(value)


def check_weight_vector(w: Any, n_features: int, kernel_name: str = "linear") -> np.ndarray:
    """A candidate ``w`` as a finite float64 vector of length ``n_features`` (a single row is
    accepted); a nonlinear kernel has no explicit ``w``."""
    if kernel_name != "linear":
        raise InvalidInputError(
            f"the {kernel_name!r} kernel has no explicit w; pass alpha (the dual variables)."
        )
    arr = np.asarray(w, dtype=np.float64)
    if arr.ndim == 2 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.shape != (n_features,):
        raise InvalidInputError(f"w must have shape ({n_features},) to match X; got {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError("w contains NaN or inf.")
    return arr


def check_intercept(b: Any, fitted: bool, setting: str, remedy: str) -> float:
    """A candidate intercept as one finite number, which must be 0 when the problem has none
    (``setting`` names why, e.g. ``"fit_intercept=False"``; ``remedy`` says how to get one)."""
    value = float(np.asarray(b, dtype=np.float64).reshape(-1)[0]) if np.size(b) == 1 else None
    if value is None or not math.isfinite(value):
        raise InvalidInputError(f"b must be one finite number; got {b!r}.")
    if not fitted and value != 0.0:
        raise InvalidInputError(
            f"this problem has no intercept ({setting}) but the candidate has b={value!r}; "
            f"pass b=0 or {remedy}."
        )
    return value


def is_dask(*values: Any) -> bool:
    """Whether any of ``values`` is a Dask collection (array, dataframe, series), without
    importing Dask: if it was never imported, nothing can be one (and the values are not
    looked at: a constructor asks this of its arguments on every call)."""
    dask = sys.modules.get("dask")
    return dask is not None and any(bool(dask.is_dask_collection(v)) for v in values)
