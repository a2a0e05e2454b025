r"""SVM-light and SVM-rank model files (Joachims).

Both write the SVM-light format: a header of ``value # meaning`` lines (kernel type and
parameters, the threshold :math:`b_0`), then one line per support vector, ``alpha*y index:value
...``; the decision value is :math:`\sum_k \alpha_k y_k K(x_k, x) - b_0`. A linear model holds its
weight vector as a single such line. SVM-light's classifier minimises qpsvm's
:math:`\tfrac12\|w\|^2 + C\sum_i\xi_i` with labels :math:`\pm 1`; SVM-rank minimises
:math:`\tfrac12\|w\|^2 + \tfrac{c}{n_q}\sum_p \xi_p` over the preference pairs of ``n_q``
queries (:func:`qpsvm.conventions.C_from_svmrank`). Neither records its ``C`` / ``-c``.
"""

from __future__ import annotations

import numpy as np

from qpsvm.exceptions import InvalidInputError, UnsupportedProblemError
from qpsvm.interop.answer import ForeignAnswer, ProblemSpec

__all__ = ["read_svmlight_file"]

_HEADER_LINES = 10


def read_svmlight_file(path: str, text: str, n_features: int, *, ranking: bool) -> ForeignAnswer:
    """Read an SVM-light / SVM-rank model file with a linear kernel.

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
    """
    lines = text.splitlines()
    values = [line.split("#")[0].strip() for line in lines[1 : 1 + _HEADER_LINES]]
    if len(values) < _HEADER_LINES:
        raise InvalidInputError(f"{path}: an SVM-light model has {_HEADER_LINES} header lines.")
    if values[0] != "0":
        raise UnsupportedProblemError(
            f"{path}: SVM-light kernel type {values[0]}; qpsvm reads linear models (-t 0) of "
            "SVM-light and SVM-rank."
        )
    try:
        threshold = float(values[9])
        highest = int(values[6])
    except ValueError:
        raise InvalidInputError(f"{path}: the header's numbers cannot be read.") from None
    if highest > n_features:
        raise InvalidInputError(
            f"{path}: the model uses feature {highest}, the data have {n_features} features."
        )
    w = np.zeros(n_features)
    for k, line in enumerate(lines[1 + _HEADER_LINES :]):
        words = line.split("#")[0].split()
        if not words:
            continue
        try:
            alpha_y = float(words[0])
            for item in words[1:]:
                index, value = item.split(":")
                w[int(index) - 1] += alpha_y * float(value)
        except (ValueError, IndexError):
            raise InvalidInputError(
                f"{path}: support vector line {k + 1} is not 'alpha*y index:value ...'."
            ) from None
    tool = "SVM-rank" if ranking else "SVM-light"
    spec = ProblemSpec(
        family="ranking" if ranking else "binary",
        C=None,
        intercept="none" if ranking else "free",
        C_convention="svmrank" if ranking else "qpsvm",
        conversions=[f"{tool} linear model: w is the sum of alpha*y times its support vectors"],
    )
    if not ranking:
        spec.conversions.append("labels: SVM-light's +1 is the positive class; b = -threshold")
    return ForeignAnswer(
        source=f"{tool} model file {path}",
        spec=spec,
        labels=(1, -1) if not ranking else (),
        positive=1 if not ranking else None,
        coef=w[None, :],
        intercept=np.array([-threshold if not ranking else 0.0]),
    )
