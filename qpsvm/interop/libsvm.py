r"""LIBSVM's answers: model files (``svm-train`` / ``svm_save_model``) and model objects of the
official Python bindings (``libsvm-official``).

``-s 0`` (C-SVC) solves, for each pair of classes :math:`(i, j)`, :math:`i < j` in the model's
label order, the kernel dual

.. math::

    \max_\alpha \sum_k \alpha_k - \tfrac12 \sum_{k,l} \alpha_k \alpha_l y_k y_l K(x_k, x_l)
    \quad\text{s.t.}\quad 0 \le \alpha_k \le C w_{y_k},\; \sum_k \alpha_k y_k = 0,

with :math:`y = +1` for label :math:`i` (the first label is the positive one), class weights
:math:`w` from ``-wi``, and decision value :math:`\sum_k \alpha_k y_k K(x_k, x) - \rho`.
``-s 3`` (epsilon-SVR) solves the epsilon-insensitive regression dual with ``-p``. The kernels
(``-t``): linear, polynomial :math:`(\gamma u\cdot v + c_0)^d`, RBF
:math:`\exp(-\gamma\|u - v\|^2)`; LIBSVM's default :math:`\gamma` is ``1 / n_features``
(scikit-learn's is ``"scale"``): the model records the one it used. Model files record neither
``C`` nor the class weights, nor which training rows the support vectors are: they are matched
against the data.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qpsvm.exceptions import InvalidInputError, UnsupportedProblemError
from qpsvm.interop.answer import ForeignAnswer, ProblemSpec
from qpsvm.interop.text import Header

__all__ = ["from_libsvm", "kernel_spec", "read_libsvm_file"]

_SVM_TYPES = ("c_svc", "nu_svc", "one_class", "epsilon_svr", "nu_svr")
_KERNELS = ("linear", "polynomial", "rbf", "sigmoid", "precomputed")


def kernel_spec(
    svm_type: str,
    kernel: str,
    labels: tuple,
    *,
    C: float | None,
    gamma: float,
    degree: int,
    coef0: float,
    epsilon: float | None,
    class_weight: dict | None,
    tool: str = "LIBSVM",
) -> ProblemSpec:
    """The problem of a LIBSVM-type model (LIBSVM's own, or scikit-learn's SVC / SVR)."""
    if svm_type not in ("c_svc", "epsilon_svr"):
        raise UnsupportedProblemError(
            f"{tool}'s {svm_type} solves a nu-parametrised or one-class problem, which qpsvm "
            "cannot state; it certifies C-SVC (SVC) and epsilon-SVR (SVR)."
        )
    if kernel not in ("linear", "poly", "rbf"):
        raise UnsupportedProblemError(
            f"{tool}'s {kernel} kernel is not supported: qpsvm certifies the linear, poly and rbf "
            "kernels (a sigmoid kernel is not positive semidefinite, so its dual is not convex)."
        )
    regression = svm_type == "epsilon_svr"
    conversions = [f"{tool} {svm_type}: kernel dual, {kernel} kernel, gamma={gamma:g} as recorded"]
    if not regression:
        if len(labels) > 2:
            conversions.append(f"{len(labels)} classes: one-vs-one, one binary problem per pair")
        else:
            conversions.append(f"labels: the decision value is positive for {labels[0]!r}")
    return ProblemSpec(
        family="regression" if regression else "binary" if len(labels) == 2 else "multiclass",
        C=C,
        loss="epsilon_insensitive" if regression else "hinge",
        kernel=kernel,
        gamma=gamma,
        degree=degree,
        coef0=coef0,
        class_weight=class_weight or None,
        multi_class=None if regression or len(labels) == 2 else "ovo",
        epsilon=epsilon,
        conversions=conversions,
    )


def read_libsvm_file(path: str, text: str, n_features: int) -> ForeignAnswer:
    """Read a LIBSVM model file (the text ``svm_save_model`` writes).

    Parameters
    ----------
    path : str
        The file's name, for messages.
    text : str
        Its contents.
    n_features : int
        Number of features of the data (support vectors are sparse rows).
    """
    header = Header.parse(path, text, end="SV")
    svm_type, kernel = header.word("svm_type"), header.word("kernel_type")
    if svm_type not in _SVM_TYPES or kernel not in _KERNELS:
        raise InvalidInputError(f"{path}: unknown svm_type {svm_type!r} or kernel {kernel!r}.")
    nr_class = header.integer("nr_class")
    labels = tuple(header.integers("label")) if header.has("label") else ()
    spec = kernel_spec(
        svm_type,
        "poly" if kernel == "polynomial" else kernel,
        labels,
        C=None,
        gamma=header.real("gamma") if header.has("gamma") else 0.0,
        degree=header.integer("degree") if header.has("degree") else 3,
        coef0=header.real("coef0") if header.has("coef0") else 0.0,
        epsilon=None,
        class_weight=None,
    )
    if svm_type == "epsilon_svr":
        spec.conversions.append("model files do not record -p: pass epsilon=")
    n_coef = max(nr_class - 1, 1)
    lines = [line.split() for line in header.body.splitlines() if line.strip()]
    if len(lines) != header.integer("total_sv"):
        raise InvalidInputError(
            f"{path}: total_sv is {header.integer('total_sv')}, found {len(lines)} support vectors."
        )
    coef = np.zeros((n_coef, len(lines)))
    SV = np.zeros((len(lines), n_features))
    for k, words in enumerate(lines):
        try:
            coef[:, k] = [float(v) for v in words[:n_coef]]
            for item in words[n_coef:]:
                index, value = item.split(":")
                SV[k, int(index) - 1] = float(value)
        except (ValueError, IndexError):
            raise InvalidInputError(
                f"{path}: support vector {k + 1} is not '{n_coef} coefficient(s) index:value ...' "
                f"with indices 1..{n_features}."
            ) from None
    return ForeignAnswer(
        source=f"LIBSVM model file {path} ({svm_type}, {kernel})",
        spec=spec,
        labels=labels,
        positive=labels[0] if spec.family == "binary" else None,
        intercept=-header.reals("rho"),
        dual_coef=coef,
        n_support=np.array(header.integers("nr_sv")) if header.has("nr_sv") else None,
        support_vectors=SV,
    )


def from_libsvm(model: Any) -> ForeignAnswer:
    """Read a model object of the official LIBSVM bindings (``libsvm.svmutil.svm_train``).

    The object records ``C``, ``-p``, the class weights and the training rows of its support
    vectors as well as the coefficients.
    """
    param = model.param
    svm_type = _SVM_TYPES[int(param.svm_type)]
    kernel = _KERNELS[int(param.kernel_type)]
    nr_class = int(model.nr_class)
    labels = () if svm_type == "epsilon_svr" else tuple(int(v) for v in model.get_labels())
    class_weight = {
        int(param.weight_label[k]): float(param.weight[k]) for k in range(int(param.nr_weight))
    }
    spec = kernel_spec(
        svm_type,
        "poly" if kernel == "polynomial" else kernel,
        labels,
        C=float(param.C),
        gamma=float(param.gamma),
        degree=int(param.degree),
        coef0=float(param.coef0),
        epsilon=float(param.p) if svm_type == "epsilon_svr" else None,
        class_weight=class_weight,
    )
    n_pairs = max(nr_class * (nr_class - 1) // 2, 1)
    coef = np.array(model.get_sv_coef(), dtype=np.float64).T.reshape(max(nr_class - 1, 1), -1)
    return ForeignAnswer(
        source=f"LIBSVM model ({svm_type}, {kernel})",
        spec=spec,
        labels=labels,
        positive=labels[0] if spec.family == "binary" else None,
        intercept=-np.array([model.rho[k] for k in range(n_pairs)], dtype=np.float64),
        dual_coef=coef,
        n_support=(np.array([model.nSV[k] for k in range(nr_class)]) if labels else None),
        support=np.array(model.get_sv_indices(), dtype=np.intp) - 1,
    )
