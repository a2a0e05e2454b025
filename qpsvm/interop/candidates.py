"""A fitted scikit-learn estimator as a candidate of a formulation the user built.

``f.certify(estimator)`` judges the estimator's answer on the problem ``f`` states. When the
estimator solved another problem (another loss, a regularised intercept, another ``C`` or class
weights) the certificate is still a true statement about ``f``, but not about the estimator:
:func:`estimator_candidate` says so with a :class:`~qpsvm.exceptions.ProblemMismatchWarning`
naming both problems and pointing to :func:`qpsvm.validate`, which certifies the answer on its
own problem. A kernel that differs (name, ``gamma``, ``degree``, ``coef0``) is an error: the dual
coefficients belong to another feature space.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from qpsvm.exceptions import InvalidInputError, InvalidTypeError, ProblemMismatchWarning
from qpsvm.interop.answer import ForeignAnswer, ProblemSpec
from qpsvm.interop.scikit_learn import from_estimator
from qpsvm.solution import Candidate

__all__ = ["estimator_candidate", "problem_of"]


def problem_of(f: Any) -> ProblemSpec:
    """The :class:`ProblemSpec` a binary, multiclass or regression formulation states."""
    kernel = getattr(f, "kernel", None)
    pieces = getattr(f, "intercept", None)
    if pieces is not None:
        intercept, scaling = pieces.mode, float(pieces.scaling)
    else:
        intercept, scaling = ("free" if f.fit_intercept else "none"), 1.0
    regression = bool(getattr(f, "regression", False))
    return ProblemSpec(
        family="regression"
        if regression
        else "multiclass"
        if hasattr(f, "n_classes")
        else "binary",
        C=float(f.C),
        loss=getattr(getattr(f, "loss", None), "name", "hinge"),
        penalty=getattr(getattr(f, "penalty", None), "name", "l2"),
        intercept=intercept,
        intercept_scaling=scaling,
        kernel=kernel.name if kernel is not None else "linear",
        gamma=float(kernel.gamma) if kernel is not None else None,
        degree=int(kernel.degree) if kernel is not None else 3,
        coef0=float(kernel.coef0) if kernel is not None else 0.0,
        epsilon=float(f.epsilon) if regression else None,
    )


def _differences(mine: ProblemSpec, theirs: ProblemSpec, f: Any, y: np.ndarray | None) -> list[str]:
    """How the estimator's problem differs from the formulation's, in words."""
    found = []
    for name in ("loss", "penalty", "intercept"):
        if getattr(mine, name) != getattr(theirs, name):
            found.append(f"{name} {getattr(theirs, name)!r} (here {getattr(mine, name)!r})")
    if (
        mine.intercept == theirs.intercept == "regularized"
        and mine.intercept_scaling != theirs.intercept_scaling
    ):
        found.append(f"intercept_scaling {theirs.intercept_scaling:g}")
    for name in ("C", "epsilon"):
        value, here = getattr(theirs, name), getattr(mine, name)
        if value is not None and here is not None and not np.isclose(value, here, rtol=1e-12):
            found.append(f"{name}={value:g} (here {name}={here:g})")
    if theirs.class_weight and y is not None:
        factors = np.array([theirs.class_weight.get(v, 1.0) for v in y.tolist()])
        if not np.allclose(f.sample_weight, factors, rtol=1e-12, atol=0.0):
            found.append(f"class weights {theirs.class_weight} (here sample_weight)")
    if theirs.multi_class == "ovr" and mine.family == "multiclass":
        found.append("one-vs-rest binary problems (here one multiclass problem)")
    return found


def _check_kernel(mine: ProblemSpec, theirs: ProblemSpec) -> None:
    same = mine.kernel == theirs.kernel
    if same and theirs.kernel != "linear":
        same = bool(np.isclose(mine.gamma, theirs.gamma, rtol=1e-12, atol=0.0))
        if theirs.kernel == "poly":
            same = same and mine.degree == theirs.degree and mine.coef0 == theirs.coef0
    if not same:
        raise InvalidInputError(
            f"the estimator uses kernel={theirs.kernel!r} (gamma={theirs.gamma:g}, "
            f"degree={theirs.degree}, coef0={theirs.coef0:g}) but the formulation uses "
            f"{mine.kernel!r} (gamma={mine.gamma:g}, degree={mine.degree}, coef0={mine.coef0:g}); "
            "certify it against a formulation with the same kernel, or with "
            "qpsvm.validate(estimator, X, y)."
        )


def _check_classes(f: Any, answer: ForeignAnswer) -> None:
    classes = sorted(answer.labels)
    if len(classes) != len(f.classes_) or np.any(np.asarray(classes) != f.classes_):
        raise InvalidInputError(
            f"the estimator was fitted on classes {classes!r} but the formulation has "
            f"{f.classes_.tolist()}; fit both on the same labels."
        )


def estimator_candidate(f: Any, est: Any) -> Candidate:
    """The candidate of a fitted scikit-learn estimator for formulation ``f``.

    Binary ``SVC`` gives ``alpha`` (``|dual_coef_|`` on ``support_``) and ``b``; linear models
    give ``w = coef_`` and ``b = intercept_``; for a multiclass formulation ``W = coef_`` (a
    two-class model's one row ``coef_ = w_1 - w_0`` becomes ``w_1 = -w_0 = coef_ / 2``, the
    minimum-norm ``W`` every multiclass optimum has, since its rows sum to zero). Warns with
    :class:`~qpsvm.exceptions.ProblemMismatchWarning` when the estimator solved another
    problem than ``f``.
    """
    answer = from_estimator(est, n_samples=f.n_samples)
    mine = problem_of(f)
    if (answer.spec.family == "regression") != (mine.family == "regression"):
        what = "regressor" if answer.spec.family == "regression" else "classifier"
        raise InvalidTypeError(
            f"a {type(est).__name__} is a {what} and this {type(f).__name__} is not: certify it "
            "with qpsvm.validate(est, X, y)."
        )
    if mine.family == "regression":
        candidate = _regression_candidate(f, est, answer, mine)
    else:
        _check_classes(f, answer)
        candidate = _classifier_candidate(f, est, answer, mine)
    labels = None
    if mine.family == "binary":
        labels = f.classes_[(f.y > 0).astype(int)]
    elif mine.family == "multiclass":
        labels = f.classes_[f.y]
    found = _differences(mine, answer.spec, f, labels)
    if found:
        warnings.warn(
            ProblemMismatchWarning(
                f"the {type(est).__name__} solved another problem than this "
                f"{type(f).__name__}: {'; '.join(found)}. The certificate judges its answer on "
                "this formulation's problem; qpsvm.validate(estimator, X, y) certifies it on "
                "its own."
            ),
            stacklevel=4,
        )
    return candidate


def _regression_candidate(f: Any, est: Any, answer: ForeignAnswer, mine: ProblemSpec) -> Candidate:
    """``w = coef_`` and ``b`` of a LinearSVR; an SVR's multipliers ``u = alpha - alpha*``."""
    if answer.coef is not None:
        return Candidate(w=answer.coef.ravel(), b=float(answer.intercept[0]))
    _check_kernel(mine, answer.spec)
    if answer.support.max(initial=-1) >= f.n_samples:
        raise InvalidInputError("the SVR was fitted on more samples than the problem has.")
    alpha = np.zeros(f.n_samples)
    alpha[answer.support] = answer.dual_coef[0]
    w = np.asarray(est.coef_, dtype=np.float64).ravel() if mine.kernel == "linear" else None
    return Candidate(w=w, b=float(answer.intercept[0]), alpha=alpha)


def _classifier_candidate(f: Any, est: Any, answer: ForeignAnswer, mine: ProblemSpec) -> Candidate:
    """``alpha`` and ``b`` of a binary SVC; ``w`` (or ``W``) and ``b`` of a linear model."""
    if answer.coef is None:
        if len(answer.labels) != 2 or mine.family != "binary":
            raise InvalidTypeError(
                f"a kernel {type(est).__name__} solves one binary dual per pair of classes, not "
                f"a {type(f).__name__}: certify it with qpsvm.validate(est, X, y)."
            )
        _check_kernel(mine, answer.spec)
        if answer.support.max(initial=-1) >= f.n_samples:
            raise InvalidInputError("the SVC was fitted on more samples than the formulation has.")
        alpha = np.zeros(f.n_samples)
        alpha[answer.support] = np.abs(answer.dual_coef[0])
        w = np.asarray(est.coef_, dtype=np.float64).ravel() if mine.kernel == "linear" else None
        return Candidate(w=w, b=float(answer.intercept[0]), alpha=alpha)
    if mine.family == "multiclass":
        coef = answer.coef
        if coef.shape[0] == 1 and f.n_classes == 2:
            coef = np.vstack([-0.5 * coef[0], 0.5 * coef[0]])
        return Candidate(w=coef, b=answer.intercept)
    return Candidate(w=answer.coef.ravel(), b=float(answer.intercept[0]))
