r"""What one row block computes in a pass of the ranking SVM over Dask blocks.

The ranking SVM from relevance labels (:class:`~qpsvm.RankingSVM` with ``y`` and ``groups``,
unit pair weights) is the binary SVM without intercept on the differences ``x_i - x_j`` of the
pairs ``(i, j)`` of one query with ``y_i > y_j``. When every query lives in one block, every
pair does too, and the block computes its share of every sum over pairs by sorting its queries
(:mod:`qpsvm.verify.ranking_sweep`); a pair is formed only when it is handed to the client.

Statuses. A pair outside the working set ``W`` (pairs as keys ``i N + j`` of global item
indices, ``N`` the items) has its status fixed by the sort point ``s_0 = X w_0`` and band
``beta`` (:class:`RankSort`): *short* (``alpha_p = C``) when ``s_{0j} > fl(s_{0i} - (1 -
beta))``, *beyond* (0) when ``s_{0j} <= fl(s_{0i} - (1 + beta))``, the thresholds of
:func:`~qpsvm.verify.ranking.window_sets`, so the sweeps and the pair-by-pair check below
partition the pairs identically; the pairs between are the sort's window, all in ``W``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from qpsvm._jit import ENTRY
from qpsvm.dask.blocks import RoundParts, Rows, Sort, SortParts, finite_features
from qpsvm.dask.fold import Fold
from qpsvm.exceptions import InaccurateSolutionError, InvalidInputError
from qpsvm.verify.ranking import (
    MAX_WINDOW,
    WindowDual,
    bound_sets,
    grouped_expansion,
    grouped_gain_lower,
    grouped_hinge_upper,
    grouped_hinge_value,
    window_sets,
)
from qpsvm.verify.ranking_sweep import QueryLayout, layout
from qpsvm.verify.rigorous import DualSums

__all__ = [
    "ItemBlock",
    "RankSort",
    "block_queries",
    "make_item_block",
    "rank_round_parts",
    "rank_sort_parts",
]


@dataclass(frozen=True)
class ItemBlock:
    """Items ``offset .. offset + n`` of a ranking problem in memory: features (float64), the
    block's sorted query identifiers, its :class:`QueryLayout` and the number ``N`` of items of
    the whole problem (pair keys are ``i N + j``)."""

    X: np.ndarray
    queries: np.ndarray
    layout: QueryLayout
    offset: int
    n_total: int
    C: float

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    def rows(self, i: np.ndarray, j: np.ndarray, score: np.ndarray) -> Rows:
        """The pairs ``(i, j)`` (local indices) as rows for the client: global keys, the
        differences ``x_i - x_j``, label, weight and margin 1."""
        ones = np.ones(i.size)
        key = (i + self.offset).astype(np.int64) * self.n_total + (j + self.offset)
        return Rows(key, self.X[i] - self.X[j], ones, ones, ones, score)


def make_item_block(
    X: np.ndarray,
    y: np.ndarray,
    groups: np.ndarray,
    margin: None,
    offset: int,
    n_total: int,
    C: float,
) -> ItemBlock:
    """An :class:`ItemBlock` from the raw block, checked: finite features and relevance.

    Raises
    ------
    InvalidInputError
        A check fails; the message gives the first offending row.
    """
    X = finite_features(X, offset)
    rel = np.asarray(y, dtype=np.float64).ravel()
    if not np.all(np.isfinite(rel)):
        row = int(np.argmax(~np.isfinite(rel)))
        raise InvalidInputError(f"y (relevance labels) holds NaN or inf (row {offset + row}).")
    queries, codes = np.unique(np.asarray(groups).ravel(), return_inverse=True)
    lay = layout(rel, codes.astype(np.intp).ravel())
    return ItemBlock(X, queries, lay, offset, n_total, C)


def block_queries(block: ItemBlock) -> tuple[np.ndarray, int]:
    """The block's query identifiers and its number of pairs."""
    return block.queries, block.layout.n_pairs


@dataclass(frozen=True)
class RankSort(Sort):
    """The sort point ``(w_0, 0)`` and its band ``beta`` (see the module)."""

    band: float = 0.0


def rank_sort_parts(block: ItemBlock, sort: RankSort, band: float, least: int) -> SortParts:
    """The window's pairs at the sort point (all of them start in ``W``; ``least`` is not
    used: the window is cut by the band alone) and the sums of the short pairs
    (:func:`pair_fold`, ``sum (x_i - x_j) = X^T a_B``).

    Raises
    ------
    InaccurateSolutionError
        The block has more than :data:`~qpsvm.verify.ranking.MAX_WINDOW` pairs in the window.
    """
    s0 = block.X @ sort.w
    sides = window_sets(block.layout, s0, sort.band)
    if sides is None:
        raise InaccurateSolutionError(
            f"a block has more than {MAX_WINDOW} pairs within {sort.band:.3g} of the margin at "
            "the start; use smaller blocks or a smaller band."
        )
    n_bound, coef, window = sides
    i, j = window[:, 0], window[:, 1]
    distance = np.abs(s0[i] - s0[j] - 1.0)
    return SortParts(block.rows(i, j, distance), pair_fold(block.X.T @ coef, n_bound))


def pair_fold(xs: np.ndarray, n_bound: int) -> Fold:
    """The short pairs' sums as one group (``y = +1``, unit weights and margins): ``n_B`` pairs
    with ``sum (x_i - x_j) = xs``."""
    if not n_bound:
        return Fold.empty(xs.size)
    one, n = np.array([1.0]), np.array([float(n_bound)])
    count = np.array([n_bound], np.int64)
    return Fold(one, np.zeros((1, 0), bool), count, n, xs[None, :].astype(np.float64), n)


@numba.njit(**ENTRY)
def _violators(order, starts, level, s0, inner, lo, s, work, n, eps, out_i, out_j, out_wrong):
    """Pairs outside ``work`` (sorted keys ``i n + j``) whose status at ``s0`` is violated at
    ``s`` by more than ``eps``: short with margin ``s_i - s_j > 1``, beyond with margin below
    1. The first ``len(out_i)`` are written out; returns how many there are."""
    count = 0
    limit = out_i.shape[0]
    for q in range(starts.shape[0] - 1):
        for x in range(starts[q], starts[q + 1]):
            i = order[x]
            for z in range(starts[q], starts[q + 1]):
                j = order[z]
                if level[i] <= level[j]:
                    continue
                if s0[j] > inner[i]:
                    wrong = (s[i] - s[j]) - 1.0
                elif s0[j] <= lo[i]:
                    wrong = 1.0 - (s[i] - s[j])
                else:
                    continue
                if wrong <= eps:
                    continue
                key = i * n + j
                k = np.searchsorted(work, key)
                if k < work.shape[0] and work[k] == key:
                    continue
                if count < limit:
                    out_i[count] = i
                    out_j[count] = j
                    out_wrong[count] = wrong
                count += 1
    return count


def rank_round_parts(
    block: ItemBlock,
    work: np.ndarray,
    alpha_work: np.ndarray,
    sort: RankSort,
    w: np.ndarray,
    b: float,
    eps: float,
    cap: int,
) -> RoundParts:
    """Check every pair of the block at the candidate ``w`` with multipliers ``alpha_work`` on
    ``W``'s pairs ``work`` (rows of local item indices; ``b`` is 0), pair by pair for the
    violated statuses (at most ``cap`` of the most violated returned, of the first ``4 cap``
    found), and by sweeps for the certificate: the hinge sum's upper bound
    (:func:`~qpsvm.verify.ranking.grouped_hinge_upper`) and the dual sums of ``t C`` on the
    short pairs (``t``: the sort's share, 1 unless their aggregate was below its bound),
    ``alpha_work`` on ``W`` (:func:`~qpsvm.verify.ranking.grouped_expansion`)."""
    lay, X, C = block.layout, block.X, block.C
    s0, s = X @ sort.w, X @ w
    n = block.n_samples
    keys = np.sort(work[:, 0].astype(np.int64) * n + work[:, 1])
    out_i, out_j = np.zeros(4 * cap, np.intp), np.zeros(4 * cap, np.intp)
    out_wrong = np.zeros(4 * cap)
    inner, lo = s0 - (1.0 - sort.band), s0 - (1.0 + sort.band)
    count = _violators(
        lay.order, lay.starts, lay.level, s0, inner, lo, s, keys, n, eps, out_i, out_j, out_wrong
    )
    found = min(count, out_i.size)
    top = np.argsort(-out_wrong[:found], kind="stable")[:cap]
    n_bound, coef = bound_sets(lay, s0, sort.band, work)
    short = C * float(sort.fractions(np.ones((1, 1)), np.ones(1))[0])  # alpha_p = t C on B
    r = s[work[:, 0]] - s[work[:, 1]]
    xi = np.maximum(0.0, 1.0 - r)
    comp = np.maximum(np.abs(alpha_work * (r - 1.0 + xi)), (C - alpha_work) * xi)
    zero = np.zeros(1)
    return RoundParts(
        violators=block.rows(out_i[top], out_j[top], out_wrong[top]),
        n_violated=int(count),
        max_violation=float(np.max(out_wrong[:found], initial=0.0)),
        cost=grouped_hinge_upper(X, lay, w),
        worst=-np.inf,
        dual=DualSums(
            grouped_gain_lower(short, n_bound, alpha_work),
            grouped_expansion(X, short, WindowDual(n_bound, coef, work, alpha_work, w)),
            (zero, zero, zero),
        ),
        max_margin=1.0,
        max_row_norm=0.0,
        box=0.0,
        balance=0.0,
        complementarity=float(np.max(comp, initial=0.0)),
        slack_sum=grouped_hinge_value(lay, s),
    )
