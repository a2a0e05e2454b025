r"""Models with latent variables for the latent structural SVM (Yu & Joachims, ICML 2009).

A latent model scores an output ``y`` together with a hidden completion ``h``,
:math:`w\cdot\Psi(x, y, h)`; its outputs, as a :class:`~qpsvm.models.JointFeatureModel`, are the
pairs ``(y, h)``, and its task loss :math:`\Delta((y, h), (y', h'))` must not depend on the
first pair's ``h`` (the ground truth's completion is not observed). Besides the usual oracles
it imputes completions, :math:`\arg\max_h w\cdot\Psi(x, y, h)`
(:meth:`LatentModel.latent_inference`).
"""

from __future__ import annotations

import abc
import itertools
import numbers
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from qpsvm._numerics import sum_error
from qpsvm._validation import check_int
from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.models.base import JointFeatureModel, Rounding
from qpsvm.models.multiclass import MulticlassModel

__all__ = ["LatentModel", "LatentMulticlassModel"]


class LatentModel(JointFeatureModel):
    """A structured-output model whose outputs are pairs ``(y, h)`` with a latent ``h``.

    Subclasses implement the :class:`~qpsvm.models.JointFeatureModel` methods on pairs, with a
    loss that ignores the first pair's ``h``, and :meth:`latent_inference`.
    """

    @abc.abstractmethod
    def latent_inference(self, x: Any, y: Any, w: np.ndarray) -> Any:
        r"""The completion that explains ``y`` best: :math:`\arg\max_h w\cdot\Psi(x, y, h)`."""

    def initial_latent(self, x: Any, y: Any) -> Any:
        """A completion to start from, before any ``w``: :meth:`latent_inference` at ``w = 0``
        unless a subclass knows better."""
        return self.latent_inference(x, y, np.zeros(self.n_joint_features))


class LatentMulticlassModel(LatentModel):
    r"""Multiclass classification with ``n_latent`` hidden subclasses per class: a mixture of
    linear classifiers.

    .. math:: w\cdot\Psi(x, (y, h)) = w_{y, h}\cdot x,

    one weight vector per (class, subclass), laid out row-major as ``(n_classes * n_latent,
    n_features)`` (row ``y * n_latent + h``); the loss is :math:`[y \ne y']` and ignores ``h``.
    A class made of several clusters (XOR-like data) is separable by such a mixture although no
    single linear classifier per class separates it. Every oracle enumerates the
    ``n_classes * n_latent`` pairs (ties go to the smallest ``(y, h)``).

    The initial completion spreads each class's examples over its subclasses by the sign
    pattern of their projections on the first ``n_latent - 1`` coordinates (a deterministic
    split that breaks the symmetry of ``w = 0``, where every completion ties).

    Parameters
    ----------
    n_features : int
    n_classes : int
        At least 2.
    n_latent : int
        Subclasses per class, at least 1 (1: the Crammer-Singer multiclass SVM).
    """

    def __init__(self, n_features: int, n_classes: int, n_latent: int) -> None:
        self.n_features = check_int(n_features, "n_features", 1, self._name)
        self.n_classes = check_int(n_classes, "n_classes", 2, self._name)
        self.n_latent = check_int(n_latent, "n_latent", 1, self._name)
        self._flat = MulticlassModel(self.n_features, self.n_classes * self.n_latent)

    @property
    def n_joint_features(self) -> int:  # type: ignore[override]
        """``n_classes * n_latent * n_features``."""
        return self.n_classes * self.n_latent * self.n_features

    def __repr__(self) -> str:
        return (
            f"LatentMulticlassModel(n_features={self.n_features}, n_classes={self.n_classes}, "
            f"n_latent={self.n_latent})"
        )

    def check_input(self, x: Any) -> np.ndarray:
        """A finite float64 vector of length ``n_features``."""
        return self._flat.check_input(x)

    def check_label(self, y: Any) -> int:
        """A class index in ``[0, n_classes)``."""
        if isinstance(y, np.ndarray) and y.ndim == 0:
            y = y.item()
        if isinstance(y, bool | np.bool_) or not isinstance(y, numbers.Integral):
            raise InvalidTypeError(f"{self._name}: a class label must be an integer, got {y!r}.")
        if not 0 <= int(y) < self.n_classes:
            raise InvalidInputError(
                f"{self._name}: class label {int(y)} is outside [0, {self.n_classes})."
            )
        return int(y)

    def check_output(self, y: Any, x: Any = None) -> tuple[int, int]:
        """A pair ``(class, subclass)`` of ints in range."""
        if not isinstance(y, tuple) or len(y) != 2:
            raise InvalidTypeError(
                f"{self._name}: an output is a pair (class, subclass), got {type(y).__name__}."
            )
        label = self.check_label(y[0])
        h = y[1]
        if isinstance(h, bool | np.bool_) or not isinstance(h, numbers.Integral):
            raise InvalidTypeError(f"{self._name}: a subclass must be an integer, got {h!r}.")
        if not 0 <= int(h) < self.n_latent:
            raise InvalidInputError(
                f"{self._name}: subclass {int(h)} is outside [0, {self.n_latent})."
            )
        return label, int(h)

    def joint_feature(self, x: Any, y: Any) -> np.ndarray:
        r""":math:`\Psi(x, (y, h)) = e_{y n_\text{latent} + h} \otimes x`."""
        label, h = self.check_output(y)
        return self._flat.joint_feature(x, label * self.n_latent + h)

    def loss(self, y_true: Any, y_pred: Any) -> float:
        r"""The 0/1 loss on the classes, :math:`[y \ne y']` (subclasses ignored)."""
        return float(self.check_output(y_true)[0] != self.check_output(y_pred)[0])

    def enumerate_outputs(self, x: Any) -> Iterator[tuple[int, int]]:
        """Every pair ``(class, subclass)``."""
        return iter(itertools.product(range(self.n_classes), range(self.n_latent)))

    def _scores(self, x: Any, w: np.ndarray) -> np.ndarray:
        w = self.check_weights(w).reshape(self.n_classes, self.n_latent, self.n_features)
        return w @ self.check_input(x)

    def inference(self, x: Any, w: np.ndarray) -> tuple[int, int]:
        r""":math:`\arg\max_{(y, h)} w_{y,h}\cdot x`."""
        label, h = np.unravel_index(np.argmax(self._scores(x, w)), (self.n_classes, self.n_latent))
        return int(label), int(h)

    def loss_augmented_inference(self, x: Any, y: Any, w: np.ndarray) -> tuple[int, int]:
        r""":math:`\arg\max_{(y', h)} [y \ne y'] + w_{y',h}\cdot x`."""
        scores = self._scores(x, w)
        augmented = scores + 1.0
        own = self.check_output(y)[0]
        augmented[own] = scores[own]
        label, h = np.unravel_index(np.argmax(augmented), augmented.shape)
        return int(label), int(h)

    def rounding(self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray) -> Rounding:
        r"""Bounds on the rounding of the oracles (:class:`~qpsvm.models.Rounding`), as for
        :meth:`MulticlassModel.rounding <qpsvm.models.MulticlassModel.rounding>` over the
        ``n_classes n_latent`` scores :math:`w_{y,h}\cdot x` (``d`` rounded products each;
        the slack-rescaled default compares :math:`1 + s - s_y` of the float products
        :math:`w\cdot\hat\Psi`, whose zero terms add nothing)."""
        W = np.abs(self.check_weights(w).reshape(-1, self.n_features))
        xs = np.array([self.check_input(x) for x in X]).reshape(len(X), self.n_features)
        magnitude = np.max(np.abs(xs) @ W.T, axis=1)
        d = self.n_features
        zero = np.zeros(len(X))
        return Rounding(
            oracle=sum_error(d + 1, magnitude + 1.0),
            rescaled=sum_error(2 * d + 1, 1.0 + 2.0 * magnitude),
            feature=zero,
            loss=zero,
        )

    def latent_inference(self, x: Any, y: Any, w: np.ndarray) -> int:
        r""":math:`\arg\max_h w_{y,h}\cdot x` for the class ``y``."""
        return int(np.argmax(self._scores(x, w)[self.check_label(y)]))

    def initial_latent(self, x: Any, y: Any) -> int:
        """The subclass given by the signs of ``x``'s first ``n_latent - 1`` coordinates (the
        number of positive ones, capped), so that ``w = 0``'s ties are broken by the data."""
        x = self.check_input(x)
        self.check_label(y)
        return int(min(self.n_latent - 1, np.count_nonzero(x[: self.n_latent - 1] > 0)))
