r"""SVM-light and SVM-rank model files (Joachims).

Both write the SVM-light format: a header of ``value # meaning`` lines (kernel type and
parameters, the number of training documents, the threshold :math:`b_0`), then one line per
support vector, ``alpha*y index:value ...``; the decision value is
:math:`\sum_k \alpha_k y_k K(x_k, x) - b_0`. A linear model holds its weight vector as a single
such line. SVM-light's classifier (``svm_learn``) minimises qpsvm's
:math:`\tfrac12\|w\|^2 + C\sum_i\xi_i` with labels :math:`\pm 1` (``-j`` multiplies ``C`` on the
positive examples: pass ``class_weight={1: j}``), in the dual with the kernels (``-t``) linear,
polynomial :math:`(s\, u\cdot v + r)^d` and RBF :math:`\exp(-g\|u - v\|^2)`; ``-b 0`` drops the
intercept (the model then records :math:`b_0 = 0`); its preference ranking (``-z p``, query
ids in the data) minimises :math:`\tfrac12\|w\|^2 + C\sum_p \xi_p` over the pairs of each
query with different targets, qpsvm's :class:`~qpsvm.RankingSVM`. SVM-rank minimises
:math:`\tfrac12\|w\|^2 + \tfrac{c}{n_q}\sum_p \xi_p` over the preference pairs of ``n_q`` queries
(:func:`qpsvm.conventions.C_from_svmrank`). Neither records its ``C`` / ``-c``.

SVM-light stores feature values as 32-bit floats (``FVAL``): the problem it solved is stated on
the data rounded to float32, as it read them (``ProblemSpec.float32_features``). Its sparse dot
product multiplies two such values in single precision before summing in double, so on data
whose products need more than 24 bits its kernel itself is rounded at about ``6e-8`` relative,
and it caches kernel values as 32-bit floats (``CFLOAT``): its kernel answers stay about ``1e-7``
relative from the optimum whatever its ``-e``, which the certificate measures.
"""

from __future__ import annotations

import re

import numpy as np

from qpsvm.exceptions import InvalidInputError, UnsupportedProblemError
from qpsvm.interop.answer import ForeignAnswer, ProblemSpec

__all__ = ["read_svmlight_file"]

_HEADER_LINES = 10
#: SVM-light's last release; SVM-rank writes the same format under a later version (V6.20), so a
#: ranking model of version V6.02 or earlier is SVM-light's own ``-z p`` (``C`` per pair).
LAST_SVM_LIGHT = (6, 2)
#: SVM-light's kernel types (``-t``) -> qpsvm's kernel names (``None``: cannot be certified).
_KERNELS = {0: "linear", 1: "poly", 2: "rbf", 3: None, 4: None}
_KERNEL_WORDS = {3: "sigmoid kernel (-t 3), which is not positive semidefinite", 4: "user kernel"}


def read_svmlight_file(path: str, text: str, n_features: int, *, ranking: bool) -> ForeignAnswer:
    """Read an SVM-light / SVM-rank model file.

    Parameters
    ----------
    path : str
        The file's name, for messages.
    text : str
        Its contents.
    n_features : int
        Number of features of the data.
    ranking : bool
        Whether the model is SVM-rank's (the data have query groups) or SVM-light's classifier.

    Returns
    -------
    ForeignAnswer
        A linear model as its weight vector; a kernel model (SVM-light's classifier with a
        polynomial or RBF kernel) as its dual coefficients ``alpha*y`` over its support vectors.
    """
    lines = text.splitlines()
    values = [line.split("#")[0].strip() for line in lines[1 : 1 + _HEADER_LINES]]
    if len(values) < _HEADER_LINES:
        raise InvalidInputError(f"{path}: an SVM-light model has {_HEADER_LINES} header lines.")
    try:
        kernel_type, degree, highest = int(values[0]), int(values[1]), int(values[6])
        gamma, s, r, threshold = (float(values[k]) for k in (2, 3, 4, 9))
    except ValueError:
        raise InvalidInputError(f"{path}: the header's numbers cannot be read.") from None
    kernel = _KERNELS.get(kernel_type, None)
    if kernel is None:
        what = _KERNEL_WORDS.get(kernel_type, f"kernel type {kernel_type}")
        raise UnsupportedProblemError(
            f"{path}: SVM-light's {what} cannot be certified; qpsvm certifies the linear (-t 0), "
            "polynomial (-t 1) and RBF (-t 2) kernels."
        )
    if ranking and kernel != "linear":
        raise UnsupportedProblemError(
            f"{path}: a ranking model with the {kernel} kernel; qpsvm's ranking SVM is linear."
        )
    if highest > n_features:
        raise InvalidInputError(
            f"{path}: the model uses feature {highest}, the data have {n_features} features."
        )
    alpha_y, SV = _support_vectors(path, lines[1 + _HEADER_LINES :], n_features)
    svm_rank = ranking and _version(lines[0]) > LAST_SVM_LIGHT
    tool = "SVM-rank" if svm_rank else "SVM-light"
    spec = ProblemSpec(
        family="ranking" if ranking else "binary",
        C=None,
        intercept="none" if ranking or threshold == 0.0 else "free",
        kernel=kernel,
        gamma=None if kernel == "linear" else (s if kernel == "poly" else gamma),
        degree=degree,
        coef0=r if kernel == "poly" else 0.0,
        C_convention="svmrank" if svm_rank else "qpsvm",
        float32_features=True,
        conversions=[f"{tool} stores features as 32-bit floats: the data rounded to float32"],
    )
    if kernel == "linear":
        spec.conversions.append(f"{tool} linear model: w is the sum of alpha*y times its SVs")
    else:
        params = f"s={s:g}, r={r:g}, d={degree}" if kernel == "poly" else f"g={gamma:g}"
        spec.conversions.append(f"{tool} {kernel} kernel ({params}) as recorded")
    if ranking and not svm_rank:
        spec.conversions.append(
            f"{lines[0].strip()}: SVM-light's preference ranking (-z p), C per pair as qpsvm's"
        )
    if not ranking:
        spec.conversions.append("labels: SVM-light's +1 is the positive class; b = -threshold")
        if threshold == 0.0:
            spec.conversions.append(
                "threshold exactly 0: the unbiased hyperplane (-b 0), no intercept"
            )
    answer = ForeignAnswer(
        source=f"{tool} model file {path}" + ("" if kernel == "linear" else f" ({kernel})"),
        spec=spec,
        labels=() if ranking else (1, -1),
        positive=None if ranking else 1,
        intercept=np.array([0.0 if ranking else -threshold]),
    )
    if kernel == "linear":
        answer.coef = (alpha_y @ SV)[None, :]
    else:
        answer.dual_coef, answer.support_vectors = alpha_y[None, :], SV
    return answer


def _version(line: str) -> tuple[int, ...]:
    """The version ``V6.02`` of a header line ``SVM-light Version V6.02`` as ``(6, 2)``."""
    found = re.search(r"V(\d+)\.(\d+)", line)
    return (0, 0) if found is None else (int(found[1]), int(found[2]))


def _support_vectors(path: str, lines: list[str], n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``alpha*y`` column and the support vectors (dense rows) of the body ``lines``."""
    alpha_y, rows = [], []
    for k, line in enumerate(lines):
        words = line.split("#")[0].split()
        if not words:
            continue
        row = np.zeros(n_features)
        try:
            alpha_y.append(float(words[0]))
            for item in words[1:]:
                index, value = item.split(":")
                if not 1 <= int(index) <= n_features:
                    raise IndexError(index)
                row[int(index) - 1] = float(value)
        except (ValueError, IndexError):
            raise InvalidInputError(
                f"{path}: support vector line {k + 1} is not 'alpha*y index:value ...' with "
                f"indices 1..{n_features}."
            ) from None
        rows.append(row)
    return np.array(alpha_y), np.array(rows).reshape(len(rows), n_features)
