r"""Binary SVMs: hard margin, soft-margin primal and soft-margin dual (with kernels).

All three minimise the same primal

.. math::

    P(w, b) = \tfrac12 \|w\|^2 + C \sum_i s_i \xi_i
    \quad\text{s.t.}\quad y_i (w \cdot \phi(x_i) + b) \ge m_i - \xi_i,\; \xi_i \ge 0,

with per-sample slack weights ``s_i`` (``sample_weight``, the lectures' weighted data points:
replicating a point ``k`` times equals ``s_i = k``) and per-sample margins ``m_i`` (``margin``).
The hard margin has no slack (``C = inf``). Their common Lagrangian dual is

.. math::

    D(\alpha) = \sum_i m_i \alpha_i - \tfrac12 \Big\|\sum_i \alpha_i y_i \phi(x_i)\Big\|^2,
    \quad 0 \le \alpha_i \le C s_i,\; \sum_i \alpha_i y_i = 0 \text{ (with an intercept)}.

Labels may be any two values; ``classes_[1]`` (the larger in sorted order) is ``y = +1``, as in
scikit-learn.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from qpsvm._numerics import fsum_dot, tdot
from qpsvm._validation import (
    check_binary_labels,
    check_data,
    check_intercept,
    check_positive,
    check_sample_weight,
    check_vector,
    check_weight_vector,
    is_dask,
)
from qpsvm.contract import load, method_names, signature_of
from qpsvm.exceptions import InvalidInputError, NotSeparableError
from qpsvm.formulations.base import Formulation
from qpsvm.formulations.binary_models import dual_model, primal_model
from qpsvm.formulations.composed import ComposedClassifier, class_weights
from qpsvm.formulations.intercept import hinge_intercept
from qpsvm.formulations.kernel_rows import KernelRows
from qpsvm.formulations.model import CvxModel
from qpsvm.kernels import LINEAR, Kernel, check_precomputed, make_kernel
from qpsvm.solution import Candidate, Solution
from qpsvm.verify.projection import project_box_hyperplane
from qpsvm.verify.rigorous import scale_to_feasible

__all__ = ["BinaryFormulation", "HardMargin", "SoftMarginDual", "SoftMarginPrimal"]


class BinaryFormulation(KernelRows, Formulation):
    """Shared data and numpy math of the binary formulations.

    Attributes
    ----------
    X : ndarray or csr_matrix of shape (n_samples, n_features)
        Training data (float64 copy), or the Gram matrix for ``kernel="precomputed"``.
    y : ndarray of shape (n_samples,)
        Labels mapped to ``-1/+1``.
    classes_ : ndarray of shape (2,)
        Original label values; ``classes_[1]`` is ``+1``.
    C : float
        Slack penalty (``inf`` for the hard margin).
    sample_weight : ndarray
        Slack weights ``s_i``.
    margin : ndarray
        Margins ``m_i``.
    fit_intercept : bool
        Whether ``b`` is a free variable (otherwise ``b = 0``).
    kernel : Kernel
        The kernel (``linear`` for the primal formulations).
    """

    methods: ClassVar[tuple[str, ...]] = method_names(
        "qp full working_set homotopy subgradient smo exact"
    )
    working_set: ClassVar[str] = "qpsvm.solvers.working_set:binary_sets"
    online_problem: ClassVar[str] = "qpsvm.solvers.subgradient:binary_problem"
    refinement: ClassVar[str] = "qpsvm.solvers.refine:refine_binary"
    exact_oracle: ClassVar[str] = "qpsvm.solvers.exact:solve_exact_binary"
    #: The restricted model of a working set depends on ``C`` only through its parameter ``C``
    #: (the primal's fixed term is ``C`` times data); the dual's fixed multipliers ``C s_i``
    #: are data of its model.
    c_parametric: ClassVar[bool] = True
    certifier: ClassVar[str] = "qpsvm.verify.binary:certify_binary"
    #: Above this many samples :meth:`default_method` is ``"working_set"``: the measured
    #: crossover of the two exact methods (``--crossover`` of benchmarks/bench_scale.py), for the
    #: linear kernel and for the other kernels but rbf (whose full QP factors the n x n Gram
    #: matrix). The rbf kernel's entries lie in (0, 1], and there the working set's SMO start
    #: certifies without a QP, 10-100x faster than the full QP from n = 20 up (measured, n =
    #: 20-400): it is the default at every size. A poly kernel on raw features has entries of
    #: any size (~1e10 on the data of tests/test_hard_numerics.py), where the full QP on the
    #: Gram factor certifies at 1e-2 and the working set does not.
    working_set_min_samples: ClassVar[int] = 1000
    working_set_min_samples_kernel: ClassVar[int] = 200
    #: Most samples per feature for which :meth:`default_method` is ``"dcd"`` on sparse data:
    #: with many more samples than features most multipliers of the hinge loss sit at a
    #: bound, the free ones nearly as many as the features, and the descent ends by its
    #: active-set finish on the free set (:func:`~qpsvm.verify.ascent.free_set_step`).
    #: Measured in one run each against the working set on the text-like data of
    #: benchmarks/regimes/sparse.py (2 cores at a load of 10-15): without an intercept dcd
    #: 1.0 s against 3.8 s at 20000 x 200 (10 nonzeros a row), 5.7 s against 7.4 s at 50000 x
    #: 500, 4.9 s against 38.7 s at 50000 x 2000 (20 a row), 12.3 s against 15.0 s at 100000
    #: x 2000; with a free intercept, its search on ``b`` started from the regularised
    #: intercept (:func:`~qpsvm.verify.ascent.balanced_ascent`; CPU time, load 5-7), 0.17 s
    #: against 0.41 s at 20000 x 200, 1.0 s against 1.4 s at 50000 x 500, 2.0 s against 9.9 s
    #: at 50000 x 2000, 5.4 s against 6.1 s at 100000 x 2000. Above 100 samples per feature
    #: nothing was measured: the working set stays.
    dcd_max_aspect: ClassVar[float] = 100.0
    #: "module:function" of the dual coordinate descent data (the linear hinge SVMs).
    coordinate_problem: ClassVar[str] = "qpsvm.solvers.coordinate:binary_problem"
    #: ``"module:function"`` mapping ``(cls, args, kwargs)`` to the composed problem the class
    #: returns for the combinations it does not solve itself (other losses, penalties,
    #: intercept modes), or ``None`` for its own: :func:`composed_classifier` (a
    #: :class:`ComposedClassifier`), ``composed_ranking``; ``""``: none.
    routes_composed: ClassVar[str] = ""
    #: ``"module:Class"`` the class returns for Dask data (``X``, ``y`` or ``groups`` a Dask
    #: collection), e.g. :class:`~qpsvm.dask.formulation.DaskSoftMarginPrimal`; ``""``: none.
    routes_dask: ClassVar[str] = ""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        target = cls.__dict__.get("routes_dask")
        if target and is_dask(*args[:2], kwargs.get("X"), kwargs.get("y"), kwargs.get("groups")):
            return load(target)(*args, **kwargs)
        route = cls.__dict__.get("routes_composed")
        if route and (args or kwargs):
            composed = load(route)(cls, args, kwargs)
            if composed is not None:
                return composed
        return super().__new__(cls)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # introspection (inspect.signature, help) shows __init__'s parameters, not __new__'s
        super().__init_subclass__(**kwargs)
        init = inspect.signature(cls.__init__)
        cls.__signature__ = init.replace(
            parameters=list(init.parameters.values())[1:], return_annotation=init.empty
        )

    def __init__(
        self,
        X: Any,
        y: Any,
        C: float,
        *,
        fit_intercept: bool = True,
        sample_weight: Any = None,
        margin: Any = None,
        kernel: Kernel | None = None,
        class_weight: Any = None,
    ) -> None:
        self.X = check_data(X)
        n = self.X.shape[0]
        self.y, self.classes_ = check_binary_labels(y, n)
        self.C = C
        self.fit_intercept = bool(fit_intercept)
        # class weights multiply the slack weights of their class (scikit-learn's convention)
        self.sample_weight = check_sample_weight(sample_weight, n) * class_weights(
            class_weight, (self.y > 0).astype(np.intp), self.classes_
        )
        self.margin = (
            np.ones(n) if margin is None else check_vector(margin, n, "margin", nonnegative=True)
        )
        self.kernel = kernel if kernel is not None else LINEAR
        self._model: CvxModel | None = None

    def default_method(self) -> str:
        """``"dcd"`` for sparse data with the linear kernel and at most :attr:`dcd_max_aspect`
        samples per feature (dual coordinate descent touches only the nonzeros; measured in
        benchmarks/regimes/sparse.py), else ``"working_set"`` above
        :attr:`working_set_min_samples` samples (linear kernel) or
        :attr:`working_set_min_samples_kernel` (other kernels) and at every size for the rbf
        kernel, else ``"qp"``. A kernel problem's working set starts from the compiled SMO loop:
        before that loop is compiled (a cold first call after an install), from SMO's steps in
        numpy (:func:`~qpsvm.solvers.smo.numpy_steps`), or where those do not apply a small
        one is solved as the full QP instead (:func:`~qpsvm.solvers.smo.full_qp_first`)."""
        sparse = self.linear and sp.issparse(self.X) and "dcd" in self.methods
        if sparse and self.n_samples <= self.dcd_max_aspect * self.n_features:
            return "dcd"
        large = self.working_set_min_samples if self.linear else self.working_set_min_samples_kernel
        if self.kernel.name != "rbf" and self.n_samples <= large:
            return "qp"
        if not self.linear and "qp" in self.methods:
            # the kernel working set starts from the compiled SMO: before it is compiled (a
            # cold first call after an install), from numpy's SMO steps where they apply, else
            # a small problem is solved as the full QP
            from qpsvm.solvers.smo import full_qp_first, numpy_steps

            if not numpy_steps(self) and full_qp_first(self.n_samples):
                return "qp"
        return "working_set"

    def default_path_method(self) -> str:
        """``"homotopy"`` for the linear kernel (event tracking: a 20-value path costs 2-3 solves);
        with another kernel many samples sit on the margin and every event solves a large system,
        and the working set is faster (measured)."""
        if self.linear and "homotopy" in self.methods:
            return "homotopy"
        return super().default_path_method()

    def with_C(self, C: float) -> BinaryFormulation:
        """The same problem with another ``C``: a shallow copy sharing the data (and the Gram
        matrix), with its own model. Used by regularisation paths."""
        if not math.isfinite(self.C):
            raise InvalidInputError(
                "the hard margin has no C to vary; use SoftMarginPrimal for a regularisation path."
            )
        return super().with_C(C)

    # ----------------------------------------------------------------- sizes and shapes

    @property
    def linear(self) -> bool:
        """True when ``w`` is explicit (linear kernel)."""
        return self.kernel.name == "linear"

    @property
    def upper(self) -> np.ndarray:
        """Upper bounds of the dual variables, ``C s_i`` (``inf`` for the hard margin)."""
        return self.C * self.sample_weight

    # ------------------------------------------------------------------ numpy math
    def check_w(self, w: Any) -> np.ndarray:
        """A candidate ``w`` as a finite float64 vector of length ``n_features``."""
        return check_weight_vector(w, self.n_features, self.kernel.name)

    def check_b(self, b: Any) -> float:
        """A candidate intercept; must be 0 when the problem has none."""
        return check_intercept(
            b,
            self.fit_intercept,
            "fit_intercept=False",
            "build the formulation with fit_intercept=True",
        )

    def check_alpha(self, alpha: Any) -> np.ndarray:
        """Candidate dual variables as a finite float64 vector of length ``n_samples``."""
        return check_vector(alpha, self.n_samples, "alpha")

    def expansion(self, alpha: np.ndarray) -> np.ndarray:
        """``w = sum_i alpha_i y_i x_i`` (linear kernel), as if computed in twice the working
        precision, then rounded (:func:`qpsvm._numerics.tdot`): its terms cancel by many digits
        on badly scaled data (``|x| ~ 1e4``, ``|w| ~ 1e-4``), which a plain product loses."""
        return tdot(self.X, alpha * self.y)

    def scores(self, w: np.ndarray | None = None, alpha: np.ndarray | None = None) -> np.ndarray:
        """``w . phi(x_i)`` on the training data, from ``w`` (linear) or from ``alpha``."""
        if w is not None:
            return np.asarray(self.X @ w).ravel()
        if self.linear:
            return np.asarray(self.X @ self.expansion(alpha)).ravel()
        return self._kernel_product(alpha * self.y)

    def margins(self, w: Any, b: Any = 0.0) -> np.ndarray:
        """Functional margins ``y_i (w . x_i + b)``."""
        return self.y * (self.scores(w=self.check_w(w)) + self.check_b(b))

    def slacks(self, w: Any, b: Any = 0.0) -> np.ndarray:
        """Exact slacks ``max(0, m_i - y_i (w . x_i + b))`` of a candidate."""
        return np.maximum(0.0, self.margin - self.margins(w, b))

    def primal_value(self, norm2: float, scores: np.ndarray, b: float) -> float:
        """``1/2 ||w||^2 + C sum_i s_i max(0, m_i - y_i (score_i + b))`` with careful sums."""
        hinge = np.maximum(0.0, self.margin - self.y * (scores + b))
        if not math.isfinite(self.C):
            return 0.5 * norm2 if not np.any(hinge > 0) else math.inf
        return 0.5 * norm2 + self.C * fsum_dot(self.sample_weight, hinge)

    def objective(self, w: Any, b: Any = 0.0) -> float:
        """Primal objective ``P(w, b) = 1/2 ||w||^2 + C sum_i s_i max(0, m_i - y_i(w.x_i + b))``.

        For the hard margin, ``+inf`` when a margin constraint is violated.
        """
        w = self.check_w(w)
        return self.primal_value(fsum_dot(w, w), self.scores(w=w), self.check_b(b))

    def objective_alpha(self, alpha: Any, b: Any = None) -> float:
        """Primal objective of ``w = sum_i alpha_i y_i phi(x_i)`` (any kernel).

        ``b=None`` takes the best intercept for that ``w`` (:meth:`optimal_intercept`).
        ``||w||^2`` is ``w . w`` for the linear kernel (no cancellation), ``(alpha y) . K (alpha
        y)`` otherwise.
        """
        alpha = self.check_alpha(alpha)
        if self.linear:
            w = self.expansion(alpha)
            return self.objective(w, b=self.optimal_intercept(self.scores(w=w)) if b is None else b)
        g = self.scores(alpha=alpha)
        b = self.optimal_intercept(g) if b is None else self.check_b(b)
        return self.primal_value(fsum_dot(alpha * self.y, g), g, b)

    def dual_objective(self, alpha: Any) -> float:
        """``D(alpha) = sum_i m_i alpha_i - 1/2 ||sum_i alpha_i y_i phi(x_i)||^2``.

        A lower bound of the optimum only when ``alpha`` is dual feasible (see
        :meth:`project_dual`).
        """
        return self.dual_parts(alpha)[0]

    def dual_parts(self, alpha: Any) -> tuple[float, np.ndarray | None]:
        """:meth:`dual_objective` and, for the linear kernel, the expansion
        ``sum_i alpha_i y_i x_i`` it computed (``None`` for other kernels)."""
        alpha = self.check_alpha(alpha)
        v = None
        if self.linear:
            v = self.expansion(alpha)
            quad = fsum_dot(v, v)
        else:
            ay = alpha * self.y
            quad = fsum_dot(ay, self._kernel_product(ay))
        return fsum_dot(self.margin, alpha) - 0.5 * quad, v

    def project_dual(self, alpha: Any) -> np.ndarray:
        """Euclidean projection onto ``{0 <= alpha <= C s, sum alpha_i y_i = 0}``."""
        alpha = self.check_alpha(alpha)
        return project_box_hyperplane(alpha, self.upper, self.y if self.fit_intercept else None)

    def dual_infeasibility(self, alpha: np.ndarray) -> float:
        """Largest violation of ``0 <= alpha <= C s`` and (with an intercept) ``y . alpha = 0``."""
        box = max(
            float(np.max(-alpha, initial=0.0)), float(np.max(alpha - self.upper, initial=0.0))
        )
        balance = abs(fsum_dot(alpha, self.y)) if self.fit_intercept else 0.0
        return max(0.0, box, balance)

    def optimal_intercept(self, scores: np.ndarray) -> float:
        """The best ``b`` for the scores ``w . phi(x_i)`` (0 without an intercept): see
        :func:`~qpsvm.formulations.intercept.hinge_intercept`."""
        if not self.fit_intercept:
            return 0.0
        return hinge_intercept(self.y, self.margin, self.sample_weight, scores, self.C)

    def decision_function(self, X: Any, solution: Any) -> np.ndarray:
        """``f(x) = w . phi(x) + b`` for new points; ``> 0`` predicts ``classes_[1]``.

        ``solution`` is a :class:`~qpsvm.Solution` (or anything with ``alpha``/``w`` and ``b``).
        For ``kernel="precomputed"``, ``X`` is the kernel between new and training points.
        """
        Xn = check_data(X)
        b = float(solution.b)
        if self.kernel.name == "precomputed":
            if Xn.shape[1] != self.n_samples:
                raise InvalidInputError(
                    f"for a precomputed kernel X must be K(new, train) with {self.n_samples} "
                    f"columns; got {Xn.shape[1]}."
                )
            return np.asarray(Xn @ (solution.alpha * self.y)).ravel() + b
        self.check_features(Xn)
        if self.linear and solution.w is not None:
            return np.asarray(Xn @ solution.w).ravel() + b
        return self.kernel(Xn, self.X) @ (solution.alpha * self.y) + b

    def predict(self, X: Any, solution: Any) -> np.ndarray:
        """Predicted labels (original values): ``classes_[1]`` where the decision is > 0."""
        return np.where(self.decision_function(X, solution) > 0, self.classes_[1], self.classes_[0])

    # --------------------------------------------------------- model building helpers
    def read_model(self, model: CvxModel, fixed: Any = None) -> Candidate:
        """Read ``w, b, xi, alpha`` off a solved primal model (``alpha`` = margin duals).

        For a model over a subset, ``alpha`` outside it is ``fixed`` (default 0; ``C s_i`` for
        samples folded in with ``at_bound``).
        """
        w = np.asarray(model.variables["w"].value, dtype=np.float64)
        b = float(model.variables["b"].value) if self.fit_intercept else 0.0
        alpha = np.zeros(self.n_samples) if fixed is None else np.array(fixed, dtype=np.float64)
        duals = np.asarray(model.constraints["margin"].dual_value, dtype=np.float64).ravel()
        alpha[slice(None) if model.index is None else model.index] = duals
        return Candidate(w=w, b=b, alpha=alpha)

    def infeasible_error(self) -> Exception | None:
        """The error for a solver that reports the problem infeasible (``None``: generic)."""
        return None

    def build_restricted(self, work: np.ndarray, bound: np.ndarray) -> CvxModel:
        """The model over the samples ``work`` (indices), with the samples of the mask
        ``bound`` folded in at ``alpha_i = C s_i``: the working set's restricted QP."""
        at_bound = np.flatnonzero(bound)
        if not at_bound.size:
            return self.build(subset=work)
        return self.build(subset=work, at_bound=at_bound)

    def solution_from(self, cand: Candidate, certificate: Any = None, **fields: Any) -> Solution:
        """A :class:`~qpsvm.Solution` for ``cand`` with slacks and objective from the data (the
        scores and ``||w||^2`` the ``certificate`` computed for the same ``w``, if it has them:
        :meth:`~qpsvm.verify.certificate.Certificate.primal_parts`). With an explicit ``w`` its
        multipliers are, once the ``certificate`` passes, its dual point, the one whose ``D``
        it proves: an exact solve's own may be any feasible point (a refinement whose sets lost
        every support vector has ``alpha = 0`` with the optimal ``w = 0``, certified by a point
        of the certificate's own). An approximate solution keeps its method's (none for
        subgradient descent, SMO's at its tolerance)."""
        alpha = cand.alpha
        if cand.w is not None and getattr(certificate, "passed", False):
            alpha = certificate.alpha
        w = cand.w if cand.w is not None or not self.linear else self.expansion(alpha)
        kept = getattr(certificate, "primal_parts", None)
        kept = None if kept is None or w is None else kept(w)
        if kept is not None:
            scores, norm2 = kept
        else:
            scores = self.scores(w=w) if w is not None else self.scores(alpha=alpha)
            norm2 = fsum_dot(w, w) if w is not None else fsum_dot(alpha * self.y, scores)
        b = self.optimal_intercept(scores) if cand.b is None else float(cand.b)
        xi = np.maximum(0.0, self.margin - self.y * (scores + b))
        objective = (
            0.5 * norm2 if not math.isfinite(self.C) else self.primal_value(norm2, scores, b)
        )
        fields.setdefault("solve_time", 0.0)
        fields.setdefault("n_iter", 0)
        return Solution(
            w=w,
            b=b,
            xi=xi,
            alpha=alpha,
            objective=float(objective),
            certificate=certificate,
            **fields,
        )


#: The (loss, penalty, intercept) combinations :class:`SoftMarginPrimal` solves itself.
_FAST = {("hinge", "l2", "free"), ("hinge", "l2", "none")}
#: The keyword-only arguments that choose another (loss, penalty, intercept).
_PIECE_KEYWORDS = frozenset({"loss", "penalty", "intercept"})


def composed_classifier(cls: type, args: tuple, kwargs: dict) -> ComposedClassifier | None:
    """The :class:`ComposedClassifier` for the arguments of ``cls`` (``SoftMarginPrimal`` or
    ``SoftMarginDual``) when their (loss, penalty, intercept) is not one the class solves
    itself (:data:`_FAST`); ``None`` when it is: at once when none of :data:`_PIECE_KEYWORDS`
    is given (they are keyword-only, and their defaults, the hinge with the L2 penalty and the
    intercept ``fit_intercept`` names, are in :data:`_FAST`; binding the arguments to the
    signature costs a sizeable share of a small problem's construction, and the class's own
    ``__init__`` refuses arguments it does not take)."""
    if _PIECE_KEYWORDS.isdisjoint(kwargs):
        return None
    bound = signature_of(cls.__init__).bind(None, *args, **kwargs)
    bound.apply_defaults()
    params = dict(bound.arguments)
    del params["self"]
    mode = _intercept_mode(params.pop("fit_intercept"), params.pop("intercept"))
    if (params["loss"], params.get("penalty", "l2"), mode) in _FAST:
        return None
    return ComposedClassifier(params.pop("X"), params.pop("y"), intercept=mode, **params)


def _intercept_mode(fit_intercept: bool, intercept: Any) -> Any:
    """The intercept mode of ``fit_intercept`` and ``intercept`` (which wins when given)."""
    if intercept is None:
        return "free" if fit_intercept else "none"
    if not fit_intercept and intercept != "none":
        raise InvalidInputError(
            f"fit_intercept=False contradicts intercept={intercept!r}; pass only intercept."
        )
    return intercept


class SoftMarginPrimal(BinaryFormulation):
    r"""Soft-margin SVM in the primal: :math:`\min \tfrac12\|w\|^2 + C\sum_i s_i\xi_i`.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Two label values; ``classes_[1]`` (larger, sorted) is ``+1``.
    C : float, default=1.0
        Slack penalty ``C > 0``. The lectures' ``lambda/2 ||w||^2 + sum xi`` is ``C = 1/lambda``
        (:func:`qpsvm.conventions.C_from_lambda`).
    fit_intercept : bool, default=True
        Free, unregularised ``b`` (``intercept="free"``) or none (``intercept="none"``).
    sample_weight : array-like of shape (n_samples,), optional
        Slack weights ``s_i >= 0`` (default 1).
    margin : array-like of shape (n_samples,), optional
        Margins ``m_i >= 0`` (default 1).
    loss : {"hinge", "squared_hinge"}, default="hinge"
    penalty : {"l2", "l1", "l1_l2"}, default="l2"
    intercept : {"free", "none", "regularized"}, optional
        Overrides ``fit_intercept``; ``"regularized"`` is liblinear's bias: a constant feature
        ``intercept_scaling`` whose weight is penalised like ``w``.
    intercept_scaling : float, default=1.0
    l1_ratio : float, default=0.5
        ``r`` of ``penalty="l1_l2"``: ``r ||w||_1 + (1 - r)/2 ||w||^2``.
    class_weight : dict, "balanced" or None
        Multiplies the slack weights of each class (scikit-learn's convention).

    Notes
    -----
    The hinge loss with the L2 penalty and a free or no intercept (class weights folded into
    the sample weights) is this class, with its fast paths (working set, SMO, homotopy paths).
    Every other combination of ``loss``, ``penalty`` and ``intercept`` returns a
    :class:`~qpsvm.formulations.composed.ComposedClassifier` (the generic route: the full CVXPY
    problem and the Fenchel certificate of the pieces); see :doc:`/formulations/composed`.

    Examples
    --------
    >>> import qpsvm
    >>> f = qpsvm.SoftMarginPrimal([[0.0], [1.0], [3.0], [4.0]], [0, 0, 1, 1], C=10.0)
    >>> sol = f.solve()
    >>> round(float(sol.w[0]), 6), round(float(sol.b), 6)
    (1.0, -2.0)
    >>> f.certify(sol).passed
    True
    """

    routes_composed: ClassVar[str] = "qpsvm.formulations.binary:composed_classifier"
    methods: ClassVar[tuple[str, ...]] = (*BinaryFormulation.methods, "dcd")
    direct_qp: ClassVar[str] = "qpsvm.solvers.direct:solve_primal_direct"
    direct_restricted: ClassVar[str] = "qpsvm.solvers.direct:solve_restricted_primal"
    routes_dask: ClassVar[str] = "qpsvm.dask.formulation:DaskSoftMarginPrimal"

    def __init__(
        self,
        X: Any,
        y: Any,
        C: float = 1.0,
        fit_intercept: bool = True,
        sample_weight: Any = None,
        margin: Any = None,
        *,
        loss: str = "hinge",
        penalty: str = "l2",
        intercept: str | None = None,
        intercept_scaling: float = 1.0,
        l1_ratio: float = 0.5,
        class_weight: Any = None,
    ) -> None:
        super().__init__(
            X,
            y,
            check_positive(C, "C"),
            fit_intercept=_intercept_mode(fit_intercept, intercept) == "free",
            sample_weight=sample_weight,
            margin=margin,
            class_weight=class_weight,
        )

    def build(self, subset: Any = None, at_bound: Any = None) -> CvxModel:
        """Build the primal over the margin constraints of ``subset`` (default: all samples).

        Samples in ``at_bound`` are folded in with ``alpha_i = C s_i`` (known to violate their
        margin): they add the linear term ``C sum_i s_i (m_i - y_i (w.x_i + b))`` instead of a
        constraint. This is how the working-set solver shrinks the problem.

        Variables ``w``, ``b`` (with an intercept), ``xi``; constraints ``margin``
        (``y_i (w.x_i + b) >= m_i - xi_i``, dual ``alpha_i >= 0``) and ``slack`` (``xi >= 0``,
        dual ``C s_i - alpha_i``); parameter ``C``.
        """
        return primal_model(self, True, subset, at_bound)


class HardMargin(BinaryFormulation):
    r"""Hard-margin SVM: :math:`\min \tfrac12\|w\|^2` s.t. :math:`y_i(w\cdot x_i + b) \ge m_i`.

    Feasible only for linearly separable data; otherwise :meth:`solve` raises
    :class:`~qpsvm.exceptions.NotSeparableError` (use :class:`SoftMarginPrimal`). Its dual is the
    soft-margin dual without the upper bound ``C s_i``.
    """

    always_feasible: ClassVar[bool] = False
    methods: ClassVar[tuple[str, ...]] = ("qp", "full", "working_set", "exact")
    online_problem: ClassVar[str] = ""
    refusals: ClassVar[dict[str, str]] = {
        "smo": "SMO needs the finite box 0 <= alpha_i <= C s_i, and the hard margin has none "
        "(use SoftMarginDual with a large C)",
        "subgradient": "the hard margin has no finite lambda = 1/(C n), so it has no "
        "subgradient method (use SoftMarginPrimal with a large C)",
        "homotopy": "the hard margin has no C to vary",
        "dcd": "dual coordinate descent needs the finite box 0 <= alpha_i <= C s_i (use "
        "SoftMarginPrimal with a large C)",
    }

    def __init__(self, X: Any, y: Any, fit_intercept: bool = True, margin: Any = None) -> None:
        super().__init__(X, y, math.inf, fit_intercept=fit_intercept, margin=margin)
        if not np.any(self.margin > 0):
            raise InvalidInputError(
                "every margin is 0, so w = 0 is optimal and the hard margin is degenerate; "
                "give positive margins."
            )

    def build(self, subset: Any = None) -> CvxModel:
        """Variables ``w`` and ``b``; constraint ``margin`` (``y_i (w.x_i + b) >= m_i``, dual
        ``alpha_i >= 0``)."""
        return primal_model(self, False, subset)

    def make_feasible(self, cand: Candidate) -> Candidate:
        """``cand`` with ``(w, b)`` scaled by the least factor ``t >= 1`` that makes every margin
        hold provably (:func:`qpsvm.verify.rigorous.scale_to_feasible`): a rounded optimum
        violates margins by an ulp, which a rigorous certificate refuses."""
        if cand.w is None or cand.b is None:
            return cand
        w, b = scale_to_feasible(self, np.asarray(cand.w, dtype=np.float64), float(cand.b))
        return dataclasses.replace(cand, w=w, b=b)

    def infeasible_error(self) -> Exception:
        return NotSeparableError(
            "the data are not linearly separable (the hard-margin problem is infeasible"
            + ("" if self.fit_intercept else " without an intercept")
            + "); use SoftMarginPrimal, which allows margin violations at a cost C per unit."
        )


class SoftMarginDual(BinaryFormulation):
    r"""Soft-margin SVM in the dual, with kernels.

    .. math::

        \max_\alpha \sum_i m_i\alpha_i - \tfrac12 (\alpha\circ y)^T K (\alpha\circ y)
        \quad\text{s.t.}\quad 0 \le \alpha_i \le C s_i,\ \sum_i \alpha_i y_i = 0.

    The quadratic term is given to CVXPY as ``sum_squares(X^T (alpha*y))`` for the linear kernel
    (no ``n x n`` matrix) and as ``sum_squares(L^T (alpha*y))`` with ``K = L L^T`` otherwise;
    over a subset ``W`` (the working set) as ``quad_form(alpha*y, K_WW)``, with ``K_WW`` taken
    from the cached kernel rows (:meth:`kernel_cache`), never the ``n x n`` matrix.
    ``w`` (linear kernel) and ``b`` are recovered from ``alpha``.

    Parameters
    ----------
    kernel : {"linear", "rbf", "poly", "precomputed"} or callable, default="linear"
        For ``"precomputed"``, ``X`` is the training Gram matrix; a callable ``k(A, B)`` returns
        the kernel matrix between the rows of ``A`` and ``B``.
    gamma : float, "scale" or "auto", optional
        RBF / poly scale; ``None`` is scikit-learn's ``"scale"``: ``1 / (n_features X.var())``.
    degree, coef0 : poly kernel ``(gamma x.x' + coef0)^degree``.
    loss : {"hinge", "squared_hinge"}, default="hinge"
    intercept : {"free", "none", "regularized"}, optional
        Overrides ``fit_intercept``; ``"regularized"`` adds ``B^2`` (``intercept_scaling``)
        to the kernel.
    intercept_scaling : float, default=1.0
    class_weight : dict, "balanced" or None

    Other parameters are those of :class:`SoftMarginPrimal`. The hinge loss with a free or no
    intercept is this class (working set, SMO); the squared hinge or a regularised intercept
    returns a :class:`~qpsvm.formulations.composed.ComposedClassifier` stating the kernel dual
    of the pieces (see :doc:`/formulations/composed`).
    """

    c_parametric: ClassVar[bool] = False
    routes_composed: ClassVar[str] = "qpsvm.formulations.binary:composed_classifier"
    methods: ClassVar[tuple[str, ...]] = (*BinaryFormulation.methods, "dcd")
    direct_qp: ClassVar[str] = "qpsvm.solvers.direct:solve_dual_direct"

    def __init__(
        self,
        X: Any,
        y: Any,
        C: float = 1.0,
        kernel: str | Callable = "linear",
        fit_intercept: bool = True,
        sample_weight: Any = None,
        margin: Any = None,
        gamma: float | str | None = None,
        degree: int = 3,
        coef0: float = 1.0,
        *,
        loss: str = "hinge",
        intercept: str | None = None,
        intercept_scaling: float = 1.0,
        class_weight: Any = None,
    ) -> None:
        if isinstance(kernel, str) and kernel == "precomputed":
            X = check_precomputed(check_data(X, "X (precomputed kernel)"))
        super().__init__(
            X,
            y,
            check_positive(C, "C"),
            fit_intercept=_intercept_mode(fit_intercept, intercept) == "free",
            sample_weight=sample_weight,
            margin=margin,
            class_weight=class_weight,
        )
        self.kernel = make_kernel(kernel, self.X, gamma, degree, coef0)

    def build(self, subset: Any = None, fixed: Any = None) -> CvxModel:
        """Build the dual over the variables of ``subset`` (default: all).

        Samples outside ``subset`` keep the values of ``fixed`` (a full-length ``alpha``, default
        0), so the working-set solver optimises a block at a time; for a kernel only the
        subset's block ``K_WW`` of the Gram matrix is a quadratic form, the rest enters as a
        linear term (from the cached rows of the fixed support vectors).
        Variable ``alpha``; constraints ``lower`` (``alpha >= 0``), ``upper``
        (``alpha <= C s``) and, with an intercept, ``balance`` (``y . alpha = 0``, whose dual
        is ``b`` up to sign); parameter ``C``.
        """
        return dual_model(self, subset, fixed)

    def build_restricted(self, work: np.ndarray, bound: np.ndarray) -> CvxModel:
        """The dual over the variables ``work``, the others fixed at ``C s_i`` on the mask
        ``bound`` and 0 elsewhere."""
        return self.build(subset=work, fixed=np.where(bound, self.upper, 0.0))

    def read_model(self, model: CvxModel, fixed: Any = None) -> Candidate:
        """Read ``alpha`` off a solved dual model; ``w`` (linear) and ``b`` follow from it.

        For a model over a subset, ``alpha`` outside it is ``fixed`` (as given to :meth:`build`).
        """
        alpha = np.zeros(self.n_samples) if fixed is None else np.array(fixed, dtype=np.float64)
        values = np.asarray(model.variables["alpha"].value, dtype=np.float64).ravel()
        alpha[slice(None) if model.index is None else model.index] = values
        return self.candidate_from_alpha(alpha)

    def candidate_from_alpha(self, alpha: np.ndarray) -> Candidate:
        """The candidate of a dual point: ``alpha`` clipped to its box, ``w`` (linear kernel)
        its expansion, ``b`` the best intercept for its scores."""
        alpha = np.clip(alpha, 0.0, self.upper)
        g = self.scores(alpha=alpha)
        b = self.optimal_intercept(g)
        return Candidate(w=self.expansion(alpha) if self.linear else None, b=b, alpha=alpha)
