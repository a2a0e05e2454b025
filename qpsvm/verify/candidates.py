"""Reading what users pass to ``certify``: solutions, scikit-learn estimators, or arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.solution import Candidate, Solution

__all__ = [
    "Candidate",
    "check_classes",
    "check_fitted",
    "read_candidate",
    "read_estimator",
    "read_regressor",
]


def read_candidate(
    f: Any, candidate: Any = None, *, w: Any = None, b: Any = None, alpha: Any = None
) -> Candidate:
    """Normalise a candidate to a :class:`Candidate`.

    ``candidate`` may be a :class:`~qpsvm.Solution`, a :class:`Candidate`, a fitted
    scikit-learn estimator (SVC, LinearSVC, SGDClassifier or any linear classifier with
    ``coef_``), or an array taken as ``w``. Keyword arrays ``w``, ``b``, ``alpha`` are used when
    no ``candidate`` is given.
    """
    if candidate is None:
        if w is None and alpha is None:
            raise InvalidInputError("nothing to certify: pass a solution, w (and b), or alpha.")
        return Candidate(
            w=None if w is None else np.asarray(w, dtype=np.float64),
            b=b,
            alpha=None if alpha is None else np.asarray(alpha, dtype=np.float64),
        )
    if w is not None or alpha is not None:
        raise InvalidInputError("pass either a candidate or w/b/alpha keywords, not both.")
    if isinstance(candidate, Candidate):
        return candidate
    if isinstance(candidate, Solution):
        return Candidate(w=candidate.w, b=candidate.b, alpha=candidate.alpha, xi=candidate.xi)
    if isinstance(candidate, np.ndarray | list | tuple):
        return Candidate(w=np.asarray(candidate, dtype=np.float64), b=b)
    return read_estimator(f, candidate)


def check_fitted(est: Any) -> None:
    """Raise a typed error unless ``est`` is a fitted scikit-learn estimator."""
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    try:
        check_is_fitted(est)
    except NotFittedError as exc:
        raise InvalidInputError(f"the estimator is not fitted: {exc}") from None
    except TypeError:
        raise InvalidTypeError(
            f"cannot certify a {type(est).__name__}: pass a qpsvm Solution, a fitted "
            "scikit-learn SVC / LinearSVC / SGDClassifier, or arrays w, b or alpha."
        ) from None


def check_classes(f: Any, est: Any) -> None:
    """Raise a typed error unless ``est`` was fitted on the formulation's classes."""
    classes = getattr(est, "classes_", None)
    if (
        classes is None
        or len(classes) != len(f.classes_)
        or np.any(np.asarray(classes) != f.classes_)
    ):
        raise InvalidInputError(
            f"the estimator was fitted on classes {classes!r} but the formulation has "
            f"{f.classes_.tolist()}; fit both on the same labels."
        )


def read_estimator(f: Any, est: Any) -> Candidate:
    """A candidate from a fitted scikit-learn binary classifier.

    ``SVC`` gives ``alpha`` (``dual_coef_`` holds ``alpha_i y_i`` for the support vectors, with
    ``classes_[1]`` as ``+1``) and ``b = intercept_``; linear models give ``w = coef_`` and
    ``b = intercept_``.
    """
    from sklearn.linear_model._base import LinearClassifierMixin
    from sklearn.svm import SVC

    check_fitted(est)
    if getattr(f, "regression", False):
        return read_regressor(f, est)
    check_classes(f, est)
    if isinstance(est, SVC):
        if f.kernel.name != est.kernel:
            raise InvalidInputError(
                f"the SVC uses kernel={est.kernel!r} but the formulation uses "
                f"{f.kernel.name!r}; certify it against a formulation with the same kernel."
            )
        alpha = np.zeros(f.n_samples)
        if est.support_.max(initial=-1) >= f.n_samples:
            raise InvalidInputError("the SVC was fitted on more samples than the formulation has.")
        alpha[est.support_] = np.abs(np.asarray(est.dual_coef_).ravel())
        w = np.asarray(est.coef_, dtype=np.float64).ravel() if est.kernel == "linear" else None
        return Candidate(w=w, b=float(est.intercept_[0]), alpha=alpha)
    if isinstance(est, LinearClassifierMixin):
        coef = np.asarray(est.coef_, dtype=np.float64)
        intercept = np.asarray(est.intercept_, dtype=np.float64).ravel()
        return Candidate(w=coef.ravel(), b=float(intercept[0]) if intercept.size else 0.0)
    raise InvalidTypeError(
        f"cannot certify a {type(est).__name__}: pass a qpsvm Solution, a fitted scikit-learn "
        "SVC / LinearSVC / SGDClassifier, or arrays w, b or alpha."
    )


def read_regressor(f: Any, est: Any) -> Candidate:
    """A candidate from a fitted scikit-learn regressor (``LinearSVR``, ``SVR``, any linear
    one with ``coef_``): ``w = coef_``, ``b = intercept_``; ``SVR`` also gives its multipliers
    ``u_i = alpha_i - alpha_i^*`` (``dual_coef_``, support vectors only), all a kernel has."""
    from sklearn.base import is_classifier
    from sklearn.svm import SVR

    coef = None if is_classifier(est) else getattr(est, "coef_", None)
    if isinstance(est, SVR):
        if est.kernel != f.kernel.name:
            raise InvalidInputError(
                f"the SVR uses kernel={est.kernel!r} but the problem uses {f.kernel.name!r}; "
                "certify it against a problem with the same kernel."
            )
        if est.kernel in ("rbf", "poly") and est._gamma != f.kernel.gamma:
            raise InvalidInputError(
                f"the SVR uses gamma={est._gamma!r} but the problem uses "
                f"gamma={f.kernel.gamma!r}; pass the same gamma."
            )
        coef = coef if est.kernel == "linear" else np.zeros(0)
    if coef is None:
        raise InvalidTypeError(
            f"cannot certify a {type(est).__name__}: pass a qpsvm Solution, a fitted LinearSVR "
            "or SVR(kernel='linear'), or arrays w and b."
        )
    intercept = np.asarray(getattr(est, "intercept_", 0.0), dtype=np.float64).ravel()
    alpha = None
    if isinstance(est, SVR):
        if est.support_.max(initial=-1) >= f.n_samples:
            raise InvalidInputError("the SVR was fitted on more samples than the problem has.")
        alpha = np.zeros(f.n_samples)
        alpha[est.support_] = np.asarray(est.dual_coef_, dtype=np.float64).ravel()
    return Candidate(
        w=np.asarray(coef, dtype=np.float64).ravel() if np.size(coef) else None,
        b=float(intercept[0]) if intercept.size else 0.0,
        alpha=alpha,
    )
