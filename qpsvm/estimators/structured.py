r"""A scikit-learn style structured-output learner: the structural SVM, certified.

For a model with joint feature map :math:`\Psi`, task loss :math:`\Delta` and exact inference,

.. math::

    \min_{w, \xi}\ \tfrac12\|w\|^2 + C\sum_i \xi_i \quad\text{s.t.}\quad
    w\cdot(\Psi(x_i, y_i) - \Psi(x_i, y)) \ge \Delta(y_i, y) - \xi_i \ \ \forall i, y

(margin rescaling; slack rescaling divides the slack by :math:`\Delta` instead), solved by
:class:`~qpsvm.StructuralSVM`'s cutting plane; predictions are
:math:`\arg\max_y w\cdot\Psi(x, y)`, by the model's inference.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from qpsvm.estimators._base import solve_certified
from qpsvm.verify.certificate import DEFAULT_TOL

__all__ = ["StructuredSVM"]


class StructuredSVM(BaseEstimator):
    r"""Structural SVM: :math:`\min \tfrac12\|w\|^2 + C\sum_i\xi_i` over the constraints
    :math:`w\cdot\delta\Psi_i(y) \ge \Delta(y_i, y) - \xi_i` for every output ``y``, trained by
    a cutting-plane working set and certified by its duality gap.

    Parameters
    ----------
    model : JointFeatureModel
        The structured-output model: :class:`~qpsvm.models.ChainModel`,
        :class:`~qpsvm.models.MulticlassModel`, or a user subclass with exact inference.
    C : float, default=1.0
        Slack penalty. SVM-struct's :math:`\tfrac{C'}{n}\sum_i\xi_i` is ``C = C'/n``
        (:func:`qpsvm.conventions.C_from_structural`).
    rescaling : {"margin", "slack"}, default="margin"
        How the task loss enters the constraints.
    method : str, optional
        Solve method of :class:`~qpsvm.StructuralSVM` (``"cutting_plane"``: exact, certified;
        ``"frank_wolfe"``: block-coordinate Frank-Wolfe, certified; ``"subgradient"``:
        online, certified afterwards). ``None``: its default, the cutting plane.
    tol : float, default=1e-9
        Relative certified gap the cutting plane stops at (and the certificate's tolerance).
        Looser values (``1e-5``) train large problems much faster.
    solver : str or None, default=None
        ``None``: the working-set QP by block-coordinate ascent; a CVXPY solver name solves it
        with that backend.
    solver_options : dict or None, default=None
        Extra options of the solve method, e.g. ``{"variant": "one_slack"}``,
        ``{"progress": True}`` (a tqdm bar; rounds are logged at INFO on the ``"qpsvm"``
        logger either way), ``{"max_iter": 500}``.
    n_jobs : int or None, default=None
        Workers for the oracle calls (joblib threads; identical results to one worker).

    Attributes
    ----------
    coef_ : ndarray of shape (n_joint_features,)
        ``w``.
    n_iter_ : int
        Cutting-plane rounds (epochs for an online method).
    certificate_ : Certificate
        Certified gap of ``w`` (true slacks from the model's inference) with the largest
        constraint violation.
    solution_ : Solution
        With the per-round ``history`` (objective, certified gap, time).
    formulation_ : str
        ``"StructuralSVM"``.

    Examples
    --------
    >>> import numpy as np
    >>> from qpsvm.estimators import StructuredSVM
    >>> from qpsvm.models import MulticlassModel
    >>> X = np.array([[0.0, 1.0], [1.0, 0.0], [-1.0, -1.0]])
    >>> svm = StructuredSVM(MulticlassModel(2, 3), C=10.0).fit(X, [0, 1, 2])
    >>> svm.predict(X), svm.certificate_.passed
    ([0, 1, 2], True)
    """

    def __init__(
        self,
        model: Any,
        C: float = 1.0,
        rescaling: str = "margin",
        method: str | None = None,
        tol: float = DEFAULT_TOL,
        solver: str | None = None,
        solver_options: dict | None = None,
        n_jobs: int | None = None,
    ) -> None:
        self.model = model
        self.C = C
        self.rescaling = rescaling
        self.method = method
        self.tol = tol
        self.solver = solver
        self.solver_options = solver_options
        self.n_jobs = n_jobs

    def fit(self, X: Any, Y: Any) -> StructuredSVM:
        """Train on inputs ``X`` and outputs ``Y`` (one per example, as the model accepts them).

        Returns
        -------
        self
        """
        from qpsvm.formulations import StructuralSVM

        f = StructuralSVM(self.model, X, Y, C=self.C, rescaling=self.rescaling, n_jobs=self.n_jobs)
        sol, cert = solve_certified(f, self.method, self.solver, self.tol, self.solver_options)
        self.coef_ = np.asarray(sol.w, dtype=np.float64)
        self.n_iter_ = int(sol.n_iter)
        self.certificate_ = cert
        self.solution_ = sol
        self.formulation_ = type(f).__name__
        return self

    def predict(self, X: Any) -> list[Any]:
        r"""Outputs :math:`\arg\max_y w\cdot\Psi(x, y)` of the inputs, by the model's inference."""
        check_is_fitted(self, "coef_")
        return list(self.model.inference_batch([self.model.check_input(x) for x in X], self.coef_))

    def score(self, X: Any, Y: Any) -> float:
        r"""Minus the mean task loss, :math:`-\frac1n\sum_i \Delta(y_i, \hat y_i)` (higher is
        better, as scikit-learn's ``neg_*`` scores; 0 is perfect).

        With :class:`~qpsvm.models.MulticlassModel` (0/1 loss) it is the accuracy minus one; with
        :class:`~qpsvm.models.ChainModel` (Hamming loss), minus the mean number of wrong
        positions per sequence.
        """
        X, Y = self.model.validate_inputs(X, Y)
        return -float(np.mean(self.model.batch_loss(Y, self.predict(X))))
