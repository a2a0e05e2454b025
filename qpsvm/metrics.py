r"""Ranking metrics: fraction of correctly ordered pairs, Kendall's tau per group, NDCG@k.

All take the items' true relevance ``y_true`` and predicted scores ``y_score`` (scikit-learn's
order) plus optional query ``groups``: pairs and rankings are only formed inside a group, as
in :class:`~qpsvm.RankingSVM`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.stats import kendalltau

from qpsvm._validation import _check_label_vector, check_vector
from qpsvm.exceptions import InvalidInputError, InvalidTypeError
from qpsvm.formulations.ranking import check_pairs, make_pairs

__all__ = ["kendall_tau", "ndcg_at_k", "pairwise_accuracy"]


def _scores(y_score: Any) -> np.ndarray:
    return check_vector(y_score, np.size(y_score), "y_score")


def _group_slices(groups: Any, n: int) -> list[np.ndarray]:
    """Indices of each group, in the sorted order of the group identifiers."""
    if groups is None:
        return [np.arange(n)]
    g = _check_label_vector(groups, n, "groups")
    try:
        _, codes = np.unique(g, return_inverse=True)
    except TypeError as exc:
        raise InvalidTypeError(f"groups must be mutually comparable: {exc}") from None
    order = np.argsort(codes.ravel(), kind="stable")
    bounds = np.flatnonzero(np.diff(codes.ravel()[order])) + 1
    return np.split(order, bounds)


def pairwise_accuracy(
    y_true: Any,
    y_score: Any,
    groups: Any = None,
    *,
    pairs: Any = None,
    pair_weight: Any = None,
) -> float:
    r"""Weighted fraction of preference pairs the scores order correctly.

    .. math::

        \frac{\sum_p s_p \big([f_i > f_j] + \tfrac12 [f_i = f_j]\big)}{\sum_p s_p}

    over pairs ``p = (i, j)``, ``i`` preferred: the explicit ``pairs``, or every pair inside a
    group with ``y_i > y_j`` (:func:`~qpsvm.formulations.ranking.make_pairs`). Ties count one
    half (the convention of ROC AUC), so constant scores give 0.5.

    Parameters
    ----------
    y_true : array-like of shape (n_items,) or None
        Relevance labels; ``None`` when ``pairs`` are given.
    y_score : array-like of shape (n_items,)
        Predicted scores ``f``.
    groups : array-like of shape (n_items,), optional
        Query identifiers for ``y_true``.
    pairs : array-like of int, shape (n_pairs, 2), optional
        Rows ``(preferred, other)``, instead of ``y_true``.
    pair_weight : array-like of shape (n_pairs,), optional
        Weights ``s_p >= 0`` (default 1).

    Returns
    -------
    float
    """
    f = _scores(y_score)
    if pairs is not None:
        if y_true is not None or groups is not None:
            raise InvalidInputError("give either pairs=... or y_true (with groups), not both.")
        P = check_pairs(pairs, f.size)
    elif y_true is not None:
        if np.size(y_true) != f.size:
            raise InvalidInputError(
                f"y_true has {np.size(y_true)} labels but y_score has {f.size} scores."
            )
        P = make_pairs(y_true, groups)
    else:
        raise InvalidInputError("give the preferences: y_true (with groups) or pairs=... .")
    s = np.ones(P.shape[0]) if pair_weight is None else pair_weight
    s = check_vector(s, P.shape[0], "pair_weight", nonnegative=True)
    total = math.fsum(s.tolist())
    if total <= 0:
        raise InvalidInputError("pair_weight is zero everywhere; at least one must be > 0.")
    diff = f[P[:, 0]] - f[P[:, 1]]
    credit = np.where(diff > 0, 1.0, np.where(diff == 0, 0.5, 0.0))
    return math.fsum((s * credit).tolist()) / total


def kendall_tau(y_true: Any, y_score: Any, groups: Any = None) -> np.ndarray:
    r"""Kendall's :math:`\tau_b` between relevance and scores, one value per group.

    :math:`\tau_b = (n_c - n_d) / \sqrt{(n_0 - n_1)(n_0 - n_2)}` with concordant / discordant
    pair counts :math:`n_c, n_d` and ties corrected (:func:`scipy.stats.kendalltau`). A group
    with fewer than two items, or constant labels or scores, has no defined tau: ``nan``.

    Parameters
    ----------
    y_true : array-like of shape (n_items,)
    y_score : array-like of shape (n_items,)
    groups : array-like of shape (n_items,), optional
        Query identifiers (default: one group).

    Returns
    -------
    ndarray of shape (n_groups,)
        In the sorted order of the distinct group identifiers.
    """
    f = _scores(y_score)
    y = check_vector(y_true, f.size, "y_true")
    out = []
    for idx in _group_slices(groups, f.size):
        yg, fg = y[idx], f[idx]
        if idx.size < 2 or np.all(yg == yg[0]) or np.all(fg == fg[0]):
            out.append(math.nan)
        else:
            out.append(float(kendalltau(yg, fg).statistic))
    return np.array(out)


def _dcg(gains: np.ndarray, scores: np.ndarray, k: int) -> float:
    """DCG@k of ``gains`` ranked by descending ``scores``, gains averaged over tied scores."""
    order = np.argsort(-scores, kind="stable")
    g, s = gains[order], scores[order]
    block = np.concatenate([[0], np.cumsum(s[1:] != s[:-1])])
    g = (np.bincount(block, g) / np.bincount(block))[block]
    top = min(k, g.size)
    return math.fsum((g[:top] / np.log2(np.arange(2, top + 2))).tolist())


def ndcg_at_k(
    y_true: Any, y_score: Any, groups: Any = None, k: int = 10, gain: str = "exponential"
) -> float:
    r"""Mean NDCG@k over the groups that have a relevant item.

    .. math::

        \mathrm{DCG@k} = \sum_{r=1}^{k} \frac{g(y_{(r)})}{\log_2(r + 1)}, \qquad
        \mathrm{NDCG@k} = \mathrm{DCG@k} / \mathrm{IDCG@k},

    with items ranked by descending score, gain :math:`g(y) = 2^y - 1` (``"exponential"``, as in
    LETOR's evaluation) or :math:`g(y) = y` (``"linear"``, as scikit-learn's ``ndcg_score``),
    and IDCG the DCG of the ideal order. Tied scores share the average gain of their block, as
    in scikit-learn. Groups whose IDCG is 0 (no relevant item) are skipped.

    Parameters
    ----------
    y_true : array-like of shape (n_items,)
        Relevance labels ``>= 0``.
    y_score : array-like of shape (n_items,)
    groups : array-like of shape (n_items,), optional
        Query identifiers (default: one group).
    k : int, default=10
        Cut-off, ``k >= 1``.
    gain : {"exponential", "linear"}, default="exponential"

    Returns
    -------
    float
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise InvalidTypeError(f"k must be a positive integer, got {k!r}.")
    if k < 1:
        raise InvalidInputError(f"k must be at least 1, got {k}.")
    if gain not in ("exponential", "linear"):
        raise InvalidInputError(f"gain must be 'exponential' or 'linear', got {gain!r}.")
    f = _scores(y_score)
    y = check_vector(y_true, f.size, "y_true", nonnegative=True)
    gains = np.exp2(y) - 1.0 if gain == "exponential" else y
    values = []
    for idx in _group_slices(groups, f.size):
        ideal = _dcg(gains[idx], y[idx], int(k))
        if ideal > 0:
            values.append(_dcg(gains[idx], f[idx], int(k)) / ideal)
    if not values:
        raise InvalidInputError(
            "no group has a relevant item (every y_true is 0), so NDCG is undefined."
        )
    return math.fsum(values) / len(values)
