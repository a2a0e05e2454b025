r"""A scikit-learn classifier whose every fit is an exact, certified SVM optimum.

Binary problems solve

.. math::

    \min_{w, b, \xi}\ \tfrac12\|w\|^2 + C \sum_i c_{y_i} s_i \xi_i
    \quad\text{s.t.}\quad y_i (w\cdot\phi(x_i) + b) \ge 1 - \xi_i,\ \xi_i \ge 0,

with ``s_i`` the sample weights and ``c_{y_i}`` the class weights (scikit-learn's convention:
they multiply), by :class:`~qpsvm.SoftMarginPrimal` (linear kernel) or
:class:`~qpsvm.SoftMarginDual` (kernels). More than two classes solve
:class:`~qpsvm.formulations.multiclass.MulticlassSVM` (Crammer-Singer or Weston-Watkins); there
the intercept is liblinear's regularised one, a constant feature column ``intercept_scaling``
appended to ``X`` (``MulticlassSVM(intercept="free")`` states free per-class intercepts).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from qpsvm._validation import check_positive, check_sample_weight
from qpsvm.estimators._base import solve_certified, typed_errors
from qpsvm.exceptions import InvalidInputError
from qpsvm.formulations.base import Formulation
from qpsvm.formulations.pieces.intercepts import with_bias_column
from qpsvm.verify.certificate import DEFAULT_TOL

__all__ = ["SVMClassifier"]

#: Binary formulations by name; ``"auto"`` is the primal for the linear kernel, else the dual.
FORMULATIONS = ("auto", "primal", "dual")
#: A sample is a support vector when ``alpha_i > SUPPORT_TOL * max(1, C max_i s_i)``.
SUPPORT_TOL = 1e-10


class SVMClassifier(ClassifierMixin, BaseEstimator):
    r"""Support vector classifier solved to its exact optimum, with a certificate.

    Two classes minimise :math:`\tfrac12\|w\|^2 + C\sum_i c_{y_i} s_i \xi_i` subject to
    :math:`y_i(w\cdot\phi(x_i) + b) \ge 1 - \xi_i`, :math:`\xi_i \ge 0`, where ``s_i`` are the
    sample weights and ``c_y`` the class weights; ``classes_[1]`` is ``y = +1``, so
    ``decision_function(X) > 0`` predicts ``classes_[1]`` as in scikit-learn. More classes solve
    the multiclass SVM of ``variant`` (linear kernel): Crammer-Singer,
    :math:`w_{y_i}\cdot x_i - w_c\cdot x_i \ge 1 - \xi_i` for all :math:`c \ne y_i`, or
    Weston-Watkins, one slack per (sample, class). ``fit`` validates, builds the formulation,
    solves it and certifies the answer; nothing else.

    Parameters
    ----------
    C : float, default=1.0
        Slack penalty ``C > 0``.
    kernel : {"linear", "rbf", "poly", "precomputed"} or callable, default="linear"
        Kernel of the binary dual (see :class:`~qpsvm.SoftMarginDual`); multiclass problems
        need the linear kernel.
    formulation : {"auto", "primal", "dual"}, default="auto"
        Binary formulation: ``"auto"`` is the primal for the linear kernel and the dual
        otherwise. Ignored (must stay ``"auto"``) with more than two classes.
    variant : {"crammer_singer", "weston_watkins"}, default="crammer_singer"
        Multiclass SVM used with more than two classes.
    method : str, optional
        Solve method of the formulation (one of its ``methods``: ``"qp"``, ``"working_set"``
        exact; ``"subgradient"``, ``"smo"`` approximate; see :data:`qpsvm.contract.METHODS`).
        ``None``: the formulation's measured default (``default_method()``: the full QP, or the
        working set above a measured size).
    fit_intercept : bool, default=True
        Fit an intercept. Two classes: ``b`` is free and unregularised. More classes: the
        constant column ``intercept_scaling`` is appended to ``X`` and its weights, regularised
        like the others, give ``intercept_`` (liblinear's
        ``LinearSVC(multi_class="crammer_singer")`` convention; the free per-class intercept is
        :class:`~qpsvm.MulticlassSVM`'s ``intercept="free"``).
    intercept_scaling : float, default=1.0
        Value of the appended constant column (multiclass with ``fit_intercept`` only); a larger
        value regularises the intercept less.
    class_weight : dict, "balanced" or None, default=None
        Class weights ``c_y`` multiplying the sample weights (``"balanced"``:
        ``n / (n_classes * count(y))``).
    gamma : float, "scale" or "auto", default="scale"
        RBF / poly kernel scale (scikit-learn's meaning).
    degree : int, default=3
        Degree of the poly kernel.
    coef0 : float, default=1.0
        Constant of the poly kernel ``(gamma x.x' + coef0)^degree``.
    tol : float, default=1e-9
        Relative duality gap the solution is certified at (``certificate_.passed``); exact
        methods refuse to return a point that fails it.
    solver : str or None, default=None
        CVXPY backend for exact methods (``None``: qpsvm's measured default).
    solver_options : dict or None, default=None
        Extra keyword options of :meth:`~qpsvm.formulations.base.Formulation.solve` (backend
        settings, epochs of an online method, ...).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels, sorted.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        ``w`` (linear kernel only, as scikit-learn's SVC).
    intercept_ : ndarray of shape (1,) or (n_classes,)
        ``b``.
    dual_coef_ : ndarray
        Binary: ``alpha_i y_i`` of the support vectors, shape ``(1, n_support)`` (libsvm's
        layout); multiclass: the formulation's dual variables of the support vectors.
    support_ : ndarray of int
        Indices of the support vectors (``alpha_i > 0``).
    support_vectors_ : ndarray or sparse matrix
        The support vectors (binary problems).
    n_features_in_ : int
        Number of features seen in ``fit``.
    n_iter_ : int
        Iterations of the solver (interior-point iterations, epochs, ...).
    certificate_ : Certificate
        Certificate of the fitted solution (duality gap, KKT residuals) at ``tol``.
    solution_ : Solution
        The solver's full answer (``w``, ``b``, ``xi``, ``alpha``, ``objective``, ...).
    formulation_ : str
        Name of the formulation solved (``"SoftMarginPrimal"``, ``"SoftMarginDual"``,
        ``"MulticlassSVM"``); :meth:`build_formulation` rebuilds it on any data.

    Examples
    --------
    >>> from qpsvm.estimators import SVMClassifier
    >>> clf = SVMClassifier(C=10.0).fit([[0.0], [1.0], [3.0], [4.0]], [0, 0, 1, 1])
    >>> clf.coef_.round(6).tolist(), clf.intercept_.round(6).tolist(), clf.certificate_.passed
    ([[1.0]], [-2.0], True)
    """

    def __init__(
        self,
        C: float = 1.0,
        kernel: str | Callable = "linear",
        formulation: str = "auto",
        variant: str = "crammer_singer",
        method: str | None = None,
        fit_intercept: bool = True,
        intercept_scaling: float = 1.0,
        class_weight: dict | str | None = None,
        gamma: float | str = "scale",
        degree: int = 3,
        coef0: float = 1.0,
        tol: float = DEFAULT_TOL,
        solver: str | None = None,
        solver_options: dict | None = None,
    ) -> None:
        self.C = C
        self.kernel = kernel
        self.formulation = formulation
        self.variant = variant
        self.method = method
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.tol = tol
        self.solver = solver
        self.solver_options = solver_options

    # ------------------------------------------------------------------ scikit-learn protocol
    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = not self._precomputed()
        tags.input_tags.pairwise = self._precomputed()
        tags.classifier_tags.multi_class = self._multiclass_capable()
        return tags

    def _precomputed(self) -> bool:
        return isinstance(self.kernel, str) and self.kernel == "precomputed"

    def _sparse(self) -> str | bool:
        """Sparse input is CSR, except for a precomputed Gram matrix (dense)."""
        return False if self._precomputed() else "csr"

    def _linear(self) -> bool:
        return isinstance(self.kernel, str) and self.kernel == "linear"

    def _multiclass_capable(self) -> bool:
        """The multiclass SVM is linear: more than two classes need the defaults."""
        return self._linear() and self.formulation == "auto"

    def _validate_fit(self, X: Any, y: Any) -> tuple[Any, np.ndarray]:
        with typed_errors():
            X, y = validate_data(self, X, y, accept_sparse=self._sparse(), dtype=np.float64)
            check_classification_targets(y)
        return X, y

    def _weights(self, y: np.ndarray, sample_weight: Any) -> np.ndarray:
        s = check_sample_weight(sample_weight, y.shape[0])
        classes, inverse = np.unique(y, return_inverse=True)
        if self.class_weight is not None:
            with typed_errors():
                per_class = compute_class_weight(self.class_weight, classes=classes, y=y)
            s = check_sample_weight(s * per_class[inverse], y.shape[0], "class_weight")
        weighted = classes[np.bincount(inverse, weights=s, minlength=classes.shape[0]) > 0]
        if weighted.shape[0] < 2:
            raise InvalidInputError(
                f"only one class ({weighted.tolist()}) has positive sample weight; a classifier "
                "needs at least two classes with positive weight."
            )
        return s

    def _make(self, X: Any, y: np.ndarray, s: np.ndarray) -> Formulation:
        if self.formulation not in FORMULATIONS:
            raise InvalidInputError(
                f"formulation must be one of {FORMULATIONS}; got {self.formulation!r}."
            )
        n_classes = np.unique(y).shape[0]
        if n_classes > 2:
            if not self._multiclass_capable():
                raise InvalidInputError(
                    f"Only binary classification is supported with kernel={self.kernel!r} and "
                    f"formulation={self.formulation!r}; y has {n_classes} classes. The multiclass "
                    "SVM is linear (kernel='linear', formulation='auto'); for kernels wrap the "
                    "binary classifier: sklearn.multiclass.OneVsRestClassifier(SVMClassifier(...))."
                )
            from qpsvm.formulations import MulticlassSVM

            return MulticlassSVM(
                self._with_intercept_column(X), y, C=self.C, variant=self.variant, sample_weight=s
            )
        from qpsvm.formulations import SoftMarginDual, SoftMarginPrimal

        if self.formulation == "primal" and not self._linear():
            raise InvalidInputError(
                f"the primal formulation needs kernel='linear' (got {self.kernel!r}); use "
                "formulation='dual' or 'auto' for kernels."
            )
        if self.formulation == "primal" or (self.formulation == "auto" and self._linear()):
            return SoftMarginPrimal(
                X, y, C=self.C, fit_intercept=self.fit_intercept, sample_weight=s
            )
        return SoftMarginDual(
            X,
            y,
            C=self.C,
            kernel=self.kernel,
            fit_intercept=self.fit_intercept,
            sample_weight=s,
            gamma=self.gamma,
            degree=self.degree,
            coef0=self.coef0,
        )

    def _with_intercept_column(self, X: Any) -> Any:
        """``[X, intercept_scaling]`` when the multiclass SVM needs an intercept, else ``X``."""
        if not self.fit_intercept:
            return X
        return with_bias_column(X, check_positive(self.intercept_scaling, "intercept_scaling"))

    def build_formulation(self, X: Any, y: Any, sample_weight: Any = None) -> Formulation:
        """The formulation :meth:`fit` solves on ``(X, y)``, with this estimator's parameters.

        Use it to certify other candidates on the same problem, e.g.
        ``clf.build_formulation(X, y).certify(LinearSVC().fit(X, y))``.
        """
        X, y = self._validate_fit(X, y)
        return self._make(X, y, self._weights(y, sample_weight))

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> SVMClassifier:
        """Solve the SVM on ``(X, y)`` exactly and certify the answer.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training data (for ``kernel="precomputed"``, the training Gram matrix).
        y : array-like of shape (n_samples,)
            Class labels (any hashable values).
        sample_weight : array-like of shape (n_samples,), optional
            Slack weights ``s_i >= 0``; weight ``k`` equals ``k`` copies of the sample.

        Returns
        -------
        self
        """
        X, y = self._validate_fit(X, y)
        f = self._make(X, y, self._weights(y, sample_weight))
        sol, cert = solve_certified(f, self.method, self.solver, self.tol, self.solver_options)
        self.classes_ = f.classes_
        self.formulation_ = type(f).__name__
        self.solution_ = sol
        self.certificate_ = cert
        self.n_iter_ = int(sol.n_iter)
        if self.classes_.shape[0] == 2:
            self._set_binary(f, sol, X)
        else:
            self._set_multiclass(f, sol)
        return self

    def _set_binary(self, f: Any, sol: Any, X: Any) -> None:
        alpha = np.asarray(sol.alpha, dtype=np.float64)
        threshold = SUPPORT_TOL * max(1.0, float(np.max(f.upper)))
        self.support_ = np.flatnonzero(alpha > threshold)
        self.dual_coef_ = (alpha * f.y)[self.support_][None, :]
        self.intercept_ = np.array([float(sol.b)])
        self._kernel = f.kernel
        self._w = None if sol.w is None else np.asarray(sol.w, dtype=np.float64)
        if self._precomputed():
            self.support_vectors_ = np.zeros((0, 0))
        else:
            self.support_vectors_ = X[self.support_]

    def _set_multiclass(self, f: Any, sol: Any) -> None:
        self._kernel = None
        W = np.asarray(sol.w, dtype=np.float64)
        if self.fit_intercept:
            self._w = W[:, :-1].copy()
            self.intercept_ = self.intercept_scaling * W[:, -1]
        else:
            self._w = W
            self.intercept_ = np.zeros(W.shape[0])
        alpha = np.asarray(sol.alpha, dtype=np.float64)
        per_sample = np.abs(alpha).reshape(alpha.shape[0], -1).max(axis=1)
        self.support_ = np.flatnonzero(per_sample > SUPPORT_TOL * max(1.0, float(self.C)))
        self.dual_coef_ = alpha[self.support_]

    @property
    def coef_(self) -> np.ndarray:
        """``w``: shape ``(1, n_features)`` for two classes, ``(n_classes, n_features)`` else.

        Raises ``AttributeError`` for a nonlinear kernel, whose ``w`` lives in feature space.
        """
        check_is_fitted(self, "certificate_")
        if self._w is None:
            raise AttributeError(
                f"coef_ is only available with kernel='linear' (this fit used {self.kernel!r}); "
                "use dual_coef_ and support_vectors_."
            )
        return self._w[None, :] if self._w.ndim == 1 else self._w

    # ------------------------------------------------------------------------- prediction
    def decision_function(self, X: Any) -> np.ndarray:
        """Scores ``w . phi(x) + b``: shape ``(n,)`` for two classes (``> 0`` predicts
        ``classes_[1]``), ``(n, n_classes)`` otherwise (the argmax predicts)."""
        check_is_fitted(self, "certificate_")
        with typed_errors():
            X = validate_data(self, X, accept_sparse=self._sparse(), dtype=np.float64, reset=False)
        if self._precomputed():
            K = X[:, self.support_]
            scores = np.asarray(K @ self.dual_coef_[0]).ravel()
        elif self._w is not None:
            scores = np.asarray(X @ self._w.T)
        else:
            scores = self._kernel(X, self.support_vectors_) @ self.dual_coef_[0]
        return scores + (self.intercept_[0] if scores.ndim == 1 else self.intercept_)

    def predict(self, X: Any) -> np.ndarray:
        """Predicted class labels."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[np.argmax(scores, axis=1)]
