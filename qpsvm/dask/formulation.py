r"""The soft-margin primal on Dask collections: what ``SoftMarginPrimal`` returns for Dask data.

.. math::

    \min_{w, b}\ \tfrac12 \|w\|^2 + C \sum_i s_i \max(0, m_i - y_i (w \cdot x_i + b)),

the hinge loss with the L2 penalty and a free, no or regularised intercept (``+ 1/2 (b/B)^2``),
over rows that stay where Dask
keeps them (Zarr or ``.npy`` blocks on disk, worker memory). It is solved by the working set
over row blocks (:mod:`qpsvm.dask.working_set`) and certified by the same rigorous enclosure as
in memory; ``alpha`` and ``xi`` of its solutions are Dask arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qpsvm._numerics import fsum
from qpsvm._validation import check_int, check_number, check_positive, check_tol
from qpsvm.dask.binary import BinaryFamily, binary_sample
from qpsvm.dask.blocks import Sort
from qpsvm.dask.passes import DaskData, as_dask_array
from qpsvm.dask.reference import ReferenceCertify
from qpsvm.dask.working_set import (
    MIN_WORK,
    SAMPLE_ROWS,
    START_PASSES,
    begin_solve,
    certify_blocks,
    solve_dask_working_set,
)
from qpsvm.exceptions import InvalidInputError
from qpsvm.solution import Solution
from qpsvm.solvers.working_set import MIN_ADD, STATUS_TOL, WIDTH
from qpsvm.verify.certificate import DEFAULT_TOL, Certificate

__all__ = ["DaskSoftMarginPrimal"]


def with_constant_column(X: Any, value: float) -> Any:
    """``X`` with a last column of ``value`` (chunked like ``X``'s rows), in ``X``'s dtype when
    it holds ``value`` exactly, else in float64."""
    import dask.array as da

    exact = X.dtype.kind == "f" and float(X.dtype.type(value)) == value
    dtype = X.dtype if exact else np.float64
    column = da.full((X.shape[0], 1), value, dtype=dtype, chunks=(X.chunks[0], 1))
    return da.concatenate([X.astype(dtype), column], axis=1)


class DaskSoftMarginPrimal(ReferenceCertify):
    r"""Soft-margin SVM in the primal over Dask collections (data beyond one machine's memory).

    ``qpsvm.SoftMarginPrimal(X, y, ...)`` returns this class when ``X`` or ``y`` is a Dask
    array, dataframe or series.

    Parameters
    ----------
    X : dask array or dataframe of shape (n_samples, n_features)
        Chunked along the rows (any dtype; float32 blocks are certified in float64, exactly:
        each float32 is a float64).
    y : dask array or series of shape (n_samples,)
        Two label values; ``classes_[1]`` (larger, sorted) is ``+1``.
    C : float, default=1.0
    fit_intercept : bool, default=True
    sample_weight, margin : dask arrays of shape (n_samples,), optional
        Slack weights ``s_i`` and margins ``m_i`` (default 1).
    **pieces
        ``SoftMarginPrimal``'s ``loss``, ``penalty``, ``intercept``, ``intercept_scaling``,
        ``class_weight``: only ``"hinge"``, ``"l2"``, ``"free"``/``"none"``/``"regularized"``
        and ``None`` with Dask data. The regularised intercept (liblinear's bias ``B``,
        penalty ``1/2 (||w||^2 + (b / B)^2)``) is solved and certified as the problem without
        intercept on the rows ``(x_i, B)``.

    Notes
    -----
    Every pass reads each row block once; the client holds ``d``-sized vectors, the working
    set's rows and one record per block. See :doc:`/dask`.
    """

    def __init__(
        self,
        X: Any,
        y: Any,
        C: float = 1.0,
        fit_intercept: bool = True,
        sample_weight: Any = None,
        margin: Any = None,
        **pieces: Any,
    ) -> None:
        known = {"loss", "penalty", "intercept", "intercept_scaling", "l1_ratio", "class_weight"}
        if set(pieces) - known:
            raise InvalidInputError(f"unknown arguments {sorted(set(pieces) - known)}.")
        loss, penalty = pieces.get("loss", "hinge"), pieces.get("penalty", "l2")
        class_weight = pieces.get("class_weight")
        mode = pieces.get("intercept") or ("free" if fit_intercept else "none")
        if (loss, penalty, class_weight) != ("hinge", "l2", None) or mode not in (
            "free",
            "none",
            "regularized",
        ):
            raise InvalidInputError(
                "with Dask data SoftMarginPrimal solves the hinge loss with the L2 penalty and a "
                f"free, no or regularised intercept, without class_weight; got loss={loss!r}, "
                f"penalty={penalty!r}, intercept={mode!r}, class_weight={class_weight!r}. "
                "Fold class weights into sample_weight."
            )
        self.C = check_positive(C, "C")
        self.fit_intercept = mode == "free"
        self.intercept = mode
        X = as_dask_array(X, "X", 2)
        #: ``B`` of a regularised intercept: the problem is the one without intercept on the
        #: rows ``(x_i, B)``, whose last weight ``v`` gives ``b = B v`` (liblinear's bias).
        self.scaling: float | None = None
        if mode == "regularized":
            self.scaling = check_positive(pieces.get("intercept_scaling", 1.0), "intercept_scaling")
            X = with_constant_column(X, self.scaling)
        self.data = DaskData(
            X,
            as_dask_array(y, "y", 1),
            None if sample_weight is None else as_dask_array(sample_weight, "sample_weight", 1),
            None if margin is None else as_dask_array(margin, "margin", 1),
            self.C,
            self.fit_intercept,
        )

    @property
    def n_samples(self) -> int:
        return self.data.n_samples

    @property
    def n_features(self) -> int:
        return self.data.n_features - (self.scaling is not None)

    def _folded(self, w: Any, b: Any) -> tuple[np.ndarray, float]:
        """``(w, b)`` of the problem solved on the blocks: ``((w, b / B), 0)`` with a
        regularised intercept."""
        w = np.asarray(w, dtype=np.float64).ravel()
        if w.shape != (self.n_features,) or not np.all(np.isfinite(w)):
            raise InvalidInputError(f"w must be a finite vector of length {self.n_features}.")
        if self.scaling is not None:
            return np.append(w, float(b) / self.scaling), 0.0
        return w, float(b) if self.fit_intercept else 0.0

    @property
    def classes_(self) -> np.ndarray:
        """The two label values (read from a sample on first use)."""
        if not self.data.classes.size:
            binary_sample(self.data, 1)
        return self.data.classes

    def solve(
        self,
        method: str | None = None,
        solver: str | None = None,
        *,
        tol: float = DEFAULT_TOL,
        max_rounds: int = 50,
        width: float = WIDTH,
        sample_rows: int = SAMPLE_ROWS,
        start_passes: int = START_PASSES,
        min_work: int = MIN_WORK,
        **options: Any,
    ) -> Solution:
        """The exact, certified optimum by the working set over row blocks.

        Parameters
        ----------
        method : {"working_set", None}
            The only method for Dask data.
        solver : str, optional
            CVXPY solver of the in-memory working set's restricted QPs (default Clarabel, then
            OSQP).
        tol, max_rounds, width, sample_rows, start_passes, min_work, **options
            See :func:`~qpsvm.dask.working_set.solve_dask_working_set`.

        Returns
        -------
        Solution
            ``w``, ``b`` in memory; ``alpha``, ``xi`` and ``certificate.alpha`` Dask arrays.
        """
        begin_solve(self.data, method)
        sol = solve_dask_working_set(
            self.data,
            BinaryFamily(),
            solver,
            tol=check_tol(tol),
            max_rounds=check_int(max_rounds, "max_rounds"),
            width=float(check_number(width, "width")),
            sample_rows=check_int(sample_rows, "sample_rows"),
            start_passes=check_int(start_passes, "start_passes"),
            min_work=check_int(min_work, "min_work"),
            **options,
        )
        if self.scaling is not None:
            sol.w, sol.b = sol.w[:-1], self.scaling * float(sol.w[-1])
        return sol

    def _certify_with(self, candidate: Any, stored: tuple, tol: float) -> Certificate:
        """The certificate of ``(w, b)`` at the statuses and multipliers ``stored``; a bare
        point's own: ``C s_i`` where its margin is violated, 0 elsewhere."""
        w, b = self._folded(candidate.w, getattr(candidate, "b", 0.0) or 0.0)
        sort, index, alpha = stored
        sort = Sort(w, b) if sort is None else sort
        self.classes_  # noqa: B018 - the labels, before any block is read
        parts = self.data.check(sort, index, alpha, w, b, STATUS_TOL, MIN_ADD)
        return certify_blocks(self.data, parts, w, sort, index, alpha, tol)

    def objective(self, w: Any, b: float = 0.0) -> float:
        """``P(w, b) = 1/2 ||w||^2 + C sum_i s_i max(0, m_i - y_i (w.x_i + b))`` (one pass;
        ``+ 1/2 (b / B)^2`` with a regularised intercept)."""
        w, b = self._folded(w, b)
        self.classes_  # noqa: B018
        slack = self.data.slack(w, b)
        weighted = slack if self.data.sample_weight is None else slack * self.data.sample_weight
        total = weighted.map_blocks(lambda v: np.array([fsum(v)]), chunks=(1,)).compute()
        return 0.5 * float(w @ w) + self.C * fsum(total)

    def decision_function(self, X: Any, solution: Any) -> Any:
        """``f(x) = w . x + b`` for new rows (a Dask array for Dask input)."""
        return X @ np.asarray(solution.w) + float(solution.b)

    def predict(self, X: Any, solution: Any) -> Any:
        """Predicted labels (original values): ``classes_[1]`` where the decision is > 0."""
        import dask.array as da

        score = self.decision_function(X, solution)
        where = da.where if isinstance(score, da.Array) else np.where
        return where(score > 0, self.classes_[1], self.classes_[0])
