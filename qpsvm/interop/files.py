"""Model files of every format qpsvm reads, told apart by their first line.

* LIBLINEAR (``solver_type ...``) — :mod:`qpsvm.interop.liblinear`;
* LIBSVM (``svm_type ...``) — :mod:`qpsvm.interop.libsvm`;
* SVM-light / SVM-rank (``SVM-light Version ...``) — :mod:`qpsvm.interop.svmlight`;
* JSON (``{...}``): ``w`` (a vector, or one row per class), ``b``, and optionally ``C``,
  ``classes`` (``classes[1]`` is the positive class of a binary model), ``formulation`` (as
  written by ``qpsvm fit``: ``primal``, ``ranking``, ``crammer_singer``, ``weston_watkins``),
  ``fit_intercept``;
* text: numbers only, ``w`` (``n_features`` numbers: no intercept) or ``w`` then ``b``
  (``n_features + 1``: a free intercept), for qpsvm's convention (the larger label positive).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from qpsvm.exceptions import InvalidInputError
from qpsvm.formulations.pieces.intercepts import INTERCEPTS
from qpsvm.interop.answer import ForeignAnswer, ProblemSpec
from qpsvm.interop.liblinear import read_liblinear_file
from qpsvm.interop.libsvm import read_libsvm_file
from qpsvm.interop.svmlight import read_svmlight_file
from qpsvm.interop.text import numbers

__all__ = ["FORMATS", "detect_format", "read_model_file"]

FORMATS = ("liblinear", "libsvm", "svmlight", "json", "text")
#: ``formulation`` names of qpsvm's JSON models -> (family, multi_class).
_JSON_FORMULATIONS = {
    "primal": ("binary", None),
    "dual": ("binary", None),
    "ranking": ("ranking", None),
    "crammer_singer": ("multiclass", "crammer_singer"),
    "weston_watkins": ("multiclass", "weston_watkins"),
}


def detect_format(text: str) -> str:
    """The format of a model file's text (one of :data:`FORMATS`)."""
    head = text.lstrip()
    first = head.split(None, 1)[0] if head else ""
    if first == "solver_type":
        return "liblinear"
    if first == "svm_type":
        return "libsvm"
    if head.startswith("SVM-light Version"):
        return "svmlight"
    if head.startswith("{"):
        return "json"
    return "text"


def _read_json(path: str, text: str, n_features: int, ranking: bool) -> ForeignAnswer:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(obj, dict) or "w" not in obj:
        raise InvalidInputError(f'{path}: the JSON model has no "w" (the weight vector).')
    name = obj.get("formulation")
    if name is None:
        name = "ranking" if ranking else "primal"
    if name not in _JSON_FORMULATIONS:
        raise InvalidInputError(
            f"{path}: unknown formulation {name!r}; expected one of {sorted(_JSON_FORMULATIONS)}."
        )
    family, multi_class = _JSON_FORMULATIONS[name]
    w = np.atleast_2d(numbers(path, " ".join(map(str, np.ravel(obj["w"]))), '"w"'))
    if family == "multiclass":
        w = w.reshape(-1, n_features)
    if w.shape[-1] != n_features:
        raise InvalidInputError(
            f"{path}: w has {w.shape[-1]} entries per row, the data have {n_features} features."
        )
    b = np.ravel(numbers(path, " ".join(map(str, np.ravel(obj.get("b", 0.0)))), '"b"'))
    if family == "multiclass":
        intercept, scaling = _json_multiclass_intercept(path, obj)
    else:
        has_intercept = family == "binary" and obj.get("fit_intercept", True) is not False
        intercept, scaling = ("free" if has_intercept else "none"), 1.0
    classes = tuple(obj["classes"]) if obj.get("classes") is not None else ()
    C = obj.get("C")
    spec = ProblemSpec(
        family=family,
        C=None if C is None else float(numbers(path, str(C), '"C"')[0]),
        intercept=intercept,
        intercept_scaling=scaling,
        multi_class=multi_class,
        conversions=[f"qpsvm JSON model ({name})"],
    )
    return ForeignAnswer(
        source=f"JSON model file {path}",
        spec=spec,
        labels=classes,
        positive=classes[1] if family == "binary" and len(classes) == 2 else None,
        coef=w,
        intercept=np.broadcast_to(b, (w.shape[0],)).copy(),
    )


def _json_multiclass_intercept(path: str, obj: dict) -> tuple[str, float]:
    """A multiclass JSON model's intercept mode and scaling: ``"intercept"`` (``"none"``, the
    default; ``"free"``; ``"regularized"`` with ``"intercept_scaling"``, default 1), the modes
    of :class:`~qpsvm.MulticlassSVM`. Without one, nonzero ``"b"`` is refused when validated."""
    mode = obj.get("intercept", "none")
    if mode not in INTERCEPTS:
        raise InvalidInputError(f'{path}: "intercept" must be one of {INTERCEPTS}; got {mode!r}.')
    scaling = obj.get("intercept_scaling", 1.0)
    return mode, float(numbers(path, str(scaling), '"intercept_scaling"')[0])


def _read_text(path: str, text: str, n_features: int, ranking: bool) -> ForeignAnswer:
    values = numbers(path, text.replace(",", " "), "a text model (w, or w then b)")
    if values.size not in (n_features, n_features + 1) or (ranking and values.size != n_features):
        expected = f"{n_features}" + ("" if ranking else f" (w) or {n_features + 1} (w then b)")
        raise InvalidInputError(
            f"{path}: a text model holds {expected} numbers for data with {n_features} "
            f"features; it holds {values.size}. (A LIBLINEAR model starts with 'solver_type'.)"
        )
    with_b = values.size == n_features + 1
    spec = ProblemSpec(
        family="ranking" if ranking else "binary",
        C=None,
        intercept="free" if with_b else "none",
        conversions=[
            "text model: " + ("w then b, a free intercept" if with_b else "w, no intercept")
        ],
    )
    return ForeignAnswer(
        source=f"text model file {path}",
        spec=spec,
        labels=(),
        coef=values[None, :n_features],
        intercept=np.array([values[n_features] if with_b else 0.0]),
    )


def read_model_file(
    path: str, n_features: int, *, ranking: bool = False, format: str = "auto"
) -> ForeignAnswer:
    """Read a model file of any format in :data:`FORMATS`.

    Parameters
    ----------
    path : str
        The model file.
    n_features : int
        Number of features of the data it is checked on.
    ranking : bool, default=False
        Whether the data are ranking data (query groups): SVM-rank rather than SVM-light, and
        text / JSON models without a ``formulation`` taken as ranking models.
    format : str, default="auto"
        One of :data:`FORMATS`, or ``"auto"`` to detect it from the first line.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise InvalidInputError(f"model file {path!r} does not exist.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read the model file {path!r}: {exc}") from None
    if format == "auto":
        format = detect_format(text)
    if format not in FORMATS:
        raise InvalidInputError(f"format must be 'auto' or one of {FORMATS}, got {format!r}.")
    readers: dict[str, Any] = {
        "liblinear": lambda: read_liblinear_file(path, text),
        "libsvm": lambda: read_libsvm_file(path, text, n_features),
        "svmlight": lambda: read_svmlight_file(path, text, n_features, ranking=ranking),
        "json": lambda: _read_json(path, text, n_features, ranking),
        "text": lambda: _read_text(path, text, n_features, ranking),
    }
    answer = readers[format]()
    if answer.coef is not None and answer.coef.shape[1] != n_features:
        raise InvalidInputError(
            f"{path}: the model has {answer.coef.shape[1]} features, the data {n_features}."
        )
    return answer
