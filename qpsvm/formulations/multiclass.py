r"""Multiclass SVMs: Crammer-Singer (one slack per example) and Weston-Watkins (one per class).

With one weight vector :math:`w_c` per class (the rows of ``W``), margins
:math:`m_{ic} = w_{y_i}\cdot x_i - w_c\cdot x_i` and sample weights ``s_i``:

.. math::

    \text{crammer\_singer:}\quad \min_{W,\xi}\ \tfrac12\|W\|_F^2 + C\sum_i s_i\xi_i
    \quad\text{s.t.}\quad m_{ic} \ge 1 - \xi_i\ (c \ne y_i),\; \xi_i \ge 0;

    \text{weston\_watkins:}\quad \min_{W,\xi}\ \tfrac12\|W\|_F^2 + C\sum_i s_i\sum_{c\ne y_i}
    \xi_{ic} \quad\text{s.t.}\quad m_{ic} \ge 1 - \xi_{ic},\; \xi_{ic} \ge 0

(Crammer & Singer, JMLR 2001; Weston & Watkins, ESANN 1999; the lectures' "max" and "multiple
constraints" forms). With one multiplier :math:`\alpha_{ic} \ge 0` per constraint, stored as an
``(n_samples, n_classes)`` array with :math:`\alpha_{i y_i} = 0`, both have the dual

.. math::

    D(\alpha) = \sum_{i, c\ne y_i} \alpha_{ic} - \tfrac12 \|A^T X\|_F^2, \qquad
    A_{ic} = [c = y_i] \sum_{c'} \alpha_{ic'} - \alpha_{ic},

with :math:`W = A^T X` at the optimum, under :math:`\sum_{c} \alpha_{ic} \le C s_i`
(Crammer-Singer) or :math:`\alpha_{ic} \le C s_i` (Weston-Watkins). The certificate is in
:mod:`qpsvm.verify.multiclass`.

A regularised per-class intercept (``intercept="regularized"``, what liblinear's ``-s 4 -B``
and scikit-learn's ``LinearSVC(multi_class="crammer_singer", fit_intercept=True,
intercept_scaling=B)`` fit) is a constant feature ``B`` whose weights ``b_c / B`` are penalised
like ``W``: the problem is the one above on ``[X, B]``, and every method and the certificate
apply to it unchanged.

A free per-class intercept (``intercept="free"`` or ``fit_intercept=True``) adds unpenalised
``b_c`` to the scores, :math:`m_{ic} = (w_{y_i} - w_c)\cdot x_i + b_{y_i} - b_c`:

.. math::

    \min_{W, b, \xi}\ \tfrac12\|W\|_F^2 + C\sum_i s_i\,\mathrm{loss}_i,

and its dual gains one balance equation per class, :math:`\sum_i A_{ic} = 0` (stationarity in
``b_c``). Only differences ``b_c - b_{c'}`` enter the margins, so the intercepts are defined up
to a common shift: qpsvm's solutions are normalised to :math:`\sum_c b_c = 0`. It is stated as
the problem on ``[X, 1]`` whose last column of ``W`` (the intercepts) is not penalised, so the
QP, the working set and the certificate read it like the other modes; the certificate bounds
the balance's rounding residual rigorously (:mod:`qpsvm.verify.multiclass`).
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from qpsvm._lazy import lazy_module
from qpsvm._numerics import fsum
from qpsvm._validation import (
    check_data,
    check_multiclass_labels,
    check_positive,
    check_sample_weight,
    is_dask,
)
from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.formulations.base import Formulation
from qpsvm.formulations.model import CvxModel
from qpsvm.formulations.pieces.intercepts import make_intercept, with_bias_column
from qpsvm.formulations.pieces.losses import make_loss
from qpsvm.formulations.pieces.penalties import make_penalty
from qpsvm.solution import Candidate, Solution
from qpsvm.verify.projection import project_capped_simplex

cp = lazy_module("cvxpy")

__all__ = ["VARIANTS", "MulticlassSVM", "rows_multiclass_model"]

#: The two multiclass formulations.
VARIANTS = ("crammer_singer", "weston_watkins")


class MulticlassSVM(Formulation):
    r"""Multiclass SVM, Crammer-Singer or Weston-Watkins (see the module docstring for the math).

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Any hashable, mutually comparable labels, at least two distinct; ``classes_`` are the
        sorted unique values and row ``c`` of ``W`` belongs to ``classes_[c]``.
    C : float, default=1.0
        Slack penalty. scikit-learn's ``LinearSVC(multi_class="crammer_singer", C=C)`` (liblinear)
        minimises the same ``1/2 ||W||^2 + C sum_i xi_i``.
    variant : {"crammer_singer", "weston_watkins"}, default="crammer_singer"
    sample_weight : array-like of shape (n_samples,), optional
        Slack weights ``s_i >= 0`` (default 1).
    loss : {"hinge", "squared_hinge"}, default="hinge"
        ``"squared_hinge"`` squares the slacks: ``C sum_i s_i xi_i^2`` (Crammer-Singer: the
        squared largest violation) or ``C sum_i s_i sum_c xi_ic^2`` (Weston-Watkins). Its dual
        has no cap and subtracts ``sum_i (sum_c alpha_ic)^2 / (4 C s_i)`` (or the per-entry
        squares); it is solved by the full CVXPY problem (``method="qp"``).
    fit_intercept : bool, default=False
        ``True``: a free, unpenalised per-class intercept (``intercept="free"``).
    intercept : {"none", "free", "regularized"}, optional
        Overrides ``fit_intercept``. ``"free"``: unpenalised intercepts ``b_c``, normalised to
        ``sum_c b_c = 0`` (only their differences are determined); then ``n_features`` counts
        the intercepts' column (``d + 1``), ``w`` has it last (``b_c``), unpenalised, and a
        solution's ``b`` is ``w[:, -1]``. ``"regularized"``: liblinear's bias, a constant feature
        ``intercept_scaling`` appended to ``X`` whose weights are penalised like ``W``; then
        ``n_features`` counts it (``d + 1`` for ``d`` columns of ``X``), ``w`` has the bias
        column last (``b_c / B``), and a solution's ``b`` is the per-class intercepts
        ``B w[:, -1]``.
    intercept_scaling : float, default=1.0
        ``B`` of the regularised intercept (liblinear's ``-B``).
    penalty : {"l2", "l1", "l1_l2"}, default="l2"
        ``R(W)`` in place of ``1/2 ||W||_F^2``: ``"l1"`` is ``sum_c ||w_c||_1``, ``"l1_l2"``
        the elastic net ``r ||W||_1 + (1 - r)/2 ||W||_F^2`` (the pieces of
        :mod:`qpsvm.formulations.pieces.penalties`, as in :class:`~qpsvm.RankingSVM` and the
        composed binary problems), over the same columns as the L2 penalty (a regularised
        intercept's too, a free one's not). The dual subtracts ``R^*(A^T X)``: for L1 the
        constraint ``max |A^T X| <= 1``. Solved by the full CVXPY problem (``method="qp"``);
        L1 certificates give no distance bound (``R`` is not strongly convex).
    l1_ratio : float, default=0.5
        ``r`` of the ``"l1_l2"`` penalty, in ``(0, 1)``.

    Attributes
    ----------
    y : ndarray of int, shape (n_samples,)
        Class indices into ``classes_``.
    classes_ : ndarray of shape (n_classes,)
    mask : ndarray of bool, shape (n_samples, n_classes)
        ``True`` where a constraint exists (``c != y_i``).
    rows, cols : ndarray of int, shape (n_samples * (n_classes - 1),)
        The constraints ``(i, c)``, ``c != y_i``, in row-major order: the index that
        ``build(subset=...)`` and the ``margin`` constraint's rows refer to.

    Examples
    --------
    >>> import qpsvm
    >>> X = [[0.0, 1.0], [1.0, 0.0], [-1.0, -1.0], [0.1, 0.9]]
    >>> f = qpsvm.MulticlassSVM(X, ["a", "b", "c", "a"], C=10.0)
    >>> sol = f.solve()
    >>> sol.w.shape, f.certify(sol).passed
    ((3, 2), True)
    >>> f.predict([[0.0, 2.0]], sol).tolist()
    ['a']
    """

    methods: ClassVar[tuple[str, ...]] = ("qp", "full", "working_set", "subgradient", "exact")
    refusals: ClassVar[dict[str, str]] = {
        name: "the squared hinge (loss='squared_hinge') is solved by the full CVXPY problem "
        "(method='qp'); the working set, the subgradient method and the rational oracle serve "
        "the hinge"
        for name in ("working_set", "subgradient", "exact")
    }
    #: Why the L1 and elastic-net penalties have no subgradient method and no rational oracle.
    penalty_refusals: ClassVar[dict[str, str]] = {
        name: "the L1 and elastic-net penalties (penalty='l1', 'l1_l2') are solved by the full "
        "CVXPY problem (method='qp') or, with the hinge, the working set; the subgradient "
        "method and the rational oracle serve the L2 penalty"
        for name in ("subgradient", "exact")
    }
    #: Why the free intercept has no subgradient method.
    free_refusals: ClassVar[dict[str, str]] = {
        "subgradient": "the free per-class intercept (intercept='free') is solved by the "
        "CVXPY problem (method='qp'), the working set or the rational oracle (method='exact'); "
        "the subgradient method states the problem without intercept or with the regularised "
        "one"
    }
    working_set: ClassVar[str] = "qpsvm.solvers.working_set:multiclass_sets"
    online_problem: ClassVar[str] = "qpsvm.solvers.subgradient:multiclass_problem"
    exact_oracle: ClassVar[str] = "qpsvm.solvers.exact:solve_exact_multiclass"
    #: Above this many examples :meth:`default_method` is ``"working_set"``: at every size
    #: (measured, 4 classes, d = 10, both variants: the working set 1.1-17 times faster than the
    #: full QP from n = 30 to 500, its exact start skipping CVXPY where it certifies; 10
    #: classes, d = 50: at n = 2000 the full Crammer-Singer QP took 35 s, the working set 3 s).
    working_set_min_samples: ClassVar[int] = 0
    certifier: ClassVar[str] = "qpsvm.verify.multiclass:certify_multiclass"
    direct_restricted: ClassVar[str] = "qpsvm.solvers.direct_multiclass:solve_restricted_multiclass"
    refinement: ClassVar[str] = "qpsvm.solvers.refine:refine_multiclass"

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if is_dask(*args[:2], kwargs.get("X"), kwargs.get("y")):
            from qpsvm.dask.multiclass import DaskMulticlassSVM

            return DaskMulticlassSVM(*args, **kwargs)
        return super().__new__(cls)

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
        self.loss = make_loss(loss, regression=False)
        self.penalty = make_penalty(penalty, l1_ratio)
        if self.loss.squared:
            # the working set, the online method and the rational oracle state the hinge
            self.methods = ("qp", "full")
            self.working_set = self.online_problem = self.exact_oracle = ""
        mode = make_intercept(
            bool(fit_intercept) if intercept is None else intercept, intercept_scaling
        )
        if fit_intercept and not mode.fitted:
            raise InvalidInputError(
                f"fit_intercept=True contradicts intercept={mode.mode!r}; pass one of them."
            )
        if mode.coupled:
            mode.scaling = 1.0  # the intercepts' column is 1: W[:, -1] are the b_c themselves
            self.methods = tuple(m for m in self.methods if m not in self.free_refusals)
            if not self.loss.squared:  # the squared hinge's own refusals say more
                self.refusals = self.free_refusals
            self.online_problem = ""
        if self.penalty.name != "l2":
            self.refinement = "qpsvm.solvers.refine:refine_sparse_weights"
            self.methods = tuple(m for m in self.methods if m in ("qp", "full", "working_set"))
            if not self.loss.squared:  # the squared hinge's own refusals say more
                self.refusals = self.penalty_refusals
            self.online_problem = self.exact_oracle = ""
        self.intercept = mode
        self.X = check_data(X)
        if mode.fitted:
            self.X = with_bias_column(self.X, mode.scaling)
        n = self.X.shape[0]
        self.y, self.classes_ = check_multiclass_labels(y, n)
        self.C = check_positive(C, "C")
        if not isinstance(variant, str):
            raise InvalidTypeError(f"variant must be one of {VARIANTS}, got {variant!r}.")
        if variant not in VARIANTS:
            raise InvalidInputError(f"unknown variant {variant!r}; choose one of {VARIANTS}.")
        self.variant = variant
        self.sample_weight = check_sample_weight(sample_weight, n)
        self.fit_intercept = mode.coupled
        k = self.n_classes
        self.mask = np.ones((n, k), dtype=bool)
        self.mask[np.arange(n), self.y] = False
        self.rows, self.cols = np.nonzero(self.mask)
        self._model: CvxModel | None = None

    def default_method(self) -> str:
        """``"working_set"`` above :attr:`working_set_min_samples` examples with the L2
        penalty (the hinge or its square), else ``"qp"`` (with the L1 penalties on digits,
        n = 300, C = 0.1, nearly every example is short of its margin and stays in the working
        set: it took 0.6-1.8x the full QP's time, benchmarks/bench_composed_families.py)."""
        if (
            "working_set" in self.methods
            and self.penalty.name == "l2"
            and self.n_samples > self.working_set_min_samples
        ):
            return "working_set"
        return "qp"

    # ----------------------------------------------------------------- sizes and shapes
    @property
    def n_classes(self) -> int:
        """Number of classes ``k``."""
        return int(self.classes_.shape[0])

    @property
    def crammer_singer(self) -> bool:
        """True for the Crammer-Singer variant (one slack per example)."""
        return self.variant == "crammer_singer"

    @property
    def squared(self) -> bool:
        """True for the squared hinge (``loss="squared_hinge"``)."""
        return bool(self.loss.squared)

    @property
    def upper(self) -> np.ndarray:
        """``C s_i``: the bound on ``sum_c alpha_ic`` (Crammer-Singer) or on each ``alpha_ic``."""
        return self.C * self.sample_weight

    # ------------------------------------------------------------------ numpy math
    def check_w(self, w: Any) -> np.ndarray:
        """A candidate ``W`` as a finite ``(n_classes, n_features)`` array (flat is reshaped)."""
        arr = np.asarray(w, dtype=np.float64)
        k, d = self.n_classes, self.n_features
        if arr.ndim == 1 and arr.size == k * d:
            arr = arr.reshape(k, d)
        if arr.shape != (k, d):
            raise InvalidInputError(
                f"w must have shape (n_classes, n_features) = ({k}, {d}); got {arr.shape}."
            )
        if not np.all(np.isfinite(arr)):
            raise InvalidInputError("w contains NaN or inf.")
        return arr

    def check_b(self, b: Any) -> float:
        """A candidate intercept, which must be 0 (a scalar or one zero per class) without an
        intercept; with one, see :meth:`joint_weights`."""
        arr = np.asarray(b, dtype=np.float64).ravel()
        if arr.size not in (1, self.n_classes) or np.any(arr != 0.0):
            raise InvalidInputError(
                f"MulticlassSVM has no intercept but the candidate has b={b!r}. Build the "
                "problem with intercept='free' (unpenalised per-class intercepts) or "
                "intercept='regularized' and intercept_scaling=B (liblinear's is regularised), or "
                "fit with fit_intercept=False."
            )
        return 0.0

    def joint_weights(self, w: Any, b: Any = None) -> np.ndarray:
        """The weights over the problem's features of a candidate ``(w, b)``.

        Without an intercept: ``w`` (``b`` must be 0 or ``None``). With the regularised one,
        ``w`` of shape ``(n_classes, n_features - 1)`` and per-class intercepts ``b`` become
        ``[w, b / B]`` (``b / B`` rounded: the point certified is the one whose intercepts are
        ``B fl(b / B)``, exactly ``b`` for ``B`` a power of 2), and a ``w`` that already has
        the bias column is taken as it is (``b``, unless ``None`` or a scalar 0, must be
        ``B w[:, -1]``). With the free one, ``B = 1``: ``[w, b]`` exactly.
        """
        if not self.intercept.fitted:
            if b is not None:
                self.check_b(b)
            return self.check_w(w)
        B, k = self.intercept.scaling, self.n_classes
        arr = np.asarray(w, dtype=np.float64)
        if arr.ndim == 2 and arr.shape == (k, self.n_features - 1):
            if b is None:
                raise InvalidInputError(
                    "the regularised intercept needs the per-class intercepts: pass b "
                    f"(shape ({k},)) with w of shape {arr.shape}, or w with the bias column."
                )
            bias = np.broadcast_to(np.asarray(b, dtype=np.float64).ravel(), (k,))
            return self.check_w(np.hstack([arr, (bias / B)[:, None]]))
        W = self.check_w(arr)
        if np.ndim(b) == 0 and b is not None and float(b) == 0.0:
            b = None  # the weights carry the intercepts (solvers' candidates say b = 0)
        if b is not None and not np.array_equal(
            np.broadcast_to(np.asarray(b, dtype=np.float64).ravel(), (k,)), B * W[:, -1]
        ):
            raise InvalidInputError(
                f"b={b!r} disagrees with w's bias column: with an intercept b is "
                "intercept_scaling * w[:, -1] (w[:, -1] for the free one); pass w without the "
                "column, or b=None."
            )
        return W

    def intercepts(self, W: np.ndarray) -> Any:
        """Per-class intercepts ``B W[:, -1]`` (regularised intercept; ``W[:, -1]`` for the free
        one, ``B = 1``), else 0."""
        return self.intercept.scaling * W[:, -1] if self.intercept.fitted else 0.0

    def penalised(self, W: np.ndarray) -> np.ndarray:
        """The columns of ``W`` the penalty acts on: all but the free intercepts' column."""
        return W[:, :-1] if self.intercept.coupled else W

    def penalty_value(self, W: np.ndarray) -> float:
        """``R(W)`` over the penalised columns (:meth:`penalised`), with careful sums."""
        return float(self.penalty.value(np.ravel(self.penalised(W))))

    def stationary(self, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What ``A^T X`` equals at an optimum, where it is determined: ``grad R(W)`` (``W`` for
        the L2 penalty; ``sign(W)`` where ``W != 0`` for L1), and 0 on the free intercepts'
        column (the balance ``sum_i A_ic = 0``); and the mask of the determined entries."""
        P = self.penalised(W)
        g, known = self.penalty.gradient(P)
        if not self.intercept.coupled:
            return g, known
        ones = np.ones((W.shape[0], 1), dtype=bool)
        return np.hstack([g, np.zeros((W.shape[0], 1))]), np.hstack([known, ones])

    def conjugate(self, V: np.ndarray) -> float:
        """``R^*(V)`` over the penalised columns of ``V = A^T X`` (``+inf`` outside its
        domain)."""
        return float(self.penalty.conjugate(np.ravel(self.penalised(V))))

    def balance(self, alpha: np.ndarray) -> np.ndarray:
        """The balance residuals ``r_c = sum_i A_ic`` (free intercept; they sum to 0)."""
        return self.coefficients(alpha).sum(axis=0)

    def check_alpha(self, alpha: Any) -> np.ndarray:
        """Candidate duals as a finite ``(n_samples, n_classes)`` array (entries at ``y_i``
        are ignored by the math and reported as dual infeasibility when nonzero)."""
        arr = np.asarray(alpha, dtype=np.float64)
        shape = (self.n_samples, self.n_classes)
        if arr.ndim == 1 and arr.size == self.rows.size:
            full = np.zeros(shape)
            full[self.rows, self.cols] = arr
            arr = full
        if arr.shape != shape:
            raise InvalidInputError(
                f"alpha must have shape (n_samples, n_classes) = {shape}, or one entry per "
                f"constraint ({self.rows.size},); got {arr.shape}."
            )
        if not np.all(np.isfinite(arr)):
            raise InvalidInputError("alpha contains NaN or inf.")
        return arr

    def scores(self, W: np.ndarray) -> np.ndarray:
        """``S = X W^T``: the score ``w_c . x_i`` of every class, shape ``(n, k)``."""
        return np.asarray(self.X @ W.T)

    def margins(self, S: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """``m_ic = S_{i y_i} - S_ic`` from the scores of all samples or of ``rows`` (0 at
        ``c = y_i``)."""
        y = self.y if rows is None else self.y[rows]
        return S[np.arange(S.shape[0]), y][:, None] - S

    def hinge(self, S: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """``max(0, 1 - m_ic)`` for ``c != y_i`` (0 at ``c = y_i``), shape ``(n, k)``; of the
        samples ``rows`` when given."""
        mask = self.mask if rows is None else self.mask[rows]
        return np.where(mask, np.maximum(0.0, 1.0 - self.margins(S, rows)), 0.0)

    def slacks_from_scores(self, S: np.ndarray) -> np.ndarray:
        """Exact slacks: ``xi_i = max_c hinge_ic`` (Crammer-Singer, shape ``(n,)``) or
        ``xi_ic = hinge_ic`` (Weston-Watkins, shape ``(n, k)``)."""
        h = self.hinge(S)
        return h.max(axis=1) if self.crammer_singer else h

    def slacks(self, w: Any) -> np.ndarray:
        """Exact slacks of a candidate ``W`` (see :meth:`slacks_from_scores`)."""
        return self.slacks_from_scores(self.scores(self.check_w(w)))

    def primal_value(self, penalty: float, S: np.ndarray) -> float:
        """``R(W) + C sum_i s_i loss_i`` from ``R(W)`` (:meth:`penalty_value`) and the scores,
        with careful sums (``loss_i = xi_i`` or ``sum_c xi_ic``)."""
        xi = self.slacks_from_scores(S)
        if self.squared:
            xi = xi * xi
        loss = xi if self.crammer_singer else xi.sum(axis=1)
        return penalty + self.C * fsum(self.sample_weight * loss)

    def objective(self, w: Any, b: Any = 0.0) -> float:
        """Primal objective ``P(W) = R(W) + C sum_i s_i loss_i(W)`` (``R`` over the penalised
        columns, :meth:`penalised`; ``1/2 ||W||_F^2`` for the L2 penalty)."""
        W = self.joint_weights(w, None if np.ndim(b) == 0 and b == 0.0 else b)
        return self.primal_value(self.penalty_value(W), self.scores(W))

    def coefficients(self, alpha: np.ndarray) -> np.ndarray:
        """``A_ic = [c = y_i] sum_c' alpha_ic' - alpha_ic`` (entries at ``y_i`` ignored)."""
        a = np.where(self.mask, alpha, 0.0)
        A = -a
        A[np.arange(self.n_samples), self.y] = a.sum(axis=1)
        return A

    def expansion(self, alpha: np.ndarray) -> np.ndarray:
        """``W = A^T X``: row ``c`` is ``sum_i A_ic x_i``."""
        return np.asarray(self.X.T @ self.coefficients(alpha)).T

    def dual_objective(self, alpha: Any) -> float:
        """``D(alpha) = sum_{i, c != y_i} alpha_ic - R^*(A^T X)`` (over the penalised columns;
        ``1/2 ||A^T X||_F^2`` for the L2 penalty).

        A lower bound of the optimum only when ``alpha`` is dual feasible (see
        :meth:`project_dual`; with a free intercept also balanced, :meth:`balance`).
        """
        alpha = self.check_alpha(alpha)
        W = self.expansion(alpha)
        a = np.where(self.mask, alpha, 0.0)
        value = fsum(a) - self.conjugate(W)
        if self.squared:  # - sum_i (sum_c alpha_ic)^2 / (4 C s_i), or per entry (WW)
            live = self.upper > 0
            t = a[live].sum(axis=1, keepdims=True) if self.crammer_singer else a[live]
            value -= fsum(t * t / (4.0 * self.upper[live, None]))
        return value

    def project_dual(self, alpha: Any) -> np.ndarray:
        """Euclidean projection onto the dual feasible set: per example onto
        ``{alpha_i >= 0, sum_c alpha_ic <= C s_i}`` (Crammer-Singer,
        :func:`~qpsvm.verify.projection.project_capped_simplex`) or onto the box
        ``[0, C s_i]`` (Weston-Watkins); ``alpha_{i y_i} = 0``. A free intercept's balance is
        not enforced: the certificate bounds the effect of its residual. For the L1 penalty the
        point is then scaled into ``max |A^T X| <= 1`` (which keeps it in the box)."""
        alpha = self.check_alpha(alpha)
        if self.squared:
            a = np.where(self.mask & (self.upper > 0)[:, None], np.maximum(alpha, 0.0), 0.0)
        elif self.crammer_singer:
            a = project_capped_simplex(alpha, self.upper, self.mask)
        else:
            a = np.where(self.mask, np.clip(alpha, 0.0, self.upper[:, None]), 0.0)
        for _ in range(8):  # v is recomputed (rounded): shrink until the conjugate is finite
            t = self.penalty.feasible_scale(np.ravel(self.penalised(self.expansion(a))))
            if t == 1.0:
                break
            a = a * (t * (1.0 - 8.0 * np.finfo(float).eps))
        return a

    def dual_infeasibility(self, alpha: np.ndarray) -> float:
        """Largest violation of ``alpha >= 0``, ``alpha_{i y_i} = 0``, the budget
        ``sum_c alpha_ic <= C s_i`` (Crammer-Singer) or bound ``alpha_ic <= C s_i``, and a free
        intercept's balance ``sum_i A_ic = 0``."""
        off = float(np.max(np.abs(alpha[~self.mask]), initial=0.0))
        negative = float(np.max(-alpha, initial=0.0))
        a = np.where(self.mask, alpha, 0.0)
        if self.squared:
            over = float(np.max(np.abs(a[self.upper <= 0]), initial=0.0))
        elif self.crammer_singer:
            over = float(np.max(a.sum(axis=1) - self.upper, initial=0.0))
        else:
            over = float(np.max(a - self.upper[:, None], initial=0.0))
        if self.intercept.coupled:
            over = max(over, float(np.max(np.abs(self.balance(a)))))
        if self.penalty.name == "l1":
            V = self.penalised(self.expansion(a))
            over = max(over, float(np.max(np.abs(V), initial=0.0)) - 1.0)
        return max(0.0, off, negative, over)

    def loss_subgradient(self, w: Any, idx: Any = None) -> np.ndarray:
        """A subgradient ``G`` of ``sum_{i in idx} s_i loss_i(W)`` (without ``C``), shape
        ``(n_classes, n_features)``.

        Crammer-Singer: for each example with ``xi_i > 0``, ``-s_i x_i`` on the row of ``y_i`` and
        ``+s_i x_i`` on the row of the most violating class (smallest index on ties) — the
        lectures' update of the true and the arg-max class. Weston-Watkins: the same for every
        class with ``hinge_ic > 0``.
        """
        W = self.check_w(w)
        rows = np.arange(self.n_samples) if idx is None else np.asarray(idx, dtype=np.intp)
        Xb = self.X[rows]
        h = self.hinge(np.asarray(Xb @ W.T), rows)
        yb, sb = self.y[rows], self.sample_weight[rows]
        if self.crammer_singer:
            worst = np.argmax(h, axis=1)
            active = (h[np.arange(rows.size), worst] > 0).astype(np.float64)
            coef = np.zeros_like(h)
            coef[np.arange(rows.size), worst] = active
        else:
            coef = (h > 0).astype(np.float64)
        coef[np.arange(rows.size), yb] = -coef.sum(axis=1)
        return np.asarray(Xb.T @ (coef * sb[:, None])).T

    def decision_function(self, X: Any, solution: Any) -> np.ndarray:
        """Class scores ``X W^T`` of new points, shape ``(n, n_classes)``.

        ``solution`` is a :class:`~qpsvm.Solution` or a weight matrix ``W``.
        """
        Xn = check_data(X)
        if self.intercept.fitted:
            Xn = with_bias_column(Xn, self.intercept.scaling)
        return np.asarray(self.check_features(Xn) @ self.weights_of(solution).T)

    def predict(self, X: Any, solution: Any) -> np.ndarray:
        """Predicted labels: ``classes_[argmax_c w_c . x]`` (smallest index on ties)."""
        return self.classes_[np.argmax(self.decision_function(X, solution), axis=1)]

    # ------------------------------------------------------------------ the CVXPY model
    def build(self, subset: Any = None, at_bound: Any = None) -> CvxModel:
        """Build the primal over the constraints ``subset`` (indices into :attr:`rows` /
        :attr:`cols`; default: all).

        Constraints in ``at_bound`` are folded in with ``alpha_ic = C s_i``: they add the linear
        term ``-C sum s_i (w_{y_i} - w_c) . x_i`` instead of a constraint (for Crammer-Singer at
        most one per example, whose other constraints must then stay out of ``subset``).

        Variables ``w`` (shape ``(n_classes, n_features)``) and ``xi`` (one per example of the
        subset for Crammer-Singer, one per constraint for Weston-Watkins); constraints
        ``margin`` (``m_ic >= 1 - xi``, dual ``alpha_ic >= 0``) and ``slack`` (``xi >= 0``);
        parameter ``C``. Margins are ``M @ vec(X W^T)`` for a sparse selection ``M``.
        """
        n_con = self.rows.size
        idx = np.arange(n_con) if subset is None else np.asarray(subset, dtype=np.intp).ravel()
        if idx.size == 0:
            raise InvalidInputError("subset is empty; give at least one constraint index.")
        if np.any((idx < 0) | (idx >= n_con)):
            raise InvalidInputError(f"subset indices must be in [0, {n_con}).")
        rows, cols = self.rows[idx], self.cols[idx]
        used, local = np.unique(rows, return_inverse=True)
        folded = None
        if at_bound is not None and len(at_bound):
            folded = self.bound_term(at_bound, used)
        return rows_multiclass_model(
            self.X[used],
            self.y[used],
            self.sample_weight[used],
            (local, cols),
            self.n_classes,
            self.C,
            self.crammer_singer,
            folded,
            None if subset is None else idx,
            squared=self.squared,
            free_intercept=self.intercept.coupled,
            penalty=self.penalty,
        )

    def bound_term(self, at_bound: Any, used: np.ndarray) -> np.ndarray:
        """``G = sum_{(i,c) in at_bound} s_i x_i (e_{y_i} - e_c)^T``, transposed to ``(k, d)``."""
        bound = np.asarray(at_bound, dtype=np.intp).ravel()
        rows, cols = self.rows[bound], self.cols[bound]
        if self.crammer_singer and (
            np.unique(rows).size < rows.size or np.intersect1d(rows, used).size
        ):
            raise InvalidInputError(
                "for Crammer-Singer at most one constraint per example can be at its bound "
                "(alpha_ic = C s_i exhausts the example's budget), and that example's other "
                "constraints must stay out of the subset."
            )
        alpha = np.zeros((self.n_samples, self.n_classes))
        alpha[rows, cols] = self.sample_weight[rows]
        return self.expansion(alpha)

    def read_model(self, model: CvxModel) -> Candidate:
        """Read ``W`` and ``alpha`` (the ``margin`` duals, shape ``(n, k)``) off a solved model;
        free intercepts are shifted to ``sum_c b_c = 0``."""
        W = np.asarray(model.variables["w"].value, dtype=np.float64)
        if self.intercept.coupled:
            W[:, -1] -= np.mean(W[:, -1])
        idx = np.arange(self.rows.size) if model.index is None else model.index
        alpha = np.zeros((self.n_samples, self.n_classes))
        duals = np.asarray(model.constraints["margin"].dual_value, dtype=np.float64).ravel()
        alpha[self.rows[idx], self.cols[idx]] = duals
        return Candidate(w=W, b=0.0, alpha=alpha)

    def infeasible_error(self) -> Exception | None:
        """The soft-margin problem is always feasible: no specific error."""
        return None

    def solution_from(self, cand: Candidate, certificate: Any = None, **fields: Any) -> Solution:
        """A :class:`~qpsvm.Solution` for ``cand`` with slacks and objective from the data.

        With a ``certificate``, ``alpha`` is its dual point: feasible, and fitted to ``W`` on
        the tight constraints, so that it certifies on its own. An interior-point solver's raw
        duals do not always: their expansion ``A^T X`` lies ~1e-9 from ``W``, which at large
        ``C`` costs ``P(A^T X) - P*`` above ``1e-9`` relative.
        """
        W = self.check_w(cand.w) if cand.w is not None else self.expansion(cand.alpha)
        S = self.scores(W)
        fields.setdefault("solve_time", 0.0)
        fields.setdefault("n_iter", 0)
        alpha = cand.alpha
        if certificate is not None and certificate.alpha is not None:
            alpha = certificate.alpha
        return Solution(
            w=W,
            b=self.intercepts(W),
            xi=self.slacks_from_scores(S),
            alpha=alpha,
            objective=float(self.primal_value(self.penalty_value(W), S)),
            certificate=certificate,
            **fields,
        )


# introspection (inspect.signature, help) shows __init__'s parameters, not __new__'s
MulticlassSVM.__signature__ = inspect.signature(
    MulticlassSVM.__init__
).replace(  # type: ignore[attr-defined]
    parameters=list(inspect.signature(MulticlassSVM.__init__).parameters.values())[1:],
    return_annotation=inspect.Signature.empty,
)


def rows_multiclass_model(
    X: Any,
    y: np.ndarray,
    s: np.ndarray,
    constraints: tuple[np.ndarray, np.ndarray] | None,
    n_classes: int,
    C: float,
    crammer_singer: bool,
    folded: np.ndarray | None = None,
    index: np.ndarray | None = None,
    squared: bool = False,
    free_intercept: bool = False,
    penalty: Any = None,
) -> CvxModel:
    r"""The multiclass primal over the examples ``X`` (class indices ``y``, slack weights ``s``)
    and their constraints ``(local, cols)``: ``m_{ic} >= 1 - xi`` for example ``local[j]``
    and class ``cols[j]`` (``None``: every ``c != y_i`` of every example, in row-major order).

    ``folded = G = sum_E s_i x_i (e_{y_i} - e_c)^T`` (shape ``(k, d)``) over the constraints
    ``E`` fixed at their bound ``alpha_ic = C s_i`` adds ``-C <G, W>``: their term
    ``C sum_E s_i (1 - (w_{y_i} - w_c).x_i)`` up to a constant (see
    :meth:`MulticlassSVM.build` for the named parts). ``index`` is kept on the model.
    ``free_intercept``: the last column of ``W`` (on ``X``'s constant column 1) is not
    penalised. ``penalty``: a piece of :mod:`qpsvm.formulations.pieces.penalties` (default
    ``1/2 ||W||_F^2``).
    """
    n, k = X.shape[0], n_classes
    if constraints is None:
        mask = np.ones((n, k), dtype=bool)
        mask[np.arange(n), y] = False
        constraints = np.nonzero(mask)
    local, cols = constraints
    m = local.size
    W = cp.Variable((k, X.shape[1]), name="w")
    Cp = cp.Parameter(nonneg=True, value=C, name="C")
    S = X @ W.T
    # vec in column-major order: entry (r, c) of S is at r + c * n
    sel = sp.csr_matrix(
        (
            np.concatenate([np.ones(m), -np.ones(m)]),
            (
                np.concatenate([np.arange(m), np.arange(m)]),
                np.concatenate([local + y[local] * n, local + cols * n]),
            ),
        ),
        shape=(m, n * k),
    )
    margin = sel @ cp.vec(S, order="F")
    if crammer_singer:
        xi = cp.Variable(n, name="xi")
        spread = sp.csr_matrix((np.ones(m), (np.arange(m), local)), shape=(m, n))
        cons = {"margin": margin >= 1 - spread @ xi}
        weights = s
    else:
        xi = cp.Variable(m, name="xi")
        cons = {"margin": margin >= 1 - xi}
        weights = s[local]
    P = W[:, :-1] if free_intercept else W
    if penalty is None:
        penalty = 0.5 * cp.sum_squares(P)
    else:
        penalty = penalty.expression(cp.vec(P, order="C"))
    if squared:  # xi <= 0 is never better than xi = 0: no slack constraint is needed
        objective = penalty + Cp * (weights @ cp.square(xi))
    else:
        cons["slack"] = xi >= 0
        objective = penalty + Cp * (weights @ xi)
    if folded is not None:
        objective = objective - Cp * cp.sum(cp.multiply(folded, W))
    problem = cp.Problem(cp.Minimize(objective), list(cons.values()))
    return CvxModel(problem, {"w": W, "xi": xi}, cons, {"C": Cp}, index)
