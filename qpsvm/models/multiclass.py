"""Multiclass classification as a structured-output model (Crammer & Singer as a structural SVM)."""

from __future__ import annotations

import numbers
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import numpy as np

from qpsvm._numerics import sum_error
from qpsvm._validation import check_int
from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.models.base import ONE_EXAMPLE, JointFeatureModel, Rounding, finite_vector

__all__ = ["MulticlassModel"]


class MulticlassModel(JointFeatureModel):
    r"""Multiclass model: one weight vector per class and the 0/1 loss.

    The joint feature map places ``x`` in the block of class ``y``,

    .. math:: \Psi(x, y) = e_y \otimes x, \qquad w \cdot \Psi(x, y) = w_y \cdot x,

    where :math:`w_y` is row ``y`` of ``w.reshape(n_classes, n_features)`` (row-major layout), and
    the task loss is :math:`\Delta(y, y') = [y \ne y']`. With these, margin rescaling and slack
    rescaling coincide and the structural SVM is the Crammer-Singer multiclass SVM (Crammer &
    Singer, JMLR 2001; Tsochantaridis et al., JMLR 2005, section 4.1). Every oracle is an argmax
    over ``n_classes`` scores :math:`s_c = w_c \cdot x`.

    Outputs are class indices: Python ``int`` in ``[0, n_classes)``. Map arbitrary labels first,
    e.g. ``classes, y = np.unique(labels, return_inverse=True)``. Inputs are float vectors of
    length ``n_features``. Ties in every argmax go to the smallest class index.

    Parameters
    ----------
    n_features : int
        Length of ``x``.
    n_classes : int
        Number of classes, at least 2.

    Attributes
    ----------
    n_joint_features : int
        ``n_classes * n_features``.
    """

    def __init__(self, n_features: int, n_classes: int) -> None:
        self.n_features = check_int(n_features, "n_features", 1, self._name)
        self.n_classes = check_int(n_classes, "n_classes", 2, self._name)

    @property
    def n_joint_features(self) -> int:  # type: ignore[override]
        """``n_classes * n_features``."""
        return self.n_classes * self.n_features

    def __repr__(self) -> str:
        return f"MulticlassModel(n_features={self.n_features}, n_classes={self.n_classes})"

    # ---------------------------------------------------------------------- validation
    def check_input(self, x: Any) -> np.ndarray:
        """Return ``x`` as a finite float64 vector of shape ``(n_features,)``.

        Raises
        ------
        InvalidTypeError
            If ``x`` is not numeric.
        InvalidInputError
            If its shape is wrong or it holds NaN or inf.
        """
        return finite_vector(x, self.n_features, self._name, "x", "n_features", ONE_EXAMPLE)

    def check_output(self, y: Any, x: Any = None) -> int:
        """Return the class index ``y`` as an ``int`` in ``[0, n_classes)``.

        Raises
        ------
        InvalidTypeError
            If ``y`` is not an integer (floats and booleans are rejected).
        InvalidInputError
            If it is out of range.
        """
        if isinstance(y, np.ndarray) and y.ndim == 0:
            y = y.item()
        if isinstance(y, bool | np.bool_) or not isinstance(y, numbers.Integral):
            raise InvalidTypeError(
                f"{self._name}: a class label must be an integer index in "
                f"[0, {self.n_classes}), got {type(y).__name__} {y!r}. Map labels to indices with "
                "np.unique(labels, return_inverse=True)."
            )
        label = int(y)
        if not 0 <= label < self.n_classes:
            raise InvalidInputError(
                f"{self._name}: class label {label} is outside [0, {self.n_classes}); labels "
                f"are indices 0..{self.n_classes - 1}."
            )
        return label

    def check_weights(self, w: Any) -> np.ndarray:
        """Return ``w`` as a finite float64 vector of shape ``(n_joint_features,)``.

        Shape ``(n_classes, n_features)`` is accepted too (the layout of
        :class:`qpsvm.MulticlassSVM`'s ``w``) and flattened row-major.
        """
        try:
            if np.shape(w) == (self.n_classes, self.n_features):
                w = np.reshape(w, -1)
        except ValueError:  # ragged nested lists: let the base class report them
            pass
        return super().check_weights(w)

    def _check_matrix(self, X: Any) -> np.ndarray:
        try:
            arr = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InvalidTypeError(
                f"{self._name}: X must be a numeric matrix; could not convert it: {exc}"
            ) from None
        if arr.ndim != 2 or arr.shape[1] != self.n_features:
            raise InvalidInputError(
                f"{self._name}: X must have shape (n_examples, n_features={self.n_features}), "
                f"got {arr.shape}."
            )
        if not np.all(np.isfinite(arr)):
            raise InvalidInputError(f"{self._name}: X contains NaN or inf.")
        return arr

    def _check_labels(self, Y: Any, n: int) -> np.ndarray:
        arr = np.asarray(Y)
        if arr.shape == (0,) and n == 0:
            return np.zeros(0, dtype=np.intp)
        if arr.shape != (n,):
            raise InvalidInputError(
                f"{self._name}: Y must have one label per example, shape ({n},), got {arr.shape}."
            )
        if arr.dtype.kind not in "iu":
            raise InvalidTypeError(
                f"{self._name}: labels must be integer class indices, got dtype {arr.dtype}. "
                "Map labels to indices with np.unique(labels, return_inverse=True)."
            )
        if n and (arr.min() < 0 or arr.max() >= self.n_classes):
            bad = int(np.argmax((arr < 0) | (arr >= self.n_classes)))
            raise InvalidInputError(
                f"{self._name}: label Y[{bad}] = {int(arr[bad])} is outside [0, {self.n_classes})."
            )
        return arr.astype(np.intp, copy=False)

    def _weight_matrix(self, w: Any) -> np.ndarray:
        return self.check_weights(w).reshape(self.n_classes, self.n_features)

    # ------------------------------------------------------------------------- model
    def joint_feature(self, x: Any, y: Any) -> np.ndarray:
        r"""Joint feature map :math:`\Psi(x, y) = e_y \otimes x`, shape ``(n_joint_features,)``.

        Zeros except block ``y`` (entries ``y * n_features`` to ``(y + 1) * n_features - 1``),
        which holds ``x``.
        """
        x = self.check_input(x)
        y = self.check_output(y)
        psi = np.zeros(self.n_joint_features)
        psi[y * self.n_features : (y + 1) * self.n_features] = x
        return psi

    def loss(self, y_true: Any, y_pred: Any) -> float:
        r"""0/1 loss :math:`\Delta(y, y') = [y \ne y']`."""
        return float(self.check_output(y_true) != self.check_output(y_pred))

    def enumerate_outputs(self, x: Any) -> Iterator[int]:
        """The class indices ``0, ..., n_classes - 1``."""
        return iter(range(self.n_classes))

    def inference(self, x: Any, w: np.ndarray) -> int:
        r""":math:`\arg\max_c\, w_c \cdot x` (smallest index on ties)."""
        scores = self._weight_matrix(w) @ self.check_input(x)
        return int(np.argmax(scores))

    def loss_augmented_inference(self, x: Any, y: Any, w: np.ndarray) -> int:
        r""":math:`\arg\max_c\, [c \ne y] + w_c \cdot x`: the scores plus 1 off the true class."""
        scores = self._weight_matrix(w) @ self.check_input(x)
        y = self.check_output(y)
        augmented = scores + 1.0
        augmented[y] = scores[y]
        return int(np.argmax(augmented))

    def slack_rescaled_inference(self, x: Any, y: Any, w: np.ndarray) -> int:
        r"""Most violated slack-rescaled constraint for the 0/1 loss.

        The value of ``c != y`` is :math:`1 + s_c - s_y` and that of ``y`` is 0, so this returns
        :math:`\arg\max_{c \ne y} (1 + s_c - s_y)` when that maximum is ``> 0``, and ``y``
        otherwise. (For the 0/1 loss this is the same class as loss-augmented inference except
        in ties and when no constraint is violated.)
        """
        scores = self._weight_matrix(w) @ self.check_input(x)
        y = self.check_output(y)
        values = 1.0 + scores - scores[y]
        values[y] = -np.inf
        best = int(np.argmax(values))
        return best if values[best] > 0.0 else y

    # ---------------------------------------------------------------- batched oracles
    def validate_inputs(self, X: Sequence[Any], Y: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        """Check ``X`` (shape ``(n, n_features)``) and ``Y`` (``n`` class indices).

        Returns
        -------
        X : list of ndarray of shape (n_features,)
            The rows of the float64 data matrix.
        Y : list of int
        """
        Xa = self._check_matrix(X)
        if Xa.shape[0] == 0:
            raise InvalidInputError(f"{self._name}: the training set is empty.")
        self._check_pair_lengths(Xa, Y, "X", "Y")
        Ya = self._check_labels(Y, Xa.shape[0])
        return list(Xa), Ya.tolist()

    def batch_joint_feature(
        self, X: Sequence[Any], Y: Sequence[Any], reduce: Literal["sum", "stack"] = "sum"
    ) -> np.ndarray:
        r""":math:`\sum_i \Psi(x_i, y_i)` (shape ``(n_joint_features,)``) or the stacked rows."""
        Xa = self._check_matrix(X)
        Ya = self._check_labels(Y, Xa.shape[0])
        if reduce == "stack":
            out = np.zeros((Xa.shape[0], self.n_classes, self.n_features))
            out[np.arange(Xa.shape[0]), Ya] = Xa
            return out.reshape(Xa.shape[0], -1)
        if reduce != "sum":
            raise InvalidInputError(f"reduce must be 'sum' or 'stack', got {reduce!r}.")
        out = np.zeros((self.n_classes, self.n_features))
        np.add.at(out, Ya, Xa)
        return out.reshape(-1)

    def batch_loss(self, Y_true: Sequence[Any], Y_pred: Sequence[Any]) -> np.ndarray:
        """0/1 losses, shape ``(n_examples,)``."""
        a = self._check_labels(Y_true, len(Y_true))
        b = self._check_labels(Y_pred, len(Y_true))
        return (a != b).astype(np.float64)

    def inference_batch(self, X: Sequence[Any], w: np.ndarray) -> list[int]:
        """:meth:`inference` for every row of ``X`` with one matrix product."""
        scores = self._check_matrix(X) @ self._weight_matrix(w).T
        return np.argmax(scores, axis=1).tolist()

    def loss_augmented_inference_batch(
        self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray
    ) -> list[int]:
        """:meth:`loss_augmented_inference` for every example with one matrix product."""
        Xa = self._check_matrix(X)
        Ya = self._check_labels(Y, Xa.shape[0])
        scores = Xa @ self._weight_matrix(w).T
        rows = np.arange(Xa.shape[0])
        augmented = scores + 1.0
        augmented[rows, Ya] = scores[rows, Ya]
        return np.argmax(augmented, axis=1).tolist()

    def slack_rescaled_inference_batch(
        self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray
    ) -> list[int]:
        """:meth:`slack_rescaled_inference` for every example with one matrix product."""
        Xa = self._check_matrix(X)
        Ya = self._check_labels(Y, Xa.shape[0])
        rows = np.arange(Xa.shape[0])
        scores = Xa @ self._weight_matrix(w).T
        values = 1.0 + scores - scores[rows, Ya][:, None]
        values[rows, Ya] = -np.inf
        best = np.argmax(values, axis=1)
        return np.where(values[rows, best] > 0.0, best, Ya).tolist()

    def rounding(self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray) -> Rounding:
        r"""Bounds on the rounding of the oracles (:class:`~qpsvm.models.Rounding`).

        A score :math:`w_c\cdot x` is a sum of ``d = n_features`` rounded products, so with
        :math:`M = \max_c |w_c|\cdot|x|` the loss-augmented value :math:`[c \ne y] + w_c\cdot x`
        (``d + 1`` terms, the loss added exactly to the score) is within
        ``sum_error(d + 1, M + 1)`` of the exact one, and the slack-rescaled value
        :math:`1 + s_c - s_y` (``2d + 1`` terms) within ``sum_error(2d + 1, 1 + 2M)``
        (``sum_error``). :math:`\Psi` copies ``x`` and the 0/1 loss is
        exact.
        """
        Xa = self._check_matrix(X)
        magnitude = np.max(np.abs(Xa) @ np.abs(self._weight_matrix(w)).T, axis=1)
        d = self.n_features
        zero = np.zeros(Xa.shape[0])
        return Rounding(
            oracle=sum_error(d + 1, magnitude + 1.0),
            rescaled=sum_error(2 * d + 1, 1.0 + 2.0 * magnitude),
            feature=zero,
            loss=zero,
        )
