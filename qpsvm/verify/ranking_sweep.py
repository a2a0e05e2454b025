r"""Sums over the preference pairs of relevance labels, by sorting: never pair by pair.

The pairs of a ranking problem given by relevance labels ``y`` and query groups are every
``(i, j)`` of one query with ``y_i > y_j`` (:func:`qpsvm.formulations.ranking.make_pairs`):
``O(q^2)`` per query of ``q`` items. Every quantity the solver and the certificate need is a sum
over the pairs on one side of a threshold,

.. math::

    A = \{(i, j) : b_j > a_i\},\qquad
    \mathrm{cnt}_i = |\{j : (i, j) \in A\}|,\quad
    \mathrm{sum}_i = \sum_{j : (i, j) \in A} b_j,\quad
    \mathrm{cnt}'_j = |\{i : (i, j) \in A\}|,

for per-item keys ``a`` (the preferred item's) and ``b`` (the other's). With scores ``s``,
``a_i = s_i - 1`` and ``b_j = s_j`` select the pairs whose margin ``s_i - s_j`` falls short of
1: their count, the hinge sum :math:`\sum_A (1 - s_i + s_j) = \sum_i \mathrm{cnt}_i (1 - s_i)
+ \mathrm{sum}_i` and the aggregated difference vector :math:`\sum_A (x_i - x_j) = X^T
(\mathrm{cnt} - \mathrm{cnt}')` (Joachims, "Training linear SVMs in linear time", KDD 2006,
Algorithm 3). The items are sorted once by ``a`` and once by ``b`` (all queries together,
then regrouped by query in linear time); each relevance level ``l`` of a query is then swept
by one merge (the pairs ``y_i > l = y_j``; each ``a_i``'s cut among the ``b_j`` gives
``cnt_i``, and the cuts, counted, give ``cnt'``): ``O(n log n + L n)`` for ``L`` levels. When
``a`` is a non-decreasing function of ``b`` (``a = fl(s - 1)``, ``b = s``: rounding is
monotone), the order by ``b`` is also an order by ``a`` and the items are sorted once.

A window of pairs (``lo_i < b_j <= hi_i``: those near the margin) is listed explicitly by the
same sweep, each item's cuts found by merges where ``lo`` and ``hi`` are non-decreasing in
``b`` (else by binary searches); only these few pairs are ever formed.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from qpsvm._jit import CALLEE, ENTRY
from qpsvm._numerics import uncompiled

__all__ = [
    "QueryLayout",
    "layout",
    "level_counts",
    "level_difference",
    "pair_sums",
    "plane_counts",
    "sorted_by_query",
    "window_sides",
]


class QueryLayout(NamedTuple):
    """Items grouped by query, with dense relevance levels (immutable).

    Attributes
    ----------
    order : ndarray of intp
        Item indices, sorted by query (stable).
    starts : ndarray of intp
        ``order[starts[q]:starts[q + 1]]`` are the items of query ``q``.
    level : ndarray of intp
        Dense rank of each item's relevance (``0`` the least relevant value of all).
    query : ndarray of intp
        Query code of each item (``0 .. Q - 1``).
    n_pairs : int
        Number of pairs ``(i, j)`` with ``y_i > y_j`` inside a query.
    max_query : int
        Items in the largest query.
    max_levels : int
        Most relevance levels of one query.
    difference : ndarray of float64, optional
        ``cnt_i - cnt'_i`` of every pair (the items of ``i``'s query at a lower level less
        those at a higher one), when the layout's compiled pass counted it
        (:func:`level_difference`).
    """

    order: np.ndarray
    starts: np.ndarray
    level: np.ndarray
    query: np.ndarray
    n_pairs: int
    max_query: int
    max_levels: int
    difference: np.ndarray | None = None


#: Distinct values that :func:`_dense_rank` ranks by one comparison each (above, by a binary
#: search among them); and query-by-level tables of at most this many cells per item that
#: :func:`_level_table` counts into directly (above, the distinct keys are sorted).
FEW_VALUES = 8
TABLE_CELLS = 4


def _level_table(query: np.ndarray, level: np.ndarray) -> np.ndarray:
    """``counts[q, l]``, the items of query ``q`` at level ``l`` (``query`` and ``level`` dense
    codes ``0 ..``), by one ``bincount`` over ``q L + l``."""
    n_queries = int(query.max()) + 1 if query.size else 0
    n_levels = int(level.max()) + 1 if level.size else 0
    key = query * n_levels + level
    return np.bincount(key, minlength=n_queries * n_levels).reshape(n_queries, n_levels)


def _count_pairs(query: np.ndarray, level: np.ndarray) -> tuple[int, int]:
    """Pairs and most levels per query: ``sum_l |{y > l}| |{y = l}|`` over each query's levels
    ``l``, from the counts of the distinct ``(query, level)`` keys: a query-by-level table
    (:func:`_level_table`) when it has at most :data:`TABLE_CELLS` cells per item, else the
    distinct keys' counts by ``np.unique`` (in numpy: the compiled loop cost 0.4 s of compile
    on a first call for no measurable gain)."""
    cells = (int(query.max()) + 1) * (int(level.max()) + 1)
    if cells <= TABLE_CELLS * max(query.shape[0], 1):
        counts = _level_table(query, level)
        above = counts[:, ::-1].cumsum(axis=1)[:, ::-1] - counts
        return int((above * counts).sum()), int(np.count_nonzero(counts, axis=1).max())
    n_levels = int(level.max()) + 1
    keys, counts = np.unique(query.astype(np.int64) * n_levels + level, return_counts=True)
    group = keys // n_levels
    new = np.empty(keys.shape[0], dtype=bool)
    new[0] = True
    np.not_equal(group[1:], group[:-1], out=new[1:])
    upto = np.cumsum(counts)
    last = np.append(np.flatnonzero(new[1:]), keys.shape[0] - 1)  # each query's last key
    index = np.cumsum(new) - 1
    above = upto[last][index] - upto  # items of the key's query at a higher level
    return int(above @ counts), int(np.bincount(index).max())


def _dense_rank(values: np.ndarray) -> np.ndarray:
    """The rank of each value among the distinct values (``0`` the least): what
    ``np.unique(values, return_inverse=True)`` gives, without its overheads (a sizeable share
    of a small ranking problem's construction). The distinct values are read off a sort of
    the values (no order of the items is needed: equal values have equal ranks however their
    ties are ordered); values already in non-decreasing order (query ids given query by
    query) are ranked by counting the changes, at most :data:`FEW_VALUES` distinct values
    (relevance levels) by one comparison each, more by a binary search."""
    if values.shape[0] < 2:
        return np.zeros(values.shape[0], dtype=np.intp)
    new = np.empty(values.shape[0], dtype=np.intp)
    new[0] = 0
    if bool(np.all(values[1:] >= values[:-1])):
        np.not_equal(values[1:], values[:-1], out=new[1:], casting="unsafe")
        return np.cumsum(new)
    ordered = np.sort(values)
    distinct = ordered[np.flatnonzero(ordered[1:] != ordered[:-1]) + 1]  # all but the least
    if distinct.shape[0] >= FEW_VALUES:
        return np.searchsorted(distinct, values, side="right").astype(np.intp)
    rank = np.zeros(values.shape[0], dtype=np.intp)
    for value in distinct:
        rank += values >= value
    return rank


@numba.njit(**ENTRY)
def _grouped_layout(relevance, ids):  # pragma: no cover - compiled
    """:func:`layout`'s order, levels, query codes and query starts (the rows of one array,
    ``n + 1`` long: each array returned to Python costs its boxing), the number of queries,
    pair count, largest query, most levels of a query and each item's ``cnt - cnt'`` of every
    pair (:attr:`QueryLayout.difference`) in one pass, for query ids in non-decreasing order
    (the items already grouped: the layout's order is the identity) and at most
    :data:`FEW_VALUES` distinct relevance values (kept sorted by insertion; each item's level
    counted as the distinct values below its own, no sort). ``ok`` is ``False`` (the rest
    unset) where either fails."""
    n = relevance.shape[0]
    codes = np.empty((4, n + 1), dtype=np.intp)
    order, level, query, starts = codes[0], codes[1], codes[2], codes[3]
    difference = np.empty(n)
    distinct = np.empty(FEW_VALUES)
    n_levels = 0
    for i in range(n):
        v = relevance[i]
        k = 0
        for m in range(n_levels):  # a count, not a search: no branch on the random levels
            k += distinct[m] < v
        if k < n_levels and distinct[k] == v:
            continue
        if n_levels == FEW_VALUES:
            return False, codes, 0, 0, 0, 0, difference
        for m in range(n_levels, k, -1):
            distinct[m] = distinct[m - 1]
        distinct[k] = v
        n_levels += 1
    n_queries = 0
    for i in range(n):
        if i == 0 or ids[i] != ids[i - 1]:
            if i > 0 and ids[i] < ids[i - 1]:
                return False, codes, 0, 0, 0, 0, difference
            starts[n_queries] = i
            n_queries += 1
        order[i] = i
        query[i] = n_queries - 1
        k = 0
        for m in range(n_levels):
            k += distinct[m] < relevance[i]
        level[i] = k
    starts[n_queries] = n
    counts = np.empty(n_levels, dtype=np.int64)
    higher = np.empty(n_levels, dtype=np.int64)
    n_pairs, max_query, most = 0, 0, 0
    for q in range(n_queries):
        counts[:] = 0
        for i in range(starts[q], starts[q + 1]):
            counts[level[i]] += 1
        above, present = 0, 0
        for k in range(n_levels - 1, -1, -1):
            higher[k] = above
            n_pairs += above * counts[k]
            above += counts[k]
            present += counts[k] > 0
        for i in range(starts[q], starts[q + 1]):
            k = level[i]
            difference[i] = (above - higher[k] - counts[k]) - higher[k]
        max_query = max(max_query, above)
        most = max(most, present)
    return True, codes, n_queries, n_pairs, max_query, most, difference


#: How many items :func:`layout` may lay out by numpy in a process before
#: :func:`_grouped_layout` is compiled (:func:`~qpsvm._numerics.uncompiled`): its compile
#: time (0.56 s CPU at a load of 8 on two cores, :func:`_by_query`'s 0.48 s in the same run)
#: at what it saves (CPU time: 42 to 5 us on 200 items, 150 to 52 us on 8000).
GROUPED_LAYOUT_ITEMS = 2**21


def layout(relevance: np.ndarray, ids: np.ndarray) -> QueryLayout:
    """The :class:`QueryLayout` of relevance labels and integer query ids (any integers: the
    layout's query codes ``0 .. Q - 1`` are their dense ranks): by one compiled pass
    (:func:`_grouped_layout`) for ids given query by query and few relevance values, else by
    numpy's sorts."""
    relevance = np.asarray(relevance, dtype=np.float64)
    ids = np.asarray(ids)
    n = relevance.shape[0]
    if n and ids.dtype == np.intp and not uncompiled(_grouped_layout, n, GROUPED_LAYOUT_ITEMS):
        ok, codes, n_queries, n_pairs, max_query, most, difference = _grouped_layout(relevance, ids)
        if ok:
            order, level, query = codes[0, :n], codes[1, :n], codes[2, :n]
            starts = codes[3, : n_queries + 1]
            return QueryLayout(order, starts, level, query, n_pairs, max_query, most, difference)
    level = _dense_rank(relevance)
    query = _dense_rank(ids)
    order = np.argsort(query, kind="stable")
    sizes = np.bincount(query)
    starts = np.zeros(sizes.shape[0] + 1, dtype=np.intp)
    np.cumsum(sizes, out=starts[1:])
    n_pairs, most = _count_pairs(query, level)
    return QueryLayout(order, starts, level, query, int(n_pairs), int(sizes.max()), int(most))


def level_counts(lay: QueryLayout) -> tuple[np.ndarray, np.ndarray]:
    """Per item, the pairs it is the preferred item of (``cnt_i``: items of its query at a
    lower level) and the other item of (``cnt'_j``: items at a higher level): the counts of
    :func:`pair_sums` when every pair is selected (e.g. at equal scores, ``w = 0``), from the
    levels' counts per query without a sort (:func:`_level_table`), ``O(n + Q L)``."""
    counts = _level_table(lay.query, lay.level)
    n_levels = counts.shape[1]
    key = lay.query * n_levels + lay.level
    upto = np.cumsum(counts, axis=1)
    below = (upto - counts).ravel()
    above = (upto[:, -1:] - upto).ravel()
    return below[key].astype(np.int64), above[key].astype(np.int64)


def level_difference(lay: QueryLayout) -> np.ndarray:
    """``cnt - cnt'`` of :func:`level_counts` in float64 (the coefficients of the 1-slack
    plane of ``w = 0``): the layout's own, when its compiled pass counted them
    (:attr:`QueryLayout.difference`), else from :func:`level_counts`."""
    if lay.difference is not None:
        return lay.difference
    cnt, cnt_other = level_counts(lay)
    return (cnt - cnt_other).astype(np.float64)


@numba.njit(**ENTRY)
def _by_query(perm, query, starts):  # pragma: no cover - compiled
    """The items in the order ``perm``, regrouped by query (stable): a counting sort."""
    out = np.empty(perm.shape[0], dtype=np.intp)
    pos = starts[:-1].copy()
    for k in range(perm.shape[0]):
        i = perm[k]
        q = query[i]
        out[pos[q]] = i
        pos[q] += 1
    return out


#: How many items :func:`_by_query_numpy` may regroup in a process before :func:`_by_query` is
#: compiled (:func:`~qpsvm._numerics.uncompiled`): its compile time (about 0.2 s) at the
#: numpy form's cost (about 50 ns an item, CPU time at 8000 items in queries of 40).
BY_QUERY_ITEMS = 2**22


def _by_query_numpy(perm: np.ndarray, query: np.ndarray) -> np.ndarray:
    """:func:`_by_query` in numpy, the same order: a stable sort of ``perm`` on the query codes."""
    return perm[np.argsort(query[perm], kind="stable")]


@numba.njit(**ENTRY)
def _resort(start, starts, key, budget):  # pragma: no cover - compiled
    """``start`` (items grouped by query) sorted within each query by ``key``, by insertion:
    ``O(n + m)`` for ``m`` items moved past another. Returns the order and whether it is
    complete (``False`` as soon as ``m`` exceeds ``budget``)."""
    out = start.copy()
    moved = 0
    for q in range(starts.shape[0] - 1):
        first = starts[q]
        for k in range(first + 1, starts[q + 1]):
            item = out[k]
            value = key[item]
            m = k
            while m > first and key[out[m - 1]] > value:
                out[m] = out[m - 1]
                m -= 1
            out[m] = item
            moved += k - m
            if moved > budget:
                return out, False
    return out, True


def _resort_numpy(
    start: np.ndarray, starts: np.ndarray, key: np.ndarray, budget: int
) -> tuple[np.ndarray, bool]:
    """:func:`_resort` in numpy for finite ``key``, the same order and verdict: the insertion
    sort moves each item past exactly the earlier items of its query with a larger key, so it
    is a stable sort within each query (``np.lexsort``), and the places moved are the number of
    such pairs, counted on a table of the queries padded with ``+inf``. An incomplete re-sort
    returns ``start`` (the caller sorts in full)."""
    sizes = np.diff(starts)
    most = int(sizes.max(initial=0))
    query = np.repeat(np.arange(sizes.size), sizes)
    values = key[start]
    table = np.full((sizes.size, most), np.inf)
    table[query, np.arange(start.size) - np.repeat(starts[:-1], sizes)] = values
    later = np.triu(np.ones((most, most), dtype=bool), 1)
    moved = int(np.count_nonzero((table[:, :, None] > table[:, None, :]) & later))
    if moved > budget:
        return start, False
    return start[np.lexsort((values, query))], True


#: How many item pairs (each item against its largest query's) :func:`_resort_numpy` may
#: compare in a process before :func:`_resort` is compiled: its 0.18 s of compile at about
#: 3 ns a pair (graded ranking 200 x 40: 27 re-sorts a solve, 8.6 million pairs, 0.027 s).
RESORT_PAIRS = 2**26
#: An order re-sorted from a previous one (:func:`sorted_by_query`) gives up once its items
#: moved this many places per item in all (measured, 8000 items in queries of 40: a full
#: sort costs about as much as 8 moves per item; along the 1-slack cutting plane's line
#: search most re-sorts move fewer than 1.5 per item, a few 3 to 6).
RESORT_MOVES = 4


def sorted_by_query(
    lay: QueryLayout, key: np.ndarray, start: np.ndarray | None = None
) -> np.ndarray:
    """Item indices grouped by query as ``lay.order`` is (``starts`` delimits the queries),
    each query's items in non-decreasing ``key``: one sort of all items, then a counting sort
    on the query codes; or, from ``start`` (such an order for nearby keys, e.g. the scores of
    a nearby ``w``), an insertion sort within each query, whose cost is the number of places
    items move (at most :data:`RESORT_MOVES` per item, else the full sort)."""
    if start is not None:
        budget = RESORT_MOVES * key.shape[0]
        pairs = key.shape[0] * lay.max_query
        if uncompiled(_resort, pairs, RESORT_PAIRS) and np.isfinite(key).all():
            order, complete = _resort_numpy(start, lay.starts, key, budget)
        else:
            order, complete = _resort(start, lay.starts, key, budget)
        if complete:
            return order
    perm = np.argsort(key)
    if uncompiled(_by_query, perm.shape[0], BY_QUERY_ITEMS):
        return _by_query_numpy(perm, lay.query)
    return _by_query(perm, lay.query, lay.starts)


def _scratch(lay: QueryLayout) -> tuple[np.ndarray, np.ndarray]:
    """Buffers of the compiled sweeps over each query's items (:func:`_sums`, :func:`_window`):
    five rows of ``intp`` and four of float64, each one longer than the largest query. Made by
    numpy here, so that the sweeps' compile does not also compile numba's allocation helpers
    (with ``min`` and ``max``, about 0.2 s of a cold first ranking call)."""
    most = lay.max_query + 1
    return np.empty((5, most), dtype=np.intp), np.empty((4, most))


@numba.njit(**ENTRY)
def _sums(  # pragma: no cover - compiled
    starts, level, a, b, by_a, by_b, cnt, cnt_other, total, magnitude, items, keys
):
    """The sweep of :func:`pair_sums` (:func:`_sweep` with the sums)."""
    _sweep(starts, level, a, b, by_a, by_b, cnt, cnt_other, total, magnitude, items, keys, True)


@numba.njit(**ENTRY)
def _counts(starts, level, a, b, by_a, by_b, cnt, cnt_other, items, keys):  # pragma: no cover
    """The sweep of :func:`pair_sums` for the counts alone (:func:`_sweep` without the
    sums)."""
    empty = keys[0][:0]
    _sweep(starts, level, a, b, by_a, by_b, cnt, cnt_other, empty, empty, items, keys, False)


@numba.njit(**ENTRY)
def _plane(starts, level, b, order, a, cnt, cnt_other, coef, items, keys):  # pragma: no cover
    """:func:`plane_counts` in one call: the keys ``a = fl(b - 1)`` (into ``a``), the sweep of
    the counts (:func:`_sweep`, into the zeroed ``cnt`` and ``cnt_other``), ``coef = cnt -
    cnt'`` as floats and the number of pairs, ``sum cnt``."""
    for i in range(b.shape[0]):
        a[i] = b[i] - 1.0
    empty = keys[0][:0]
    _sweep(starts, level, a, b, order, order, cnt, cnt_other, empty, empty, items, keys, False)
    count = 0
    for i in range(b.shape[0]):
        coef[i] = float(cnt[i] - cnt_other[i])
        count += cnt[i]
    return count


@numba.njit(**CALLEE)
def _sweep(  # pragma: no cover - compiled
    starts, level, a, b, by_a, by_b, cnt, cnt_other, total, magnitude, items, keys, sums
):
    """The sweep of :func:`pair_sums` (outputs accumulated in place); ``by_a`` and ``by_b``
    hold each query's items sorted by ``a`` and by ``b``. Each query's items, levels and keys
    are first gathered into contiguous buffers, which the sweeps over its levels then read:
    the rows of ``items`` and ``keys`` (:func:`_scratch`). One merge per level finds each
    ``a_i``'s cut ``k_i``, the keys ``b_j <= a_i``; the ``a_i < b_j`` before each ``b_j``
    (its ``cnt'`` share) are the cuts at most ``j``'s place, counted on the cuts: for sorted
    keys without NaN the counts of a second merge, without its unpredictable branches. Without
    ``sums`` (a constant of each caller) the counts alone: no suffix sums, ``total`` and
    ``magnitude`` not read."""
    A, B, level_a, level_b, cuts = items[0], items[1], items[2], items[3], items[4]
    key_a, key_b, suffix, suffix_abs = keys[0], keys[1], keys[2], keys[3]
    for r in range(cuts.shape[0]):
        cuts[r] = 0
    for q in range(starts.shape[0] - 1):
        s, e = starts[q], starts[q + 1]
        m = e - s
        if m < 2:
            continue
        lo_level = hi_level = level[by_b[s]]
        for k in range(m):
            lb = level[by_b[s + k]]
            level_b[k] = lb
            level_a[k] = level[by_a[s + k]]
            if lb < lo_level:  # min and max without compiling numba's ``min`` and ``max``
                lo_level = lb
            if lb > hi_level:
                hi_level = lb
        for lvl in range(lo_level, hi_level):
            nA = 0  # written at every k, kept when selected: no branch to mispredict
            for k in range(m):
                i = by_a[s + k]
                A[nA] = i
                key_a[nA] = a[i]
                nA += level_a[k] > lvl
            nB = 0
            for k in range(m):
                j = by_b[s + k]
                B[nB] = j
                key_b[nB] = b[j]
                nB += level_b[k] == lvl
            if nA == 0 or nB == 0:
                continue
            if sums:
                suffix[nB] = 0.0
                suffix_abs[nB] = 0.0
                for k in range(nB - 1, -1, -1):
                    suffix[k] = suffix[k + 1] + key_b[k]
                    suffix_abs[k] = suffix_abs[k + 1] + abs(key_b[k])
            k = 0
            for t in range(nA):
                i = A[t]
                ai = key_a[t]
                while k < nB and key_b[k] <= ai:
                    k += 1
                cnt[i] += nB - k
                if sums:
                    total[i] += suffix[k]
                    magnitude[i] += suffix_abs[k]
                cuts[k] += 1
            running = 0
            for k in range(nB):
                running += cuts[k]
                cuts[k] = 0
                cnt_other[B[k]] += running
            cuts[nB] = 0


#: How many comparisons (the items times the largest query times the levels above the lowest)
#: :func:`_sums_numpy` may make in a process before :func:`_sums` is compiled
#: (:func:`~qpsvm._numerics.uncompiled`): its compile (0.5-0.65 s CPU) at the equivalent's
#: cost (3-4 ns a comparison; 2 ms a call at 8000 items in queries of 40, whose one-slack
#: solve makes 28 calls, 9 million comparisons with binary and 18 million with graded
#: relevance).
SUMS_PAIRS = 2**27
#: ... and only on calls whose tables (the items by the largest query, a level's comparisons
#: and sums) have at most this many cells (32 MB of floats).
SUMS_CELLS = 2**22


def _query_table(
    query: np.ndarray, counts: np.ndarray, values: np.ndarray, pad: float
) -> np.ndarray:
    """``values`` (grouped by ``query``, ``counts[q]`` of query ``q``) as a table of one row a
    query, in their order from the left, the rest of each row ``pad``."""
    table = np.full((counts.size, int(counts.max(initial=0))), pad)
    first = np.cumsum(counts) - counts
    table[query, np.arange(query.size) - first[query]] = values
    return table


def _suffix_sums(table: np.ndarray) -> np.ndarray:
    """``out[q, k] = out[q, k + 1] + table[q, k]`` from ``out[q, -1] = 0.0`` (one column more
    than ``table``), each row added right to left by ``np.add.accumulate``: over a row padded
    with ``-0.0`` on the right, the sums :func:`_sums` forms from ``0.0`` (``0.0 + -0.0`` is
    ``0.0``), and ``0.0`` from its last key on."""
    rows = np.zeros((table.shape[0], table.shape[1] + 1))
    rows[:, 1:] = table[:, ::-1]
    return np.add.accumulate(rows, axis=1)[:, ::-1]


def _sums_numpy(
    starts: np.ndarray,
    level: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    by_a: np.ndarray,
    by_b: np.ndarray,
    cnt: np.ndarray,
    cnt_other: np.ndarray,
    total: np.ndarray,
    magnitude: np.ndarray,
) -> None:
    """:func:`_sums` in numpy for finite keys, level by level over every query at once, with
    the same sums: a query's pointers stop at the numbers of its keys ``b_j <= a_i`` and
    ``a_i < b_j`` (both sorted), counted on tables of the queries padded with ``+inf``; the
    suffix sums are :func:`_suffix_sums`, and each item's ``total`` and ``magnitude`` take
    them in the order of the levels as the sweep does. A level where a query has no item on
    one side adds nothing there (``0`` pairs, ``+0.0`` to sums that are never ``-0.0``)."""
    sizes = np.diff(starts)
    query = np.repeat(np.arange(sizes.size), sizes)  # of each place in by_a and by_b
    level_a, level_b = level[by_a], level[by_b]
    for lvl in range(int(level.max(initial=0))):
        above, at = level_a > lvl, level_b == lvl
        A, B, qa, qb = by_a[above], by_b[at], query[above], query[at]
        n_a = np.bincount(qa, minlength=sizes.size)
        n_b = np.bincount(qb, minlength=sizes.size)
        key_a = _query_table(qa, n_a, a[A], np.inf)
        key_b = _query_table(qb, n_b, b[B], np.inf)
        k = np.count_nonzero(key_b[qa] <= a[A][:, None], axis=1)
        cnt[A] += n_b[qa] - k
        total[A] += _suffix_sums(_query_table(qb, n_b, b[B], -0.0))[qa, k]
        magnitude[A] += _suffix_sums(_query_table(qb, n_b, np.abs(b[B]), -0.0))[qa, k]
        cnt_other[B] += np.count_nonzero(key_a[qb] < b[B][:, None], axis=1)


def pair_sums(
    lay: QueryLayout,
    a: np.ndarray,
    b: np.ndarray,
    monotone: bool = False,
    order: np.ndarray | None = None,
    sums: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""Per-item sums over the pairs ``A = {(i, j): y_i > y_j, b_j > a_i}`` (module docstring).

    Parameters
    ----------
    lay : QueryLayout
    a, b : ndarray of shape (n_items,)
        Keys of the preferred and of the other item of a pair.
    monotone : bool, default=False
        ``a`` is a non-decreasing function of ``b`` (``b_j <= b_k`` implies ``a_j <= a_k``,
        e.g. ``a = b - c`` rounded): the items are then sorted once.
    order : ndarray of intp, optional
        ``sorted_by_query(lay, b)``, when the caller has it.
    sums : bool, default=True
        ``False`` asks for the counts alone: ``total`` and ``magnitude`` are then empty, and
        the compiled sweep forms no suffix sums (8000 items in queries of 40, graded: 79 ->
        56 us a sweep).

    Returns
    -------
    cnt : ndarray of int64
        ``cnt_i``, pairs of ``A`` with ``i`` preferred.
    cnt_other : ndarray of int64
        ``cnt'_j``, pairs of ``A`` with ``j`` the other item.
    total : ndarray of float64
        ``sum_i = sum_{(i, j) in A} b_j``, summed in floating point (at most
        ``max_query + max_levels`` additions per item).
    magnitude : ndarray of float64
        The same sums of ``|b_j|`` (for bounds on the rounding of ``total``).
    """
    n = a.shape[0]
    cnt = np.zeros(n, dtype=np.int64)
    cnt_other = np.zeros(n, dtype=np.int64)
    total = np.zeros(n if sums else 0)
    magnitude = np.zeros(n if sums else 0)
    by_b = sorted_by_query(lay, b) if order is None else order
    by_a = by_b if monotone else sorted_by_query(lay, a)
    cells = n * lay.max_query
    if (
        cells <= SUMS_CELLS
        and uncompiled(
            _sums if sums else _counts, cells * int(lay.level.max(initial=0)), SUMS_PAIRS
        )
        and np.isfinite(a).all()
        and np.isfinite(b).all()
    ):
        sizes = (total, magnitude) if sums else (np.zeros(n), np.zeros(n))
        _sums_numpy(lay.starts, lay.level, a, b, by_a, by_b, cnt, cnt_other, *sizes)
        return cnt, cnt_other, total, magnitude
    items, keys = _scratch(lay)
    if sums:
        _sums(
            lay.starts, lay.level, a, b, by_a, by_b, cnt, cnt_other, total, magnitude, items, keys
        )
    else:
        _counts(lay.starts, lay.level, a, b, by_a, by_b, cnt, cnt_other, items, keys)
    return cnt, cnt_other, total, magnitude


def plane_counts(lay: QueryLayout, scores: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, int]:
    """The per-item ``coef = cnt - cnt'`` (float64) and the number ``n_A`` of the pairs ``A``
    short of the margin at ``scores`` (``s_j > fl(s_i - 1)``: the 1-slack plane there), whose
    hinge sum is ``n_A - coef . s``; ``order`` is ``sorted_by_query(lay, scores)``. One
    compiled call (:func:`_plane`) once the sweep is compiled, else :func:`pair_sums`' counts
    (the same counts)."""
    n = scores.shape[0]
    if uncompiled(_plane, n * lay.max_query * int(lay.level.max(initial=0)), SUMS_PAIRS):
        cnt, cnt_other, _, _ = pair_sums(lay, scores - 1.0, scores, True, order, sums=False)
        return np.subtract(cnt, cnt_other, dtype=np.float64), int(cnt.sum())
    counts = np.zeros((2, n), dtype=np.int64)
    a, coef = np.empty(n), np.empty(n)
    items, keys = _scratch(lay)
    count = _plane(lay.starts, lay.level, scores, order, a, *counts, coef, items, keys)
    return coef, int(count)


@numba.njit(**CALLEE)
def _count_at_most(keys, n, x):  # pragma: no cover - compiled
    """How many of the sorted ``keys[:n]`` are at most ``x`` (``n >= 1``): a binary search
    whose halving steps select rather than branch."""
    base = 0
    size = n
    while size > 1:
        half = size // 2
        base = base + half if keys[base + half - 1] <= x else base
        size -= half
    return base + (1 if keys[base] <= x else 0)


@numba.njit(**ENTRY)
def _window(  # pragma: no cover - compiled
    order, starts, level, by_b, lo, hi, b, monotone, limit, out, counts, scratch, item_cuts
):
    """Pairs with ``lo_i < b_j <= hi_i``, written to ``out`` up to ``limit``; returns the count
    (``by_b``: each query's items sorted by ``b``). The pairs beyond, ``b_j > hi_i``, are
    counted on the way (``counts``: ``cnt``, ``cnt_other``, and ``total`` their sums of
    ``b_j`` per preferred item, accumulated in place): each ``i`` adds 1 to the other items
    from its cut on, summed over the cuts in one pass. Each preferred item's two cuts (the
    keys ``b_j`` at most ``lo_i`` and at most ``hi_i``, rows of ``item_cuts``, one entry an
    item) come from two forward merges over the preferred items in the order of ``by_b``
    where ``monotone`` (``lo`` and ``hi`` non-decreasing along it), else from a binary search
    each; the pairs are listed in the order of ``order`` either way. ``scratch``
    (:func:`_scratch`) holds its buffers."""
    found = 0
    cnt, cnt_other, total = counts
    items, floats = scratch
    B, level_b, A, cuts, S = items[0], items[1], items[2], items[3], items[4]
    keys, suffix = floats[0], floats[1]
    cut_lo, cut_hi = item_cuts[0], item_cuts[1]
    for r in range(cuts.shape[0]):
        cuts[r] = 0
    for q in range(starts.shape[0] - 1):
        s, e = starts[q], starts[q + 1]
        m = e - s
        if m < 2:
            continue
        lo_level = hi_level = level[by_b[s]]
        for k in range(m):
            lb = level[by_b[s + k]]
            level_b[k] = lb
            if lb < lo_level:  # min and max without compiling numba's ``min`` and ``max``
                lo_level = lb
            if lb > hi_level:
                hi_level = lb
        for lvl in range(lo_level, hi_level):
            # written at every k, kept when selected: no branch to mispredict; an int64, not
            # Literal[int](0), or _count_at_most compiles for that literal too
            nB = np.int64(0)
            for k in range(m):
                j = by_b[s + k]
                B[nB] = j
                keys[nB] = b[j]
                nB += level_b[k] == lvl
            if nB == 0:
                continue
            nA = 0
            for k in range(m):
                i = order[s + k]
                A[nA] = i
                nA += level[i] > lvl
            suffix[nB] = 0.0
            for k in range(nB - 1, -1, -1):
                suffix[k] = suffix[k + 1] + keys[k]
            if monotone:
                nS = 0
                for k in range(m):
                    i = by_b[s + k]
                    S[nS] = i
                    nS += level_b[k] > lvl
                first = last = 0
                for t in range(nS):
                    i = S[t]
                    x = lo[i]
                    while first < nB and keys[first] <= x:
                        first += 1
                    x = hi[i]
                    while last < nB and keys[last] <= x:
                        last += 1
                    cut_lo[i] = first
                    cut_hi[i] = last
            else:
                for t in range(nA):
                    i = A[t]
                    cut_lo[i] = _count_at_most(keys, nB, lo[i])
                    cut_hi[i] = _count_at_most(keys, nB, hi[i])
            for t in range(nA):
                i = A[t]
                first = cut_lo[i]
                last = cut_hi[i]
                cnt[i] += nB - last
                total[i] += suffix[last]
                cuts[last] += 1
                for r in range(first, last):
                    if found < limit:
                        out[found, 0] = i
                        out[found, 1] = B[r]
                    found += 1
            running = 0
            for r in range(nB):
                running += cuts[r]
                cuts[r] = 0
                cnt_other[B[r]] += running
            cuts[nB] = 0
    return found


def window_sides(
    lay: QueryLayout,
    lo: np.ndarray,
    hi: np.ndarray,
    b: np.ndarray,
    limit: int,
    order: np.ndarray | None = None,
    monotone: bool = False,
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray]:
    """The pairs ``(i, j)``, ``y_i > y_j``, with ``lo_i < b_j <= hi_i`` (the window), as rows
    ``(i, j)`` (``None`` when there are more than ``limit``), and by the same pass the sums of
    :func:`pair_sums` over the pairs beyond it, ``b_j > hi_i``: ``cnt``, ``cnt'`` and the sums
    of ``b_j`` per preferred item (in floating point, at most ``max_levels`` additions each).
    ``order`` is ``sorted_by_query(lay, b)``, when the caller has it; ``monotone``: ``lo`` and
    ``hi`` are non-decreasing functions of ``b`` (e.g. ``b`` less constants, rounded), whose
    cuts then come from merges rather than binary searches (the same window and sums)."""
    n = b.shape[0]
    out = np.empty((limit, 2), dtype=np.intp)
    cnt = np.zeros(n, dtype=np.int64)
    cnt_other = np.zeros(n, dtype=np.int64)
    total = np.zeros(n)
    by_b = sorted_by_query(lay, b) if order is None else order
    scratch = _scratch(lay)
    counts = (cnt, cnt_other, total)
    cuts = np.empty((2, n), dtype=np.intp)
    layout_arrays = (lay.order, lay.starts, lay.level)
    found = _window(*layout_arrays, by_b, lo, hi, b, monotone, limit, out, counts, scratch, cuts)
    return (out[:found] if found <= limit else None), cnt, cnt_other, total
