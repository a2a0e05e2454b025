r"""Penalties of composed problems: each stated once, in CVXPY and in numpy, with its conjugate.

=================  ============================================  ==================================
penalty            ``R(w)``                                      ``R^*(v)``
=================  ============================================  ==================================
``"l2"``           ``1/2 ||w||^2``                               ``1/2 ||v||^2``
``"l1"``           ``||w||_1``                                   ``0`` if ``||v||_inf <= 1``, else
                                                                 ``+inf``
``"l1_l2"``        ``r ||w||_1 + (1 - r)/2 ||w||^2``             ``sum_j max(0, |v_j| - r)^2 /
                                                                 (2 (1 - r))``
=================  ============================================  ==================================

``r`` is ``l1_ratio`` in ``(0, 1)``, scikit-learn's elastic-net convention (``SGDClassifier``
with ``penalty="elasticnet"``: ``alpha (r ||w||_1 + (1 - r)/2 ||w||^2)``, here with ``alpha = 1``
and the loss scaled by ``C``): ``r = 0`` is L2, ``r = 1`` is L1. ``R`` is ``(1 - r)``-strongly
convex; the L1 penalty is not, so ``w*`` need not be unique and certificates give no distance
bound. A regularised intercept is one more coordinate of ``w`` for the penalty.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from numbers import Real
from typing import Any, ClassVar

import numpy as np

from qpsvm._lazy import lazy_module
from qpsvm._numerics import fsum, fsum_dot
from qpsvm.exceptions import InvalidInputError
from qpsvm.verify.rigorous import complement_bounds

cp = lazy_module("cvxpy")

__all__ = ["PENALTIES", "L1Penalty", "L2Penalty", "Penalty", "make_penalty"]


def _norm1(w: np.ndarray, tail: Sequence[float]) -> float:
    """``||(w, tail)||_1`` by :func:`~qpsvm._numerics.fsum`, the ``tail`` coordinates after
    ``w``'s (the float of the norm of the vector with them appended)."""
    return fsum(np.abs(w), [abs(t) for t in tail])


def _squared_norm(w: np.ndarray, tail: Sequence[float]) -> float:
    """``||(w, tail)||^2`` by :func:`~qpsvm._numerics.fsum_dot`, the ``tail`` coordinates after
    ``w``'s (the float of the squared norm of the vector with them appended)."""
    return fsum_dot(w, w, [t * t for t in tail])


class Penalty(ABC):
    """A penalty ``R(w)``: CVXPY expression, numpy value, conjugate and its domain."""

    #: Name used by the keyword ``penalty=``.
    name: ClassVar[str]

    @property
    @abstractmethod
    def strong_convexity(self) -> float:
        """Modulus ``mu`` of strong convexity (0 when not strongly convex)."""

    @abstractmethod
    def expression(self, w: cp.Expression) -> cp.Expression:
        """``R(w)`` in CVXPY."""

    @abstractmethod
    def value(self, w: np.ndarray, tail: Sequence[float] = ()) -> float:
        """``R(w)`` in numpy, with compensated sums; ``R((w, tail))`` with the coordinates
        ``tail`` after ``w``'s (a regularised intercept's, :meth:`Intercept.tail
        <qpsvm.formulations.pieces.intercepts.Intercept.tail>`), the float of ``R`` of the
        vector with them appended (its sums go on over them) without the copy."""

    @abstractmethod
    def conjugate(self, v: np.ndarray) -> float:
        """``R^*(v) = sup_w v.w - R(w)`` (``+inf`` outside its domain)."""

    def feasible_scale(self, v: np.ndarray) -> float:
        """A factor ``t in (0, 1]`` with ``R^*(t v)`` finite (1 when the domain is everything);
        scaling the multipliers by ``t`` keeps them in every loss box (which contain 0) and on
        the coupling constraint."""
        return 1.0

    @abstractmethod
    def primal(self, v: np.ndarray) -> np.ndarray | None:
        """``w = grad R^*(v)``, the primal point of the multipliers (``None`` if not unique)."""

    @abstractmethod
    def gradient(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(g, known)``: ``g = grad R(w)`` on the coordinates ``known`` where it is unique
        (an optimal pair has ``v = g`` there)."""


class L2Penalty(Penalty):
    r""":math:`R(w) = \tfrac12\|w\|^2`, :math:`R^*(v) = \tfrac12\|v\|^2`."""

    name: ClassVar[str] = "l2"

    @property
    def strong_convexity(self) -> float:
        return 1.0

    def expression(self, w: cp.Expression) -> cp.Expression:
        return 0.5 * cp.sum_squares(w)

    def value(self, w: np.ndarray, tail: Sequence[float] = ()) -> float:
        return 0.5 * _squared_norm(w, tail)

    def conjugate(self, v: np.ndarray) -> float:
        return 0.5 * fsum_dot(v, v)

    def primal(self, v: np.ndarray) -> np.ndarray | None:
        return v

    def gradient(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return w, np.ones(w.shape, dtype=bool)


class L1Penalty(Penalty):
    r""":math:`R(w) = \|w\|_1`; :math:`R^*` is the indicator of :math:`\|v\|_\infty \le 1`."""

    name: ClassVar[str] = "l1"

    @property
    def strong_convexity(self) -> float:
        return 0.0

    def expression(self, w: cp.Expression) -> cp.Expression:
        return cp.norm1(w)

    def value(self, w: np.ndarray, tail: Sequence[float] = ()) -> float:
        return _norm1(w, tail)

    def conjugate(self, v: np.ndarray) -> float:
        return 0.0 if float(np.max(np.abs(v), initial=0.0)) <= 1.0 else math.inf

    def feasible_scale(self, v: np.ndarray) -> float:
        top = float(np.max(np.abs(v), initial=0.0))
        if top <= 1.0:
            return 1.0
        return 1.0 / top

    def primal(self, v: np.ndarray) -> np.ndarray | None:
        return None

    def gradient(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.sign(w), w != 0


class ElasticNetPenalty(Penalty):
    r""":math:`R(w) = r\|w\|_1 + \tfrac{1-r}2\|w\|^2` (``r = l1_ratio``); :math:`R^*(v) =
    \sum_j \max(0, |v_j| - r)^2 / (2(1 - r))`, ``w = soft(v, r) / (1 - r)``."""

    name: ClassVar[str] = "l1_l2"

    def __init__(self, l1_ratio: float) -> None:
        self.l1_ratio = l1_ratio

    @property
    def strong_convexity(self) -> float:
        """``1 - r``, one ulp lower where the subtraction rounds (a modulus must not exceed the
        exact one: the distance bound divides by it)."""
        return complement_bounds(self.l1_ratio)[0]

    def expression(self, w: cp.Expression) -> cp.Expression:
        r = self.l1_ratio
        return r * cp.norm1(w) + 0.5 * (1.0 - r) * cp.sum_squares(w)

    def value(self, w: np.ndarray, tail: Sequence[float] = ()) -> float:
        r = self.l1_ratio
        return r * _norm1(w, tail) + 0.5 * (1.0 - r) * _squared_norm(w, tail)

    def _soft(self, v: np.ndarray) -> np.ndarray:
        return np.sign(v) * np.maximum(0.0, np.abs(v) - self.l1_ratio)

    def conjugate(self, v: np.ndarray) -> float:
        s = self._soft(v)
        return fsum_dot(s, s) / (2.0 * (1.0 - self.l1_ratio))

    def primal(self, v: np.ndarray) -> np.ndarray | None:
        return self._soft(v) / (1.0 - self.l1_ratio)

    def gradient(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.l1_ratio * np.sign(w) + (1.0 - self.l1_ratio) * w, w != 0


#: The penalties by name.
PENALTIES: tuple[str, ...] = ("l2", "l1", "l1_l2")


def make_penalty(name: Any, l1_ratio: Any = 0.5) -> Penalty:
    """The penalty named ``name`` (``l1_ratio`` in ``(0, 1)`` for ``"l1_l2"``)."""
    if name == "l2":
        return L2Penalty()
    if name == "l1":
        return L1Penalty()
    if name == "l1_l2":
        if (
            isinstance(l1_ratio, bool)
            or not isinstance(l1_ratio, Real)
            or not 0.0 < float(l1_ratio) < 1.0
        ):
            raise InvalidInputError(
                f"l1_ratio must be a number in (0, 1) for penalty='l1_l2', got {l1_ratio!r} "
                "(0 is penalty='l2', 1 is penalty='l1')."
            )
        return ElasticNetPenalty(float(l1_ratio))
    raise InvalidInputError(f"unknown penalty {name!r}; choose one of {list(PENALTIES)}.")
