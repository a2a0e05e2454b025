r"""Validate another solver's answer on the problem it actually solved.

:func:`validate` reads a model (:mod:`qpsvm.interop.answer`), states the problem that tool
minimised as a qpsvm formulation — or one per binary sub-problem for one-vs-rest and one-vs-one
models — and certifies the answer against it from the data. It never judges a different problem:
a model whose problem qpsvm cannot state raises :class:`~qpsvm.UnsupportedProblemError`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from qpsvm._validation import check_data, check_sample_weight
from qpsvm.conventions import C_from_svmrank
from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.formulations.pieces.intercepts import with_bias_column
from qpsvm.interop.answer import ForeignAnswer, ProblemSpec
from qpsvm.interop.files import read_model_file
from qpsvm.interop.liblinear import from_liblinear
from qpsvm.interop.libsvm import from_libsvm
from qpsvm.interop.scikit_learn import from_estimator, is_estimator
from qpsvm.verify.certificate import DEFAULT_TOL

__all__ = ["Part", "Validation", "read_answer", "validate"]

#: Support vectors of LIBSVM model files are printed with 8 significant digits: a data row
#: matches when it is this close, relative to its norm.
SV_MATCH_RTOL = 1e-6
#: A flipped answer "explains" a failed one when its relative gap is this many times smaller.
SIGN_FLIP_FACTOR = 100.0


@dataclass
class Part:
    """One certified problem of a validation: the whole model, or one binary sub-problem.

    Attributes
    ----------
    name : str
        ``"model"``, ``"3 vs rest"`` or ``"1 vs 2"``.
    formulation : Formulation
        The problem stated by qpsvm.
    certificate : Certificate
        The answer's certificate on it.
    comparison : Comparison or None
        With ``exact=True``: the answer against qpsvm's exact optimum.
    note : str or None
        What else the certificate showed, e.g. that the answer certifies with its sign flipped.
    """

    name: str
    formulation: Any
    certificate: Any
    comparison: Any = None
    note: str | None = None


@dataclass
class Validation:
    """The verdict of :func:`validate`: the problem built, the conversions, a certificate per part.

    ``passed`` holds when every part's certificate passes.
    """

    source: str
    spec: ProblemSpec
    parts: list[Part] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Whether every part is certified."""
        return all(part.certificate.passed for part in self.parts)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        parts = []
        for part in self.parts:
            cert = part.certificate
            entry = {
                "name": part.name,
                "formulation": type(part.formulation).__name__,
                "passed": bool(cert.passed),
                "primal_objective": cert.primal_objective,
                "dual_objective": cert.dual_objective,
                "gap": cert.gap,
                "relative_gap": cert.relative_gap,
                "distance_bound": cert.distance_bound,
                "note": part.note,
            }
            if part.comparison is not None:
                cmp = part.comparison
                entry["exact"] = {
                    "suboptimality": cmp.suboptimality,
                    "relative_suboptimality": cmp.relative_suboptimality,
                    "distance": cmp.distance,
                    "intercept_distance": cmp.intercept_distance,
                }
            parts.append(
                {
                    k: (v if not isinstance(v, float) or np.isfinite(v) else str(v))
                    for k, v in entry.items()
                }
            )
        return {
            "source": self.source,
            "problem": self.spec.describe(),
            "conversions": list(self.spec.conversions),
            "passed": self.passed,
            "parts": parts,
        }

    def __str__(self) -> str:
        lines = [self.source, f"problem: {self.spec.describe()}", "conversions:"]
        lines += [f"  - {text}" for text in self.spec.conversions]
        lines.append(f"{'part':<16}{'P (upper)':>14}{'D (lower)':>14}{'rel. gap':>11}  certified")
        for part in self.parts:
            c = part.certificate
            lines.append(
                f"{part.name:<16}{c.primal_objective:>14.8g}{c.dual_objective:>14.8g}"
                f"{c.relative_gap:>11.2e}  {'yes' if c.passed else 'NO'}"
            )
            if part.comparison is not None:
                cmp = part.comparison
                lines.append(
                    f"{'':<16}exact: P - P* = {cmp.suboptimality:.3e}, ||w - w*|| = "
                    f"{cmp.distance:.3e}, |b - b*| = {cmp.intercept_distance:.3e}"
                )
            if part.note:
                lines.append(f"{'':<16}{part.note}")
        lines.append("verdict: " + ("certified" if self.passed else "NOT certified"))
        return "\n".join(lines)


def read_answer(
    model: Any, X: Any, y: Any = None, *, groups: Any = None, format: str = "auto"
) -> ForeignAnswer:
    """Read ``model`` (any form :func:`validate` takes) as a :class:`ForeignAnswer`."""
    if isinstance(model, ForeignAnswer):
        return model
    if isinstance(model, str | os.PathLike):
        return read_model_file(
            os.fspath(model), X.shape[1], ranking=groups is not None, format=format
        )
    module = type(model).__module__.split(".")[0]
    if module == "liblinear":
        return from_liblinear(model)
    if module == "libsvm":
        return from_libsvm(model)
    if is_estimator(model):
        return from_estimator(model, y=None if y is None else np.asarray(y), n_samples=X.shape[0])
    raise InvalidTypeError(
        f"cannot read a {type(model).__name__}: pass a fitted scikit-learn estimator, a model "
        "of the official LIBLINEAR / LIBSVM bindings, or a model file (LIBLINEAR, LIBSVM, "
        "SVM-light / SVM-rank, JSON, text)."
    )


def _settle(spec: ProblemSpec, value: float | None, name: str, recorded: float | None) -> float:
    """The model's own value of ``C`` or ``epsilon``, or the user's where the model has none."""
    if recorded is not None:
        if value is not None and not np.isclose(value, recorded, rtol=1e-12, atol=0):
            raise InvalidInputError(
                f"the model records {name}={recorded:g}; you passed {name}={value:g}."
            )
        return recorded
    if value is None:
        raise InvalidInputError(
            f"the model does not record its {name}: pass {name}= (--{name} on the command line)."
        )
    spec.conversions.append(f"{name}={value:g} as given (the model does not record it)")
    return float(value)


def _weights(
    spec: ProblemSpec, labels: np.ndarray, base: np.ndarray, rest: Any = None
) -> np.ndarray:
    """Per-sample weights: ``base`` times the class weight of each label (``rest``: the factor
    of every label not in ``spec.class_weight``'s positive class, for one-vs-rest)."""
    if not spec.class_weight:
        return base
    factors = np.array([spec.class_weight.get(v, 1.0) for v in labels.tolist()])
    if rest is not None:
        factors = np.where(labels == rest, factors, 1.0)
    return base * factors


def _binary_linear(
    spec: ProblemSpec, X: Any, y_pm: np.ndarray, s: np.ndarray, w: np.ndarray, b: float
) -> tuple[Any, dict[str, Any]]:
    from qpsvm.formulations import SoftMarginPrimal

    kwargs: dict[str, Any] = {"loss": spec.loss, "penalty": spec.penalty}
    if spec.l1_ratio is not None:
        kwargs["l1_ratio"] = spec.l1_ratio
    if spec.intercept == "regularized":
        B = spec.intercept_scaling
        X, w, b = with_bias_column(X, B), np.append(w, b / B), 0.0
    free = spec.intercept == "free"
    f = SoftMarginPrimal(X, y_pm, C=spec.C, fit_intercept=free, sample_weight=s, **kwargs)
    return f, {"w": w, "b": float(b) if free else None}


def _regression(
    spec: ProblemSpec, X: Any, y: np.ndarray, s: np.ndarray, answer: ForeignAnswer
) -> tuple[Any, dict[str, Any]]:
    """The epsilon-insensitive regression the model solved, and its answer."""
    from qpsvm.formulations import SupportVectorRegression

    common = {"C": spec.C, "epsilon": spec.epsilon, "loss": spec.loss, "sample_weight": s}
    if answer.dual_coef is None:
        w, b = answer.coef[0], float(answer.intercept[0])
        if spec.intercept == "regularized":
            B = spec.intercept_scaling
        X, w, b = with_bias_column(X, B), np.append(w, b / B), 0.0
        free = spec.intercept == "free"
        f = SupportVectorRegression(X, y, intercept="free" if free else "none", **common)
        return f, {"w": w, "b": b if free else None}
    rows = answer.support if answer.support is not None else _match_rows(X, answer.support_vectors)
    alpha = np.zeros(X.shape[0])
    alpha[rows] = answer.dual_coef[0]
    params = {} if spec.kernel == "linear" else {"gamma": spec.gamma, "coef0": spec.coef0}
    if spec.kernel == "poly":
        params["degree"] = spec.degree
    f = SupportVectorRegression(X, y, kernel=spec.kernel, **params, **common)
    return f, {"alpha": alpha, "b": float(answer.intercept[0])}


def _match_rows(X: Any, SV: np.ndarray) -> np.ndarray:
    """Training rows of the support vectors of a model file (each row used once)."""
    from scipy.spatial import cKDTree

    dense = X.toarray() if sp.issparse(X) else np.asarray(X)
    k = min(8, dense.shape[0])
    dist, idx = cKDTree(dense).query(SV, k=k)
    dist, idx = dist.reshape(len(SV), k), idx.reshape(len(SV), k)
    used: set[int] = set()
    rows = np.empty(len(SV), dtype=np.intp)
    for t in range(len(SV)):
        limit = SV_MATCH_RTOL * (1.0 + np.linalg.norm(SV[t]))
        free = [
            int(i) for d, i in zip(dist[t], idx[t], strict=True) if d <= limit and i not in used
        ]
        if not free:
            raise InvalidInputError(
                f"support vector {t + 1} of the model is not a row of the data: validate the model "
                "on the data it was trained on."
            )
        rows[t] = free[0]
        used.add(free[0])
    return rows


def _kernel_part(
    spec: ProblemSpec,
    X: Any,
    rows: np.ndarray,
    y_pm: np.ndarray,
    s: np.ndarray,
    sv_rows: np.ndarray,
    sv_coef: np.ndarray,
    b: float,
) -> tuple[Any, dict[str, Any]]:
    """The binary kernel dual on ``rows`` with the support vectors ``sv_rows`` (data rows)."""
    from qpsvm.formulations import SoftMarginDual

    position = {int(r): k for k, r in enumerate(rows.tolist())}
    alpha = np.zeros(len(rows))
    for r, coef in zip(sv_rows.tolist(), sv_coef.tolist(), strict=True):
        k = position[int(r)]
        alpha[k] = coef * y_pm[k]
    params = {} if spec.kernel == "linear" else {"gamma": spec.gamma, "coef0": spec.coef0}
    if spec.kernel == "poly":
        params["degree"] = spec.degree
    free = spec.intercept == "free"
    f = SoftMarginDual(
        X[rows],
        y_pm,
        C=spec.C,
        kernel=spec.kernel,
        fit_intercept=free,
        sample_weight=s[rows],
        **params,
    )
    return f, {"alpha": alpha, "b": float(b) if free else None}


def _parts(answer: ForeignAnswer, X: Any, y: np.ndarray | None, groups: Any, s: np.ndarray):
    """Yield ``(name, formulation, candidate keywords)`` of every problem the model solved."""
    spec = answer.spec
    if spec.family == "ranking":
        from qpsvm.formulations import RankingSVM

        yield "model", RankingSVM(X, y=y, groups=groups, C=spec.C), {"w": answer.coef[0]}
        return
    if y is None:
        raise InvalidInputError("validating a classifier needs the labels y.")
    if spec.family == "regression":
        yield "model", *_regression(spec, X, y, s, answer)
        return
    labels = _labels(answer, y)
    if spec.multi_class in ("crammer_singer", "weston_watkins"):
        yield _multiclass_part(answer, X, y, s, labels)
    elif answer.dual_coef is None:
        yield from _linear_parts(answer, X, y, s, labels)
    else:
        yield from _kernel_parts(answer, X, y, s, labels)


def _labels(answer: ForeignAnswer, y: np.ndarray) -> tuple:
    """The model's labels, in its order, checked to cover the data's."""
    labels = tuple(answer.labels) or tuple(np.unique(y).tolist())
    unknown = set(np.unique(y).tolist()) - set(labels)
    if unknown:
        raise InvalidInputError(
            f"the data have labels {sorted(unknown)} the model does not know ({list(labels)})."
        )
    if answer.spec.family == "binary" and len(np.unique(y)) != 2:
        raise InvalidInputError(
            f"{answer.source} is a binary model; the data have {len(np.unique(y))} labels."
        )
    return labels


def _multiclass_part(
    answer: ForeignAnswer, X: Any, y: np.ndarray, s: np.ndarray, labels: tuple
) -> tuple[str, Any, dict[str, Any]]:
    """The one multiclass problem (Crammer-Singer or Weston-Watkins) and its ``W``, rows in the
    formulation's class order, with the spec's loss, penalty and intercept mode: a regularised
    intercept becomes a feature column ``B``, a free one an unpenalised column 1, and without
    one the model's intercepts must all be 0 (a nonzero one is refused, never dropped)."""
    from qpsvm.formulations import MulticlassSVM

    spec = answer.spec
    f = MulticlassSVM(
        X,
        y,
        C=spec.C,
        variant=spec.multi_class,
        sample_weight=_weights(spec, y, s),
        loss=spec.loss,
        penalty=spec.penalty,
        l1_ratio=spec.l1_ratio if spec.l1_ratio is not None else 0.5,
        intercept=spec.intercept,
        intercept_scaling=spec.intercept_scaling if spec.intercept == "regularized" else 1.0,
    )
    order = [labels.index(c) for c in f.classes_.tolist()]
    if not f.intercept.fitted and np.any(answer.intercept != 0.0):
        raise InvalidInputError(
            f"{answer.source} has nonzero intercepts {answer.intercept.tolist()} but states a "
            "multiclass problem without intercept; qpsvm does not judge it without them. A qpsvm "
            'JSON model names its mode: "intercept": "free" or "regularized" (with '
            '"intercept_scaling").'
        )
    # W over the problem's features (the intercepts' column last): what f.compare reads too
    return "model", f, {"w": f.joint_weights(answer.coef[order], answer.intercept[order])}


def _linear_parts(answer: ForeignAnswer, X: Any, y: np.ndarray, s: np.ndarray, labels: tuple):
    """Yield the binary problems of a linear model: one per class against the rest (``ovr``),
    or the one binary problem."""
    spec = answer.spec
    if spec.multi_class == "ovr":
        for k, label in enumerate(labels):
            y_pm = np.where(y == label, 1.0, -1.0)
            weights = _weights(spec, y, s, rest=label)
            f, cand = _binary_linear(spec, X, y_pm, weights, answer.coef[k], answer.intercept[k])
            yield f"{label!r} vs rest", f, cand
        return
    positive = answer.positive if answer.positive is not None else max(labels)
    y_pm = np.where(y == positive, 1.0, -1.0)
    f, cand = _binary_linear(
        spec, X, y_pm, _weights(spec, y, s), answer.coef[0], answer.intercept[0]
    )
    yield "model", f, cand


def _kernel_parts(answer: ForeignAnswer, X: Any, y: np.ndarray, s: np.ndarray, labels: tuple):
    """Yield the kernel duals of a libsvm model: the binary problem, or one per pair of classes
    (one-vs-one, libsvm's layout of ``dual_coef`` by blocks of support vectors)."""
    spec = answer.spec
    sv_rows = (
        answer.support if answer.support is not None else _match_rows(X, answer.support_vectors)
    )
    if len(labels) == 2:
        rows = np.arange(X.shape[0])
        y_pm = np.where(y == answer.positive, 1.0, -1.0)
        yield (
            "model",
            *_kernel_part(
                spec,
                X,
                rows,
                y_pm,
                _weights(spec, y, s),
                sv_rows,
                answer.dual_coef[0],
                answer.intercept[0],
            ),
        )
        return
    start = np.concatenate([[0], np.cumsum(answer.n_support)])
    pair = 0
    for i in range(len(labels)):
        for j in range(i + 1, len(labels)):
            rows = np.flatnonzero((y == labels[i]) | (y == labels[j]))
            y_pm = np.where(y[rows] == labels[i], 1.0, -1.0)
            si, sj = slice(start[i], start[i + 1]), slice(start[j], start[j + 1])
            part_rows = np.concatenate([sv_rows[si], sv_rows[sj]])
            part_coef = np.concatenate([answer.dual_coef[j - 1, si], answer.dual_coef[i, sj]])
            weights = _weights(spec, y, s)
            f, cand = _kernel_part(
                spec, X, rows, y_pm, weights, part_rows, part_coef, answer.intercept[pair]
            )
            yield f"{labels[i]!r} vs {labels[j]!r}", f, cand
            pair += 1


def _flip_note(f: Any, cand: dict[str, Any], cert: Any, tol: float) -> str | None:
    """Say so when the linear answer with its sign flipped certifies far better than as given."""
    if "alpha" in cand:
        return None
    flipped = {k: None if v is None else -np.asarray(v) for k, v in cand.items()}
    other = f.certify(**flipped, tol=tol)
    if other.passed or other.relative_gap * SIGN_FLIP_FACTOR < cert.relative_gap:
        return (
            f"with its sign flipped the answer's relative gap is {other.relative_gap:.2e}: the "
            "model's positive class is probably the other label (tools differ: LIBLINEAR and "
            "LIBSVM take their first label, scikit-learn and qpsvm the larger)."
        )
    return None


def validate(
    model: Any,
    X: Any,
    y: Any = None,
    *,
    groups: Any = None,
    C: float | None = None,
    epsilon: float | None = None,
    class_weight: dict | None = None,
    sample_weight: Any = None,
    format: str = "auto",
    tol: float = DEFAULT_TOL,
    exact: bool = False,
) -> Validation:
    r"""Certify another solver's answer on the problem it actually solved.

    The model's problem :math:`\min_w \text{penalty}(w) + C\sum_i s_i \text{loss}_i(w)` is read
    from the model (loss, penalty, intercept mode, ``C`` convention, class weights, label order,
    kernel and its parameters), stated as a qpsvm formulation per binary sub-problem, and the
    answer is certified against it from the data.

    Parameters
    ----------
    model : estimator, LIBLINEAR / LIBSVM model object, path, or ForeignAnswer
        A fitted scikit-learn ``LinearSVC``, ``SVC``, ``SGDClassifier`` (...), a model of the
        official LIBLINEAR / LIBSVM bindings, or a model file (LIBLINEAR, LIBSVM, SVM-light /
        SVM-rank, JSON, text; see :mod:`qpsvm.interop.files`).
    X : array-like or sparse matrix of shape (n_samples, n_features)
        The training data.
    y : array-like of shape (n_samples,), optional
        Labels (classifiers) or relevance labels (ranking, with ``groups``).
    groups : array-like, optional
        Query ids of ranking data.
    C : float, optional
        The tool's ``C`` (SVM-rank: its ``-c``), for models that do not record it; must agree
        with a model that does.
    epsilon : float, optional
        The insensitivity of a regression model that does not record it (LIBLINEAR / LIBSVM
        model files: ``-p``); must agree with a model that does.
    class_weight : dict, optional
        Label -> factor on ``C`` (LIBLINEAR / LIBSVM ``-wi``), for model files, which do not
        record them; must agree with a model that does.
    sample_weight : array-like, optional
        The sample weights the model was trained with.
    format : str, default="auto"
        The model file's format (see :data:`qpsvm.interop.files.FORMATS`).
    tol : float, default=1e-9
        Relative gap to certify at.
    exact : bool, default=False
        Also solve each problem exactly and report ``P - P*``, ``||w - w*||`` and ``|b - b*|``.

    Returns
    -------
    Validation
        The problem built, the conversions made, and a certificate per part.

    Raises
    ------
    UnsupportedProblemError
        The model solves a problem qpsvm cannot state (logistic loss, nu-SVM, a sigmoid kernel...).
    """
    X = check_data(X)
    answer = read_answer(model, X, y, groups=groups, format=format)
    spec = answer.spec
    _settle_spec(spec, groups, C, epsilon, class_weight)
    if spec.float32_features:
        X = X.astype(np.float32).astype(np.float64)
    y_arr = None if y is None else np.asarray(y)
    s = check_sample_weight(sample_weight, X.shape[0])
    result = Validation(source=answer.source, spec=spec)
    for name, f, cand in _parts(answer, X, y_arr, groups, s):
        result.parts.append(_certify_part(name, f, cand, spec, tol, exact))
    return result


def _settle_spec(
    spec: ProblemSpec,
    groups: Any,
    C: float | None,
    epsilon: float | None,
    class_weight: dict | None,
) -> None:
    """Complete ``spec`` (in place) with the constants the user passed, checked against those
    the model records (an SVM-rank ``-c`` converted over the queries)."""
    if spec.C is None and C is not None and spec.C_convention == "svmrank":
        if groups is None:
            raise InvalidInputError("an SVM-rank model needs the query ids: pass groups=.")
        n_queries = int(np.unique(np.asarray(groups)).size)
        spec.conversions.append(
            f"SVM-rank -c {C:g} over {n_queries} queries: C = c / n_queries = {C / n_queries:.6g}"
        )
        C = C_from_svmrank(C, n_queries)
    spec.C = _settle(spec, C, "C", spec.C)
    if spec.family == "regression":
        spec.epsilon = _settle(spec, epsilon, "epsilon", spec.epsilon)
    if class_weight is not None:
        if spec.class_weight is not None and spec.class_weight != dict(class_weight):
            raise InvalidInputError(
                f"the model records class weights {spec.class_weight}; you passed {class_weight}."
            )
        spec.class_weight = dict(class_weight)


def _certify_part(
    name: str, f: Any, cand: dict[str, Any], spec: ProblemSpec, tol: float, exact: bool
) -> Part:
    """One problem's certificate at ``tol`` (a note when a binary answer fails as if its sign
    were flipped; with ``exact``, the comparison with the exact optimum)."""
    cert = f.certify(**cand, tol=tol)
    part = Part(name, f, cert)
    if not cert.passed and spec.family == "binary":
        part.note = _flip_note(f, cand, cert, tol)
    if exact:
        from qpsvm.solution import Candidate

        part.comparison = f.compare(Candidate(**cand))
    return part
