r"""Losses of composed problems: each stated once, in CVXPY and in numpy, with its conjugate.

A loss acts on ``z_i = sigma_i (w . x_i + b)``: the functional margin for classification
(``sigma_i = y_i``, target the margin ``m_i``), the prediction for regression (``sigma_i = 1``,
target ``y_i``, insensitivity ``eps``). Weighted by ``W_i = C c_i``:

============================  =============================  ================================
loss                          ``L_i(z)``                     ``phi_i(u) = -L_i^*(-u)``
============================  =============================  ================================
hinge                         ``W max(0, m - z)``            ``m u``, ``0 <= u <= W``
squared hinge                 ``W max(0, m - z)^2``          ``m u - u^2/(4W)``, ``u >= 0``
epsilon-insensitive           ``W max(0, |z - y| - eps)``    ``y u - eps|u|``, ``|u| <= W``
squared epsilon-insensitive   ``W max(0, |z - y| - eps)^2``  ``y u - eps|u| - u^2/(4W)``
============================  =============================  ================================

In CVXPY each loss is an epigraph over a slack ``xi`` with named constraints whose multipliers
are the dual variables ``u`` (signs in :mod:`qpsvm.verify.conventions`): the hinge's
``margin: z >= m - xi`` (``u >= 0``) and ``slack: xi >= 0``; the squared hinge the same
``margin`` with ``xi^2`` in the objective (``u = 2 W xi``, liblinear's L2-loss form); the
epsilon-insensitive losses ``upper: z - y <= eps + xi`` and ``lower: y - z <= eps + xi``
(``u = dual(lower) - dual(upper)``), with ``slack: xi >= 0`` for the unsquared one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from qpsvm._lazy import lazy_module
from qpsvm.exceptions import InvalidInputError
from qpsvm.verify.fenchel import LossConjugate

cp = lazy_module("cvxpy")

__all__ = [
    "LOSSES",
    "EpsilonInsensitive",
    "Hinge",
    "Loss",
    "SquaredEpsilonInsensitive",
    "SquaredHinge",
    "make_loss",
]


class Loss(ABC):
    """A loss ``ell(z)`` of composed problems: CVXPY epigraph, numpy value and conjugate."""

    #: Name used by the keyword ``loss=``.
    name: ClassVar[str]
    #: True for the regression losses (targets ``y``, insensitivity ``eps``).
    regression: ClassVar[bool]
    #: True when the loss is squared: smooth, with ``d = 1/(2W)`` in its conjugate.
    squared: ClassVar[bool]

    def excess(self, z: np.ndarray, target: np.ndarray, eps: float) -> np.ndarray:
        """The unsquared violation ``max(0, m - z)`` or ``max(0, |z - y| - eps)``."""
        if self.regression:
            return np.maximum(0.0, np.abs(z - target) - eps)
        return np.maximum(0.0, target - z)

    def value(self, z: np.ndarray, target: np.ndarray, eps: float) -> np.ndarray:
        """``ell(z_i)`` per sample."""
        e = self.excess(z, target, eps)
        return e * e if self.squared else e

    def kink_distance(self, z: np.ndarray, target: np.ndarray, eps: float) -> np.ndarray:
        """Distance of ``z_i`` to the loss's kink (``|z - m|``, or ``||z - y| - eps|``), where
        the multiplier is not determined by ``z`` alone."""
        if self.regression:
            return np.abs(np.abs(z - target) - eps)
        return np.abs(z - target)

    def direction(self, z: np.ndarray, target: np.ndarray) -> np.ndarray:
        """Sign of ``-ell'(z)`` where the loss is active: ``+1`` (classification), or
        ``sign(y - z)`` (regression)."""
        if self.regression:
            return np.sign(target - z)
        return np.ones_like(z)

    def gradient_dual(
        self, z: np.ndarray, target: np.ndarray, eps: float, weight: np.ndarray
    ) -> np.ndarray:
        """``u_i = -L_i'(z_i)``: the optimal multipliers when ``z`` is optimal (for the hinge
        losses the subgradient ``W_i`` is taken where the loss is active, 0 elsewhere)."""
        e = self.excess(z, target, eps)
        active = e > 0
        size = 2.0 * weight * e if self.squared else np.where(active, weight, 0.0)
        return np.where(active, size * self.direction(z, target), 0.0)

    def conjugate(self, target: np.ndarray, eps: float, weight: np.ndarray) -> LossConjugate:
        """``phi_i(u) = -L_i^*(-u)`` and its box (see the module table)."""
        n = target.shape[0]
        zero = weight <= 0
        d = np.where(zero, 0.0, 0.5 / np.where(zero, 1.0, weight)) if self.squared else np.zeros(n)
        hi = np.where(zero, 0.0, np.inf) if self.squared else weight.astype(np.float64)
        lo = -hi if self.regression else np.zeros(n)
        return LossConjugate(
            p=np.asarray(target, dtype=np.float64), eps=np.full(n, float(eps)), d=d, lo=lo, hi=hi
        )

    def young_gaps(
        self, z: np.ndarray, u: np.ndarray, target: np.ndarray, eps: float, weight: np.ndarray
    ) -> np.ndarray:
        """Fenchel-Young gaps ``L_i(z_i) - phi_i(u_i) + u_i z_i >= 0`` (0 at an optimal pair)."""
        c = self.conjugate(target, eps, weight)
        phi = c.p * u - c.eps * np.abs(u) - 0.5 * c.d * u * u
        return np.maximum(0.0, weight * self.value(z, target, eps) - phi + u * z)

    @abstractmethod
    def epigraph(
        self, z: cp.Expression, target: np.ndarray, eps: float
    ) -> tuple[cp.Expression, cp.Variable, dict[str, cp.Constraint]]:
        """``(term, xi, constraints)``: per-sample ``term`` (``xi`` or ``xi^2``) whose weighted
        sum is the loss at the optimum, the slack variable and the named constraints."""

    @abstractmethod
    def read_dual(self, constraints: dict[str, cp.Constraint]) -> np.ndarray:
        """The multipliers ``u`` off a solved model's constraints."""


class _MarginLoss(Loss):
    regression: ClassVar[bool] = False

    def epigraph(
        self, z: cp.Expression, target: np.ndarray, eps: float
    ) -> tuple[cp.Expression, cp.Variable, dict[str, cp.Constraint]]:
        xi = cp.Variable(z.shape[0], name="xi")
        constraints = {"margin": z >= target - xi}
        if self.squared:
            return cp.square(xi), xi, constraints
        constraints["slack"] = xi >= 0
        return xi, xi, constraints

    def read_dual(self, constraints: dict[str, cp.Constraint]) -> np.ndarray:
        return np.asarray(constraints["margin"].dual_value, dtype=np.float64).ravel()


class _TubeLoss(Loss):
    regression: ClassVar[bool] = True

    def epigraph(
        self, z: cp.Expression, target: np.ndarray, eps: float
    ) -> tuple[cp.Expression, cp.Variable, dict[str, cp.Constraint]]:
        xi = cp.Variable(z.shape[0], name="xi")
        constraints = {"upper": z - target <= eps + xi, "lower": target - z <= eps + xi}
        if self.squared:
            return cp.square(xi), xi, constraints
        constraints["slack"] = xi >= 0
        return xi, xi, constraints

    def read_dual(self, constraints: dict[str, cp.Constraint]) -> np.ndarray:
        lower = np.asarray(constraints["lower"].dual_value, dtype=np.float64).ravel()
        upper = np.asarray(constraints["upper"].dual_value, dtype=np.float64).ravel()
        return lower - upper


class Hinge(_MarginLoss):
    r"""Hinge loss :math:`\max(0, m_i - z_i)` (L1-loss SVM; liblinear ``-s 3``, libsvm)."""

    name: ClassVar[str] = "hinge"
    squared: ClassVar[bool] = False


class SquaredHinge(_MarginLoss):
    r"""Squared hinge :math:`\max(0, m_i - z_i)^2` (L2-loss SVM; LinearSVC's default,
    liblinear ``-s 1``, ``-s 2``, ``-s 5``)."""

    name: ClassVar[str] = "squared_hinge"
    squared: ClassVar[bool] = True


class EpsilonInsensitive(_TubeLoss):
    r"""Epsilon-insensitive loss :math:`\max(0, |z_i - y_i| - \varepsilon)` (SVR; libsvm
    ``-s 3``, liblinear ``-s 13``)."""

    name: ClassVar[str] = "epsilon_insensitive"
    squared: ClassVar[bool] = False


class SquaredEpsilonInsensitive(_TubeLoss):
    r"""Squared epsilon-insensitive loss :math:`\max(0, |z_i - y_i| - \varepsilon)^2`
    (liblinear ``-s 11``, ``-s 12``)."""

    name: ClassVar[str] = "squared_epsilon_insensitive"
    squared: ClassVar[bool] = True


#: The losses by name.
LOSSES: dict[str, type[Loss]] = {
    cls.name: cls for cls in (Hinge, SquaredHinge, EpsilonInsensitive, SquaredEpsilonInsensitive)
}


def make_loss(name: Any, regression: bool) -> Loss:
    """The loss named ``name``; classification and regression accept their own losses only."""
    allowed = [k for k, cls in LOSSES.items() if cls.regression == regression]
    if not isinstance(name, str) or name not in allowed:
        task = "regression" if regression else "classification"
        raise InvalidInputError(f"unknown {task} loss {name!r}; choose one of {allowed}.")
    return LOSSES[name]()
