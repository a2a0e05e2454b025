r"""scikit-learn's answers: fitted ``LinearSVC``, ``LinearSVR``, ``SVC``, ``SVR`` and
``SGDClassifier``, read with the problem each one solved.

* ``LinearSVC`` is LIBLINEAR: squared hinge by default (``loss="hinge"`` for the hinge),
  ``penalty="l1"`` for :math:`\|w\|_1`, and with ``fit_intercept=True`` a *regularised* bias on a
  constant feature ``intercept_scaling``; ``multi_class="ovr"`` or ``"crammer_singer"``.
  ``classes_[1]`` is the positive class of a binary model.
* ``LinearSVR`` is LIBLINEAR's ``-s 11/12/13``: epsilon-insensitive or squared
  epsilon-insensitive loss, regularised bias.
* ``SVC`` / ``SVR`` are LIBSVM (:mod:`qpsvm.interop.libsvm`) with scikit-learn's ``gamma``
  (``"scale"`` resolved to the number it used) and its binary sign convention.
* ``SGDClassifier`` minimises :math:`\alpha R(w) + \tfrac1n \sum_i s_i\,\text{loss}_i` with a free,
  unregularised intercept; dividing by :math:`\alpha` gives qpsvm's form with
  :math:`C = 1/(\alpha n)` (:func:`qpsvm.conventions.C_from_pegasos`) and
  :math:`R(w) = \tfrac12\|w\|^2` (``"l2"``), :math:`\|w\|_1` (``"l1"``), or
  :math:`\rho\|w\|_1 + \tfrac{1-\rho}2\|w\|^2` (``"elasticnet"``, :math:`\rho` = ``l1_ratio``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qpsvm.exceptions import InvalidInputError, InvalidTypeError, UnsupportedProblemError
from qpsvm.interop.answer import ForeignAnswer, ProblemSpec
from qpsvm.interop.libsvm import kernel_spec

__all__ = ["from_estimator", "is_estimator"]

_SGD_PENALTIES = {"l2": "l2", "l1": "l1", "elasticnet": "l1_l2"}


def is_estimator(obj: Any) -> bool:
    """Whether ``obj`` is a scikit-learn estimator."""
    from sklearn.base import BaseEstimator

    return isinstance(obj, BaseEstimator)


def _class_weight(est: Any, y: np.ndarray | None) -> dict | None:
    """``class_weight`` as label -> factor (``"balanced"`` resolved on the training labels)."""
    weights = getattr(est, "class_weight_", None)
    if weights is not None and len(weights):
        factors = {c: float(v) for c, v in zip(est.classes_.tolist(), weights, strict=True)}
        return None if all(v == 1.0 for v in factors.values()) else factors
    spec = getattr(est, "class_weight", None)
    if spec is None:
        return None
    if spec == "balanced":
        if y is None:
            raise InvalidInputError("class_weight='balanced' needs the training labels y.")
        from sklearn.utils.class_weight import compute_class_weight

        values = compute_class_weight("balanced", classes=est.classes_, y=y)
        return {c: float(v) for c, v in zip(est.classes_.tolist(), values, strict=True)}
    return {c: float(v) for c, v in dict(spec).items()}


def _linear(est: Any, spec: ProblemSpec, source: str) -> ForeignAnswer:
    classes = tuple(est.classes_.tolist()) if hasattr(est, "classes_") else ()
    coef = np.atleast_2d(np.asarray(est.coef_, dtype=np.float64))
    intercept = np.broadcast_to(
        np.asarray(est.intercept_, dtype=np.float64), (coef.shape[0],)
    ).copy()
    binary = spec.family == "binary"
    if binary:
        spec.conversions.append(f"labels: classes_[1] = {classes[1]!r} is the positive class")
    return ForeignAnswer(
        source=source,
        spec=spec,
        labels=classes,
        positive=classes[1] if binary else None,
        coef=coef,
        intercept=intercept,
    )


def _liblinear_intercept(est: Any, spec: ProblemSpec) -> None:
    """LIBLINEAR's bias as scikit-learn sets it: a regularised constant feature, or none."""
    if est.fit_intercept:
        spec.intercept = "regularized"
        spec.intercept_scaling = float(est.intercept_scaling)
        spec.conversions.append(
            f"fit_intercept=True: LIBLINEAR's bias, a constant feature {spec.intercept_scaling:g} "
            "whose weight is regularised like w"
        )
    else:
        spec.intercept = "none"


def _linear_svc(est: Any, y: np.ndarray | None) -> ForeignAnswer:
    n_classes = len(est.classes_)
    # LIBLINEAR's Crammer-Singer has one loss and one penalty: ``loss`` and ``penalty`` are ignored.
    cs = est.multi_class == "crammer_singer"
    spec = ProblemSpec(
        family="multiclass" if cs or n_classes > 2 else "binary",
        C=float(est.C),
        loss="hinge" if cs else est.loss,
        penalty="l2" if cs else est.penalty,
        class_weight=_class_weight(est, y),
        multi_class="crammer_singer" if cs else ("ovr" if n_classes > 2 else None),
        conversions=[
            "LinearSVC (LIBLINEAR): "
            + (
                "Crammer-Singer multiclass hinge"
                if cs
                else f"{est.loss} loss, {est.penalty} penalty"
            )
        ],
    )
    _liblinear_intercept(est, spec)
    return _linear(est, spec, f"scikit-learn {type(est).__name__}")


def _linear_svr(est: Any) -> ForeignAnswer:
    spec = ProblemSpec(
        family="regression",
        C=float(est.C),
        loss=est.loss,
        epsilon=float(est.epsilon),
        conversions=[f"LinearSVR (LIBLINEAR): {est.loss} loss, l2 penalty"],
    )
    _liblinear_intercept(est, spec)
    return _linear(est, spec, "scikit-learn LinearSVR")


def _sgd(est: Any, y: np.ndarray | None, n_samples: int) -> ForeignAnswer:
    if est.loss not in ("hinge", "squared_hinge"):
        raise UnsupportedProblemError(
            f"SGDClassifier(loss={est.loss!r}) minimises a loss qpsvm cannot state; it certifies "
            "loss='hinge' and loss='squared_hinge'."
        )
    if est.penalty not in _SGD_PENALTIES:
        raise UnsupportedProblemError(
            f"SGDClassifier(penalty={est.penalty!r}) has no regulariser qpsvm can state."
        )
    C = 1.0 / (float(est.alpha) * n_samples)
    penalty = _SGD_PENALTIES[est.penalty]
    spec = ProblemSpec(
        family="binary" if len(est.classes_) == 2 else "multiclass",
        C=C,
        loss=est.loss,
        penalty=penalty,
        intercept="free" if est.fit_intercept else "none",
        class_weight=_class_weight(est, y),
        multi_class=None if len(est.classes_) == 2 else "ovr",
        l1_ratio=float(est.l1_ratio) if penalty == "l1_l2" else None,
        conversions=[
            f"SGDClassifier alpha={est.alpha:g} on n={n_samples}: C = 1/(alpha n) = {C:.6g}",
            "SGD's intercept is not regularised: a free intercept",
        ],
    )
    return _linear(est, spec, "scikit-learn SGDClassifier")


def _libsvm_estimator(est: Any, y: np.ndarray | None) -> ForeignAnswer:
    regression = est._impl == "epsilon_svr"
    classes = () if regression else tuple(est.classes_.tolist())
    spec = kernel_spec(
        est._impl,
        est.kernel if isinstance(est.kernel, str) else "callable",
        classes,
        C=float(est.C),
        gamma=float(est._gamma),
        degree=int(est.degree),
        coef0=float(est.coef0),
        epsilon=float(est.epsilon) if regression else None,
        class_weight=None if regression else _class_weight(est, y),
        tool=f"scikit-learn {type(est).__name__}",
    )
    coef = np.atleast_2d(np.asarray(est.dual_coef_, dtype=np.float64))
    intercept = np.asarray(est.intercept_, dtype=np.float64).ravel()
    if len(classes) == 2:
        # scikit-learn flips LIBSVM's binary sign so that classes_[1] is positive.
        spec.conversions[-1] = f"labels: classes_[1] = {classes[1]!r} is the positive class"
        labels, positive = (classes[1], classes[0]), classes[1]
    else:
        labels, positive = classes, None
    return ForeignAnswer(
        source=f"scikit-learn {type(est).__name__}",
        spec=spec,
        labels=labels,
        positive=positive,
        intercept=intercept,
        dual_coef=coef,
        n_support=None
        if regression
        else np.asarray(est.n_support_)[[classes.index(c) for c in labels]],
        support=np.asarray(est.support_, dtype=np.intp),
    )


def from_estimator(
    est: Any, y: np.ndarray | None = None, n_samples: int | None = None
) -> ForeignAnswer:
    """Read a fitted scikit-learn estimator with the problem it solved.

    Parameters
    ----------
    est : estimator
        A fitted ``LinearSVC``, ``LinearSVR``, ``SVC``, ``SVR`` or ``SGDClassifier``.
    y : array-like, optional
        The training labels (for ``class_weight="balanced"``).
    n_samples : int, optional
        The number of training samples (for ``SGDClassifier``'s ``C``).
    """
    from sklearn.base import is_classifier
    from sklearn.exceptions import NotFittedError
    from sklearn.linear_model import SGDClassifier
    from sklearn.svm import SVC, SVR, LinearSVC, LinearSVR, NuSVC, NuSVR, OneClassSVM
    from sklearn.utils.validation import check_is_fitted

    try:
        check_is_fitted(est)
    except NotFittedError as exc:
        raise InvalidInputError(f"the estimator is not fitted: {exc}") from None
    if isinstance(est, LinearSVC):
        return _linear_svc(est, y)
    if isinstance(est, LinearSVR):
        return _linear_svr(est)
    if isinstance(est, SVC | SVR | NuSVC | NuSVR | OneClassSVM):
        return _libsvm_estimator(est, y)
    if isinstance(est, SGDClassifier):
        if n_samples is None:
            raise InvalidInputError("SGDClassifier's C depends on n: pass the training data.")
        return _sgd(est, y, n_samples)
    kind = "classifier" if is_classifier(est) else "estimator"
    if hasattr(est, "steps"):
        raise InvalidTypeError(
            "a Pipeline transforms the data before its last step: validate the last step on the "
            "transformed data, e.g. validate(pipe[-1], pipe[:-1].transform(X), y)."
        )
    raise UnsupportedProblemError(
        f"qpsvm cannot state the problem a {type(est).__name__} ({kind}) solves; it validates "
        "LinearSVC, LinearSVR, SVC, SVR and SGDClassifier (hinge or squared hinge)."
    )
