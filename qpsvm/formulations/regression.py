r"""Support vector regression: the epsilon-insensitive losses as composed problems.

.. math::

    \min_{w, b}\; R(w, b/B) + C \sum_i s_i\, \ell(w\cdot x_i + b - y_i),
    \qquad \ell(r) = \max(0, |r| - \varepsilon) \text{ or } \max(0, |r| - \varepsilon)^2,

scikit-learn's ``SVR`` (libsvm ``-s 3``: epsilon-insensitive, L2, free intercept) and
``LinearSVR`` (liblinear ``-s 11``, ``-s 12``, ``-s 13``: L2, intercept regularised with
``intercept_scaling``). See :mod:`qpsvm.formulations.composed` for the pieces and
:mod:`qpsvm.verify.fenchel` for the certificate (dual ``u_i = alpha_i - alpha_i^*``, libsvm's
``dual_coef_``).
"""

from __future__ import annotations

from numbers import Real
from typing import Any, ClassVar

import numpy as np

from qpsvm._validation import check_sample_weight, check_vector
from qpsvm.exceptions import InvalidInputError
from qpsvm.formulations.composed import ComposedProblem, checked_data
from qpsvm.kernels import make_kernel

__all__ = ["SupportVectorRegression"]


class SupportVectorRegression(ComposedProblem):
    r"""Support vector regression (primal), with the epsilon-insensitive losses.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Real targets.
    C : float, default=1.0
    epsilon : float, default=0.0
        Half-width ``eps >= 0`` of the insensitive tube (scikit-learn's ``LinearSVR`` default
        is 0, ``SVR``'s 0.1).
    loss : {"epsilon_insensitive", "squared_epsilon_insensitive"}
    penalty : {"l2", "l1", "l1_l2"}
    intercept : {"free", "none", "regularized"}
        ``"free"`` is libsvm's ``SVR``; ``"regularized"`` with ``intercept_scaling`` is
        ``LinearSVR`` / liblinear's ``-B``.
    intercept_scaling : float, default=1.0
    l1_ratio : float, default=0.5
    sample_weight : array-like of shape (n_samples,), optional
        Weights ``s_i >= 0`` of the loss terms.
    kernel : {"linear", "rbf", "poly", "precomputed"} or callable, default="linear"
        A nonlinear kernel states the dual (libsvm's ``SVR``; L2 penalty only), with
        ``gamma`` (``None``: scikit-learn's ``"scale"``), ``degree`` and ``coef0`` as in
        :class:`~qpsvm.SoftMarginDual`.

    Examples
    --------
    >>> import qpsvm
    >>> f = qpsvm.SupportVectorRegression([[0.0], [1.0], [2.0]], [0.0, 1.0, 2.0], C=10.0)
    >>> sol = f.solve()
    >>> round(float(sol.w[0]), 6), round(float(sol.b), 6)
    (1.0, 0.0)
    """

    regression: ClassVar[bool] = True

    def __init__(
        self,
        X: Any,
        y: Any,
        C: float = 1.0,
        epsilon: float = 0.0,
        *,
        loss: str = "epsilon_insensitive",
        penalty: str = "l2",
        intercept: str = "free",
        intercept_scaling: float = 1.0,
        l1_ratio: float = 0.5,
        sample_weight: Any = None,
        kernel: Any = "linear",
        gamma: Any = None,
        degree: int = 3,
        coef0: float = 1.0,
    ) -> None:
        X = checked_data(X, kernel)
        n = X.shape[0]
        if (
            isinstance(epsilon, bool)
            or not isinstance(epsilon, Real)
            or not np.isfinite(epsilon)
            or epsilon < 0
        ):
            raise InvalidInputError(f"epsilon must be a finite number >= 0, got {epsilon!r}.")
        self.y = check_vector(y, n, "y")
        super().__init__(
            X,
            np.ones(n),
            self.y,
            C,
            loss=loss,
            penalty=penalty,
            intercept=intercept,
            intercept_scaling=intercept_scaling,
            l1_ratio=l1_ratio,
            weights=check_sample_weight(sample_weight, n),
            epsilon=float(epsilon),
            kernel=make_kernel(kernel, X, gamma, degree, coef0),
        )

    def predict(self, X: Any, solution: Any) -> np.ndarray:
        """Predictions ``w . x + b``."""
        return self.decision_function(X, solution)
