r"""Multiclass SVMs on Dask collections: what ``MulticlassSVM`` returns for Dask data.

.. math::

    \min_W\ \tfrac12 \|W\|_F^2 + C \sum_i s_i \max_{c \ne y_i} \max(0, 1 - (w_{y_i} - w_c)
    \cdot x_i) \quad \text{(Crammer-Singer; Weston-Watkins sums over } c\text{)},

over rows that stay where Dask keeps them. It is solved by the working set over row blocks
(:mod:`qpsvm.dask.working_set`) with the steps of :class:`MulticlassFamily`: the labels are
read once (one pass over ``y``), the start is the in-memory dual coordinate descent
(:func:`~qpsvm.solvers.warm_start.multiclass_dual`) on a strided sample at ``C n / n_sample``,
the sort pass collects the examples nearest a change of status
(:mod:`qpsvm.dask.class_blocks`), and each round solves the restricted problem over those
examples (all their constraints) and one aggregated example per group of fixed examples
(:mod:`qpsvm.dask.fold`) by the in-memory working set, then checks every example and sums the
certificate in one pass.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from qpsvm._numerics import fsum
from qpsvm._validation import check_int, check_number, check_positive, check_tol
from qpsvm.dask.blocks import Rows, Sort
from qpsvm.dask.class_blocks import ClassBlock, class_fold, class_statuses
from qpsvm.dask.fold import Fold
from qpsvm.dask.passes import DaskClassData, as_dask_array
from qpsvm.dask.reference import ReferenceCertify
from qpsvm.dask.working_set import (
    MIN_WORK,
    SAMPLE_ROWS,
    Begin,
    Restricted,
    WorkingRows,
    begin_solve,
    certify_blocks,
    read_sample,
    solve_dask_working_set,
)
from qpsvm.exceptions import InvalidInputError
from qpsvm.formulations.multiclass import VARIANTS, MulticlassSVM
from qpsvm.solution import Solution
from qpsvm.solvers.warm_start import multiclass_dual
from qpsvm.solvers.working_set import MIN_ADD, STATUS_TOL, WIDTH
from qpsvm.verify.certificate import DEFAULT_TOL, Certificate

__all__ = ["DaskMulticlassSVM", "MulticlassFamily"]


def ensure_classes(data: DaskClassData) -> np.ndarray:
    """The label values of ``y``, read by one pass over ``y`` on first use.

    Raises
    ------
    InvalidInputError
        ``y`` holds fewer than two labels.
    """
    if not data.classes.size:
        classes = data.labels()
        if classes.size < 2:
            raise InvalidInputError(
                f"y has only one class ({classes.tolist()}); a classifier needs at least two."
            )
        data.classes = classes
    return data.classes


def sample_start(data: DaskClassData, rows: int) -> tuple[np.ndarray, float]:
    """``W`` of the dual coordinate descent start on a strided sample at ``C n / n_sample``
    (rows of the classes the sample lacks are 0) and its band; ``W = 0`` with a unit band when
    the sample holds fewer than two classes."""
    classes = ensure_classes(data)
    X, y, s, _ = read_sample(data, rows)
    W = np.zeros((classes.size, data.n_features))
    if np.unique(y).size < 2:
        return W, 1.0
    f = MulticlassSVM(
        np.asarray(X, dtype=np.float64),
        y,
        C=data.C * data.n_samples / y.size,
        variant="crammer_singer" if data.crammer_singer else "weston_watkins",
        sample_weight=s,
    )
    start = multiclass_dual(f)
    W[np.searchsorted(classes, f.classes_)] = start.candidate.w
    return W, start.band


class MulticlassFamily:
    """The multiclass SVMs' steps of the working set over row blocks (see the module)."""

    def __init__(self, variant: str) -> None:
        self.formulation = f"MulticlassSVM({variant})"

    def begin(
        self,
        data: DaskClassData,
        width: float,
        sample_rows: int,
        start_passes: int,
        min_work: int,
    ) -> Begin:
        """Labels, sample start and sort: at least ``min_work / (k - 1)`` examples (about
        ``min_work`` constraints) start in ``W``."""
        W, band = sample_start(data, sample_rows)
        passes = len(data.log)
        sort = Sort(W, 0.0)
        band = width * band
        parts = data.sort(sort, band, max(1, min_work // (data.n_classes - 1)))
        return Begin(sort, WorkingRows(parts.work, parts.fold), band, STATUS_TOL, passes)

    def restricted(
        self,
        data: DaskClassData,
        ws: WorkingRows,
        solver: str | None,
        options: dict[str, Any],
        tol: float,
    ) -> Restricted:
        """The restricted problem by the in-memory engine (``MulticlassSVM(...).solve(method=
        "working_set")``, certified at ``tol``) on ``W``'s examples and one aggregated example
        per group of fixed examples (:mod:`qpsvm.dask.fold`; a class no example holds gets
        one of weight 0, so that ``W`` has its ``k`` rows). Its certificate's multipliers give
        ``W``'s, shape ``(|W|, k)`` (0 at ``y_i``), and, as fractions ``t_g = alpha_g /
        (C S_g)`` of their bound, the fixed examples' (:attr:`~qpsvm.dask.blocks.Sort.share`)."""
        rows, fold, k = ws.rows, ws.fold, data.n_classes
        groups = np.flatnonzero(fold.weight > 0.0)
        Xg, yg, sg, _ = (v[groups] for v in fold.rows())
        y = np.concatenate([rows.y, yg]).astype(np.intp)
        absent = np.setdiff1d(np.arange(k), y)
        f = MulticlassSVM(
            np.vstack([rows.X, Xg, np.zeros((absent.size, data.n_features))]),
            np.concatenate([y, absent]),
            C=data.C,
            variant="crammer_singer" if data.crammer_singer else "weston_watkins",
            sample_weight=np.concatenate([rows.sample_weight, sg, np.zeros(absent.size)]),
        )
        began = time.perf_counter()
        sol = f.solve(method="working_set", solver=solver, tol=tol, **options)
        seconds = time.perf_counter() - began
        alpha = np.asarray(sol.certificate.alpha, dtype=np.float64)
        n = len(rows)
        taken = np.clip(alpha[n : n + groups.size] / (data.C * sg)[:, None], 0.0, 1.0)
        point = Sort(np.asarray(sol.w, dtype=np.float64), 0.0, (fold.keys[groups], taken))
        return Restricted(point, alpha[:n], sol.solver, seconds)

    def without(
        self, data: DaskClassData, fold: Fold, found: Rows, point: Sort, sort: Sort
    ) -> Fold:
        """``fold`` without the found examples that had constraints fixed at the sort
        point."""
        y = found.y.astype(np.intp)
        block = ClassBlock(
            found.X, y, found.sample_weight, data.C, data.crammer_singer, data.n_classes, 0
        )
        fixed = class_statuses(block, sort, np.zeros(0, dtype=np.intp))[1]
        return fold.minus(class_fold(found.X, y, found.sample_weight, fixed))


class DaskMulticlassSVM(ReferenceCertify):
    r"""Multiclass SVM (Crammer-Singer or Weston-Watkins) over Dask collections.

    ``qpsvm.MulticlassSVM(X, y, ...)`` returns this class when ``X`` or ``y`` is a Dask array,
    dataframe or series.

    Parameters
    ----------
    X : dask array or dataframe of shape (n_samples, n_features)
        Chunked along the rows (float32 blocks are certified in float64, exactly).
    y : dask array or series of shape (n_samples,)
        At least two label values; ``classes_`` (sorted, read by one pass over ``y``) index
        the rows of ``W``.
    C : float, default=1.0
    variant : {"crammer_singer", "weston_watkins"}, default="crammer_singer"
    sample_weight : dask array of shape (n_samples,), optional
    fit_intercept : bool, default=False
        Only ``False`` with Dask data.
    loss : {"hinge"}
        Only the hinge with Dask data.
    intercept, intercept_scaling
        Only no intercept with Dask data: append the constant column ``B`` for a regularised
        one.
    penalty, l1_ratio
        Only the L2 penalty with Dask data.

    Notes
    -----
    Every pass reads each row block once; the client holds ``W``, the working set's rows and
    one record per block. See :doc:`/dask`.
    """

    def __init__(
        self,
        X: Any,
        y: Any,
        C: float = 1.0,
        variant: str = "crammer_singer",
        sample_weight: Any = None,
        fit_intercept: bool = False,
        *,
        loss: str = "hinge",
        intercept: str | None = None,
        intercept_scaling: float = 1.0,
        penalty: str = "l2",
        l1_ratio: float = 0.5,
    ) -> None:
        if penalty != "l2":
            raise InvalidInputError(
                f"with Dask data MulticlassSVM has the L2 penalty; got penalty={penalty!r} "
                f"(l1_ratio={l1_ratio!r}). The L1 and elastic-net penalties are solved in "
                "memory: pass X.compute() and y.compute()."
            )
        if loss != "hinge":
            raise InvalidInputError(
                f"with Dask data MulticlassSVM solves the hinge loss; got loss={loss!r}. The "
                "squared hinge is solved in memory: pass X.compute() and y.compute()."
            )
        if variant not in VARIANTS:
            raise InvalidInputError(f"unknown variant {variant!r}; choose one of {VARIANTS}.")
        if fit_intercept or intercept not in (None, "none"):
            raise InvalidInputError(
                "with Dask data MulticlassSVM has no intercept (got fit_intercept="
                f"{fit_intercept!r}, intercept={intercept!r}, intercept_scaling="
                f"{intercept_scaling!r}); for a regularised intercept append the constant "
                "column B to X (qpsvm.dask.formulation.with_constant_column)."
            )
        self.variant = variant
        self.C = check_positive(C, "C")
        self.data = DaskClassData(
            as_dask_array(X, "X", 2),
            as_dask_array(y, "y", 1),
            None if sample_weight is None else as_dask_array(sample_weight, "sample_weight", 1),
            None,
            self.C,
            False,
            crammer_singer=variant == "crammer_singer",
        )

    @property
    def n_samples(self) -> int:
        return self.data.n_samples

    @property
    def n_features(self) -> int:
        return self.data.n_features

    @property
    def classes_(self) -> np.ndarray:
        """The label values (read by one pass over ``y`` on first use)."""
        return ensure_classes(self.data)

    @property
    def n_classes(self) -> int:
        return int(self.classes_.size)

    @property
    def alpha_shape(self) -> tuple[int, ...]:
        """One row's multipliers: one per class."""
        return (self.n_classes,)

    def solve(
        self,
        method: str | None = None,
        solver: str | None = None,
        *,
        tol: float = DEFAULT_TOL,
        max_rounds: int = 50,
        width: float = WIDTH,
        sample_rows: int = SAMPLE_ROWS,
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
        tol, max_rounds, width, sample_rows, min_work, **options
            See :func:`~qpsvm.dask.working_set.solve_dask_working_set`.

        Returns
        -------
        Solution
            ``w`` (``W``, shape ``(k, d)``) in memory; ``alpha`` (``(n, k)``), ``xi``
            (``(n,)`` or ``(n, k)``) and ``certificate.alpha`` Dask arrays.
        """
        begin_solve(self.data, method)
        return solve_dask_working_set(
            self.data,
            MulticlassFamily(self.variant),
            solver,
            tol=check_tol(tol),
            max_rounds=check_int(max_rounds, "max_rounds"),
            width=float(check_number(width, "width")),
            sample_rows=check_int(sample_rows, "sample_rows"),
            min_work=check_int(min_work, "min_work"),
            **options,
        )

    def _check_w(self, w: Any) -> np.ndarray:
        W = np.asarray(w, dtype=np.float64)
        shape = (self.n_classes, self.n_features)
        if W.shape != shape or not np.all(np.isfinite(W)):
            raise InvalidInputError(f"w must be a finite array of shape {shape}.")
        return W

    def _certify_with(self, candidate: Any, stored: tuple, tol: float) -> Certificate:
        """The certificate of ``W`` at the statuses and multipliers ``stored``; a bare point's
        own: ``C s_i`` on each example's most violated class, or on every violated class."""
        W = self._check_w(candidate.w)
        sort, index, alpha = stored
        sort = Sort(W, 0.0) if sort is None else sort
        parts = self.data.check(sort, index, alpha, W, 0.0, STATUS_TOL, MIN_ADD)
        return certify_blocks(
            self.data, parts, W, sort, index, alpha, tol, f"MulticlassSVM({self.variant})"
        )

    def objective(self, w: Any, b: float = 0.0) -> float:
        """``P(W) = 1/2 ||W||_F^2 + C sum_i s_i loss_i(W)`` (one pass)."""
        W = self._check_w(w)
        xi = self.data.slack(W, 0.0)
        loss = xi if xi.ndim == 1 else xi.sum(axis=1)
        s = self.data.sample_weight
        weighted = loss if s is None else loss * s
        total = weighted.map_blocks(lambda v: np.array([fsum(v)]), chunks=(1,)).compute()
        return 0.5 * float(np.sum(W * W)) + self.C * fsum(total)

    def decision_function(self, X: Any, solution: Any) -> Any:
        """Class scores ``X W^T`` of new rows (a Dask array for Dask input)."""
        return X @ np.asarray(solution.w).T

    def predict(self, X: Any, solution: Any) -> Any:
        """Predicted labels: ``classes_[argmax_c w_c . x]`` (smallest index on ties)."""
        import dask.array as da

        classes = self.classes_
        best = self.decision_function(X, solution).argmax(axis=1)
        if isinstance(best, da.Array):
            return best.map_blocks(lambda i: classes[i], dtype=classes.dtype)
        return classes[best]
