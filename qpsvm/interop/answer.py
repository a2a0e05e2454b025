r"""What another solver solved and what it answered, in one neutral form.

A reader (:mod:`qpsvm.interop.liblinear`, :mod:`~qpsvm.interop.libsvm`,
:mod:`~qpsvm.interop.sklearn`, :mod:`~qpsvm.interop.svmlight`, :mod:`~qpsvm.interop.files`) turns
a fitted model into a :class:`ForeignAnswer`: the :class:`ProblemSpec` of the problem the tool
minimised,

.. math::

    \min_{w, b}\; \text{penalty}(w) + C \sum_i s_i\, \text{loss}\big(y_i (w \cdot x_i + b)\big),

stated in qpsvm's convention (every conversion of the tool's own convention written down in
``conversions``), and the tool's answer: a weight matrix and intercepts, or, for kernel models,
dual coefficients :math:`\alpha_i y_i` over support vectors. :func:`qpsvm.interop.validate` builds
the problem and certifies the answer against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["ForeignAnswer", "ProblemSpec"]


@dataclass
class ProblemSpec:
    r"""The problem a tool solved, in qpsvm's convention.

    Attributes
    ----------
    family : {"binary", "multiclass", "ranking", "regression"}
        The problem family.
    C : float or None
        qpsvm's slack penalty (``None`` when the model does not record it: model files of
        LIBLINEAR, LIBSVM and SVM-rank do not; pass ``C=`` to :func:`~qpsvm.interop.validate`).
    loss : str
        ``"hinge"``, ``"squared_hinge"``, ``"epsilon_insensitive"`` or
        ``"squared_epsilon_insensitive"``.
    penalty : str
        ``"l2"`` (:math:`\tfrac12\|w\|^2`), ``"l1"`` or ``"l1_l2"``.
    intercept : {"free", "none", "regularized"}
        A free intercept, none, or LIBLINEAR's bias: a constant feature of value
        ``intercept_scaling`` whose weight is regularised like ``w``.
    intercept_scaling : float
        LIBLINEAR's ``-B`` (scikit-learn's ``intercept_scaling``).
    kernel : str
        ``"linear"``, ``"rbf"``, ``"poly"`` or ``"sigmoid"``, with ``gamma``, ``degree`` and
        ``coef0`` as LIBSVM defines them.
    class_weight : dict or None
        Label -> factor on ``C`` (LIBLINEAR / LIBSVM ``-wi``, scikit-learn's ``class_weight``).
    multi_class : {"ovr", "ovo", "crammer_singer"} or None
        How a multiclass model decomposes.
    epsilon : float or None
        The insensitivity of the regression losses.
    l1_ratio : float or None
        The L1 share of an ``"l1_l2"`` penalty.
    float32_features : bool
        The tool stores feature values as 32-bit floats (SVM-light, SVM-rank): its problem is
        stated on the data rounded to float32.
    C_convention : {"qpsvm", "svmrank"}
        How a ``C`` given by the user (for models that do not record theirs) is read: as qpsvm's
        (LIBLINEAR's, LIBSVM's, SVM-light's), or as SVM-rank's ``-c``, divided by the number of
        queries (:func:`qpsvm.conventions.C_from_svmrank`).
    conversions : list of str
        Every convention converted to qpsvm's, in words.
    """

    family: str
    C: float | None
    loss: str = "hinge"
    penalty: str = "l2"
    intercept: str = "free"
    intercept_scaling: float = 1.0
    kernel: str = "linear"
    gamma: float | None = None
    degree: int = 3
    coef0: float = 0.0
    class_weight: dict[Any, float] | None = None
    multi_class: str | None = None
    epsilon: float | None = None
    l1_ratio: float | None = None
    float32_features: bool = False
    C_convention: str = "qpsvm"
    conversions: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """The problem in one line, e.g. ``binary hinge + l2, free intercept, C=1``."""
        text = f"{self.family} {self.loss} + {self.penalty}"
        if self.penalty == "l1_l2":
            text += f" (l1_ratio={self.l1_ratio:g})"
        if self.family != "ranking":
            text += (
                ", no intercept" if self.intercept == "none" else f", {self.intercept} intercept"
            )
            if self.intercept == "regularized":
                text += f" (B={self.intercept_scaling:g})"
        if self.kernel != "linear":
            params = [f"gamma={self.gamma:g}"]
            if self.kernel in ("poly", "sigmoid"):
                params.append(f"coef0={self.coef0:g}")
            if self.kernel == "poly":
                params.append(f"degree={self.degree}")
            text += f", {self.kernel} kernel ({', '.join(params)})"
        if self.epsilon is not None:
            text += f", epsilon={self.epsilon:g}"
        if self.multi_class is not None:
            text += f", {self.multi_class}"
        if self.class_weight:
            text += f", class weights {self.class_weight}"
        return text + ("" if self.C is None else f", C={self.C:g}")


@dataclass
class ForeignAnswer:
    r"""A fitted model of another tool: the problem it solved and its answer.

    Attributes
    ----------
    source : str
        Where the model came from, e.g. ``"LIBLINEAR model file m.txt (-s 3)"``.
    spec : ProblemSpec
        The problem solved.
    labels : tuple
        The class labels in the tool's order (empty for regression and ranking).
    positive : object or None
        Binary models: the label a positive decision value predicts.
    coef : ndarray of shape (n_outputs, n_features) or None
        Linear models: one weight row per binary problem (per class for one-vs-rest and
        Crammer-Singer, in the order of ``labels``); ``None`` for kernel models.
    intercept : ndarray of shape (n_outputs,)
        The intercept of each binary problem (``b``, already multiplied by
        ``intercept_scaling``; kernel models: :math:`-\rho` of each pair).
    dual_coef : ndarray of shape (max(n_classes - 1, 1), n_support) or None
        Kernel models, in LIBSVM's layout: for two classes (or regression) one row of
        :math:`\alpha_k y_k` (:math:`\alpha_k - \alpha_k^*`), with ``y = +1`` for ``positive``;
        for more, the one-vs-one coefficients of each support vector against the other classes.
    n_support : ndarray of int or None
        Kernel classifiers: the number of support vectors of each class, in ``labels`` order
        (the support vectors are grouped by class in that order).
    support : ndarray of int or None
        Kernel models: training-row indices of the support vectors, when the tool records them.
    support_vectors : ndarray or None
        Kernel models: the support vectors themselves (model files do not record the indices;
        the rows are matched against the data).
    """

    source: str
    spec: ProblemSpec
    labels: tuple
    positive: Any = None
    coef: np.ndarray | None = None
    intercept: np.ndarray = field(default_factory=lambda: np.zeros(1))
    dual_coef: np.ndarray | None = None
    n_support: np.ndarray | None = None
    support: np.ndarray | None = None
    support_vectors: np.ndarray | None = None
