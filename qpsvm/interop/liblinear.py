r"""LIBLINEAR's answers: model files (``train`` / ``save_model``) and model objects of the official
Python bindings (``liblinear-official``).

LIBLINEAR minimises, for its solver types (``-s``),

* 1, 2: :math:`\tfrac12\|w\|^2 + C \sum_i \max(0, 1 - y_i w\cdot x_i)^2` (squared hinge);
* 3: the same with the hinge :math:`\max(0, 1 - y_i w\cdot x_i)`;
* 4: Crammer and Singer's multiclass hinge;
* 5: :math:`\|w\|_1 + C \sum_i \max(0, 1 - y_i w\cdot x_i)^2`;
* 11, 12: :math:`\tfrac12\|w\|^2 + C \sum_i \max(0, |y_i - w\cdot x_i| - p)^2`; 13: the same
  with :math:`\max(0, |y_i - w\cdot x_i| - p)`.

With ``-B B >= 0`` every ``x_i`` gets a last feature of value ``B`` whose weight :math:`w_B` is
regularised like the others (:math:`b = B w_B`; qpsvm's ``intercept="regularized"``), unless
``-R`` turned that off (then the intercept is free). Binary models predict their *first* label
when :math:`w\cdot x + b > 0`; more than two classes are one-vs-rest, one weight column per label
(Crammer-Singer: one per label even for two). Class weights ``-wi`` multiply ``C`` for label ``i``.
Model files record neither ``C`` nor the class weights nor ``-R``; model objects do.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qpsvm.exceptions import InvalidInputError, UnsupportedProblemError
from qpsvm.interop.answer import ForeignAnswer, ProblemSpec
from qpsvm.interop.text import Header, numbers

__all__ = ["SOLVERS", "from_liblinear", "read_liblinear_file"]

#: LIBLINEAR's solver types: number -> (name, family, loss, penalty); ``None`` for what qpsvm
#: cannot state (logistic regression, one-class SVM).
SOLVERS: dict[int, tuple[str, tuple[str, str, str] | None]] = {
    0: ("L2R_LR", None),
    1: ("L2R_L2LOSS_SVC_DUAL", ("binary", "squared_hinge", "l2")),
    2: ("L2R_L2LOSS_SVC", ("binary", "squared_hinge", "l2")),
    3: ("L2R_L1LOSS_SVC_DUAL", ("binary", "hinge", "l2")),
    4: ("MCSVM_CS", ("multiclass", "hinge", "l2")),
    5: ("L1R_L2LOSS_SVC", ("binary", "squared_hinge", "l1")),
    6: ("L1R_LR", None),
    7: ("L2R_LR_DUAL", None),
    11: ("L2R_L2LOSS_SVR", ("regression", "squared_epsilon_insensitive", "l2")),
    12: ("L2R_L2LOSS_SVR_DUAL", ("regression", "squared_epsilon_insensitive", "l2")),
    13: ("L2R_L1LOSS_SVR_DUAL", ("regression", "epsilon_insensitive", "l2")),
    21: ("ONECLASS_SVM", None),
}
_BY_NAME = {name: number for number, (name, _) in SOLVERS.items()}


def _spec(
    solver: int,
    labels: tuple,
    bias: float,
    *,
    C: float | None,
    epsilon: float | None,
    class_weight: dict | None,
    regularize_bias: bool | None,
) -> ProblemSpec:
    """The problem of solver type ``solver`` with bias ``bias`` (``< 0``: none)."""
    if solver not in SOLVERS:
        raise InvalidInputError(f"unknown LIBLINEAR solver type {solver}.")
    name, kind = SOLVERS[solver]
    if kind is None:
        what = "a one-class SVM" if solver == 21 else "logistic regression (logistic loss)"
        raise UnsupportedProblemError(
            f"LIBLINEAR's -s {solver} ({name}) solves {what}, which qpsvm cannot state; "
            "qpsvm certifies the hinge, squared hinge and epsilon-insensitive losses."
        )
    family, loss, penalty = kind
    conversions = [f"LIBLINEAR -s {solver} ({name}): {loss} loss, {penalty} penalty"]
    if bias < 0:
        intercept = "none"
    elif regularize_bias is False:
        intercept = "free"
        conversions.append(f"-B {bias:g} with -R: the bias is not regularised (a free intercept)")
    else:
        intercept = "regularized"
        conversions.append(
            f"-B {bias:g}: a constant feature {bias:g}, its weight regularised, b = {bias:g} w_B"
            + (
                " (model files do not record -R; LIBLINEAR's default, a regularised bias, assumed)"
                if regularize_bias is None
                else ""
            )
        )
    if family == "binary" and len(labels) > 2:
        family, multi_class = "multiclass", "ovr"
        conversions.append(f"{len(labels)} classes: one-vs-rest, one binary problem per label")
    elif family == "multiclass":
        multi_class = "crammer_singer"
    else:
        multi_class = None
    if family == "binary":
        conversions.append(
            f"labels: LIBLINEAR predicts its first label, {labels[0]!r}, for w.x+b > 0"
        )
    return ProblemSpec(
        family=family,
        C=C,
        loss=loss,
        penalty=penalty,
        intercept=intercept,
        intercept_scaling=bias if bias >= 0 else 1.0,
        class_weight=class_weight or None,
        multi_class=multi_class,
        epsilon=epsilon,
        conversions=conversions,
    )


def _answer(
    source: str, spec: ProblemSpec, labels: tuple, rows: np.ndarray, n_features: int, bias: float
) -> ForeignAnswer:
    """Split LIBLINEAR's weight rows (one per feature, then the bias's) into ``coef, intercept``."""
    coef = np.ascontiguousarray(rows[:n_features].T)
    intercept = rows[n_features] * bias if bias >= 0 else np.zeros(rows.shape[1])
    return ForeignAnswer(
        source=source,
        spec=spec,
        labels=labels,
        positive=labels[0] if spec.family == "binary" else None,
        coef=coef,
        intercept=np.asarray(intercept, dtype=np.float64),
    )


def read_liblinear_file(path: str, text: str) -> ForeignAnswer:
    """Read a LIBLINEAR model file (the text ``save_model`` writes).

    Parameters
    ----------
    path : str
        The file's name, for messages.
    text : str
        Its contents.

    Returns
    -------
    ForeignAnswer
    """
    header = Header.parse(path, text, end="w")
    solver_name = header.word("solver_type")
    if solver_name not in _BY_NAME:
        raise InvalidInputError(f"{path}: unknown LIBLINEAR solver_type {solver_name!r}.")
    solver = _BY_NAME[solver_name]
    nr_class = header.integer("nr_class")
    n_features = header.integer("nr_feature")
    bias = header.real("bias")
    labels = tuple(header.integers("label")) if header.has("label") else ()
    spec = _spec(
        solver, labels, bias, C=None, epsilon=None, class_weight=None, regularize_bias=None
    )
    if spec.family == "regression":
        spec.conversions.append("model files do not record -p: pass epsilon=")
    n_columns = 1 if nr_class == 2 and solver != 4 else nr_class
    n_rows = n_features + (bias >= 0)
    rows = numbers(path, header.body, "the weights").reshape(-1)
    if rows.size != n_rows * n_columns:
        raise InvalidInputError(
            f"{path}: expected {n_rows} x {n_columns} weights after 'w', found {rows.size}."
        )
    return _answer(
        f"LIBLINEAR model file {path} (-s {solver})",
        spec,
        labels,
        rows.reshape(n_rows, n_columns),
        n_features,
        bias,
    )


def from_liblinear(model: Any) -> ForeignAnswer:
    """Read a model object of the official LIBLINEAR bindings (``liblinear.liblinearutil.train``).

    The object records ``C``, ``-p``, the class weights and ``-R`` as well as the weights.
    """
    param = model.param
    solver = int(param.solver_type)
    nr_class, n_features, bias = int(model.nr_class), int(model.nr_feature), float(model.bias)
    regression = solver in (11, 12, 13)
    labels = () if regression or solver == 21 else tuple(int(v) for v in model.get_labels())
    class_weight = {
        int(param.weight_label[k]): float(param.weight[k]) for k in range(int(param.nr_weight))
    }
    spec = _spec(
        solver,
        labels,
        bias,
        C=float(param.C),
        epsilon=float(param.p) if regression else None,
        class_weight=class_weight,
        regularize_bias=bool(param.regularize_bias),
    )
    n_columns = 1 if nr_class == 2 and solver != 4 else nr_class
    n_rows = n_features + (bias >= 0)
    rows = np.array([model.w[k] for k in range(n_rows * n_columns)], dtype=np.float64)
    return _answer(
        f"LIBLINEAR model (-s {solver})",
        spec,
        labels,
        rows.reshape(n_rows, n_columns),
        n_features,
        bias,
    )
