r"""Intercept modes of composed problems.

``"free"``
    ``b`` is a free, unregularised variable. Dual: the coupling constraint
    ``sum_i sigma_i u_i = 0`` (the conjugate of the zero function of ``b`` is the indicator of
    ``{0}``).
``"none"``
    ``b = 0``. Dual: nothing.
``"regularized"``
    liblinear's bias (``-B``, scikit-learn's ``intercept_scaling``): a constant feature ``B``
    whose weight ``b'`` is penalised like ``w``, ``R((w, b'))``, with intercept ``b = B b'``.
    Dual: no coupling; ``v`` gains the coordinate ``B sum_i sigma_i u_i`` in ``R^*``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from qpsvm._validation import check_positive
from qpsvm.exceptions import InvalidInputError

__all__ = ["INTERCEPTS", "Intercept", "make_intercept", "with_bias_column"]

#: The intercept modes by name.
INTERCEPTS: tuple[str, ...] = ("free", "none", "regularized")


class Intercept:
    """An intercept mode: ``"free"``, ``"none"`` or ``"regularized"`` with scaling ``B``.

    Attributes
    ----------
    mode : str
    scaling : float
        ``B`` (1 unless regularised).
    """

    def __init__(self, mode: str, scaling: float = 1.0) -> None:
        self.mode = mode
        self.scaling = scaling

    @property
    def fitted(self) -> bool:
        """Whether ``b`` is a variable."""
        return self.mode != "none"

    @property
    def coupled(self) -> bool:
        """Whether the dual has the coupling constraint ``sum_i sigma_i u_i = 0``."""
        return self.mode == "free"

    @property
    def regularized(self) -> bool:
        """Whether ``b / B`` is a coordinate of the penalty."""
        return self.mode == "regularized"

    def tail(self, b: float) -> tuple[float, ...]:
        """The penalty's coordinates after ``w``: ``(b / B,)`` when regularised, else none
        (a penalty's :meth:`value <qpsvm.formulations.pieces.penalties.Penalty.value>` takes
        them apart, without a copy of ``w`` appending them)."""
        return (b / self.scaling,) if self.regularized else ()

    def augment(self, w: np.ndarray, b: float) -> np.ndarray:
        """The penalty's argument: ``w``, or ``(w, b / B)`` when regularised."""
        return np.append(w, self.tail(b)) if self.regularized else w


def make_intercept(intercept: Any, intercept_scaling: Any = 1.0) -> Intercept:
    """The intercept mode named ``intercept`` (``True``/``False`` map to free/none)."""
    if isinstance(intercept, bool):
        intercept = "free" if intercept else "none"
    if not isinstance(intercept, str) or intercept not in INTERCEPTS:
        raise InvalidInputError(
            f"unknown intercept {intercept!r}; choose one of {list(INTERCEPTS)}."
        )
    scaling = check_positive(intercept_scaling, "intercept_scaling")
    return Intercept(intercept, scaling)


def with_bias_column(X: Any, scaling: float) -> Any:
    """``[X, B]``: the data with a last constant feature ``B`` (the regularised intercept's
    feature, liblinear's ``-B``), CSR for sparse ``X``. The column is exact, so a problem on it
    states exactly the regularised intercept."""
    if sp.issparse(X) and X.format == "csr" and X.has_canonical_format:
        # the column's entry closes each row: its index d is the largest, so the rows stay sorted
        ends = X.indptr[1:]
        return sp.csr_matrix(
            (
                np.insert(X.data.astype(np.float64, copy=False), ends, scaling),
                np.insert(X.indices, ends, X.shape[1]),
                X.indptr + np.arange(X.shape[0] + 1, dtype=X.indptr.dtype),
            ),
            shape=(X.shape[0], X.shape[1] + 1),
        )
    column = np.full((X.shape[0], 1), scaling)
    return sp.hstack([X, column], format="csr") if sp.issparse(X) else np.hstack([X, column])
